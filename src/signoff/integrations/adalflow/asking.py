"""The ask tool as an AdalFlow tool (`signoff.integrations._asking`): its definition — what the
agent's prompt shows the model — is the ask tool's JSON schema, not one AdalFlow would read off
a Python signature."""

from __future__ import annotations

from adalflow.core.func_tool import FunctionTool
from adalflow.core.types import FunctionDefinition

from signoff.integrations._asking import ASK_DESCRIPTION, ASK_PARAMETERS, ASK_TOOL, never_run

__all__ = ["ask_person"]


def ask_person(*, name: str = ASK_TOOL, description: str = ASK_DESCRIPTION) -> FunctionTool:
    """The ask tool for a runner with `SignoffPermissions`: signoff holds each call of it as a
    question for a person — the permission manager waits for the answer — and the answer is
    its result (a `name` of your own: name it in ``connect(questions=[...])`` too)."""
    definition = FunctionDefinition(
        func_name=name, func_desc=description, func_parameters=dict(ASK_PARAMETERS)
    )
    return FunctionTool(never_run, definition=definition)
