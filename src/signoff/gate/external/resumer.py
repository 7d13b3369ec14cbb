"""`Resumer`: resumes one framework's paused runs once every held call of a pause is decided,
on any number of replicas — each pause claimed by one worker under a lease — and hands what each
resume returned to the app (`Resumed`)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from signoff import telemetry
from signoff.gate.background import background, cancel
from signoff.gate.external.runs import ExternalRuns
from signoff.gate.ids import new_id
from signoff.gate.resumed import Outputs, Resumed
from signoff.gate.worker import work_ready
from signoff.store.pauses import Pause, PauseStatus

__all__ = ["LEASE", "Resumer"]

logger = logging.getLogger("signoff.external")

LEASE = timedelta(minutes=5)


class Resumer:
    """Resumes one framework's paused runs once every held call of a pause is decided, like
    `Runner.work()` for signoff's own runs: woken by decisions (in this process at once, from
    others through PostgreSQL's NOTIFY, or by polling), each pause claimed by one worker
    (a lease) and handed to `resume`. Any number of replicas may work the same origin.

    What a resume returned reaches the app two ways, the same for every framework:
    `on_resumed` (called with each `Resumed`, sync or async, on the resumer's loop), and
    `wait(thread)` / ``await resumed(thread)`` for one thread's next resume. Both see the
    resumes of this process's resumer only: a thread another replica resumed is read from
    the framework (its checkpoint, its session)."""

    def __init__(
        self,
        runs: ExternalRuns,
        resume: Callable[[Pause], Awaitable[Resumed | bool | None]],
        *,
        lease: timedelta = LEASE,
        owner: str | None = None,
        on_resumed: Callable[[Resumed], Any] | None = None,
    ) -> None:
        self.runs = runs
        self.resume = resume
        """Resume the framework's run of this pause (it must not raise for a run that went on
        already: check, and return). A `Resumed` with what the run returned when this call
        ran it; False when it did not go on and the pause waits on (another process holds the
        run, or nothing it waits on is decided); None when the run is past the pause."""
        self.lease = lease
        self.owner = owner or f"{os.getpid()}-{new_id()[-8:]}"
        self.on_resumed = on_resumed
        """Called with each run this resumer resumed, once it is over (an exception it raises
        is logged: the pause stays done)."""
        self._outputs = Outputs()

    async def resumed(self, thread: str, *, timeout: float | None = None) -> Resumed:
        """The thread's next resume by this resumer (at once, if one came since the last was
        taken), from any event loop. `TimeoutError` after `timeout` seconds."""
        future = self._outputs.take(thread)
        if future.done():
            return future.result()
        try:
            async with asyncio.timeout(timeout):
                return await asyncio.wrap_future(future)
        except BaseException:  # a timeout, a cancel: what came meanwhile is kept
            self._outputs.forget(thread, future)
            raise

    def wait(self, thread: str, *, timeout: float | None = None) -> Resumed:
        """`resumed`, from synchronous code (while `start` works in the background)."""
        future = self._outputs.take(thread)
        try:
            return future.result(timeout)
        except BaseException:  # a timeout, Ctrl+C: what came meanwhile is kept
            self._outputs.forget(thread, future)
            raise

    async def work(self, *, poll_interval: float = 1.0, concurrency: int = 8) -> None:
        """Resume pauses as they become ready, until cancelled (on the bridge's loop)."""
        await self.runs.bridge.arun(self._work(poll_interval, concurrency))

    async def _work(self, poll_interval: float, concurrency: int) -> None:
        async def ready() -> list[str]:
            store = self.runs.store
            return await store.ready_pauses(self.runs.origin, now=await store.clock())

        await work_ready(self.runs.gate, ready, self.resume_ready, poll_interval=poll_interval,
                         concurrency=concurrency)  # fmt: skip

    async def resume_ready(self, pause_id: str) -> bool:
        """Claim the pause and resume its run, if it is ready and nobody else has it. Returns
        whether this worker resumed it. A resume that fails leaves the pause to be tried again."""
        store = self.runs.store
        pause = await store.claim_pause(
            pause_id, owner=self.owner, now=store.now(), lease=self.lease
        )
        if pause is None:
            return False
        went_on: Resumed | bool | None = False
        try:
            with telemetry.span("signoff.resume", {"signoff.origin": pause.origin}):
                went_on = await self.resume(pause)
        except Exception:  # a worker outlives one run's trouble; the pause is tried again
            logger.exception("resuming %s pause %s failed", pause.origin, pause.id)
        # Never marked done with a call it waits on unanswered: it waits, to be tried again.
        status: PauseStatus = "waiting" if went_on is False else "done"
        await store.release_pause(pause.id, owner=self.owner, status=status, now=store.now())
        if went_on is False:
            return False
        telemetry.observer.resumed("framework")
        self.runs.gate.notifier.notify(pause.id)
        if isinstance(went_on, Resumed):
            await self._deliver(replace(went_on, pause=pause.id, origin=pause.origin))
        return True

    async def _deliver(self, resumed: Resumed) -> None:
        self._outputs.put(resumed)
        if self.on_resumed is None:
            return
        try:
            called = self.on_resumed(resumed)
            if inspect.isawaitable(called):
                await called
        except Exception:  # the app's callback: the pause is done whatever it does
            logger.exception("on_resumed failed for %s thread %s", resumed.origin, resumed.thread)

    @contextlib.asynccontextmanager
    async def running(self, *, poll_interval: float = 1.0) -> AsyncIterator[Resumer]:
        """Work in the background while the block runs."""
        async with background(self.work(poll_interval=poll_interval)):
            yield self

    def start(self, *, poll_interval: float = 1.0) -> Callable[[], None]:
        """Work on the bridge's loop in the background, for synchronous apps; returns `stop`,
        which returns once the work — and any resume under way — has stopped (so the store can
        be closed after it)."""

        async def begin() -> asyncio.Task[None]:
            return asyncio.create_task(self._work(poll_interval, 8))

        task = self.runs.bridge.run(begin())

        def stop() -> None:
            self.runs.bridge.run(cancel(task))

        return stop
