"""The loop of ARCHITECTURE §1: model turn → gate → run, block or hold → pause → resume.

One pause per model turn holds all of its asked calls; the allowed ones have already run. A
paused run is resumed by whoever claims it first (compare-and-set on the run), once every held
call is decided. Approved and edited calls run through the ledger, keyed by their approval, so a
call runs at most once however often resuming is retried; rejected, answered and expired calls
become tool results. The model is called again only when every call of its turn has a result.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from signoff.agent.model import Message, Model, message_from_dict, message_to_dict
from signoff.agent.tools import Tool, ToolResult
from signoff.errors import ConflictError
from signoff.gate import CheckContext, Gate
from signoff.gate.ids import new_id
from signoff.store.runs import RunRecord, RunStatus, StoredEvent
from signoff.types import Approval, Respond, ToolCall, Verdict

__all__ = ["Agent", "Runner"]

LEASE = timedelta(minutes=5)


@dataclass(frozen=True, kw_only=True)
class Agent:
    """A model with tools and instructions."""

    name: str
    model: Model
    tools: Sequence[Tool] = ()
    instructions: str = ""
    max_turns: int = 50
    """Model turns per run before it fails: a loop that never ends is a bug, not a plan."""
    _by_name: dict[str, Tool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {t.name: t for t in self.tools})

    def tool(self, name: str) -> Tool | None:
        return self._by_name.get(name)


class Runner:
    """Runs one agent behind a Gate; `start` and `resume` stream the run's events."""

    def __init__(
        self, agent: Agent, gate: Gate, *, owner: str | None = None, lease: timedelta = LEASE
    ) -> None:
        self.agent = agent
        self.gate = gate
        self.store = gate.store
        self.lease = lease
        """How long a run stays this runner's without word from it; then another may take it."""
        # Edits of this agent's calls are checked against its tools' schemas.
        gate.register_schemas({t.name: t.spec.parameters for t in agent.tools})
        self.owner = owner or f"{os.getpid()}-{new_id()[-8:]}"
        """Who holds a run's lease while working on it: this process and this runner."""

    async def start(
        self, thread_id: str, input: str, *, started_by: str | None = None
    ) -> AsyncIterator[StoredEvent]:
        """Start a run on the thread with a user message; stream its events until it pauses,
        completes or fails."""
        now = _now()
        record = RunRecord(
            id=new_id(),
            thread_id=thread_id,
            agent=self.agent.name,
            status="running",
            started_by=started_by,
            lease_owner=self.owner,
            version=1,
        )
        user = message_to_dict(Message(role="user", content=input))
        for event in await self.store.create_run(
            record,
            at=now,
            lease_until=now + self.lease,
            messages=[user],
            events=[
                ("run_started", {"agent": self.agent.name, "thread_id": thread_id, "input": input})
            ],
        ):
            yield event
        async for event in self._run(record, None):
            yield event

    async def resume(self, run_id: str) -> AsyncIterator[StoredEvent]:
        """Resume a run: paused with every held call decided, or left running by a worker that
        died (its lease ran out). Stream its events.

        Raises `ConflictError` when another worker holds the run, the run is finished, or some
        call still waits for a person.
        """
        record = await self.store.get_run(run_id)
        if record.agent != self.agent.name:
            raise ConflictError(
                f"run {run_id!r} belongs to agent {record.agent!r}, not {self.agent.name!r}"
            )
        if not await self.store.claim_run(run_id, owner=self.owner, now=_now(), lease=self.lease):
            raise ConflictError(f"run {run_id!r} is not paused, or another worker resumed it")
        # Read the open turn only now that the run is ours: nobody can change it under us.
        turn = await self._open_turn(record)
        waiting = [a.id for a in turn.approvals.values() if a.pending]
        if waiting:
            await self._append(record, status="paused")
            raise ConflictError(f"run {run_id!r} still waits on {len(waiting)} approval(s)")
        decided = [a.id for a in turn.approvals.values()]
        for event in await self._append(record, events=[("resumed", {"approvals": decided})]):
            yield event
        async for event in self._run(record, turn):
            yield event

    # -- the loop --------------------------------------------------------------------------

    async def _run(self, record: RunRecord, turn: _OpenTurn | None) -> AsyncIterator[StoredEvent]:
        """Settle the open turn (if any), then alternate model turns and settling until the
        model stops calling tools, a call is held, or the run's turn budget is spent."""
        specs = [t.spec for t in self.agent.tools]
        while True:
            if turn is not None:
                paused = False
                async for event in self._settle(record, turn):
                    paused = paused or event.type == "paused"
                    yield event
                if paused:
                    return
            mine = [message_from_dict(m) for m in await self.store.run_messages(record.id)]
            if sum(m.role == "assistant" for m in mine) >= self.agent.max_turns:
                reason = f"more than {self.agent.max_turns} model turns"
                for event in await self._append(
                    record, events=[("failed", {"reason": reason})], status="failed"
                ):
                    yield event
                return
            history = [
                message_from_dict(m) for m in await self.store.thread_messages(record.thread_id)
            ]
            if self.agent.instructions:
                history.insert(0, Message(role="system", content=self.agent.instructions))
            try:
                reply = await self.agent.model.complete(history, specs)
            except Exception as exc:  # the model is another service: its failure ends the run
                reason = f"the model failed: {type(exc).__name__}: {exc}"
                for event in await self._append(
                    record, events=[("failed", {"reason": reason})], status="failed"
                ):
                    yield event
                return
            calls = _unique_ids(reply.tool_calls)
            said = Message(role="assistant", content=reply.text, tool_calls=calls)
            events: list[tuple[str, dict[str, object]]] = []
            if reply.text:
                events.append(("text", {"text": reply.text}))
            events += [("tool_call", _call_data(c)) for c in calls]
            done = not calls
            if done:
                events.append(("completed", {}))
            for event in await self._append(
                record,
                messages=[message_to_dict(said)],
                events=events,
                status="completed" if done else None,
            ):
                yield event
            if done:
                return
            number = sum(m.role == "assistant" for m in history)
            turn = _OpenTurn(number=number, calls=list(calls), approvals={})

    async def _settle(self, record: RunRecord, turn: _OpenTurn) -> AsyncIterator[StoredEvent]:
        """Give every open call of the turn its result: decided ones from their decision, the
        others through the gate — running, blocking, or holding them (then the run pauses)."""
        results: dict[str, dict[str, object]] = {}
        log: list[StoredEvent] = []  # what running the calls wrote to the run's log
        for call in turn.calls:
            approval = turn.approvals.get(call.id)
            if approval is not None:
                results[call.id] = await self._answer(record, approval, log)
            elif self.agent.tool(call.name) is None:
                # Nothing to approve: the call could never run.
                names = sorted(t.name for t in self.agent.tools)
                text = f"unknown tool {call.name!r}; the tools are {names}"
                results[call.id] = _tool_message(call, ToolResult(content=text, is_error=True))
        fresh = [c for c in turn.calls if c.id not in results]
        held: list[Approval] = []
        if fresh:
            context = CheckContext(
                run_id=record.id,
                thread_id=record.thread_id,
                requested_by=record.started_by,
                origin="runtime",
            )
            outcomes = await self.gate.check(fresh, context)
            # Model call ids repeat across turns: the turn's number makes the ledger key unique.
            ran = [o.call for o in outcomes if o.kind == "run"]
            executed = await asyncio.gather(
                *(
                    self._execute(record, c, key=f"{record.id}:{turn.number}:{c.id}", log=log)
                    for c in ran
                )
            )
            results |= {c.id: r for c, r in zip(ran, executed, strict=True)}
            results |= {
                o.call.id: _tool_message(o.call, _blocked(o.verdict))
                for o in outcomes
                if o.kind == "block"
            }
            held = [o.approval for o in outcomes if o.approval is not None]
        ordered = [results[c.id] for c in turn.calls if c.id in results]
        events: list[tuple[str, dict[str, object]]] = [("tool_result", r) for r in ordered]
        events += [("approval_requested", _approval_data(a)) for a in held]
        if held:
            events.append(("paused", {"approvals": [a.id for a in held]}))
        for event in sorted(log, key=lambda e: e.seq):
            yield event
        for event in await self._append(
            record, messages=ordered, events=events, status="paused" if held else None
        ):
            yield event

    async def _open_turn(self, record: RunRecord) -> _OpenTurn:
        """The calls of the run's last model turn that have no result yet, with the approvals
        that hold them — those requested after that turn, as its events tell."""
        mine = [message_from_dict(m) for m in await self.store.run_messages(record.id)]
        spoke = [i for i, m in enumerate(mine) if m.role == "assistant"]
        if not spoke:
            return _OpenTurn(number=0, calls=[], approvals={})
        last = spoke[-1]
        answered = {m.tool_call_id for m in mine[last + 1 :] if m.role == "tool"}
        calls = [c for c in mine[last].tool_calls if c.id not in answered]
        events = await self.store.run_events(record.id)
        turn_start = max((e.seq for e in events if e.type == "tool_call"), default=0)
        requested = [
            str(e.data["approval_id"])
            for e in events
            if e.type == "approval_requested" and e.seq > turn_start
        ]
        approvals = await self.store.get_approvals(requested) if requested else []
        open_ids = {c.id for c in calls}
        history = await self.store.thread_messages(record.thread_id)
        before = sum(m["role"] == "assistant" for m in history) - 1
        return _OpenTurn(
            number=before,
            calls=calls,
            approvals={a.call.id: a for a in approvals if a.call.id in open_ids},
        )

    async def _answer(
        self, record: RunRecord, approval: Approval, log: list[StoredEvent]
    ) -> dict[str, object]:
        """The tool result for a decided call: its execution, or what the decision says."""
        decision = approval.decision
        match approval.status:
            case "approved" | "edited":
                return await self._execute(record, approval.call, key=approval.id, log=log)
            case "responded":
                assert isinstance(decision, Respond)  # a responded approval carries its text
                return _tool_message(approval.call, ToolResult(content=decision.content))
            case "rejected":
                reason = getattr(decision, "reason", "") or "no reason given"
                text = f"The user rejected this call: {reason}. Do not retry it."
                return _tool_message(approval.call, _status("rejected", text))
            case "expired":
                text = "Nobody decided on this call in time; it did not run."
                return _tool_message(approval.call, _status("expired", text))
            case _:
                text = "This call was cancelled; it did not run."
                return _tool_message(approval.call, _status(approval.status, text))

    async def _execute(
        self, record: RunRecord, call: ToolCall, *, key: str, log: list[StoredEvent]
    ) -> dict[str, object]:
        """Run the call once, through the ledger: a second attempt with the same key returns the
        first result, and a call whose first attempt died midway is re-run only if idempotent.
        The events it writes (tool started, finished) are added to `log`."""
        tool = self.agent.tool(call.name)
        if tool is None:
            return _tool_message(
                call, ToolResult(content=f"unknown tool {call.name!r}", is_error=True)
            )
        args: object = call.args
        if not isinstance(args, dict):
            text = f"the arguments are not a JSON object: {args!r}; the call did not run"
            return _tool_message(call, ToolResult(content=text, is_error=True))
        previous = await self.store.ledger_start(
            key, run_id=record.id, call_id=call.id, tool=call.name, digest=call.digest, at=_now()
        )
        if previous is not None and previous.result is not None:
            return previous.result
        if previous is not None and not tool.idempotent:
            text = "This call started before a crash and its outcome is unknown; it was not re-run."
            return _tool_message(call, _status("unknown", text))
        started = {"call_id": call.id, "tool": call.name, "key": key, "retry": previous is not None}
        log += await self._append(record, events=[("tool_started", started)])
        result = await tool.invoke(args, key=key)
        message = _tool_message(call, result)
        await self.store.ledger_finish(key, result=message, at=_now())
        finished = {"call_id": call.id, "tool": call.name, "is_error": result.is_error}
        log += await self._append(record, events=[("tool_finished", finished)])
        return message

    async def _append(
        self,
        record: RunRecord,
        *,
        messages: Sequence[dict[str, object]] = (),
        events: Sequence[tuple[str, dict[str, object]]] = (),
        status: RunStatus | None = None,
    ) -> list[StoredEvent]:
        now = _now()
        return await self.store.append_to_run(
            record.id,
            at=now,
            messages=messages,
            events=events,
            status=status,
            owner=self.owner,
            lease_until=now + self.lease,  # every write renews the lease: a live worker keeps it
        )


@dataclass(kw_only=True)
class _OpenTurn:
    number: int
    """How many model turns the thread had before this one: part of each call's ledger key."""
    calls: list[ToolCall]
    """The turn's calls that have no result yet, in the order the model made them."""
    approvals: dict[str, Approval]
    """By call id: the approval holding that call, for those held."""


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


def _now() -> datetime:
    return datetime.now(UTC)


def _tool_message(call: ToolCall, result: ToolResult) -> dict[str, object]:
    message = Message(role="tool", content=result.content, tool_call_id=call.id, name=call.name)
    data = message_to_dict(message)
    if result.is_error:
        data["is_error"] = True
    return data


def _status(status: str, message: str) -> ToolResult:
    return ToolResult(content=json.dumps({"status": status, "message": message}))


def _blocked(verdict: Verdict) -> ToolResult:
    return _status("blocked", f"The policy blocked this call: {verdict.reason}. Do not retry it.")


def _call_data(call: ToolCall) -> dict[str, object]:
    return {
        "id": call.id,
        "name": call.name,
        "args": call.args,
        "server": call.server,
        "agent": call.agent,
    }


def _approval_data(approval: Approval) -> dict[str, object]:
    return {
        "approval_id": approval.id,
        "call_id": approval.call.id,
        "tool": approval.call.name,
        "args": approval.call.args,
        "rule": approval.rule,
        "reason": approval.reason,
        "expires_at": None if approval.expires_at is None else approval.expires_at.isoformat(),
    }
