"""The forms a question may ask a person to fill in: MCP elicitation's restricted JSON schema (a
flat object of strings, numbers, booleans and multi-select lists), checked when the question is
asked, and the answers checked against it when they are given — each refusal naming the field.

Only this subset is taken, as MCP elicitation takes it, so every channel can draw the form
(a web card, a Slack modal, a terminal prompt) without a JSON schema engine of its own.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime
from typing import Any, Final
from urllib.parse import urlsplit

from signoff.errors import InvalidDecisionError

__all__ = [
    "ORDER",
    "FormError",
    "check_answer",
    "check_form",
    "field_options",
    "form_fields",
    "with_order",
]

ORDER: Final = "x-order"
"""The key of a form that lists its fields' names in the order they are shown: written when
the question is held, as the agent wrote the fields — it is stored as canonical JSON, whose
keys are sorted, and a list keeps its order."""

_FORMATS: Final = ("email", "uri", "date", "date-time")
_EMAIL: Final = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_KEYS: Final = {
    "string": {"enum", "enumNames", "oneOf", "format", "minLength", "maxLength"},
    "number": {"minimum", "maximum"},
    "integer": {"minimum", "maximum"},
    "boolean": set[str](),
    "array": {"items", "minItems", "maxItems"},
}
_COMMON: Final = {"type", "title", "description", "default"}
_MAX_FIELDS: Final = 50


class FormError(InvalidDecisionError):
    """An answer that does not fit its question, or a form that is not one: the message names
    the field (``answer.email: not an email``)."""


def check_form(schema: Any, where: str = "question.schema") -> None:
    """`FormError` unless `schema` is a flat object of the field kinds elicitation allows."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise FormError(f"{where}: a form is a JSON schema of type 'object'")
    _known(schema, {"type", "title", "description", "properties", "required", ORDER}, where)
    fields = schema.get("properties")
    if not isinstance(fields, dict) or not fields:
        raise FormError(f"{where}.properties: a form names its fields, at least one")
    if len(fields) > _MAX_FIELDS:
        raise FormError(f"{where}.properties: at most {_MAX_FIELDS} fields")
    for name, field in fields.items():
        _check_field(field, f"{where}.properties.{name}")
    required = schema.get("required", [])
    if not isinstance(required, list) or any(r not in fields for r in required):
        raise FormError(f"{where}.required: a list of the form's field names")
    order = schema.get(ORDER, list(fields))
    names = isinstance(order, list) and all(isinstance(n, str) for n in order)
    if not names or sorted(order) != sorted(fields):
        raise FormError(f"{where}.{ORDER}: the form's field names, each once")


def _check_field(field: Any, where: str) -> None:
    kind = field.get("type") if isinstance(field, dict) else None
    if kind not in _KEYS:
        raise FormError(f"{where}.type: one of {', '.join(_KEYS)}")
    _known(field, _COMMON | _KEYS[kind], where)
    if "format" in field and field["format"] not in _FORMATS:
        raise FormError(f"{where}.format: one of {', '.join(_FORMATS)}")
    for key in ("enum", "enumNames"):
        if key in field and not _texts(field[key]):
            raise FormError(f"{where}.{key}: a non-empty list of strings")
    if "oneOf" in field and not _consts(field["oneOf"]):
        raise FormError(f"{where}.oneOf: a non-empty list of {{const, title}} strings")
    for key in ("minLength", "maxLength", "minItems", "maxItems"):
        if key in field and (type(field[key]) is not int or field[key] < 0):
            raise FormError(f"{where}.{key}: a whole number, 0 or more")
    for key in ("minimum", "maximum"):
        if key in field and not _number(field[key]):
            raise FormError(f"{where}.{key}: a number")
    if kind == "array":
        items = field.get("items")
        ok = isinstance(items, dict) and (
            (items.get("type") == "string" and _texts(items.get("enum")) and len(items) == 2)
            or (set(items) == {"anyOf"} and _consts(items["anyOf"]))
        )
        if not ok:
            raise FormError(f"{where}.items: a multi-select lists its options as string enum")


def check_answer(value: Any, schema: dict[str, Any], where: str = "answer") -> None:
    """`FormError` naming the field unless `value` fits `schema` (a form of `check_form`, or
    one field of one)."""
    kind = schema["type"]
    if kind == "object":
        if not isinstance(value, dict):
            raise FormError(f"{where}: the form's answer is an object of its fields")
        fields = schema["properties"]
        for name in value:
            if name not in fields:
                raise FormError(f"{where}.{name}: not a field of the form")
        for name in schema.get("required", []):
            if name not in value:
                raise FormError(f"{where}.{name}: required")
        for name, item in value.items():
            check_answer(item, fields[name], f"{where}.{name}")
    elif kind == "string":
        _check_text(value, schema, where)
    elif kind in ("number", "integer"):
        whole = kind == "integer"
        if not _number(value) or (whole and not float(value).is_integer()):
            raise FormError(f"{where}: not {'a whole number' if whole else 'a number'}")
        if "minimum" in schema and value < schema["minimum"]:
            raise FormError(f"{where}: less than {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise FormError(f"{where}: more than {schema['maximum']}")
    elif kind == "boolean":
        if not isinstance(value, bool):
            raise FormError(f"{where}: not true or false")
    else:
        _check_choices(value, schema, where)


def _check_text(value: Any, schema: dict[str, Any], where: str) -> None:
    if not isinstance(value, str):
        raise FormError(f"{where}: not text")
    options = _options(schema)
    if options is not None and value not in options:
        raise FormError(f"{where}: not one of {options!r}")
    if len(value) < schema.get("minLength", 0):
        raise FormError(f"{where}: shorter than {schema['minLength']} characters")
    if len(value) > schema.get("maxLength", len(value)):
        raise FormError(f"{where}: longer than {schema['maxLength']} characters")
    fmt = schema.get("format")
    if fmt is not None and not _formatted(value, fmt):
        raise FormError(f"{where}: not {'an' if fmt in ('email', 'uri') else 'a'} {fmt}")


def _check_choices(value: Any, schema: dict[str, Any], where: str) -> None:
    options = _options(schema["items"]) or []
    if not isinstance(value, list) or any(not isinstance(v, str) for v in value):
        raise FormError(f"{where}: a list of the options chosen")
    for i, chosen in enumerate(value):
        if chosen not in options:
            raise FormError(f"{where}[{i}]: not one of {options!r}")
    if len(set(value)) != len(value):
        raise FormError(f"{where}: an option chosen twice")
    if len(value) < schema.get("minItems", 0):
        raise FormError(f"{where}: fewer than {schema['minItems']} chosen")
    if len(value) > schema.get("maxItems", len(value)):
        raise FormError(f"{where}: more than {schema['maxItems']} chosen")


def _options(schema: dict[str, Any]) -> list[str] | None:
    if "enum" in schema:
        return list(schema["enum"])
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return [option["const"] for option in schema[key]]
    return None


def _formatted(value: str, fmt: str) -> bool:
    if fmt == "email":
        return _EMAIL.fullmatch(value) is not None
    if fmt == "uri":
        parts = urlsplit(value)
        return bool(parts.scheme) and bool(parts.netloc or parts.path)
    try:
        if fmt == "date":
            date.fromisoformat(value)
            return len(value) == 10
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return "T" in value.upper() and moment.tzinfo is not None


def _known(data: dict[str, Any], allowed: set[str], where: str) -> None:
    for key in data:
        if key not in allowed:
            raise FormError(f"{where}.{key}: not part of a form's schema")


def _texts(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)


def _consts(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(
            isinstance(v, dict) and isinstance(v.get("const"), str) and set(v) <= {"const", "title"}
            for v in value
        )
    )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def field_options(field: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The options a choice field (or a multi-select's items) offers, and the titles a person
    reads them by; none for a field of another kind. For a channel drawing the form."""
    field = field.get("items", field) if field.get("type") == "array" else field
    values = _options(field) or []
    titles = field.get("enumNames")
    if "enum" not in field:
        consts = field.get("oneOf") or field.get("anyOf") or []
        titles = [o.get("title") or o["const"] for o in consts]
    return values, titles if isinstance(titles, list) and len(titles) == len(values) else values


def with_order(form: dict[str, Any]) -> dict[str, Any]:
    """`form` (one `check_form` takes) with the order of its fields written down (`ORDER`), as
    its properties are written unless it says so itself."""
    return form if ORDER in form else form | {ORDER: list(form["properties"])}


def form_fields(form: dict[str, Any]) -> list[tuple[str, Any]]:
    """A form's fields, as (name, field), in the order its `ORDER` gives — the agent's — then
    any it leaves out as they come; none when it has no properties. For a channel drawing the
    form."""
    fields = form.get("properties")
    if not isinstance(fields, dict):
        return []
    order = form.get(ORDER)
    named = (
        [n for n in order if isinstance(n, str) and n in fields] if isinstance(order, list) else []
    )
    return [(name, fields[name]) for name in dict.fromkeys([*named, *fields])]
