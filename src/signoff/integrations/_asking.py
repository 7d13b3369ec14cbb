"""The ask tool in a framework's own shape: what the model reads of it (`ASK_DESCRIPTION`,
`ASK_PARAMETERS`) and a body that never runs — `ExternalRuns` holds every call of a tool named
in its ``questions`` as a question, and the person's answer is the call's result. Each
integration's ``ask_person()`` wraps them in its framework's tool type."""

from __future__ import annotations

from typing import Any

from signoff.errors import SignoffError
from signoff.gate.questions import ASK_DESCRIPTION, ASK_PARAMETERS, ASK_TOOL

__all__ = ["ASK_DESCRIPTION", "ASK_PARAMETERS", "ASK_TOOL", "never_run"]


def never_run(*_: Any, **__: Any) -> Any:
    """The ask tool's body. Reached only when signoff did not judge the call as a question:
    the tool's name is not among the ``questions`` signoff was connected with."""
    raise SignoffError(
        "the ask tool ran: signoff holds its calls as questions only when its name is among "
        "connect(questions=...) (ask_person by default)"
    )
