"""What a model sees and says: messages in, text and tool calls out.

A `Model` is one async method. Implementations: `OpenAIChatModel` for any OpenAI-compatible
endpoint, and `signoff.testing.ScriptedModel` for tests and the offline demo.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, overload, runtime_checkable

from signoff.types import ToolCall

__all__ = [
    "History",
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


class History(Sequence[Message]):
    """A conversation as the store keeps it — each message's JSON text — read as `Message`s
    when looked at.

    Ten thousand messages are then ten thousand strings, which Python's garbage collector does
    not look into, rather than ten thousand objects with their tuples and dicts, which it walks
    at every full collection while they live: a collection falling in the middle of a pause made
    the pause grow with the conversation. Each look decodes again; nothing is cached.
    """

    __slots__ = ("_head", "_texts")

    def __init__(self, texts: Sequence[str], *, head: Sequence[Message] = ()) -> None:
        self._texts = texts
        self._head = tuple(head)
        """Messages put before the stored ones (the agent's instructions)."""

    def __len__(self) -> int:
        return len(self._head) + len(self._texts)

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("history index out of range")
        if index < len(self._head):
            return self._head[index]
        return message_from_dict(json.loads(self._texts[index - len(self._head)]))

    def __iter__(self) -> Iterator[Message]:
        yield from self._head
        for text in self._texts:
            yield message_from_dict(json.loads(text))

    def __repr__(self) -> str:
        return f"<History of {len(self)} messages>"


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
