"""Wake-ups when an approval is decided. A wake-up is a hint: the database is the truth.

In one process an `asyncio` event per approval; waiters in other processes poll with a bounded
interval (a LISTEN/NOTIFY notifier for PostgreSQL plugs into the same two methods).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

__all__ = ["Notifier"]


class Notifier:
    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Event]] = defaultdict(set)

    def notify(self, key: str) -> None:
        for event in self._waiters.pop(key, ()):
            event.set()

    async def wait(self, key: str, timeout: float) -> bool:
        """Wait up to `timeout` seconds for `notify(key)`; True if it came."""
        event = asyncio.Event()
        self._waiters[key].add(event)
        try:
            async with asyncio.timeout(timeout):
                await event.wait()
            return True
        except TimeoutError:
            return False
        finally:
            waiters = self._waiters.get(key)
            if waiters is not None:
                waiters.discard(event)
                if not waiters:
                    del self._waiters[key]
