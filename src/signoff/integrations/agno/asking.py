"""The ask tool as an Agno tool (`signoff.integrations._asking`)."""

from __future__ import annotations

from agno.tools.function import Function

from signoff.integrations._asking import ASK_DESCRIPTION, ASK_PARAMETERS, ASK_TOOL, never_run

__all__ = ["ask_person"]


def ask_person(*, name: str = ASK_TOOL, description: str = ASK_DESCRIPTION) -> Function:
    """The ask tool for an agent run through `SignoffAgent`: signoff holds each call of it as a
    question for a person — the run pauses as for any held call — and the answer is its result
    (a `name` of your own: name it in ``connect(questions=[...])`` too)."""
    return Function(
        name=name,
        description=description,
        parameters=dict(ASK_PARAMETERS),
        entrypoint=never_run,
        skip_entrypoint_processing=True,
    )
