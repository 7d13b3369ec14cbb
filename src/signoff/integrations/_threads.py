"""A framework's thread as an integration keeps it in signoff's store (``external_history``):
entries appended by compare-and-set on the length read, and the marks that let one process at a
time resume it — so the same pause resumed by two processes calls the model once, and the calls
the model makes after the resume run once, whatever their ids. (Unless a process stalls past its
mark's lease while it resumes: only one resume is kept then, but the stalled one's own calls may
have run — docs/guarantees.md.)"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from signoff.gate.external import LEASE, ExternalRuns, NewPause, Pause, Resumed, Resumer
from signoff.gate.once import owner_alive

__all__ = [
    "Append",
    "Hold",
    "appender",
    "busy",
    "now",
    "renew_while",
    "resumer",
    "unmarked",
]

_MARK = "signoff.resume"


def now(runs: ExternalRuns) -> datetime:
    """The time resume marks are written and judged by: the store's clock (`ExternalRuns.now`)."""
    return runs.now()


def is_mark(entry: str) -> bool:
    return entry.startswith('{"' + _MARK + '"')


def unmarked(entries: Sequence[str]) -> list[str]:
    """The thread's entries without its resume marks."""
    return [e for e in entries if not is_mark(e)]


def busy(entries: Sequence[str], at: datetime, lease: timedelta = LEASE) -> bool:
    """Whether a process resumes the thread now: its last entry says so, within the lease — a
    process that died resuming holds the thread no longer than that, or not at all when it
    was of this machine."""
    if not entries or not is_mark(entries[-1]):
        return False
    mark = json.loads(entries[-1])
    until = mark.get("until")  # a `Hold`'s mark says how long it holds; an older one, the lease
    fresh = (
        at < datetime.fromisoformat(until)
        if until
        else at - datetime.fromisoformat(mark["at"]) < lease
    )
    return bool(mark[_MARK] == "taken" and fresh and owner_alive(mark.get("by", "")))


Append = Callable[[Sequence[str], NewPause | None], Awaitable[bool]]
"""Append entries to a thread's kept history, with the pause the run ends on, if it does (one
transaction): False, nothing written, when another writer appended first."""


def appender(runs: ExternalRuns, origin: str, thread: str, after: int) -> Append:
    """`Append` to the thread's kept history as it was read, `after` entries long."""

    async def append(new: Sequence[str], pause: NewPause | None = None) -> bool:
        return await runs.append_history(origin, thread, new, after=after, pause=pause)

    return append


async def renew_while(
    stopping: asyncio.Event, lease: timedelta, renew: Callable[[], Awaitable[bool]]
) -> bool:
    """Renew a hold every third of its `lease` until `stopping` is set: True then, False as
    soon as a renewal finds the hold another's. A renewal that raises (the store away for a
    moment) only shortens the hold. The caller sets `stopping`, never cancels: a renewal is
    not cut off halfway through its write."""
    every = max(lease.total_seconds() / 3, 0.05)
    while not stopping.is_set():
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(every):
                await stopping.wait()
                return True
        try:
            renewed = await renew()
        except Exception:  # a missed renewal only shortens the hold
            continue
        if not renewed:
            return False
    return True


def resumer(
    runs: ExternalRuns,
    resume: Callable[[str], Awaitable[tuple[Any, bool]]],
    on_resumed: Callable[[Resumed], Any] | None = None,
) -> Resumer:
    """A `Resumer` that calls `resume(thread)` for each pause of `runs`' origin once every call
    it waits on is decided; `resume` returns what the run returned (None: it did not run it)
    and whether the pause is over (False: another process holds the thread, or nothing it
    waits on is decided — the pause waits on)."""

    async def go_on(pause: Pause) -> Resumed | bool:
        output, over = await resume(pause.thread_id)
        if not over:
            return False
        return True if output is None else Resumed(pause.thread_id, output)

    return Resumer(runs, go_on, on_resumed=on_resumed)


class Hold:
    """A thread this process resumes (`Hold.take`): its mark is renewed while held — a resume
    longer than the lease is not taken over — and ended on every path, by what the resume
    `keep`s or by `release`. A renewal that finds the thread extended by another means the
    hold was lost: what this resume would keep is then refused by the compare-and-set."""

    def __init__(self, runs: ExternalRuns, origin: str, thread: str, length: int,
                 lease: timedelta) -> None:  # fmt: skip
        self.runs = runs
        self.origin = origin
        self.thread = thread
        self.length = length
        """The thread's length, this process's newest mark last."""
        self.lease = lease
        self.lost = False
        self._ended = False
        self._stopping = asyncio.Event()
        self._renewing: asyncio.Task[None] | None = None

    @classmethod
    async def take(cls, runs: ExternalRuns, origin: str, thread: str, entries: Sequence[str],
                   *, lease: timedelta = LEASE) -> Hold | None:  # fmt: skip
        """Mark the thread as resumed by this process (after `entries`, as read) and renew the
        mark until the hold ends; None when another process resumes it, or extended it
        since."""
        at = now(runs)
        if busy(entries, at):
            return None
        hold = cls(runs, origin, thread, len(entries), lease)
        if not await hold._append([hold._mark(at)]):
            return None
        hold._renewing = asyncio.create_task(hold._renew())
        return hold

    async def keep(self, items: Sequence[str], pause: NewPause | None = None) -> bool:
        """End the hold with `items` appended after it (a mark that says so when there are
        none: the thread is never left looking resumed), and the `pause` the run ends on;
        False when the hold was lost."""
        await self._stop()
        if self._ended:
            return False
        self._ended = True
        return await self._append(list(items) or [self._released()], pause)

    async def release(self) -> None:
        """End the hold with nothing kept (a resume that failed, or found nothing to do)."""
        await self._stop()
        if not self._ended:
            self._ended = True
            with contextlib.suppress(Exception):  # unreleased, the mark runs out with its lease
                await self._append([self._released()])

    def _mark(self, at: datetime) -> str:
        return json.dumps({_MARK: "taken", "at": at.isoformat(),
                           "until": (at + self.lease).isoformat(),
                           "by": self.runs.ledger.owner})  # fmt: skip

    def _released(self) -> str:
        return json.dumps({_MARK: "released", "at": now(self.runs).isoformat()})

    async def _append(self, items: list[str], pause: NewPause | None = None) -> bool:
        appended = await self.runs.append_history(self.origin, self.thread, items,
                                                  after=self.length, pause=pause)  # fmt: skip
        if appended:
            self.length += len(items)
        return appended

    async def _renew(self) -> None:
        self.lost = not await renew_while(
            self._stopping, self.lease, lambda: self._append([self._mark(now(self.runs))])
        )

    async def _stop(self) -> None:
        # The renewal is asked to stop, never cancelled mid-append: the hold's length must
        # stay what the store holds.
        self._stopping.set()
        if self._renewing is not None:
            await self._renewing
