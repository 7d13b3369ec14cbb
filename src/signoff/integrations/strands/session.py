"""What a Strands agent says to signoff: its thread, the message a call came from, signoff's
interrupts, and its messages as the transcript people see. Interrupts are read from
``Agent._interrupt_state`` (which its session manager saves): Strands shows hooks no other."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

from strands import Agent
from strands.interrupt import Interrupt
from strands.types.content import Message

from signoff.gate import transcript
from signoff.integrations._hitl import MARK

__all__ = ["NAME", "answered", "thread_of", "transcript_of", "turn_of", "waiting"]

NAME = "signoff"
"""The name of signoff's interrupts (one per held call)."""


def thread_of(agent: Agent) -> str:
    return f"{agent.session_id}/{agent.agent_id}"


def turn_of(messages: Sequence[Message], call_id: str) -> str | None:
    """The tracking id of the newest message that made the call `call_id`."""
    for message in reversed(messages):
        uses = [b["toolUse"]["toolUseId"] for b in message.get("content", []) if "toolUse" in b]
        if message.get("role") == "assistant" and call_id in uses:
            return cast(str | None, message.get("tracking_id"))
    return None


def _ours(interrupt: Interrupt) -> dict[str, Any] | None:
    """signoff's part of one of its interrupts' reason, if it has the shape signoff gave it."""
    reason = interrupt.reason
    ours = reason.get(MARK) if interrupt.name == NAME and isinstance(reason, dict) else None
    if not isinstance(ours, dict) or not isinstance(ours.get("turn"), str | None):
        return None
    return ours if all(isinstance(ours.get(k), str) for k in ("approval", "call")) else None


def waiting(interrupts: Iterable[Interrupt]) -> dict[str, str]:
    """signoff's interrupts among `interrupts`: interrupt id → the approval it waits on."""
    return {i.id: ours["approval"] for i in interrupts if (ours := _ours(i)) is not None}


def answered(agent: Agent) -> list[tuple[dict[str, Any], Any]]:
    """signoff's part (as the saved state has it) and the response of each of its interrupts
    the invocation starting now answers."""
    state = agent._interrupt_state
    found = [(_ours(i), i.response) for i in state.interrupts.values() if i.response is not None]
    return [(o, r) for o, r in found if o is not None] if state.activated else []


def transcript_of(messages: Sequence[Message], agent: str | None) -> list[dict[str, Any]]:
    """The agent's messages as `transcript` messages; the model's are `agent`'s."""
    found: list[dict[str, Any]] = []
    for message in transcript.tail(messages):
        blocks = message.get("content", [])
        text = "\n".join(b["text"] for b in blocks if "text" in b)
        uses = [b["toolUse"] for b in blocks if "toolUse" in b]
        calls = [transcript.call(u["toolUseId"], u["name"], u.get("input")) for u in uses]
        if message.get("role") == "assistant" and (text or calls):
            found.append(transcript.message("assistant", text, tool_calls=calls, agent=agent))
        elif text:
            found.append(transcript.message("user", text))
        found += [transcript.message("tool", r.get("content"), tool_call_id=r["toolUseId"],
                                     is_error=r.get("status") == "error")
                  for r in (b["toolResult"] for b in blocks if "toolResult" in b)]  # fmt: skip
    return found
