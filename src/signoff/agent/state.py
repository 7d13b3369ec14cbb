"""What a runner keeps about a run while it works on it: the run (the root run, or a sub-agent's
inside it) with what waits to be written to its log, and its open turn — the calls of the
model's last turn that have no result yet, and the approvals that hold them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from signoff.agent.agent import Agent
from signoff.agent.model import message_from_dict
from signoff.store.runs import ResumedTurn, RunRecord
from signoff.types import Approval, ToolCall

__all__ = ["OpenTurn", "RunScope", "Suspended", "open_turn", "unique_ids"]


@dataclass(kw_only=True)
class RunScope:
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

    def child(self, agent: Agent, record: RunRecord) -> RunScope:
        return RunScope(
            agent=agent,
            path=f"{self.path}/{agent.name}",
            record=record,
            root=self.root,
            ancestors=(self.record.id, *self.ancestors),
        )


@dataclass(frozen=True, kw_only=True)
class Suspended:
    """A sub-agent's call that cannot finish yet: its run waits on these approvals."""

    approvals: list[Approval]


@dataclass(kw_only=True)
class OpenTurn:
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


def open_turn(scope: RunScope, state: ResumedTurn) -> OpenTurn:
    """The calls of the run's last model turn that have no result yet, with the approvals that
    hold them (also those a worker requested and died before logging, which would otherwise be
    asked for twice) and those its last pause waited on (its sub-agents' too)."""
    tail = state.turn
    scope.turns = tail.turns
    if not tail.messages:
        return OpenTurn(number=tail.turns, calls=[], approvals={}, requested=[])
    said, after = message_from_dict(tail.messages[0]), tail.messages[1:]
    answered = {m["tool_call_id"] for m in after if m["role"] == "tool"}
    calls = [c for c in said.tool_calls if c.id not in answered]
    open_ids = {c.id for c in calls}
    own = [a for a in state.own if a.call.id in open_ids]
    requested = list({a.id: a for a in [*state.listed, *own]}.values())
    return OpenTurn(
        number=tail.turns,
        calls=calls,
        approvals={
            a.call.id: a for a in requested if a.call.id in open_ids and a.call.agent == scope.path
        },
        requested=requested,
        listed={a.id for a in state.listed},
        begun=state.begun,
    )


def unique_ids(calls: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
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
