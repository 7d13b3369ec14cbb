"""A notifier that shows the test what a gate's waiters do, through the gate's ``notifier=``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Literal

from signoff.gate.notifier import Notifier

__all__ = ["WatchedNotifier"]


class WatchedNotifier(Notifier):
    """Records every notification, and tells when a waiter has found its approval undecided
    and parked on its wake-up: from then on only a notification (or its poll) wakes it."""

    def __init__(self) -> None:
        super().__init__()
        self.parked = asyncio.Event()
        self._heard: dict[str, asyncio.Event] = {}

    def notify(self, key: str) -> None:
        self._heard.setdefault(key, asyncio.Event()).set()
        super().notify(key)

    async def hears(self, key: str) -> None:
        """Return once a notification about `key` has arrived (at once if one has)."""
        await self._heard.setdefault(key, asyncio.Event()).wait()

    @contextlib.contextmanager
    def subscription(self, key: str) -> Iterator[asyncio.Event]:
        with super().subscription(key) as event:
            yield _Parking(event, self.parked)


class _Parking(asyncio.Event):
    """A waiter's wake-up event (`inner`), which sets `parked` when the waiter waits on it."""

    def __init__(self, inner: asyncio.Event, parked: asyncio.Event) -> None:
        super().__init__()
        self.inner, self.parked = inner, parked

    def is_set(self) -> bool:
        return self.inner.is_set()

    def set(self) -> None:
        self.inner.set()

    def clear(self) -> None:
        self.inner.clear()

    async def wait(self) -> Literal[True]:
        self.parked.set()
        return await self.inner.wait()
