"""A question on the Streamlit channel's card: its choices, a text box or its form's fields, sent
as the answer — or declined with a reason. Whether the answer fits is the gate's to judge; its
refusal (``answer.email: not an email``) shows on the card as any refusal does."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from signoff.errors import MissingExtraError
from signoff.gate.forms import field_options, form_fields
from signoff.types import Answer, Decision, Reject

try:
    import streamlit as st
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise MissingExtraError("signoff.channels.streamlit", "streamlit") from exc

__all__ = ["question_actions"]


class Button(Protocol):
    def __call__(
        self, label: str, name: str, decision: Callable[[], Decision], **style: Any
    ) -> None: ...


def question_actions(args: dict[str, Any], *, at: str, button: Button) -> None:
    """The question's answer box (choices, text or form) and Decline; `button` makes a button
    that takes a decision on the card's question."""
    answer, decline = st.tabs(["Answer", "Decline"])
    with answer:
        form = args.get("schema")
        if isinstance(form, dict):
            for name, field in form_fields(form):
                _field(name, field, f"{at}:form:{name}", required=name in form.get("required", []))
        else:
            _whole(args, f"{at}:reply")
        button("Send the answer", "answer", partial(_answer, args, at), icon=":material/send:")
    with decline:
        st.text_input("Why not (the agent reads it)", key=f"{at}:reason")
        button(":red[Decline]", "reject", partial(_decline, at), icon=":material/block:")


def _whole(args: dict[str, Any], key: str) -> None:
    choices = args.get("choices")
    if not isinstance(choices, list):
        st.text_area("Your answer", key=key)
    elif args.get("multiple"):
        st.multiselect("Your answer (one or more)", choices, key=key)
    else:
        st.radio("Your answer", choices, index=None, key=key)


def _field(name: str, field: dict[str, Any], key: str, *, required: bool) -> None:
    label = f"{field.get('title') or name}{' *' if required else ''}"
    help = field.get("description") if isinstance(field.get("description"), str) else None
    kind = field.get("type")
    values, titles = field_options(field)
    if kind == "boolean":
        st.checkbox(label, key=key, help=help)
    elif kind in ("number", "integer"):
        step: int | float = 1 if kind == "integer" else 0.1
        st.number_input(label, value=None, step=step, key=key, help=help)
    elif values:
        named = dict(zip(values, titles, strict=True))

        def show(value: str) -> str:
            return named[value]

        if kind == "array":
            st.multiselect(label, values, format_func=show, key=key, help=help)
        else:
            st.selectbox(label, values, index=None, format_func=show, key=key, help=help)
    else:
        hint = {"date": "YYYY-MM-DD", "date-time": "YYYY-MM-DDTHH:MM:SSZ"}.get(
            str(field.get("format"))
        )
        st.text_input(label, key=key, help=help, placeholder=hint)


def _answer(args: dict[str, Any], at: str) -> Answer:
    """The answer the card's inputs give: a form's fields left empty are left out."""
    form = args.get("schema")
    if not isinstance(form, dict):
        return Answer(value=st.session_state.get(f"{at}:reply"))
    value: dict[str, Any] = {}
    for name, field in form_fields(form):
        given = st.session_state.get(f"{at}:form:{name}")
        if field.get("type") == "boolean":
            value[name] = bool(given)
        elif given is not None and given != "" and given != []:
            value[name] = given
    return Answer(value=value)


def _decline(at: str) -> Reject:
    return Reject(reason=st.session_state[f"{at}:reason"] or "declined in Streamlit")
