"""A run's log as one worker writes it: each step of the loop is one commit that carries what
waits to be written first (a model turn, a resume), renews the worker's lease on the run (and on
the runs it works for) and appends the step's messages and events — a tool's start and result
in the ledger's own transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING

from signoff.agent.events import RunEvent
from signoff.agent.model import Message, message_to_dict
from signoff.agent.results import approval_data, tool_message
from signoff.agent.state import OpenTurn, RunScope, open_turn
from signoff.agent.tools import ToolResult
from signoff.errors import ConflictError, SignoffError
from signoff.gate.background import background
from signoff.store.ledger import LedgerEntry
from signoff.store.runs import ResumedTurn, RunStatus, RunWrite, StoredEvent
from signoff.types import Approval, ToolCall
from signoff.types.fields import same_named

if TYPE_CHECKING:
    from signoff.store.base import Store

__all__ = ["RunLog", "closing", "in_order", "plus"]

logger = logging.getLogger(__name__)


class RunLog:
    """The writes of one worker (`owner`) to the logs of the runs it works on, each renewing
    its lease on them for `lease`."""

    def __init__(self, store: Store, *, owner: str, lease: timedelta) -> None:
        self.store = store
        self.owner = owner
        self.lease = lease

    async def create(self, scope: RunScope, input: str) -> list[StoredEvent]:
        """Create the run with the user's message, leased to this worker."""
        now = self.store.now()
        started: dict[str, object] = {
            "agent": scope.agent.name,
            "thread_id": scope.record.thread_id,
            "input": input,
        }
        if scope.record.parent_id is not None:
            started |= {"path": scope.path, "parent_run_id": scope.record.parent_id}
        return await self.store.create_run(
            scope.record,
            at=now,
            lease_until=now + self.lease,
            messages=[message_to_dict(Message(role="user", content=input))],
            events=[("run_started", started)],
        )

    def write(
        self,
        scope: RunScope,
        *,
        messages: Sequence[dict[str, object]] = (),
        events: Sequence[tuple[str, dict[str, object]]] = (),
        status: RunStatus | None = None,
    ) -> RunWrite:
        """A write of the run's log by this worker, after whatever waits to be written."""
        now = self.store.now()
        pending_messages, pending_events = scope.take_pending()
        return RunWrite(
            run_id=scope.record.id,
            owner=self.owner,
            at=now,
            lease_until=now + self.lease,  # every write renews the lease: a live worker keeps it
            messages=[*pending_messages, *messages],
            events=[*pending_events, *events],
            status=status,
            ancestors=scope.ancestors,  # and a sub-agent's keeps the runs it works for
        )

    async def commit(self, write: RunWrite) -> list[StoredEvent]:
        return await self.store.append_to_run(
            write.run_id,
            **same_named(write, ("at", "messages", "events", "status")),
            **same_named(write, ("owner", "lease_until", "ancestors")),
        )

    async def append(
        self,
        scope: RunScope,
        *,
        messages: Sequence[dict[str, object]] = (),
        events: Sequence[tuple[str, dict[str, object]]] = (),
        status: RunStatus | None = None,
    ) -> list[StoredEvent]:
        return await self.commit(self.write(scope, messages=messages, events=events, status=status))

    async def claim(
        self, run_id: str, *, agent: str, path: str, root_id: str
    ) -> ResumedTurn | None:
        """Claim the run for this worker and read its open turn, in one step: nobody can change
        it under us. None when it is not ready, or another worker holds it."""
        return await self.store.resume_turn(
            run_id,
            agent=agent,
            path=path,
            root_id=root_id,
            owner=self.owner,
            now=self.store.now(),
            lease=self.lease,
        )

    async def reopen(self, scope: RunScope, state: ResumedTurn) -> OpenTurn:
        """The open turn of a run just claimed: when a call of it still waits, the run is given
        back paused; else it resumes, said with its next write."""
        turn = open_turn(scope, state)
        if turn.waiting:
            await self._pause_again(scope, turn)
        else:
            scope.pending_events.append(("resumed", {"approvals": turn.decided}))
        return turn

    async def start(
        self, scope: RunScope, call: ToolCall, key: str, *, retry: bool
    ) -> tuple[LedgerEntry | None, list[StoredEvent]]:
        """Start the call under `key` in the ledger, logging its start in the same transaction
        (after anything not yet written) — unless it started before, then again only when
        `retry` (a call re-run after its worker died). Returns the earlier start, if any."""
        write = self.write(scope)
        started: dict[str, object] = {"call_id": call.id, "tool": call.name, "key": key}

        def then(previous: LedgerEntry | None) -> RunWrite | None:
            # On the store's thread, in the ledger's transaction: only computes.
            if previous is None:
                return plus(write, [("tool_started", started | {"retry": False})])
            if previous.result is None and retry:
                return plus(write, [("tool_started", started | {"retry": True})])
            return write if write.messages or write.events else None

        return await self.store.ledger_start(
            key,
            run_id=scope.record.id,
            call_id=call.id,
            tool=call.name,
            digest=call.digest,
            at=self.store.now(),
            then=then,
        )

    async def _pause_again(self, scope: RunScope, turn: OpenTurn) -> None:
        """Give back a run that still waits, logging any approval its last pause did not (its
        worker died in between) and the pause itself when so."""
        unlisted = [a for a in turn.waiting if a.id not in turn.listed]
        events: list[tuple[str, dict[str, object]]] = [
            ("approval_requested", approval_data(a)) for a in unlisted
        ]
        if unlisted:
            events.append(("paused", {"approvals": [a.id for a in turn.waiting]}))
        await self.append(scope, events=events, status="paused")

    @contextlib.asynccontextmanager
    async def heartbeat(self, scope: RunScope) -> AsyncIterator[None]:
        """While the model or a tool works, renew the run's lease (and the runs above it) every
        third of the lease: one that takes longer than the lease is not taken for a dead
        worker's."""

        every = self.lease.total_seconds() / 3
        if every <= 0:  # a zero lease is never held: nothing to keep
            yield
            return

        async def beat() -> None:
            while True:
                await asyncio.sleep(max(every, 0.01))
                try:
                    await self.commit(self.write(scope))
                except ConflictError:
                    # Another worker took the run over: the call's result will not be recorded
                    # by this one (its next write fails the same way).
                    logger.warning("run %s was taken over meanwhile", scope.record.id)
                    return
                except SignoffError:
                    logger.exception("renewing the lease of run %s failed", scope.record.id)

        async with background(beat()):
            yield

    async def finish(
        self, scope: RunScope, call: ToolCall, key: str, result: ToolResult, log: list[RunEvent]
    ) -> dict[str, object]:
        message = tool_message(call, result)
        finished = {"call_id": call.id, "tool": call.name, "is_error": result.is_error}
        write = plus(self.write(scope), [("tool_finished", finished)])
        log += await self.store.ledger_finish(key, result=message, at=write.at, write=write)
        return message


def closing(
    write: RunWrite,
    turn: OpenTurn,
    results: dict[str, dict[str, object]],
    held: Sequence[Approval],
) -> RunWrite:
    """`write`, closing the settling of a turn: the results in call order, then the held
    approvals and the pause, if any."""
    ordered = [results[c.id] for c in turn.calls if c.id in results]
    events: list[tuple[str, dict[str, object]]] = [("tool_result", r) for r in ordered]
    events += [("approval_requested", approval_data(a)) for a in held]
    if held:
        events.append(("paused", {"approvals": [a.id for a in held]}))
    return replace(
        write,
        messages=[*write.messages, *ordered],
        events=[*write.events, *events],
        status="paused" if held else write.status,
    )


def plus(write: RunWrite, events: Sequence[tuple[str, dict[str, object]]]) -> RunWrite:
    return replace(write, events=[*write.events, *events])


def in_order(log: Sequence[RunEvent]) -> list[RunEvent]:
    """The events in the order they were written, each run's in sequence: calls running at
    once may return their events out of order."""
    slots: dict[str, list[int]] = defaultdict(list)
    for index, event in enumerate(log):
        slots[event.run_id].append(index)
    ordered = list(log)
    for indexes in slots.values():
        events = sorted((log[i] for i in indexes), key=lambda e: getattr(e, "seq", 0))
        for index, event in zip(indexes, events, strict=True):
            ordered[index] = event
    return ordered
