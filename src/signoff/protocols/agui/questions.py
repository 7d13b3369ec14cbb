"""A question an agent asks (`signoff.gate.questions`) as AG-UI shows it: an interrupt of reason
``question`` whose message is the question and whose ``responseSchema`` is what its resume sends —
``{"answer": VALUE}``, VALUE as the question's answer schema says (its choices an ``enum``), and
``version``. A cancelled entry declines it. Whether the answer fits is the gate's to say.
"""

from __future__ import annotations

from typing import Any, Final

from ag_ui.core import ResumeEntry

from signoff.gate.forms import FormError
from signoff.gate.questions import Question
from signoff.types import Answer, Approval, Decision, Reject

__all__ = ["REASON", "answer_of", "asked", "question_fields", "question_schema"]

REASON: Final = "question"
"""An interrupt's reason when it asks a question (a call to approve: ``tool_approval``)."""


def asked(approval: Approval) -> bool:
    """Whether a held call is a question."""
    return approval.call.kind == "question"


def _question(approval: Approval) -> Question:
    try:
        return Question.from_args(approval.call.args)
    except FormError:  # held, so it was one: shown in the words it has
        args = approval.call.args
        return Question(text=str(args.get("question", "")) if isinstance(args, dict) else "")


def question_fields(approval: Approval) -> dict[str, Any]:
    """The question as an interrupt's metadata and its activity show it."""
    question = _question(approval)
    fields: dict[str, Any] = {
        "question": question.text,
        "choices": list(question.choices),
        "multiple": question.multiple,
        "form": question.form,
    }
    if question.has_default:
        fields["default"] = question.default
    return fields


def question_schema(approval: Approval) -> dict[str, Any]:
    """What a resume answering the question sends: the answer, as the question's schema says,
    and the version of the call it was made on, sent back as the interrupt gave it."""
    return {
        "type": "object",
        "properties": {
            "answer": _question(approval).answer_schema,
            "version": {
                "type": "integer",
                "const": approval.version,
                "description": "The version of the question this answer was made on: send it "
                "back as it is.",
            },
        },
        "required": ["answer"],
        "additionalProperties": False,
    }


def answer_of(entry: ResumeEntry, where: str) -> Decision:
    """A resume entry on a question as its decision: the answer, or — cancelled — declined.
    Raises `ValueError` naming what is wrong with its payload."""
    if entry.status == "cancelled":
        return Reject(reason="the interrupt was cancelled")
    payload = entry.payload
    if not isinstance(payload, dict) or "answer" not in payload:
        raise ValueError(f"{where}: payload needs 'answer': the question's answer")
    extra = sorted(set(payload) - {"answer", "version"})
    if extra:
        raise ValueError(f"{where}: unknown payload fields {extra} (answer, version)")
    return Answer(value=payload["answer"])
