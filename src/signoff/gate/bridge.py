"""A synchronous facade over signoff's async core, safe with or without a running event loop.

The store's connections belong to one event loop. A `Bridge` owns that loop — on a thread of its
own, or an existing loop running elsewhere — and runs coroutines on it: `run` blocks the calling
thread (a framework's synchronous `invoke`), `arun` awaits from any other loop (its `ainvoke`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["Bridge", "run_here"]

T = TypeVar("T")


class Bridge:
    """Runs coroutines on one event loop for callers on any thread or loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """With `loop` (already running on another thread), use it; else start one of our own
        on a daemon thread."""
        self._own = loop is None
        self.loop = loop or asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        if self._own:
            self._thread = threading.Thread(
                target=self.loop.run_forever, name="signoff-bridge", daemon=True
            )
            self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the bridge's loop and wait for it, from synchronous code."""
        if _running_loop() is self.loop:
            coro.close()
            raise RuntimeError(
                "signoff's synchronous API was called from inside the event loop it runs on; "
                "use the async API there (ainvoke, astream)"
            )
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await `coro` on the bridge's loop from any loop (directly when it is this one)."""
        if _running_loop() is self.loop:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def cancel_the_rest(self, *, within: float = 10.0) -> None:
        """Cancel the work still on the bridge's own loop and wait (at most `within` seconds)
        for it to end — its clean-up included, while what it cleans up with is still open."""
        if self._own and self.loop.is_running() and _running_loop() is not self.loop:
            future = asyncio.run_coroutine_threadsafe(_cancel_the_rest(within), self.loop)
            future.result()

    def close(self) -> None:
        """Stop the bridge's own loop and thread (an existing loop is left running), once the
        work still on it is cancelled and has ended: a coroutine handed over just before —
        its caller cancelled — is not left unstarted, to warn whenever it is collected."""
        if not self._own or self.loop.is_closed():
            return
        self.cancel_the_rest()
        self.loop.call_soon_threadsafe(self.loop.stop)
        if self._thread is not None:
            self._thread.join()
        self.loop.close()


class _Own:
    """An event loop of one thread's own, closed once the thread is gone."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def __del__(self) -> None:  # the thread's locals are dropped when it ends
        if not self.loop.is_closed():
            self.loop.close()


_here = threading.local()


def run_here(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` on an event loop of the calling thread's own, from synchronous code: for work
    that may run on any loop (a SQLite store's, on threads of its own), with no hop to a
    bridge's thread and back."""
    if _running_loop() is not None:
        coro.close()
        raise RuntimeError("run_here is for synchronous code, outside a running event loop")
    own: _Own | None = getattr(_here, "own", None)
    if own is None or own.loop.is_closed():
        own = _here.own = _Own()
    return own.loop.run_until_complete(coro)


async def _cancel_the_rest(within: float) -> None:
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=within)  # one that ignores cancelling is left


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
