"""What a model sees and says: messages in, text and tool calls out.

A `Model` is one async method. Implementations: `OpenAIChatModel` for any OpenAI-compatible
endpoint, and `signoff.testing.ScriptedModel` for tests and the offline demo.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from signoff.types import ToolCall

__all__ = [
    "Message",
    "Model",
    "ModelTurn",
    "Role",
    "StreamingModel",
    "ToolSpec",
    "TurnDelta",
    "message_from_dict",
    "message_to_dict",
]

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, kw_only=True)
class Message:
    """One message of a conversation, in the shape chat-completion APIs share."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    """For an assistant message: the calls the model proposed."""
    tool_call_id: str | None = None
    """For a tool message: the call it answers."""
    name: str | None = None
    """For a tool message: the tool's name."""


def message_to_dict(message: Message) -> dict[str, Any]:
    """The message as JSON-ready data, as the store keeps it."""
    data: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        data["tool_calls"] = [
            {"id": c.id, "name": c.name, "args": c.args, "server": c.server, "agent": c.agent}
            for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        data["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        data["name"] = message.name
    return data


def message_from_dict(data: dict[str, Any]) -> Message:
    return Message(
        role=data["role"],
        content=data.get("content", ""),
        tool_calls=tuple(ToolCall(**c) for c in data.get("tool_calls", ())),
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
    )


@dataclass(frozen=True, kw_only=True)
class ToolSpec:
    """A tool as a model is told about it."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    """The JSON schema of the arguments (an object)."""


@dataclass(frozen=True, kw_only=True)
class ModelTurn:
    """What the model said in one turn: text, tool calls, or both."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True, kw_only=True)
class TurnDelta:
    """A piece of a streamed turn: some text, or one whole tool call once its arguments are in."""

    text: str = ""
    tool_call: ToolCall | None = None


@runtime_checkable
class Model(Protocol):
    """One model turn: the conversation so far and the tools on offer, in; a `ModelTurn` out."""

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> ModelTurn: ...


@runtime_checkable
class StreamingModel(Model, Protocol):
    """A model that can also stream its turn as it is produced."""

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[TurnDelta]: ...
