"""A question in Slack: a few choices as buttons on its message, and anything else — text, several
choices, many choices, a form — typed into a modal the message's Answer button opens.

The modal is drawn from the question alone (the form subset of `signoff.gate.forms` maps onto
Slack's inputs one to one) and read back into the answer the question's schema expects. Whether
the answer fits is not judged here: the gate judges it, and its refusal — ``answer.email: not an
email`` — is shown under the field it names.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from signoff.gate.forms import field_options, form_fields

__all__ = [
    "ANSWER",
    "MODAL",
    "REPLY",
    "answer_of",
    "choice_buttons",
    "field_errors",
    "modal",
]

ANSWER: Final = "signoff.answer"
"""The choice buttons' action ids: ``signoff.answer.<index of the choice>``."""
REPLY: Final = "signoff.reply"
"""The button that opens the modal."""
MODAL: Final = "signoff.question"
"""The modal's callback id."""
MAX_BUTTONS: Final = 10
"""The most choices shown as buttons; more are picked in the modal."""
_OPTIONS: Final = 100  # a select holds 100 options
_OPTION: Final = 75  # an option's or a button's text holds 75 characters
_WHOLE: Final = "answer"
"""The block id of the one input of a question that is not a form."""


def choice_buttons(question: dict[str, Any], value: str) -> list[dict[str, Any]]:
    """One button per choice of a question answered by one of a few choices; none otherwise."""
    choices = question.get("choices")
    if not isinstance(choices, list) or question.get("multiple") or len(choices) > MAX_BUTTONS:
        return []
    return [
        {
            "type": "button",
            "action_id": f"{ANSWER}.{i}",
            "text": {"type": "plain_text", "text": _short(str(choice)), "emoji": False},
            "value": value,
        }
        for i, choice in enumerate(choices)
    ]


def needs_modal(question: dict[str, Any]) -> bool:
    """Whether the question is answered in a modal rather than by a button of its message."""
    return not choice_buttons(question, "")


def modal(question: dict[str, Any], target: str) -> dict[str, Any]:
    """The modal that asks `question`; `target` (sink, approval and version) rides along."""
    text = str(question.get("question", ""))
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "plain_text", "text": text[:2900], "emoji": False}}
    ]
    form = question.get("schema")
    if isinstance(form, dict):
        required = form.get("required") or []
        for name, field in form_fields(form):
            # A box left unticked is an answer (false): Slack would insist on a tick.
            optional = name not in required or field.get("type") == "boolean"
            label, hint = str(field.get("title") or name), field.get("description")
            blocks.append(_input(name, label, _element(field), optional=optional, hint=hint))
    else:
        blocks.append(_input(_WHOLE, "Your answer", _whole(question), optional=False, hint=None))
    return {
        "type": "modal",
        "callback_id": MODAL,
        "private_metadata": target,
        "title": {"type": "plain_text", "text": "Answer the agent"},
        "submit": {"type": "plain_text", "text": "Send"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": blocks,
    }


def answer_of(question: dict[str, Any], values: dict[str, Any]) -> Any:
    """The answer a modal's submitted `values` (``view.state.values``) give, in the shape the
    question's schema expects; what cannot be read stays as given, for the gate to refuse."""
    form = question.get("schema")
    if not isinstance(form, dict):
        return _read(_state(values, _WHOLE), question.get("choices") or [])
    answer: dict[str, Any] = {}
    for name, field in form_fields(form):
        state = _state(values, name)
        if field.get("type") == "boolean":
            answer[name] = bool(state.get("selected_options"))
            continue
        value = _read(state, field_options(field)[0])
        if value is not None and value != []:
            answer[name] = _number(value, field) if field.get("type") in _NUMBERS else value
    return answer


def field_errors(message: str, question: dict[str, Any]) -> dict[str, str]:
    """The gate's refusal of an answer, under the modal's field it names (``answer.email: ...``
    under the email field); a refusal naming no field, under the first."""
    form = question.get("schema")
    names = [name for name, _ in form_fields(form)] if isinstance(form, dict) else [_WHOLE]
    where, _, why = message.partition(": ")
    field = where.removeprefix("answer.").partition("[")[0]
    return {field if field in names else names[0]: (why if field in names else message)[:2000]}


_NUMBERS: Final = ("number", "integer")


def _input(
    block: str, label: str, element: dict[str, Any], *, optional: bool, hint: Any
) -> dict[str, Any]:
    out = {
        "type": "input",
        "block_id": block,
        "label": {"type": "plain_text", "text": label[:2000], "emoji": False},
        "element": element | {"action_id": "value"},
        "optional": optional,
    }
    if isinstance(hint, str) and hint:
        out["hint"] = {"type": "plain_text", "text": hint[:2000], "emoji": False}
    return out


def _whole(question: dict[str, Any]) -> dict[str, Any]:
    choices = question.get("choices")
    if not isinstance(choices, list):
        return {"type": "plain_text_input", "multiline": True}
    kind = "multi_static_select" if question.get("multiple") else "static_select"
    return {"type": kind, "options": _choices(choices, choices)}


def _element(field: dict[str, Any]) -> dict[str, Any]:
    kind = field.get("type")
    if kind in _NUMBERS:
        return {"type": "number_input", "is_decimal_allowed": kind == "number"}
    if kind == "boolean":
        return {"type": "checkboxes", "options": [_option("Yes", "yes")]}
    values, titles = field_options(field)
    if values:
        select = "multi_static_select" if kind == "array" else "static_select"
        return {"type": select, "options": _choices(values, titles)}
    return {
        "email": {"type": "email_text_input"},
        "uri": {"type": "url_text_input"},
        "date": {"type": "datepicker"},
        "date-time": {"type": "datetimepicker"},
    }.get(str(field.get("format")), {"type": "plain_text_input"})


def _choices(values: list[Any], titles: list[Any]) -> list[dict[str, Any]]:
    """Options whose values are indexes: a choice's text may be longer than an option's value."""
    return [_option(str(t), str(i)) for i, t in enumerate(titles[:_OPTIONS])]


def _option(text: str, value: str) -> dict[str, Any]:
    return {"text": {"type": "plain_text", "text": _short(text), "emoji": False}, "value": value}


def _state(values: dict[str, Any], block: str) -> dict[str, Any]:
    state = (values.get(block) or {}).get("value")
    return state if isinstance(state, dict) else {}


def _read(state: dict[str, Any], choices: list[Any]) -> Any:
    """The value of one input, as Slack reports it: an option by its index into `choices`."""
    if "selected_options" in state:
        return [_chosen(o, choices) for o in state["selected_options"] or []]
    if "selected_option" in state:
        return None if state["selected_option"] is None else _chosen(state["selected_option"],
                                                                     choices)  # fmt: skip
    if isinstance(state.get("selected_date_time"), int):
        return datetime.fromtimestamp(state["selected_date_time"], UTC).isoformat()
    for key in ("selected_date", "value"):
        if state.get(key) is not None:
            return state[key]
    return None


def _chosen(option: Any, choices: list[Any]) -> Any:
    index = option.get("value") if isinstance(option, dict) else None
    if isinstance(index, str) and index.isdigit() and int(index) < len(choices):
        return choices[int(index)]
    return index


def _number(text: Any, field: dict[str, Any]) -> Any:
    """A number input's text as the number it says; text that says none stays text."""
    try:
        number = float(text)
    except (TypeError, ValueError):
        return text
    return int(number) if field.get("type") == "integer" and number.is_integer() else number


def _short(text: str) -> str:
    return text if len(text) <= _OPTION else text[: _OPTION - 1] + "…"
