"""The loop of ARCHITECTURE §1: model turn → gate → run, block or hold → pause → resume.

One pause per model turn holds all of its asked calls; the allowed ones have already run. A
paused run is resumed by whoever claims it first (compare-and-set on the run), once every held
call is decided. Approved and edited calls run through the ledger, keyed by their approval, so a
call runs at most once however often resuming is retried; rejected, answered and expired calls
become tool results. The model is called again only when every call of its turn has a result.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections import defaultdict
from collections.abc import AsyncIterator, Coroutine, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any, Literal, TypeAlias, TypeVar

from signoff import telemetry
from signoff.agent.agent import Agent
from signoff.agent.model import (
    History,
    Message,
    ModelTurn,
    StreamingModel,
    message_from_dict,
    message_to_dict,
)
from signoff.agent.results import (
    answer,
    approval_data,
    blocked_result,
    call_data,
    status_result,
    tool_message,
)
from signoff.agent.tools import ToolResult
from signoff.errors import ConflictError, SignoffError
from signoff.gate import CheckContext, Gate, Outcome
from signoff.gate.ids import new_id
from signoff.gate.once import record_unknown
from signoff.gate.preview import PREVIEW_SECONDS, Previews
from signoff.gate.worker import work_ready
from signoff.redaction import Redaction
from signoff.store.ledger import LedgerEntry
from signoff.store.runs import (
    ResumedTurn,
    RunRecord,
    RunStatus,
    RunWrite,
    StoredEvent,
)
from signoff.types import Approval, ToolCall

__all__ = ["RunEvent", "Runner", "TextDelta"]

LEASE = timedelta(minutes=5)

logger = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class TextDelta:
    """A piece of the model's text as it streams, for live display. Never stored: the whole
    text is stored as one ``text`` event when the turn is complete."""

    run_id: str
    text: str
    type: Literal["text_delta"] = "text_delta"

    @property
    def data(self) -> dict[str, Any]:
        return {"text": self.text}


RunEvent: TypeAlias = StoredEvent | TextDelta
"""What `Runner.start` and `Runner.resume` stream."""


class Runner:
    """Runs one agent (and its sub-agents) behind a Gate; `start` and `resume` stream the run's
    events."""

    def __init__(
        self,
        agent: Agent,
        gate: Gate,
        *,
        owner: str | None = None,
        lease: timedelta = LEASE,
        stream_text: bool = False,
        preview_timeout: float = PREVIEW_SECONDS,
        redaction: Redaction | None = None,
    ) -> None:
        self.agent = agent
        self.gate = gate
        self.store = gate.store
        self.lease = lease
        """How long a run stays this runner's without word from it; then another may take it."""
        self.stream_text = stream_text
        """Stream the model's text as `TextDelta`s when the model can stream."""
        # Edits of this agent's calls are checked against its tools' schemas.
        for path, schemas in agent.schemas().items():
            gate.register_schemas(schemas, agent=path)
        self.owner = owner or f"{os.getpid()}-{new_id()[-8:]}"
        """Who holds a run's lease while working on it: this process and this runner."""
        self.preview_timeout = preview_timeout
        """How long a tool's preview may take when its call is held (`Tool.preview`)."""
        self.redaction = redaction or Redaction()
        """The argument values masked in what a preview says (a server's ``redact:``)."""

    def previews(self, agent: Agent) -> Previews:
        """The previews of `agent`'s tools that have one, bounded by `preview_timeout` and
        masked by `redaction`."""
        functions = {t.name: t.previewing() for t in agent.tools if t.preview is not None}
        return Previews(functions, timeout=self.preview_timeout, redaction=self.redaction)

    async def start(
        self,
        thread_id: str,
        input: str,
        *,
        started_by: str | None = None,
        run_id: str | None = None,
    ) -> AsyncIterator[RunEvent]:
        """Start a run on the thread with a user message; stream its events until it pauses,
        completes or fails. `run_id` names the run (a new id by default)."""
        record = RunRecord(
            id=run_id or new_id(),
            thread_id=thread_id,
            agent=self.agent.name,
            status="running",
            started_by=started_by,
            lease_owner=self.owner,
            version=1,
        )
        scope = _Scope(agent=self.agent, path=self.agent.name, record=record, root=record)
        for stored in await self._create(scope, input):
            yield stored
        async for event in self._run(scope, None):
            yield event

    async def resume(self, run_id: str) -> AsyncIterator[RunEvent]:
        """Resume a run: paused with every held call decided (its sub-agents' too), or left
        running by a worker that died (its lease ran out). Stream its events.

        Raises `ConflictError` when another worker holds the run, the run is finished, some
        call still waits for a person, or the run is a sub-agent's (resume its root run).
        """
        # Claim the run and read its open turn in one step: nobody can change it under us.
        state = await self.store.resume_turn(
            run_id,
            agent=self.agent.name,
            path=self.agent.name,
            root_id=run_id,
            owner=self.owner,
            now=self.store.now(),
            lease=self.lease,
        )
        if state is None:
            raise ConflictError(f"run {run_id!r} is not paused, or another worker resumed it")
        scope = _Scope(
            agent=self.agent, path=self.agent.name, record=state.record, root=state.record
        )
        turn = _turn(scope, state)
        if turn.waiting:
            await self._pause_again(scope, turn)
            raise ConflictError(f"run {run_id!r} still waits on {len(turn.waiting)} approval(s)")
        scope.pending_events.append(("resumed", {"approvals": turn.decided}))
        telemetry.observer.resumed("runtime")
        async for event in self._run(scope, turn):
            yield event

    async def work(self, *, poll_interval: float = 1.0, concurrency: int = 32) -> None:
        """Resume this agent's runs as they become ready, until cancelled: a paused run once
        its last held call is decided (or expires), a run whose worker died once its lease
        runs out. Several workers, in one process or many sharing the database, may work the
        same agent: each run is resumed by the one that claims it first.

        Decisions taken through this worker's gate wake it at once, and so do decisions taken
        in other processes on PostgreSQL; otherwise it looks every `poll_interval` seconds.
        At most `concurrency` runs go on at once. What a resumed run does is in its log
        (`store.run_events`)."""

        async def ready() -> list[str]:
            return await self.store.ready_runs(self.agent.name, now=await self.store.clock())

        # A run left mid-way when this stops is taken over by another worker once its lease
        # runs out.
        await work_ready(self.gate, ready, self.resume_ready, poll_interval=poll_interval,
                         concurrency=concurrency)  # fmt: skip

    async def resume_ready(self, run_id: str) -> bool:
        """Resume the run to its next pause or its end, if it is still ready and this worker
        claims it first. Returns whether it did."""
        try:
            with telemetry.span("signoff.resume", {"signoff.run_id": run_id}):
                async for event in self.resume(run_id):
                    # Readers of run logs in this process (event streams) look at once.
                    self.gate.notifier.notify(event.run_id)
        except ConflictError:
            return False  # another worker took it, or it is not ready after all
        except Exception:  # a worker outlives any one run's trouble; the run is taken over
            logger.exception("resuming run %s failed; it will be taken over", run_id)
            return False
        return True

    # -- the loop --------------------------------------------------------------------------

    async def _create(self, scope: _Scope, input: str) -> list[StoredEvent]:
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

    async def _run(self, scope: _Scope, turn: _OpenTurn | None) -> AsyncIterator[RunEvent]:
        """Settle the open turn (if any), then alternate model turns and settling until the
        model stops calling tools, a call is held, or the run's turn budget is spent."""
        agent, record = scope.agent, scope.record
        while True:
            if turn is not None:
                async for event in self._settle(scope, turn):
                    yield event
                if scope.held:
                    return
            if scope.turns >= agent.max_turns:
                async for event in self._fail(scope, f"more than {agent.max_turns} model turns"):
                    yield event
                return
            instructions = [Message(role="system", content=agent.instructions)]
            history = History(
                await self.store.thread_texts(record.thread_id),
                head=instructions if agent.instructions else (),
            )
            reply: ModelTurn | None = None
            try:
                async with self._heartbeat(scope):  # a slow model is not a dead worker either
                    if self.stream_text and isinstance(agent.model, StreamingModel):
                        text: list[str] = []
                        calls: list[ToolCall] = []
                        async for delta in agent.model.stream(history, agent.specs):
                            if delta.text:
                                text.append(delta.text)
                                yield TextDelta(run_id=record.id, text=delta.text)
                            if delta.tool_call is not None:
                                calls.append(delta.tool_call)
                        reply = ModelTurn(text="".join(text), tool_calls=tuple(calls))
                    else:
                        reply = await agent.model.complete(history, agent.specs)
            except Exception as exc:  # the model is another service: its failure ends the run
                reason = f"the model failed: {type(exc).__name__}: {exc}"
                async for event in self._fail(scope, reason):
                    yield event
                return
            scope.turns += 1
            # Arguments the gate cannot take are kept as the reason why (and blocked with it):
            # a model's 100,000 levels of nesting would break every reader of the run.
            admit = self.gate.limits.admit
            calls_made = [
                replace(c, agent=scope.path, server=_server(agent, c), args=admit(c.args))
                for c in _unique_ids(reply.tool_calls)
            ]
            said = Message(role="assistant", content=reply.text, tool_calls=tuple(calls_made))
            events: list[tuple[str, dict[str, object]]] = []
            if reply.text:
                events.append(("text", {"text": reply.text}))
            events += [("tool_call", call_data(c)) for c in calls_made]
            if calls_made:
                # Written with the turn's first step (its calls held, or started): one commit.
                scope.pending_messages.append(message_to_dict(said))
                scope.pending_events += events
                turn = _OpenTurn(number=scope.turns, calls=calls_made, approvals={}, requested=[])
                continue
            events.append(("completed", {}))
            scope.final = reply.text
            for event in await self._append(
                scope, messages=[message_to_dict(said)], events=events, status="completed"
            ):
                yield event
            return

    async def _fail(self, scope: _Scope, reason: str) -> AsyncIterator[RunEvent]:
        scope.failure = reason
        for event in await self._append(
            scope, events=[("failed", {"reason": reason})], status="failed"
        ):
            yield event

    async def _settle(self, scope: _Scope, turn: _OpenTurn) -> AsyncIterator[RunEvent]:
        """Give every open call of the turn its result: decided ones from their decision, the
        others through the gate — running, blocking, or holding them (then the run pauses).
        A call already started (a sub-agent's, or one a dead worker began) goes on without
        asking the gate again."""
        agent, record = scope.agent, scope.record
        results: dict[str, dict[str, object]] = {}
        log: list[RunEvent] = []  # what running the calls wrote to the run's (and sub-runs') logs
        held: list[Approval] = []
        for call in turn.calls:
            if agent.tool(call.name) is None and agent.subagent(call.name) is None:
                # Nothing to approve: the call could never run.
                names = sorted(s.name for s in agent.specs)
                text = f"unknown tool {call.name!r}; the tools are {names}"
                results[call.id] = tool_message(call, ToolResult(content=text, is_error=True))
        open_calls = [c for c in turn.calls if c.id not in results]
        keys = {c.id: f"{record.id}:{turn.number}:{c.id}" for c in open_calls}
        keys |= {c.id: turn.approvals[c.id].id for c in open_calls if c.id in turn.approvals}
        runnable: list[ToolCall] = []
        fresh: list[ToolCall] = []
        if any(a.status in ("approved", "edited") for a in turn.approvals.values()):
            await self.gate.catch_up()  # approved calls run only by the policy of now
        for call in open_calls:
            approval = turn.approvals.get(call.id)
            if approval is None:
                (runnable if keys[call.id] in turn.begun else fresh).append(call)
            elif approval.status in ("approved", "edited"):
                denied = self.gate.denied_now(approval)
                if denied is None:
                    runnable.append(approval.call)  # as approved: edited arguments included
                else:  # approved, then the policy changed: it never runs what it now denies
                    text = f"This call was approved, but {denied}. Do not retry it."
                    results[call.id] = tool_message(call, status_result("blocked", text))
            elif approval.pending:  # pragma: no cover - resuming waits for every decision
                held.append(approval)
            else:
                results[call.id] = answer(approval)
        settled = False
        if fresh:
            context = CheckContext(
                run_id=scope.root.id,
                thread_id=scope.root.thread_id,
                requested_by=scope.root.started_by,
                origin="runtime",
            )
            write = self._write(scope)  # the turn's calls (or the resume), written first

            def then(outcomes: list[Outcome]) -> RunWrite:
                # On the store's thread, in the hold's transaction: only computes.
                more, blocked, asked = _tally(outcomes)
                if runnable or more:
                    return write
                # Nothing to run: the turn settles (or pauses) in this very transaction.
                return _closing(write, turn, results | blocked, held + asked)

            outcomes, stored = await self.gate.hold(
                fresh, context, then=then, previews=self.previews(agent)
            )
            log += stored
            more, blocked, asked = _tally(outcomes)
            runnable += more
            results |= blocked
            held += asked
            settled = not runnable
        elif len(runnable) > 1 and scope.pending():
            log += await self._append(scope)  # before calls that run side by side
        if runnable:
            executed = await _all(
                [self._execute(scope, c, key=keys[c.id], log=log) for c in runnable]
            )
            for call, result in zip(runnable, executed, strict=True):
                if isinstance(result, _Suspended):
                    held += result.approvals
                else:
                    results[call.id] = result
        scope.held = held
        if not settled:
            log += await self._store(_closing(self._write(scope), turn, results, held))
        if held and scope.record.id == scope.root.id:  # a sub-agent's pause is its root's
            telemetry.observer.paused("runtime")
        for event in _in_order(log):
            yield event

    async def _pause_again(self, scope: _Scope, turn: _OpenTurn) -> None:
        """Give back a run that still waits, logging any approval its last pause did not (its
        worker died in between) and the pause itself when so."""
        unlisted = [a for a in turn.waiting if a.id not in turn.listed]
        events: list[tuple[str, dict[str, object]]] = [
            ("approval_requested", approval_data(a)) for a in unlisted
        ]
        if unlisted:
            events.append(("paused", {"approvals": [a.id for a in turn.waiting]}))
        await self._append(scope, events=events, status="paused")

    async def _execute(
        self, scope: _Scope, call: ToolCall, *, key: str, log: list[RunEvent]
    ) -> dict[str, object] | _Suspended:
        """Run the call once, through the ledger: a second attempt with the same key returns the
        first result, and a call whose first attempt died midway is re-run only if idempotent
        (a sub-agent's run is picked up where it stopped). The events it writes (tool started,
        finished; a sub-agent's whole run) are added to `log`."""
        args: object = call.args
        if not isinstance(args, dict):
            text = f"the arguments are not a JSON object: {args!r}; the call did not run"
            return tool_message(call, ToolResult(content=text, is_error=True))
        sub = scope.agent.subagent(call.name)
        tool = scope.agent.tool(call.name)
        if tool is None and sub is None:  # pragma: no cover - _settle answers unknown tools
            raise AssertionError(f"unknown tool {call.name!r} reached execution")
        if tool is not None and not tool.available:
            # Leave the call unstarted: a worker that can run it takes the run over.
            raise ConflictError(f"tool {call.name!r} cannot be run now; the call was not started")
        rerun = sub is not None or (tool is not None and tool.idempotent)
        write = self._write(scope)  # anything not yet written goes first
        started: dict[str, object] = {"call_id": call.id, "tool": call.name, "key": key}

        def then(previous: LedgerEntry | None) -> RunWrite | None:
            # On the store's thread, in the ledger's transaction: only computes.
            if previous is None:
                return _plus(write, [("tool_started", started | {"retry": False})])
            if previous.result is None and rerun and sub is None:
                return _plus(write, [("tool_started", started | {"retry": True})])
            return write if write.messages or write.events else None

        previous, stored = await self.store.ledger_start(
            key,
            run_id=scope.record.id,
            call_id=call.id,
            tool=call.name,
            digest=call.digest,
            at=self.store.now(),
            then=then,
        )
        log += stored
        if previous is not None and previous.result is not None:
            return previous.result
        if sub is not None:
            return await self._delegate(scope, sub, call, args, key=key, log=log)
        assert tool is not None
        if previous is not None and not rerun:
            await record_unknown(
                self.store, key, tool=call.name, run_id=scope.record.id, call_id=call.id
            )
            text = "This call started before a crash and its outcome is unknown; it was not re-run."
            return tool_message(call, status_result("unknown", text))
        held = None if ":" in key else key  # a held call runs under its approval's id
        with telemetry.span("signoff.execute", telemetry.executing(call, held)):
            async with self._heartbeat(scope):
                result = await tool.invoke(args, key=key)
        return await self._finish(scope, call, key, result, log)

    @contextlib.asynccontextmanager
    async def _heartbeat(self, scope: _Scope) -> AsyncIterator[None]:
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
                    await self._store(self._write(scope))
                except ConflictError:
                    # Another worker took the run over: the call's result will not be recorded
                    # by this one (its next write fails the same way).
                    logger.warning("run %s was taken over meanwhile", scope.record.id)
                    return
                except SignoffError:
                    logger.exception("renewing the lease of run %s failed", scope.record.id)

        task = asyncio.create_task(beat())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _finish(
        self, scope: _Scope, call: ToolCall, key: str, result: ToolResult, log: list[RunEvent]
    ) -> dict[str, object]:
        message = tool_message(call, result)
        finished = {"call_id": call.id, "tool": call.name, "is_error": result.is_error}
        write = _plus(self._write(scope), [("tool_finished", finished)])
        log += await self.store.ledger_finish(key, result=message, at=write.at, write=write)
        return message

    async def _delegate(
        self,
        scope: _Scope,
        sub: Agent,
        call: ToolCall,
        args: dict[str, Any],
        *,
        key: str,
        log: list[RunEvent],
    ) -> dict[str, object] | _Suspended:
        """Answer a call of a sub-agent: start its run (one per call, keyed by the call's
        ledger key), or pick it up where it stopped; a run that pauses suspends the call, and
        its held approvals pause this run too."""
        child = await self.store.child_run(scope.record.id, key)
        if child is None:
            text = args.get("input")
            if not isinstance(text, str):
                result = ToolResult(content="the input must be a string", is_error=True)
                return await self._finish(scope, call, key, result, log)
            record = RunRecord(
                id=new_id(),
                thread_id=f"{key}/{sub.name}",
                agent=sub.name,
                status="running",
                started_by=scope.root.started_by,
                lease_owner=self.owner,
                version=1,
                parent_id=scope.record.id,
                parent_key=key,
            )
            inner = scope.child(sub, record)
            log += await self._create(inner, text)
            turn = None
        else:
            inner = scope.child(sub, child)
            if child.status in ("completed", "failed"):
                # It ended, and our worker died before taking its result: take it now.
                tail = await self.store.open_turn(child.id)
                inner.final = message_from_dict(tail.messages[0]).content if tail.messages else ""
                if child.status == "failed":
                    [*_, end] = await self.store.run_events(child.id)
                    inner.failure = str(end.data.get("reason", "unknown"))
                return await self._finish(scope, call, key, _outcome(inner), log)
            state = await self.store.resume_turn(
                child.id,
                agent=sub.name,
                path=inner.path,
                root_id=scope.root.id,
                owner=self.owner,
                now=self.store.now(),
                lease=self.lease,
            )
            if state is None:
                raise ConflictError(f"the sub-agent's run {child.id!r} is held by another worker")
            inner = scope.child(sub, state.record)
            turn = _turn(inner, state)
            if turn.waiting:  # its worker died between its pause and ours: pause again
                await self._pause_again(inner, turn)
                return _Suspended(approvals=turn.waiting)
            inner.pending_events.append(("resumed", {"approvals": turn.decided}))
        async for event in self._run(inner, turn):
            log.append(event)
        if inner.held:
            return _Suspended(approvals=inner.held)
        return await self._finish(scope, call, key, _outcome(inner), log)

    def _write(
        self,
        scope: _Scope,
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

    async def _store(self, write: RunWrite) -> list[StoredEvent]:
        return await self.store.append_to_run(
            write.run_id,
            at=write.at,
            messages=write.messages,
            events=write.events,
            status=write.status,
            owner=write.owner,
            lease_until=write.lease_until,
            ancestors=write.ancestors,
        )

    async def _append(
        self,
        scope: _Scope,
        *,
        messages: Sequence[dict[str, object]] = (),
        events: Sequence[tuple[str, dict[str, object]]] = (),
        status: RunStatus | None = None,
    ) -> list[StoredEvent]:
        return await self._store(
            self._write(scope, messages=messages, events=events, status=status)
        )


@dataclass(kw_only=True)
class _Scope:
    """One run being worked on: the root run, or a sub-agent's run inside it."""

    agent: Agent
    path: str
    """The agent path its calls carry: ``root`` or ``root/sub/subsub``."""
    record: RunRecord
    root: RunRecord
    """The run whose approvals these are: approvals surface there, with the agent path."""
    ancestors: tuple[str, ...] = ()
    """The runs this one works for, nearest first: their leases are renewed with its own."""
    turns: int = 0
    held: list[Approval] = field(default_factory=list)
    """After settling a turn: the approvals it is paused on (its sub-agents' included)."""
    final: str = ""
    failure: str | None = None
    pending_messages: list[dict[str, object]] = field(default_factory=list)
    pending_events: list[tuple[str, dict[str, object]]] = field(default_factory=list)
    """What the next write of the run's log carries first (a model turn, a resume): written
    with the step that follows, so that each step costs one commit."""

    def pending(self) -> bool:
        return bool(self.pending_messages or self.pending_events)

    def take_pending(
        self,
    ) -> tuple[list[dict[str, object]], list[tuple[str, dict[str, object]]]]:
        taken = self.pending_messages, self.pending_events
        self.pending_messages, self.pending_events = [], []
        return taken

    def child(self, agent: Agent, record: RunRecord) -> _Scope:
        return _Scope(
            agent=agent,
            path=f"{self.path}/{agent.name}",
            record=record,
            root=self.root,
            ancestors=(self.record.id, *self.ancestors),
        )


@dataclass(frozen=True, kw_only=True)
class _Suspended:
    """A sub-agent's call that cannot finish yet: its run waits on these approvals."""

    approvals: list[Approval]


@dataclass(kw_only=True)
class _OpenTurn:
    number: int
    """The turn's number in its run: part of each call's ledger key."""
    calls: list[ToolCall]
    """The turn's calls that have no result yet, in the order the model made them."""
    approvals: dict[str, Approval]
    """By call id: the approval holding that call, for those held."""
    requested: list[Approval]
    """The approvals the turn waits or waited on: its own, and its sub-agents' of its last
    pause."""
    listed: set[str] = field(default_factory=set)
    """Those its last pause logged."""
    begun: set[str] = field(default_factory=set)
    """The ledger keys of the turn's calls already started."""

    @property
    def waiting(self) -> list[Approval]:
        return [a for a in self.requested if a.pending]

    @property
    def decided(self) -> list[str]:
        return [a.id for a in self.requested if not a.pending]


def _unique_ids(calls: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
    """The turn's calls with ids unique within it (models may repeat or omit them): each result
    must answer exactly one call."""
    seen: set[str] = set()
    out = []
    for index, call in enumerate(calls):
        call_id = call.id or f"call_{index}"
        while call_id in seen:
            call_id = f"{call_id}_{index}"
        seen.add(call_id)
        out.append(call if call_id == call.id else replace(call, id=call_id))
    return tuple(out)


def _turn(scope: _Scope, state: ResumedTurn) -> _OpenTurn:
    """The calls of the run's last model turn that have no result yet, with the approvals that
    hold them (also those a worker requested and died before logging, which would otherwise be
    asked for twice) and those its last pause waited on (its sub-agents' too)."""
    tail = state.turn
    scope.turns = tail.turns
    if not tail.messages:
        return _OpenTurn(number=tail.turns, calls=[], approvals={}, requested=[])
    said, after = message_from_dict(tail.messages[0]), tail.messages[1:]
    answered = {m["tool_call_id"] for m in after if m["role"] == "tool"}
    calls = [c for c in said.tool_calls if c.id not in answered]
    open_ids = {c.id for c in calls}
    own = [a for a in state.own if a.call.id in open_ids]
    requested = list({a.id: a for a in [*state.listed, *own]}.values())
    return _OpenTurn(
        number=tail.turns,
        calls=calls,
        approvals={
            a.call.id: a for a in requested if a.call.id in open_ids and a.call.agent == scope.path
        },
        requested=requested,
        listed={a.id for a in state.listed},
        begun=state.begun,
    )


def _tally(
    outcomes: Sequence[Outcome],
) -> tuple[list[ToolCall], dict[str, dict[str, object]], list[Approval]]:
    """The gate's outcomes as calls to run, results of blocked calls, and held approvals."""
    return (
        [o.call for o in outcomes if o.kind == "run"],
        {
            o.call.id: tool_message(o.call, blocked_result(o.verdict))
            for o in outcomes
            if o.kind == "block"
        },
        [o.approval for o in outcomes if o.approval is not None],
    )


def _closing(
    write: RunWrite,
    turn: _OpenTurn,
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


def _plus(write: RunWrite, events: Sequence[tuple[str, dict[str, object]]]) -> RunWrite:
    return replace(write, events=[*write.events, *events])


async def _all(steps: Sequence[Coroutine[Any, Any, T]]) -> list[T]:
    """Run the steps side by side; if one fails, stop the others before raising its error, so
    that nothing of the run goes on behind the caller's back."""
    if len(steps) == 1:
        return [await steps[0]]
    tasks = [asyncio.create_task(step) for step in steps]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _in_order(log: Sequence[RunEvent]) -> list[RunEvent]:
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


def _server(agent: Agent, call: ToolCall) -> str | None:
    """The MCP server a call goes to, as the policy's ``servers:`` sections match it."""
    tool = agent.tool(call.name)
    return None if tool is None else tool.server


def _outcome(scope: _Scope) -> ToolResult:
    """What a sub-agent's finished run gives its parent: its last words, or why it failed."""
    if scope.failure is not None:
        return ToolResult(content=f"the agent {scope.path} failed: {scope.failure}", is_error=True)
    return ToolResult(content=scope.final)
