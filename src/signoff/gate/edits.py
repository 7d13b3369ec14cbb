"""Checking edited arguments against the tool's JSON schema."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match

from signoff.errors import InvalidEditError
from signoff.types import ToolCall

__all__ = ["SchemaLookup", "check_edit", "schema_lookup", "usable_schema"]

SchemaLookup = Callable[[ToolCall], Mapping[str, Any] | None]
"""A tool's JSON schema for a call, or None when it has none."""


def usable_schema(schema: Any) -> bool:
    """Whether `schema` is a JSON schema an edit can be checked against (a tool's may not be:
    an MCP server or a framework hands over what it has)."""
    if not isinstance(schema, Mapping):
        return False
    try:
        Draft202012Validator.check_schema(schema)
    except (SchemaError, TypeError, ValueError, RecursionError):
        return False
    return True


def check_edit(args: Any, schema: Mapping[str, Any] | None) -> None:
    """Raise `InvalidEditError` naming the argument path and the schema path that refused it."""
    if not isinstance(args, dict):
        raise InvalidEditError(
            "edited arguments must be a JSON object", path="", schema_path="type"
        )
    if schema is None:
        return
    try:
        error = best_match(Draft202012Validator(schema).iter_errors(args))
    except Exception as exc:  # a schema the validator cannot apply ($ref nowhere, bad pattern)
        raise InvalidEditError(
            f"the tool's schema cannot check an edit ({type(exc).__name__}): decide without "
            "editing, or respond",
            path="",
            schema_path="",
        ) from None
    if error is not None:
        raise InvalidEditError(
            error.message,
            path="/" + "/".join(str(p) for p in error.absolute_path),
            schema_path="/".join(str(p) for p in error.absolute_schema_path),
        )


def schema_lookup(schemas: SchemaLookup | Mapping[str, Mapping[str, Any]] | None) -> SchemaLookup:
    """The schemas of the tools, as a lookup by call: one given, a table by tool name, or none."""
    if schemas is None:
        return lambda _call: None
    if callable(schemas):
        return schemas
    table = schemas
    return lambda call: table.get(call.name)
