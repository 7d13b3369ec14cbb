"""A pause continued once, whoever sends the resume: the claim a LangGraph node's run takes on
the pause it goes on past (`Continuation.take`), so that two invocations resuming the same
checkpoint at once — two processes, two threads, raw ``Command(resume=...)`` or signoff's
`resumer` — do not both go on to call the model. The claim is the pause's own lease
(``pauses.lease_owner``, as `Resumer` claims it), taken by compare-and-set, renewed while the
node runs, and ended with it: ``done`` when the node returned, ``waiting`` when it raised
(LangGraph then writes nothing, and the pause may be continued again). A claim whose holder's
process is gone, or whose lease ran out, is taken over — a crashed continuation never blocks
the thread."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from contextvars import ContextVar, Token
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from signoff.errors import ConflictError
from signoff.gate.external import LEASE, ExternalRuns, Pause, PauseStatus
from signoff.gate.ids import new_id
from signoff.gate.once import owner_alive
from signoff.integrations._threads import renew_while

__all__ = ["RESUMING", "Continuation", "acontinuing", "conflict", "continuing"]

RESUMING: ContextVar[tuple[str, str] | None] = ContextVar("signoff_resuming", default=None)
"""(pause id, claim owner) while signoff's `resumer` invokes the graph on a pause it claimed:
the invocation continues under the resumer's claim instead of finding it taken."""


class Continuation:
    """The pauses one run of a node continues (normally one), held until `end`."""

    def __init__(self, runs: ExternalRuns, *, lease: timedelta = LEASE) -> None:
        self.runs = runs
        self.lease = lease
        self.owner = f"{runs.ledger.owner}/{new_id()[-12:]}"
        """This node run's claim owner: its process (for `owner_alive`) and the run itself —
        another invocation in the same process is another owner."""
        self._resuming = RESUMING.get()
        self._holds: dict[str, _Hold] = {}

    async def take(self, pause: Pause) -> None:
        """Claim `pause` for this node run (again, when it holds it). Raises `ConflictError`
        when another live invocation continues it, or continued it."""
        held = self._holds.get(pause.id)
        if held is not None:
            if held.lost:
                raise conflict(pause, held.seen.lease_owner)
            return
        resumer = self._resuming
        owner = resumer[1] if resumer is not None and resumer[0] == pause.id else self.owner
        runs, seen = self.runs, pause
        while True:
            at = runs.now()
            if not _takeable(seen, owner, at):
                raise conflict(pause, seen.lease_owner)
            until = at + self.lease
            taken = await runs.take_pause(seen, status="resuming", owner=owner, until=until,
                                          now=at)  # fmt: skip
            if taken:
                break
            found = await runs.get_pause(pause.id)
            if found is None:  # pragma: no cover - pauses are never deleted
                raise conflict(pause, None)
            seen = found
        hold = _Hold(self.runs, replace(seen, status="resuming", lease_owner=owner,
                                        lease_until=until), self.lease)  # fmt: skip
        self._holds[pause.id] = hold

    async def end(self, *, ok: bool) -> None:
        """End every claim: ``done`` when the node returned (`ok`), ``waiting`` when it
        raised. Raises `ConflictError` when a claim was lost meanwhile (the node's writes
        must then not stand)."""
        holds, self._holds = list(self._holds.values()), {}
        lost = [h for h in [await h.end(ok=ok) for h in holds] if h is not None]
        if lost and ok:
            raise conflict(lost[0], lost[0].lease_owner)


_CONTINUING: ContextVar[Continuation | None] = ContextVar("signoff_continuing", default=None)
"""The pauses the node running in this context continues (`continuing`)."""


class _Continuing:
    """`continuing` and `acontinuing`: the node's run's `Continuation` while the block runs."""

    def __init__(self, runs: ExternalRuns) -> None:
        self.runs = runs
        self._token: Token[Continuation | None] | None = None
        self._continuation: Continuation | None = None

    def _enter(self) -> Continuation:
        outer = _CONTINUING.get()
        if outer is not None and outer.runs is self.runs:
            return outer  # the outer block ends it
        self._continuation = Continuation(self.runs)
        self._token = _CONTINUING.set(self._continuation)
        return self._continuation

    def _leave(self, ok: bool) -> Coroutine[Any, Any, None] | None:
        """How this block's continuation ends (None when an outer block's goes on)."""
        if self._token is None or self._continuation is None:
            return None
        _CONTINUING.reset(self._token)
        return self._continuation.end(ok=ok)

    def __enter__(self) -> Continuation:
        return self._enter()

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        end = self._leave(ok=kind is None)
        if end is not None:
            self.runs.run(end)

    async def __aenter__(self) -> Continuation:
        return self._enter()

    async def __aexit__(self, kind: type[BaseException] | None, *_: object) -> None:
        end = self._leave(ok=kind is None)
        if end is not None:
            await self.runs.bridge.arun(end)


def continuing(runs: ExternalRuns) -> _Continuing:
    """Hold the pauses a node's run goes on past until it ends (the node's run's, when a node
    already holds them): done when it returns, given back when it raises."""
    return _Continuing(runs)


def acontinuing(runs: ExternalRuns) -> _Continuing:
    """`continuing` for async nodes (``async with``)."""
    return _Continuing(runs)


class _Hold:
    """One pause's claim, renewed until it ends."""

    def __init__(self, runs: ExternalRuns, seen: Pause, lease: timedelta) -> None:
        self.runs = runs
        self.seen = seen
        """The pause as this claim last wrote it: what each compare-and-set expects."""
        self.lease = lease
        self.lost = False
        self._stopping = asyncio.Event()
        self._renewing = asyncio.create_task(self._renew())

    async def end(self, *, ok: bool) -> Pause | None:
        """End the claim; the pause as last held when it was lost, else None."""
        # Asked to stop, never cancelled mid-write: `seen` must stay what the store holds.
        self._stopping.set()
        await self._renewing
        if self.lost:
            return self.seen
        if ok:
            # The lease stays on a done pause: an invocation that read the same checkpoint and
            # comes late is refused while the continuation may still be saving its step.
            done = await self._set("done", self.seen.lease_owner, self.runs.now() + self.lease)
            return None if done else self.seen
        with contextlib.suppress(Exception):  # not given back, it runs out with its lease
            await self._set("waiting", None, None)
        return None

    async def _set(self, status: PauseStatus, owner: str | None, until: datetime | None) -> bool:
        at = self.runs.now()
        done = await self.runs.take_pause(self.seen, status=status, owner=owner, until=until,
                                          now=at)  # fmt: skip
        if done:
            self.seen = replace(self.seen, status=status, lease_owner=owner, lease_until=until)
        else:
            self.lost = True
        return done

    async def _renew(self) -> None:
        # A renewal that finds the pause moved marks the claim lost itself (`_set`).
        await renew_while(self._stopping, self.lease,
                          lambda: self._set("resuming", self.seen.lease_owner,
                                            self.runs.now() + self.lease))  # fmt: skip


def _takeable(seen: Pause, owner: str, at: datetime) -> bool:
    """Whether `owner` may continue the pause as `seen`: nobody continues it, `owner` does
    already, or whoever does is gone (its process, or its lease)."""
    if seen.status == "waiting" or seen.lease_owner == owner:
        return True
    if seen.lease_owner is None:
        return False  # done for good: the run went on past it
    expired = seen.lease_until is None or seen.lease_until <= at
    if seen.status == "done":
        # Its continuation returned: a process that then exited does not make the paused
        # checkpoint continuable again — only a lease run out does (its step may never have
        # been saved, and the thread must not stay stuck).
        return expired
    return expired or not owner_alive(seen.lease_owner)


def conflict(pause: Pause, owner: str | None) -> ConflictError:
    by = f" by {owner!r}" if owner else ""
    return ConflictError(
        f"signoff: pause {pause.id!r} of thread {pause.thread_id!r} is being continued, or was "
        f"continued,{by}: this resume is refused and writes nothing; read the thread's state "
        "to see where it stands"
    )
