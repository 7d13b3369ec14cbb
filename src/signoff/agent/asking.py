"""The ask tool: an agent given `ask_person()` asks a person a question by calling it. The
runtime holds the call as a question (`signoff.gate.questions`) and never runs a body: the
run pauses, a person answers in any channel, and the run resumes with the answer as the tool's
result, once."""

from __future__ import annotations

from typing import Any

from signoff.agent.model import ToolSpec
from signoff.agent.tools import Tool, ToolResult
from signoff.gate.questions import ASK_DESCRIPTION, ASK_PARAMETERS, ASK_TOOL
from signoff.types import CallKind

__all__ = ["ask_person"]


class _AskTool(Tool):
    """A tool whose calls are questions: held for a person, never run."""

    kind: CallKind = "question"

    def __init__(self, *, name: str, description: str) -> None:
        self.function = _never
        self.name = name
        self.description = description
        self.idempotent = False
        self.preview = None
        self.server = None
        self.spec = ToolSpec(name=name, description=description, parameters=ASK_PARAMETERS)

    async def invoke(self, args: dict[str, Any], *, key: str | None = None) -> ToolResult:
        return ToolResult(content="a question is answered by a person, not run", is_error=True)


def _never(**_: Any) -> None:  # pragma: no cover - a question's call is never invoked
    raise RuntimeError("a question is answered by a person, not run")


def ask_person(*, name: str = ASK_TOOL, description: str = ASK_DESCRIPTION) -> Tool:
    """A tool through which the agent asks a person (named ``ask_person`` unless `name` says
    otherwise; a policy names it with ``{question: NAME}``)."""
    return _AskTool(name=name, description=description)
