"""The ask tool as a Microsoft Agent Framework tool (`signoff.integrations._asking`)."""

from __future__ import annotations

from agent_framework import FunctionTool

from signoff.integrations._asking import ASK_DESCRIPTION, ASK_PARAMETERS, ASK_TOOL, never_run

__all__ = ["ask_person"]


def ask_person(*, name: str = ASK_TOOL, description: str = ASK_DESCRIPTION) -> FunctionTool:
    """The ask tool for an agent with `SignoffMiddleware`: signoff holds each call of it as a
    question for a person, and the answer is its result (a `name` of your own: name it in
    ``connect(questions=[...])`` too)."""
    return FunctionTool(
        name=name, description=description, func=never_run, input_model=dict(ASK_PARAMETERS)
    )
