"""Wake-ups when an approval is decided. A wake-up is a hint: the database is the truth.

In one process an `asyncio` event per waiter; decisions taken in other processes arrive through
the store's `listen` (PostgreSQL LISTEN/NOTIFY) or are found by the waiter's bounded polling.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import Iterator

__all__ = ["ANY", "Notifier"]

ANY = "*"
"""Subscribe to this key to be woken by every notification."""


class Notifier:
    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Event]] = defaultdict(set)

    def notify(self, key: str) -> None:
        for event in (*self._waiters.get(key, ()), *self._waiters.get(ANY, ())):
            event.set()

    @contextlib.contextmanager
    def subscription(self, key: str) -> Iterator[asyncio.Event]:
        """An event set by every `notify(key)` while the block runs.

        Subscribe before reading the state you wait on, so a wake-up between the read and the
        wait is not lost.
        """
        event = asyncio.Event()
        self._waiters[key].add(event)
        try:
            yield event
        finally:
            waiters = self._waiters[key]
            waiters.discard(event)
            if not waiters:
                del self._waiters[key]
