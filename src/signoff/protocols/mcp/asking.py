"""signoff's ask tool, offered by the gateway itself (``gateway.ask_tool: true``): an MCP
client's model asks a person through it. Its call is never forwarded: it is held as a question
(a call of kind ``question``, named ``ask_person``, of no server) the way the gateway holds any
call (`held`) — a retry waits on the same question, its answer is given once — and the call's
result is the question's outcome (`question_result`), as JSON text and structured content
(`answers.outcome`)."""

from __future__ import annotations

from typing import Any

from mcp import types

from signoff.gate.ids import new_id
from signoff.gate.questions import ASK_DESCRIPTION, ASK_PARAMETERS, ASK_TOOL
from signoff.protocols.mcp.request import Action
from signoff.types import ToolCall

__all__ = ["ask_tool", "asking"]


def ask_tool() -> types.Tool:
    """The ask tool as `tools/list` offers it."""
    return types.Tool(name=ASK_TOOL, description=ASK_DESCRIPTION, input_schema=ASK_PARAMETERS)


def asking(arguments: dict[str, Any] | None) -> Action:
    """A call of the ask tool, judged and held as a question (`Question.from_args` checks its
    arguments when it is judged: a question that is not one is blocked, saying why)."""
    call = ToolCall(id=new_id(), name=ASK_TOOL, args=dict(arguments or {}), kind="question")
    return Action(call=call, upstream=None)
