"""A framework's thread as an integration keeps it in signoff's store (``external_history``):
entries appended by compare-and-set on the length read, and the marks that let one process at a
time resume it — so the same pause resumed by two processes calls the model once, and the calls
the model makes after the resume run once, whatever their ids."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from signoff.gate.external import LEASE, ExternalRuns, Pause, Resumer
from signoff.gate.once import owner_alive

__all__ = ["busy", "now", "release", "resumer", "take", "unmarked"]

_MARK = "signoff.resume"


def now() -> datetime:
    return datetime.now(UTC)


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
    fresh = at - datetime.fromisoformat(mark["at"]) < lease
    return bool(mark[_MARK] == "taken" and fresh and owner_alive(mark.get("by", "")))


async def take(runs: ExternalRuns, origin: str, thread: str, entries: Sequence[str]) -> bool:
    """Mark the thread as resumed by this process (after `entries`, as read): False when another
    process resumes it, or extended it since."""
    at = now()
    if busy(entries, at):
        return False
    mark = json.dumps({_MARK: "taken", "at": at.isoformat(), "by": runs.ledger.owner})
    return await runs.bridge.arun(
        runs.store.append_history(origin, thread, [mark], after=len(entries), now=at)
    )


async def release(runs: ExternalRuns, origin: str, thread: str, after: int) -> None:
    """Give the thread back (a resume that failed, or found nothing to do), when it still ends
    with this process's mark."""
    at = now()
    mark = json.dumps({_MARK: "released", "at": at.isoformat()})
    await runs.bridge.arun(runs.store.append_history(origin, thread, [mark], after=after, now=at))


def resumer(runs: ExternalRuns, resume: Callable[[str], Awaitable[Any]]) -> Resumer:
    """A `Resumer` that calls `resume(thread)` for each pause of `runs`' origin once every call
    it waits on is decided."""

    async def go_on(pause: Pause) -> None:
        await resume(pause.thread_id)

    return Resumer(runs, go_on)
