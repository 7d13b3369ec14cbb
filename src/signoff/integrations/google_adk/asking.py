"""The ask tool as a Google ADK tool (`signoff.integrations._asking`)."""

from __future__ import annotations

from typing import Any

from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from signoff.integrations._asking import ASK_DESCRIPTION, ASK_PARAMETERS, ASK_TOOL, never_run

__all__ = ["AskTool", "ask_person"]


class AskTool(BaseTool):
    """The ask tool, declared by its JSON schema: its body never runs (`never_run`)."""

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters_json_schema=dict(ASK_PARAMETERS),
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        return never_run(**args)


def ask_person(*, name: str = ASK_TOOL, description: str = ASK_DESCRIPTION) -> AskTool:
    """The ask tool for an agent run with `SignoffPlugin`: signoff holds each call of it as a
    question for a person, and the answer is its result (a `name` of your own: name it in
    ``connect(questions=[...])`` too)."""
    return AskTool(name=name, description=description)
