"""What an AdalFlow runner reads as the result of a call signoff ran: the tool's own output — a
generator tool's run to its end inside the ledger's claim, and replayed — with a note where a
person edited the call, or signoff's answer in the tool's place."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import Any

from adalflow.core.types import Function, FunctionOutput, ToolCallActivityRunItem, ToolOutput

from signoff.gate.answers import edited_text
from signoff.types import ToolCall

__all__ = ["as_output", "note_edit", "settled"]


async def settled(output: Any) -> tuple[Any, Any]:
    """A generator tool's output run to its end inside the ledger's claim — what it does
    happens before the call is recorded — replayed to the runner as the same kind of generator;
    and what the ledger records (its items, progress reports left out)."""
    if inspect.isasyncgen(output):
        items = [item async for item in output]
        return _replay(items), _results(items)
    if inspect.isgenerator(output):
        items = list(output)
        return (item for item in items), _results(items)
    return output, output


async def _replay(items: list[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


def _results(items: list[Any]) -> list[Any]:
    return [i for i in items if not isinstance(i, ToolCallActivityRunItem)]


def as_output(call: ToolCall, text: Any) -> FunctionOutput:
    """What the runner reads as the result of `call`, from signoff rather than the tool."""
    function = Function(id=call.id, name=call.name, args=[], kwargs=dict(call.args))
    return FunctionOutput(name=call.name, input=function, output=text)


def note_edit(output: FunctionOutput, args: dict[str, Any]) -> None:
    """Tell the model a person edited the call, where its result is text."""
    if isinstance(output.output, str):
        output.output = edited_text(args, output.output)
    elif isinstance(output.output, ToolOutput) and isinstance(output.output.observation, str):
        output.output.observation = edited_text(args, output.output.observation)
