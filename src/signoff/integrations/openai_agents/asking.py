"""The ask tool as an OpenAI Agents SDK tool (`signoff.integrations._asking`)."""

from __future__ import annotations

from typing import Any

from agents import FunctionTool

from signoff.integrations._asking import ASK_DESCRIPTION, ASK_PARAMETERS, ASK_TOOL, never_run

__all__ = ["ask_person"]


def ask_person(*, name: str = ASK_TOOL, description: str = ASK_DESCRIPTION) -> FunctionTool:
    """The ask tool for an agent run through `SignoffAgent`: signoff holds each call of it as a
    question for a person — the run ends with the SDK's interruptions — and the answer is its
    result (a `name` of your own: name it in ``connect(questions=[...])`` too)."""

    async def invoke(context: Any, arguments: str) -> Any:
        return never_run(context, arguments)

    return FunctionTool(
        name=name,
        description=description,
        params_json_schema=dict(ASK_PARAMETERS),
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )
