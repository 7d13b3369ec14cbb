"""Checking edited arguments against the tool's JSON schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from signoff.errors import InvalidEditError

__all__ = ["check_edit"]


def check_edit(args: Any, schema: Mapping[str, Any] | None) -> None:
    """Raise `InvalidEditError` naming the argument path and the schema path that refused it."""
    if not isinstance(args, dict):
        raise InvalidEditError(
            "edited arguments must be a JSON object", path="", schema_path="type"
        )
    if schema is None:
        return
    error = best_match(Draft202012Validator(schema).iter_errors(args))
    if error is not None:
        raise InvalidEditError(
            error.message,
            path="/" + "/".join(str(p) for p in error.absolute_path),
            schema_path="/".join(str(p) for p in error.absolute_schema_path),
        )
