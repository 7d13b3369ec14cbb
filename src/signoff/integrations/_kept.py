"""What every adapter that keeps its framework's threads in signoff's store (`_threads`) does the
same way around the framework's own run: a thread takes no new input while a process resumes it
or while it waits on people; a resume holds the thread for one process and ends the hold on every
path; a run that stops on held calls ends on the pause that points a resumer at it (`Threads`);
and the app gets `resume`, `resume_sync` and `resumer` (`KeptThreads`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any, Generic, TypeVar

from signoff.errors import ConflictError
from signoff.gate.external import ExternalRuns, NewPause, Resumed, Resumer
from signoff.integrations._threads import Append, Hold, appender, busy, now, resumer

__all__ = ["KeptThreads", "Threads", "extended", "waits"]

R = TypeVar("R")


def waits(thread: str, noun: str = "thread") -> ConflictError:
    """The refusal of new input to a thread whose run waits on people."""
    return ConflictError(
        f"{noun} {thread!r} waits on calls a person has not all answered: resume it "
        "(SignoffAgent.resume) once they are decided"
    )


def extended(thread: str) -> ConflictError:
    """The refusal to keep a run whose thread another run extended since it was read."""
    return ConflictError(
        f"thread {thread!r} was extended by another run meanwhile; this run was not kept (its "
        "tools ran once all the same)"
    )


class Threads(Generic[R]):
    """An adapter's threads as signoff keeps them: `origin`, `runs` and `lease` are the
    adapter's, `noun` what its framework calls a thread, and `R` what its runs return."""

    origin: str
    runs: ExternalRuns
    lease: timedelta
    noun = "thread"

    async def _entries(self, thread: str, *, resuming: bool = False) -> list[str]:
        """The thread's kept entries; refused for a new run (not `resuming`) while another
        process resumes it."""
        entries = await self.runs.near(self.runs.store.history(self.origin, thread))
        if not resuming and busy(entries, now(self.runs)):
            raise ConflictError(f"{self.noun} {thread!r} is being resumed")
        return entries

    def _appender(self, thread: str, after: int) -> Append:
        """`Append` to the thread as a new run read it, `after` entries long."""
        return appender(self.runs, self.origin, thread, after)

    async def _held(
        self,
        thread: str,
        entries: Sequence[str],
        go: Callable[[Append], Awaitable[R | None]],
        decided: Sequence[str],
    ) -> tuple[R | None, bool]:
        """Resume the thread as `entries` read it, held by this process while `go` runs the
        framework and keeps what it added with the `Append` given; the pause then went on past
        the `decided` approvals. (None, False) when another process resumes it."""
        hold = await Hold.take(self.runs, self.origin, thread, entries, lease=self.lease)
        if hold is None:
            return None, False
        try:
            result = await go(hold.keep)
        finally:
            await hold.release()  # a no-op once kept
        await self.runs.went_on(decided)
        return result, True

    def _pause_of(
        self, thread: str, asked: Sequence[str], agent: str | None,
        conversation: Sequence[dict[str, Any]],
    ) -> NewPause:  # fmt: skip
        """The pause a run of `thread` by `agent` ends on, waiting on the `asked` approvals,
        kept with the thread's new entries (`Append`)."""
        return self.runs.pause_of(thread=thread, approvals=asked, agent=agent,
                                  data={"thread_id": thread, "asked": list(asked)},
                                  conversation=conversation)  # fmt: skip


class KeptThreads(Threads[R]):
    """`Threads` resumed as an app resumes them: `_resume` is the framework's resume, which
    answers what the run returned (None: it did not run it) and whether the pause is over."""

    async def _resume(self, thread: str, **kwargs: Any) -> tuple[R | None, bool]:
        raise NotImplementedError

    async def resume(self, thread: str, **kwargs: Any) -> R | None:
        """Resume `thread` with the decisions signoff's store holds for its waiting calls.
        None when nothing waits, nothing it waits on is decided yet, or another process
        resumes it now. `kwargs` go to the framework's run."""
        result, _ = await self._resume(thread, **kwargs)
        return result

    def resume_sync(self, thread: str, **kwargs: Any) -> R | None:
        """`resume` from synchronous code (not inside a running event loop)."""
        return asyncio.run(self.resume(thread, **kwargs))

    def resumer(self, *, on_resumed: Callable[[Resumed], Any] | None = None) -> Resumer:
        """A `Resumer` that resumes this agent's waiting threads once every call a pause waits
        on is decided — in any channel, with no code of the user's: ``.start()`` it next to
        the app, or ``await ....work()`` in a task. What each resumed run returns reaches
        `on_resumed`, and ``wait(thread)`` / ``await resumed(thread)``."""
        return resumer(self.runs, self._resume, on_resumed)
