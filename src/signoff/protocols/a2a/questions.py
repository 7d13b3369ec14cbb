"""A held question as A2A parts, and a client's reply as its answer (`signoff.gate.questions`).

A task that waits on a question says it in words and in a ``signoff.question`` data part — the
text, the choices or form, and the JSON schema an answer must fit. The reply answers it as text
(the answer itself, or one of the choices by its text) or as a data part ``{"answer": VALUE}``;
`decisions` reads it. Whether the answer fits is the gate's to say, as for every channel.

Plain JSON, as `hitl`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from signoff.gate.forms import FormError, form_fields
from signoff.gate.questions import Question
from signoff.protocols.a2a.pending import Pending

__all__ = ["QUESTION", "asked", "question_of", "question_part", "question_words", "sent_value"]

QUESTION: Final = "signoff.question"
"""The data part that holds a question a task waits on."""


def asked(p: Pending) -> bool:
    """Whether a held call is a question."""
    return p.kind == "question"


def question_of(p: Pending) -> Question:
    """The question a held call asks (held, so it is one; its text as the task shows it)."""
    try:
        return Question.from_args(p.args)
    except FormError:  # masked beyond reading: still asked, in the words it has
        return Question(text=str(p.args.get("question", "")) if isinstance(p.args, dict) else "")


def question_part(p: Pending) -> dict[str, Any]:
    """The question as a data part: its text, its choices or form, the schema of an answer and
    the version of the call it shows."""
    question = question_of(p)
    data: dict[str, Any] = {
        "type": QUESTION,
        "approvalId": p.approval_id,
        "callId": p.call_id,
        "question": question.text,
        "choices": list(question.choices),
        "multiple": question.multiple,
        "form": question.form,
        "schema": question.answer_schema,
        "agent": p.agent,
        "expiresAt": p.expires_at,
    }
    if question.has_default:
        data["default"] = question.default
    if p.version is not None:
        data["version"] = p.version
    return {"data": data, "metadata": {"type": QUESTION}, "mediaType": "application/json"}


def question_words(questions: Sequence[Pending], *, agent: str) -> list[str]:
    """The lines that ask the questions, and say how to answer."""
    lines = [f"{agent} asks you:" if len(questions) == 1 else f"{agent} asks you {len(questions)}"]
    for n, p in enumerate(questions, 1):
        question = question_of(p)
        expiry = f" (until {p.expires_at})" if p.expires_at else ""
        lines.append(f"{n}. {question.text}{_offered(question)}{expiry}")
    lines.append(
        "Answer on this task: reply with the answer as text (a choice by its text), or a data "
        'part {"answer": VALUE} (a list of choices, or the form\'s fields as an object).'
    )
    return lines


def _offered(question: Question) -> str:
    if question.choices:
        several = "one or more" if question.multiple else "one"
        return f" — {several} of: {', '.join(question.choices)}"
    if question.form is not None:
        fields = [name for name, _ in form_fields(question.form)]
        return f" — a form: {', '.join(fields)}"
    return ""


def sent_value(value: Any) -> Any:
    """An answer as a data part sent it, with each whole number as one: A2A's data parts carry
    every number as a float, and a form's integer field is answered 3, not 3.0."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: sent_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [sent_value(v) for v in value]
    return value
