"""The ask tool as a CrewAI tool (`signoff.integrations._asking`).

CrewAI declares a tool to the model by a pydantic model of its arguments, and sends every
declaration strict: each field required, so a field the model leaves out it writes as null —
which a question reads as not given. A question's form is its argument ``schema``, a field
name that would shadow `BaseModel.schema`: the field is ``form``, declared to the model by its
alias ``schema``. `crewai` is imported by `ask_person`, not here, as by
`SignoffHooks.register`."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from signoff.errors import MissingExtraError
from signoff.integrations._asking import ASK_DESCRIPTION, ASK_PARAMETERS, ASK_TOOL, never_run

if TYPE_CHECKING:
    from crewai.tools import BaseTool

__all__ = ["AskArguments", "ask_person"]

_SAID = ASK_PARAMETERS["properties"]


def _said(name: str) -> Any:
    """The field's description in `ASK_PARAMETERS`, for the model to read."""
    return _SAID[name].get("description")


class AskArguments(BaseModel):
    """The ask tool's arguments as `ASK_PARAMETERS` names them, for CrewAI to declare. An
    answer — and so a default — is text, the choices picked, or a form's fields."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    question: str = Field(description=_said("question"))
    choices: list[str] | None = None
    multiple: bool | None = Field(None, description=_said("multiple"))
    form: dict[str, Any] | None = Field(None, alias="schema", description=_said("schema"))
    to: str | None = Field(None, description=_said("to"))
    timeout: str | float | None = Field(None, description=_said("timeout"))
    default: str | list[str] | dict[str, Any] | None = Field(None, description=_said("default"))


def ask_person(*, name: str = ASK_TOOL, description: str = ASK_DESCRIPTION) -> BaseTool:
    """The ask tool for a crew with `SignoffHooks`: signoff holds each call of it as a question
    for a person — the hook waits for the answer — and the answer is its result (a `name` of
    your own: name it in ``connect(questions=[...])`` too)."""
    return _tool_type()(name=name, description=description)


@functools.cache
def _tool_type() -> type[BaseTool]:
    try:
        from crewai.tools import BaseTool
    except ImportError as exc:  # pragma: no cover - exercised without the extra installed
        raise MissingExtraError("signoff.integrations.crewai", "crewai") from exc

    class AskTool(BaseTool):
        """The ask tool: its body never runs (`never_run`)."""

        args_schema: type[BaseModel] = AskArguments

        def _run(self, *args: Any, **kwargs: Any) -> Any:
            return never_run(*args, **kwargs)

    return AskTool
