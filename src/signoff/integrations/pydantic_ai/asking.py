"""The ask tool as a Pydantic AI tool (`signoff.integrations._asking`)."""

from __future__ import annotations

from pydantic_ai import Tool

from signoff.integrations._asking import ASK_DESCRIPTION, ASK_PARAMETERS, ASK_TOOL, never_run

__all__ = ["ask_person"]


def ask_person(*, name: str = ASK_TOOL, description: str = ASK_DESCRIPTION) -> Tool[None]:
    """The ask tool for an agent run through `SignoffAgent`: signoff holds each call of it as a
    question for a person — the run ends with its `DeferredToolRequests` — and the answer is
    its result (a `name` of your own: name it in ``connect(questions=[...])`` too)."""
    return Tool.from_schema(
        never_run, name=name, description=description, json_schema=dict(ASK_PARAMETERS)
    )
