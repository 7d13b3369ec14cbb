"""Claude Code's ``AskUserQuestion`` as a signoff question: the one to four questions Claude asks
the person at the terminal become one held question — a single question's options its choices
(several with ``multiSelect``), several questions a form with a field each — and the person's
answer, given from any channel, becomes the ``answers`` Claude Code's tool reads from its input
(a question's text to the label chosen, or the labels), so the tool result Claude reads is the
answer itself.

    {"questions": [{"question": "Which region?", "header": "Region", "multiSelect": false,
                    "options": [{"label": "eu", "description": "Frankfurt"}, ...]}]}
    -> {"question": "Which region?\\n- eu: Frankfurt\\n- us: Virginia", "choices": ["eu", "us"]}

The answer is one of the options as offered: the free text Claude Code's own dialog also takes
("Other") is not offered here — a person who would answer otherwise declines, with the reason
the model reads. An option's ``preview`` is not shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from signoff.gate.forms import FormError

__all__ = ["ASK_USER_QUESTION", "answered_input", "question_of"]

ASK_USER_QUESTION: Final = "AskUserQuestion"
"""Claude Code's tool that asks the person at the terminal."""
_MOST_QUESTIONS: Final = 50
_MOST_OPTIONS: Final = 50
_FIELD_NAME: Final = 64
"""The longest header taken as a form field's name."""


def question_of(asked: Mapping[str, Any]) -> dict[str, Any]:
    """The signoff question (the arguments of `signoff.gate.questions.Question`) that
    ``AskUserQuestion``'s input `asked` asks; `FormError` naming the field Claude Code's input
    gets wrong. Whether the question may be asked, and any limit of its size, is the
    gate's to say."""
    questions = _questions(asked)
    if len(questions) == 1:
        one = questions[0]
        if one["kind"] != "choice":
            return {"question": one["question"], "schema": _form(questions)}
        lines = [f"- {o['label']}: {o['description']}" for o in one["options"] if o["description"]]
        text = "\n".join([one["question"], *lines])
        return {"question": text, "choices": [o["label"] for o in one["options"]],
                "multiple": one["multiSelect"]}  # fmt: skip
    return {"question": "\n".join(q["question"] for q in questions), "schema": _form(questions)}


def answered_input(asked: Mapping[str, Any], answer: Any) -> dict[str, Any]:
    """``AskUserQuestion``'s input `asked` with the person's `answer` (to the question
    `question_of` made of it, as the gate checked it) as the ``answers`` the tool reads: each
    question's text to the label chosen, or to the list of labels."""
    questions = _questions(asked)
    if len(questions) == 1 and questions[0]["kind"] == "choice":
        answers = {questions[0]["question"]: answer}
    else:
        names = _names(questions)
        given = answer if isinstance(answer, Mapping) else {}
        answers = {q["question"]: _said(given[name]) for q, name in zip(questions, names,
                   strict=True) if name in given}  # fmt: skip
    return {**asked, "answers": answers}


def _said(value: Any) -> Any:
    """A field's answer as Claude Code reads one: text, or a list of labels."""
    if isinstance(value, str | list):
        return value
    return format(value, "g") if isinstance(value, float) else str(value)


def _questions(asked: Mapping[str, Any]) -> list[dict[str, Any]]:
    given = asked.get("questions")
    if not isinstance(given, list) or not 1 <= len(given) <= _MOST_QUESTIONS:
        raise FormError(f"tool_input.questions: a list of 1 to {_MOST_QUESTIONS} questions")
    return [_question(q, f"tool_input.questions[{i}]") for i, q in enumerate(given)]


def _question(given: Any, where: str) -> dict[str, Any]:
    if not isinstance(given, Mapping):
        raise FormError(f"{where}: a question is an object")
    text = given.get("question")
    if not isinstance(text, str) or not text.strip():
        raise FormError(f"{where}.question: the question's text is required")
    kind = given.get("kind") or "choice"
    if kind not in ("choice", "text", "number"):
        raise FormError(f"{where}.kind: one of choice, text or number")
    options = given.get("options") or []
    if not isinstance(options, list) or len(options) > _MOST_OPTIONS:
        raise FormError(f"{where}.options: a list of at most {_MOST_OPTIONS} options")
    if kind == "choice" and not options:
        raise FormError(f"{where}.options: a choice question lists its options")
    return {
        "question": text,
        "kind": kind,
        "header": given.get("header") if isinstance(given.get("header"), str) else "",
        "options": [_option(o, f"{where}.options[{i}]") for i, o in enumerate(options)],
        "multiSelect": given.get("multiSelect") is True,
        "min": given.get("min"),
        "max": given.get("max"),
    }


def _option(given: Any, where: str) -> dict[str, str]:
    label = given.get("label") if isinstance(given, Mapping) else None
    if not isinstance(label, str) or not label.strip():
        raise FormError(f"{where}.label: an option's label is required")
    described = given.get("description")
    return {"label": label, "description": described if isinstance(described, str) else ""}


def _form(questions: list[dict[str, Any]]) -> dict[str, Any]:
    """The form asking `questions`: a field each, named by its header, every one required."""
    names = _names(questions)
    fields = {name: _field(q) for q, name in zip(questions, names, strict=True)}
    return {"type": "object", "properties": fields, "required": names}


def _field(question: dict[str, Any]) -> dict[str, Any]:
    shown = {"title": question["question"]}
    if question["kind"] == "text":
        return {"type": "string", "minLength": 1, **shown}
    if question["kind"] == "number":
        bounds = {k: v for k, v in (("minimum", question["min"]), ("maximum", question["max"]))
                  if isinstance(v, int | float) and not isinstance(v, bool)}  # fmt: skip
        return {"type": "number", **bounds, **shown}
    options = [{"const": o["label"], "title": _titled(o)} for o in question["options"]]
    if question["multiSelect"]:
        return {"type": "array", "items": {"anyOf": options}, "minItems": 1, **shown}
    return {"type": "string", "oneOf": options, **shown}


def _titled(option: dict[str, str]) -> str:
    described = option["description"]
    return f"{option['label']} — {described}" if described else option["label"]


def _names(questions: list[dict[str, Any]]) -> list[str]:
    """Each question's field name: its header (Claude Code's short chip, like "Auth method")
    where the headers are distinct and plain, else ``question 1``, ``question 2``, …"""
    headers = [q["header"].strip() for q in questions]
    plain = all(
        0 < len(h) <= _FIELD_NAME and ": " not in h and "[" not in h and h.isprintable()
        for h in headers
    )
    if plain and len(set(headers)) == len(headers):
        return headers
    return [f"question {i}" for i in range(1, len(questions) + 1)]
