"""The agent's tool in a call signoff let through: run once through signoff's ledger (its
recorded result when it ran before), or answered with a person's response instead."""

from __future__ import annotations

from typing import Any

from pydantic_core import to_jsonable_python
from strands.tools.tools import PythonAgentTool
from strands.types._events import ToolResultEvent
from strands.types.tools import AgentTool, ToolResult, ToolUse

from signoff.gate.answers import edited_text
from signoff.gate.external import ExternalRuns, Step
from signoff.integrations._calls import Unrun, run_once

__all__ = ["answered", "ran_once"]


def _result(tool_use: ToolUse, text: str, *, ok: bool) -> ToolResult:
    return {"toolUseId": str(tool_use["toolUseId"]), "status": "success" if ok else "error",
            "content": [{"text": text}]}  # fmt: skip


def answered(tool: AgentTool, text: str) -> AgentTool:
    """`tool`, answered with a person's response instead of running."""

    async def result(tool_use: ToolUse, **_: Any) -> ToolResult:
        return _result(tool_use, text, ok=True)

    return PythonAgentTool(tool.tool_name, tool.tool_spec, result)


def ran_once(tool: AgentTool, runs: ExternalRuns, step: Step, *, idempotent: bool) -> AgentTool:
    """`tool`, run once under the step's key as the call the step names (as proposed, or as a
    person edited it); a call signoff refuses is answered, never run."""
    call = step.call
    assert call is not None  # a call to run is named

    async def result(tool_use: ToolUse, **state: Any) -> Any:
        async def execute() -> Any:
            found = [e.tool_result async for e in tool.stream(tool_use, state)
                     if isinstance(e, ToolResultEvent)]  # fmt: skip
            return to_jsonable_python(found[-1])

        value = await run_once(runs, step.key, call, execute, idempotent=idempotent)
        if isinstance(value, Unrun):
            return _result(tool_use, value.text, ok=False)
        content = list(value.get("content") or [])
        if step.edited is not None:  # the model reads that a person edited the call first
            content.insert(0, {"text": edited_text(step.edited, "").rstrip()})
        return {**value, "toolUseId": str(tool_use["toolUseId"]), "content": content}

    return PythonAgentTool(tool.tool_name, tool.tool_spec, result)
