"""A Pydantic AI thread's message history as signoff keeps it (appended, never rewritten): read
back from its kept items, the calls its last model response left without a result, the model
response a call came from, and the transcript people see."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    ToolCallPart,
    ToolReturnPart,
)

from signoff.gate import transcript
from signoff.integrations._threads import unmarked

__all__ = ["messages_of", "open_calls", "transcript_of", "turn_of"]


def turn_of(messages: Sequence[ModelMessage], call_id: str) -> str | None:
    """The model response that made the call `call_id` (the newest that did), as its place in
    the thread's history and its time. signoff keeps the history append-only and resumes the
    same history, so a resumed response is known again; a provider that numbers every
    response's calls ``call_0`` gets each response's calls judged anew. (The provider's
    response id is not used: a `FunctionModel` and many providers leave it unset.)"""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ModelResponse) and any(
            isinstance(p, ToolCallPart) and p.tool_call_id == call_id for p in message.parts
        ):
            return f"{index}@{message.timestamp.isoformat()}"
    return None


def transcript_of(history: Sequence[ModelMessage], agent: str | None) -> list[dict[str, Any]]:
    """The thread's messages as `transcript` messages: the model's responses are `agent`'s."""
    found: list[dict[str, Any]] = []
    for message in transcript.tail(history):
        if isinstance(message, ModelResponse):
            text = "\n".join(p.content for p in message.parts if p.part_kind == "text")
            calls = [transcript.call(p.tool_call_id, p.tool_name, p.args)
                     for p in message.parts if isinstance(p, ToolCallPart)]  # fmt: skip
            found.append(transcript.message("assistant", text, tool_calls=calls, agent=agent))
            continue
        for part in message.parts:
            if part.part_kind in ("user-prompt", "system-prompt"):
                role: transcript.Role = "user" if part.part_kind == "user-prompt" else "system"
                found.append(transcript.message(role, part.content))
            elif isinstance(part, ToolReturnPart | RetryPromptPart):
                content = part.model_response() if isinstance(part, RetryPromptPart) else (
                    part.model_response_str())  # fmt: skip
                found.append(transcript.message(
                    "tool", content, tool_call_id=part.tool_call_id, name=part.tool_name,
                    is_error=isinstance(part, RetryPromptPart)))  # fmt: skip
    return found


def messages_of(items: Sequence[str]) -> list[ModelMessage]:
    messages = unmarked(items)
    if not messages:
        return []
    return ModelMessagesTypeAdapter.validate_json("[" + ",".join(messages) + "]")


def open_calls(history: Sequence[ModelMessage]) -> list[ToolCallPart]:
    """The calls of the last model response that have no result yet (a run that ended waiting
    on them)."""
    answered: set[str] = set()
    for message in reversed(history):
        if isinstance(message, ModelRequest):
            answered.update(
                p.tool_call_id
                for p in message.parts
                if isinstance(p, ToolReturnPart | RetryPromptPart)
            )
        elif isinstance(message, ModelResponse):
            return [
                p
                for p in message.parts
                if isinstance(p, ToolCallPart) and p.tool_call_id not in answered
            ]
    return []
