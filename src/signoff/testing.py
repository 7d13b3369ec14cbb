"""Test doubles on the same seams as the real parts: no network, no randomness."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass

from signoff.agent.model import History, Message, ModelTurn, ToolSpec, TurnDelta
from signoff.types import ToolCall

__all__ = ["Request", "ScriptExhausted", "ScriptedModel", "call"]

Step = ModelTurn | Callable[[Sequence[Message]], ModelTurn]


class ScriptExhausted(AssertionError):
    """The model was asked for more turns than its script has."""


@dataclass(frozen=True, kw_only=True)
class Request:
    """What the model was asked: the conversation and the tools on offer."""

    messages: Sequence[Message]
    tools: tuple[ToolSpec, ...]


class ScriptedModel:
    """A model that plays its turns in order: fixed `ModelTurn`s, or functions of the messages.

    Every request is kept in `requests`, so a test can check what the model was shown — and that
    resuming a paused run did not ask it again.
    """

    label = "scripted model (tests)"

    def __init__(self, turns: Sequence[Step], *, chunk: int = 8) -> None:
        self._turns = list(turns)
        self._chunk = chunk
        self.requests: list[Request] = []

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        index = len(self.requests)
        # A `History` is kept as it is: it holds text, and copying it out would hold objects.
        kept = messages if isinstance(messages, History) else tuple(messages)
        self.requests.append(Request(messages=kept, tools=tuple(tools)))
        if index >= len(self._turns):
            raise ScriptExhausted(
                f"the script has {len(self._turns)} turns and turn {index + 1} was asked for"
            )
        step = self._turns[index]
        return step(messages) if callable(step) else step

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[TurnDelta]:
        """The scripted turn, its text in chunks of `chunk` characters, then its tool calls."""
        turn = await self.complete(messages, tools)
        for start in range(0, len(turn.text), self._chunk):
            yield TurnDelta(text=turn.text[start : start + self._chunk])
        for call in turn.tool_calls:
            yield TurnDelta(tool_call=call)


def call(tool: str, /, **args: object) -> ToolCall:
    """A tool call for a script: ``call("delete_pod", name="nginx-123")``; its id is
    ``call_<tool>``."""
    return ToolCall(id=f"call_{tool}", name=tool, args=dict(args))
