"""A bounded map of what an `ExternalRuns` already knows, shared by the threads that use it."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Generic, TypeVar

__all__ = ["Seen"]

V = TypeVar("V")


class Seen(Generic[V]):
    """What this process has read or written that never changes again (a verdict: a key is
    judged once; a decided approval: a decision is final), by key, the most recent kept; from
    any thread."""

    LIMIT = 8_192

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[str, V] = {}

    def get_many(self, keys: Iterable[str]) -> dict[str, V]:
        with self._lock:
            return {k: v for k in keys if (v := self._by_key.get(k)) is not None}

    def add(self, items: Iterable[tuple[str, V]]) -> None:
        with self._lock:
            for key, value in items:
                self._by_key[key] = value
            while len(self._by_key) > self.LIMIT:
                del self._by_key[next(iter(self._by_key))]

    def drop(self, keys: Iterable[str]) -> None:
        """Forget `keys` (kept elsewhere from now on)."""
        with self._lock:
            for key in keys:
                self._by_key.pop(key, None)
