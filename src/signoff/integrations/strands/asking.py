"""The ask tool as a Strands tool (`signoff.integrations._asking`)."""

from __future__ import annotations

from strands.tools.tools import PythonAgentTool

from signoff.integrations._asking import ASK_DESCRIPTION, ASK_PARAMETERS, ASK_TOOL, never_run

__all__ = ["ask_person"]


def ask_person(*, name: str = ASK_TOOL, description: str = ASK_DESCRIPTION) -> PythonAgentTool:
    """The ask tool for an agent with `SignoffHooks`: signoff holds each call of it as a
    question for a person, and the answer is its result (a `name` of your own: name it in
    ``connect(questions=[...])`` too)."""
    spec = {"name": name, "description": description,
            "inputSchema": {"json": dict(ASK_PARAMETERS)}}  # fmt: skip
    return PythonAgentTool(name, spec, never_run)  # type: ignore[arg-type]
