"""What a model sees and says: messages in, text and tool calls out.

A `Model` is one async method. Implementations: `OpenAIChatModel` for any OpenAI-compatible
endpoint, and `signoff.testing.ScriptedModel` for tests and the offline demo.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from signoff.types import ToolCall

__all__ = ["Message", "Model", "ModelTurn", "Role", "StreamingModel", "ToolSpec", "TurnDelta"]

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
