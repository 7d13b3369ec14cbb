"""An AdalFlow tool's parameters as the JSON schema a person's edit of its calls is checked
against: AdalFlow writes Python's type names where JSON schema has its own."""

from __future__ import annotations

from typing import Any

__all__ = ["schema_of"]

_JSON_TYPES = {"int": "integer", "float": "number", "str": "string", "bool": "boolean",
               "list": "array", "tuple": "array", "dict": "object", "none": "null",
               "nonetype": "null"}  # fmt: skip


def schema_of(definition: Any) -> dict[str, Any] | None:
    """The tool's parameters as a JSON schema: AdalFlow writes Python's type names there
    (``{"type": "int"}``); a type JSON schema has no name for constrains nothing."""
    parameters = getattr(definition, "func_parameters", None)
    return _json_schema(parameters) if isinstance(parameters, dict) else None


def _json_schema(node: Any) -> Any:
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items() if k != "type"}
    kind = node.get("type")
    if isinstance(kind, str):
        base = kind.split("[", 1)[0].removeprefix("typing.").lower()  # List[int] → list
        named = kind if kind in _JSON_TYPES.values() else _JSON_TYPES.get(base)
        if named is not None:
            out["type"] = named
    return out
