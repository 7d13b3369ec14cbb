"""What a Strands agent says to signoff: its signoff thread, the model response (the message) a
call came from, signoff's interrupts it waits on or that were answered, and its messages as the
transcript people see.

The interrupts are read from the agent's interrupt state (``Agent._interrupt_state``, which its
session manager saves and restores): Strands gives hooks no other view of the interrupts a
resuming invocation answers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from strands import Agent
from strands.interrupt import Interrupt
from strands.types.content import Message

from signoff.gate import transcript
from signoff.integrations._hitl import MARK

__all__ = ["NAME", "answered", "thread_of", "transcript_of", "turn_of", "waiting"]

NAME = "signoff"
"""The name of signoff's interrupts (one per held call)."""


def thread_of(agent: Agent) -> str:
    """The signoff thread of an agent: its session (its session manager's) and its id."""
    return f"{agent.session_id}/{agent.agent_id}"


def turn_of(messages: Sequence[Message], call_id: str) -> str | None:
    """The tracking id of the message — the model response — that made the call `call_id`: the
    newest that did (a provider may number every response's calls ``call_0``)."""
    for message in reversed(messages):
        uses = [b["toolUse"] for b in message.get("content", []) if "toolUse" in b]
        if message.get("role") == "assistant" and any(u["toolUseId"] == call_id for u in uses):
            turn: str | None = message.get("tracking_id")
            return turn
    return None


def _ours(interrupt: Interrupt) -> dict[str, Any] | None:
    """signoff's part of one of its interrupts' reason, when it has the shape signoff gave it."""
    reason = interrupt.reason
    ours = reason.get(MARK) if interrupt.name == NAME and isinstance(reason, dict) else None
    if not isinstance(ours, dict):
        return None
    fields = (ours.get("approval"), ours.get("call"))
    turn = ours.get("turn")
    if not all(isinstance(f, str) for f in fields) or not isinstance(turn, str | None):
        return None
    return ours


def waiting(interrupts: Iterable[Interrupt]) -> dict[str, str]:
    """signoff's interrupts among `interrupts`: interrupt id → the approval it waits on."""
    found = {i.id: _ours(i) for i in interrupts}
    return {i: ours["approval"] for i, ours in found.items() if ours is not None}


def answered(agent: Agent) -> list[tuple[dict[str, Any], Any]]:
    """signoff's interrupts the invocation starting now answers: each one's signoff part (as the
    agent's saved state carries it: checked against the store before use) and its response."""
    state = agent._interrupt_state
    if not state.activated:
        return []
    found = [(_ours(i), i.response) for i in state.interrupts.values() if i.response is not None]
    return [(ours, response) for ours, response in found if ours is not None]


def transcript_of(messages: Sequence[Message], agent: str | None) -> list[dict[str, Any]]:
    """The agent's messages as `transcript` messages; the model's are `agent`'s."""
    found: list[dict[str, Any]] = []
    for message in transcript.tail(messages):
        blocks = message.get("content", [])
        texts = "\n".join(b["text"] for b in blocks if "text" in b)
        uses = [b["toolUse"] for b in blocks if "toolUse" in b]
        calls = [transcript.call(u["toolUseId"], u["name"], u.get("input")) for u in uses]
        if message.get("role") == "assistant" and (texts or calls):
            found.append(transcript.message("assistant", texts, tool_calls=calls, agent=agent))
        elif texts:
            found.append(transcript.message("user", texts))
        for block in blocks:
            result = block.get("toolResult")
            if result is not None:
                found.append(transcript.message(
                    "tool", result.get("content"), tool_call_id=result.get("toolUseId"),
                    is_error=result.get("status") == "error"))  # fmt: skip
    return found
