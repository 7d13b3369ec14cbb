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
from dataclasses import dataclass, field
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

    def __init__(self, agent: Agent, gate: Gate, *, owner: str | None = None) -> None:
        self.agent = agent
        self.gate = gate
        self.store = gate.store
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
            lease_until=now + LEASE,
            messages=[user],
            events=[
                ("run_started", {"agent": self.agent.name, "thread_id": thread_id, "input": input})
            ],
        ):
            yield event
        async for event in self._loop(record):
            yield event

    async def resume(self, run_id: str) -> AsyncIterator[StoredEvent]:
        """Resume a paused run whose held calls are all decided; stream its events.

        Raises `ConflictError` when another worker holds the run, or some call still waits.
        """
        record = await self.store.get_run(run_id)
        batch = await self._open_batch(record)
        if any(a.pending for a in batch):
            waiting = sum(a.pending for a in batch)
            raise ConflictError(f"run {run_id!r} still waits on {waiting} approval(s)")
        if not await self.store.claim_run(run_id, owner=self.owner, now=_now(), lease=LEASE):
            raise ConflictError(f"run {run_id!r} is not paused, or another worker resumed it")
        results = [await self._answer(record, approval) for approval in batch]
        events: list[tuple[str, dict[str, object]]] = [
            ("resumed", {"approvals": [a.id for a in batch]})
        ]
        events += [("tool_result", r) for r in results]
        for event in await self._append(record, messages=results, events=events):
            yield event
        async for event in self._loop(record):
            yield event

    # -- the loop --------------------------------------------------------------------------

    async def _loop(self, record: RunRecord) -> AsyncIterator[StoredEvent]:
        context = CheckContext(
            run_id=record.id,
            thread_id=record.thread_id,
            requested_by=record.started_by,
            origin="runtime",
        )
        specs = [t.spec for t in self.agent.tools]
        for _ in range(self.agent.max_turns):
            history = [
                message_from_dict(m) for m in await self.store.thread_messages(record.thread_id)
            ]
            if self.agent.instructions:
                history.insert(0, Message(role="system", content=self.agent.instructions))
            turn = await self.agent.model.complete(history, specs)
            said = Message(role="assistant", content=turn.text, tool_calls=turn.tool_calls)
            events: list[tuple[str, dict[str, object]]] = []
            if turn.text:
                events.append(("text", {"text": turn.text}))
            events += [("tool_call", _call_data(c)) for c in turn.tool_calls]
            if not turn.tool_calls:
                for event in await self._append(
                    record, messages=[message_to_dict(said)], events=[*events, ("completed", {})],
                    status="completed",
                ):  # fmt: skip
                    yield event
                return
            for event in await self._append(
                record, messages=[message_to_dict(said)], events=events
            ):
                yield event
            outcomes = await self.gate.check(turn.tool_calls, context)
            # Model call ids repeat across turns: the turn's number makes the ledger key unique.
            number = sum(m.role == "assistant" for m in history)
            results = list(
                await asyncio.gather(
                    *(
                        self._execute(record, o.call, key=f"{record.id}:{number}:{o.call.id}")
                        for o in outcomes
                        if o.kind == "run"
                    )
                )
            )
            results += [
                _tool_message(o.call, _blocked(o.verdict)) for o in outcomes if o.kind == "block"
            ]
            held = [o.approval for o in outcomes if o.approval is not None]
            events = [("tool_result", r) for r in results]
            events += [("approval_requested", _approval_data(a)) for a in held]
            if held:
                events.append(("paused", {"approvals": [a.id for a in held]}))
                for event in await self._append(
                    record, messages=results, events=events, status="paused"
                ):
                    yield event
                return
            for event in await self._append(record, messages=results, events=events):
                yield event
        reason = f"more than {self.agent.max_turns} model turns"
        for event in await self._append(
            record, events=[("failed", {"reason": reason})], status="failed"
        ):
            yield event

    async def _answer(self, record: RunRecord, approval: Approval) -> dict[str, object]:
        """The tool result for a decided call: its execution, or what the decision says."""
        decision = approval.decision
        match approval.status:
            case "approved" | "edited":
                return await self._execute(record, approval.call, key=approval.id)
            case "responded":
                assert isinstance(decision, Respond)  # a responded approval carries its text
                return _tool_message(approval.call, ToolResult(content=decision.content))
            case "rejected":
                reason = getattr(decision, "reason", "") or "no reason given"
                text = f"The user rejected this call: {reason}. Do not retry it."
                return _tool_message(approval.call, _status("rejected", text))
            case _:
                text = f"This call was {approval.status} before anyone approved it; it did not run."
                return _tool_message(approval.call, _status(approval.status, text))

    async def _execute(self, record: RunRecord, call: ToolCall, *, key: str) -> dict[str, object]:
        """Run the call once, through the ledger: a second attempt with the same key returns the
        first result, and a call whose first attempt died midway is re-run only if idempotent."""
        tool = self.agent.tool(call.name)
        if tool is None:
            return _tool_message(
                call, ToolResult(content=f"unknown tool {call.name!r}", is_error=True)
            )
        previous = await self.store.ledger_start(
            key, run_id=record.id, call_id=call.id, tool=call.name, digest=call.digest, at=_now()
        )
        if previous is not None and previous.result is not None:
            return previous.result
        if previous is not None and not tool.idempotent:
            text = "This call started before a crash and its outcome is unknown; it was not re-run."
            return _tool_message(call, _status("unknown", text))
        assert isinstance(call.args, dict)  # the policy holds or blocks calls with other args
        message = _tool_message(call, await tool.invoke(call.args))
        await self.store.ledger_finish(key, result=message, at=_now())
        return message

    async def _append(
        self,
        record: RunRecord,
        *,
        messages: Sequence[dict[str, object]] = (),
        events: Sequence[tuple[str, dict[str, object]]] = (),
        status: RunStatus | None = None,
    ) -> list[StoredEvent]:
        return await self.store.append_to_run(
            record.id, at=_now(), messages=messages, events=events, status=status, owner=self.owner
        )

    async def _open_batch(self, record: RunRecord) -> list[Approval]:
        """The held calls of the run's last turn that have no result yet, in call order."""
        answered = {
            m.get("tool_call_id") for m in await self.store.thread_messages(record.thread_id)
        }
        held = await self.store.list_approvals(run_id=record.id, limit=10_000)
        return sorted((a for a in held if a.call.id not in answered), key=lambda a: a.id)


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
