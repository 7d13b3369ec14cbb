"""The ask tool as a LlamaIndex tool (`signoff.integrations._asking`)."""

from __future__ import annotations

from typing import Any

from llama_index.core.tools import FunctionTool, ToolMetadata

from signoff.integrations._asking import ASK_DESCRIPTION, ASK_PARAMETERS, ASK_TOOL, never_run

__all__ = ["ask_person"]


class _Declared(ToolMetadata):
    """A tool's metadata whose parameters are the ask tool's JSON schema, not a pydantic
    model's (one field of a question is named ``schema``, which a model cannot have)."""

    def get_parameters_dict(self) -> dict[str, Any]:
        return dict(ASK_PARAMETERS)


def ask_person(*, name: str = ASK_TOOL, description: str = ASK_DESCRIPTION) -> FunctionTool:
    """The ask tool for an agent run through `SignoffWorkflow`: signoff holds each call of it as
    a question for a person, and the answer is its result (a `name` of your own: name it in
    ``connect(questions=[...])`` too)."""
    metadata = _Declared(name=name, description=description, fn_schema=None)
    return FunctionTool(fn=never_run, metadata=metadata)
