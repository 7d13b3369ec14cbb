"""Argument conditions: a path into the call's arguments and a test of the value found there.

A path is dotted (``options.mode``, ``files.0``) or a JSON pointer (``/options/mode``,
``/a~1b`` for the key ``a/b``). A value that is not there fails every test but ``exists: false``,
``ne`` and ``not_in``. Comparisons (`gt`, `ge`, `lt`, `le`) hold only between two numbers or two
strings; `true` is not the number 1.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from signoff.limits import MAX_DEPTH, json_depth
from signoff.policy.glob import check_glob

__all__ = ["OPERATORS", "Condition", "NotJSONError", "compile_condition", "is_json", "parse_path"]

_MISSING: Final = object()
_PLAIN: Final = frozenset({str, int, bool, type(None)})


class NotJSONError(ValueError):
    """A condition found a value that is not plain JSON (NaN, a date, an object): the policy
    cannot judge the call, and fails closed."""


_INDEX: Final = re.compile(r"[0-9]{1,9}")

OPERATORS: Final = (
    "eq",
    "ne",
    "in",
    "not_in",
    "glob",
    "regex",
    "gt",
    "ge",
    "lt",
    "le",
    "exists",
)


@dataclass(frozen=True, slots=True)
class Condition:
    """One compiled test: `operator` applied to the value at `path`."""

    path: str
    operator: str
    operand: Any
    segments: tuple[str, ...]
    test: Callable[[Any], bool]

    def holds(self, args: Mapping[str, Any]) -> bool:
        value: Any = args
        for segment in self.segments:
            if isinstance(value, Mapping):
                value = value.get(segment, _MISSING)
            elif isinstance(value, list) and _INDEX.fullmatch(segment):
                index = int(segment)
                value = value[index] if index < len(value) else _MISSING
            else:
                value = _MISSING
            if value is _MISSING:
                break
        if type(value) not in _PLAIN and value is not _MISSING and not is_json(value):
            raise NotJSONError(self.path)
        return self.test(value)


def parse_path(path: str) -> tuple[str, ...]:
    """Split a dotted path or a JSON pointer into its segments; raise ValueError if malformed."""
    if path.startswith("/"):
        segments = path[1:].split("/")
        if any(re.search(r"~(?![01])", s) for s in segments):
            raise ValueError(f"JSON pointer {path!r} has a '~' not followed by 0 or 1")
        return tuple(s.replace("~1", "/").replace("~0", "~") for s in segments)
    segments = path.split(".")
    if not path or "" in segments:
        raise ValueError(
            f"path {path!r} has an empty segment; write 'a.b' or a JSON pointer like '/a/b'"
        )
    return tuple(segments)


def compile_condition(path: str, operator: str, operand: Any) -> Condition:
    """Build one condition; raise ValueError naming what is wrong with the operand."""
    if json_depth(operand, stop_after=MAX_DEPTH) > MAX_DEPTH:
        raise ValueError(f"{operator!r} has a value nested more than {MAX_DEPTH} levels deep")
    if not is_json(operand):
        raise ValueError(
            f"{operator!r} needs a JSON value (text, number, true/false, null, list, mapping), "
            f"not {operand!r}"
        )
    return Condition(path, operator, operand, parse_path(path), _test(operator, operand))


def _test(operator: str, operand: Any) -> Callable[[Any], bool]:
    match operator:
        case "eq":
            return lambda value: value is not _MISSING and _json_equal(value, operand)
        case "ne":
            return lambda value: value is _MISSING or not _json_equal(value, operand)
        case "in" | "not_in":
            if not isinstance(operand, list):
                raise ValueError(f"{operator!r} needs a list of values, not {operand!r}")
            options = list(operand)
            if operator == "in":
                return lambda value: (
                    value is not _MISSING and any(_json_equal(value, o) for o in options)
                )
            return lambda value: (
                value is _MISSING or not any(_json_equal(value, o) for o in options)
            )
        case "glob":
            if not isinstance(operand, str) or not operand:
                raise ValueError(f"'glob' needs a non-empty string pattern, not {operand!r}")
            if problem := check_glob(operand):
                raise ValueError(f"invalid glob {operand!r}: {problem}")
            regex = re.compile(fnmatch.translate(operand))
            return lambda value: isinstance(value, str) and regex.match(value) is not None
        case "regex":
            if not isinstance(operand, str):
                raise ValueError(f"'regex' needs a string, not {operand!r}")
            try:
                pattern = re.compile(operand)
            except re.error as exc:
                raise ValueError(f"invalid regex {operand!r}: {exc}") from None
            return lambda value: isinstance(value, str) and pattern.search(value) is not None
        case "gt" | "ge" | "lt" | "le":
            if not (_is_number(operand) or isinstance(operand, str)):
                raise ValueError(f"{operator!r} needs a number or a string, not {operand!r}")
            compare = _COMPARISONS[operator]
            return lambda value: _comparable(value, operand) and compare(value, operand)
        case "exists":
            if not isinstance(operand, bool):
                raise ValueError(f"'exists' needs true or false, not {operand!r}")
            return lambda value: (value is not _MISSING) is operand
    raise ValueError(f"unknown operator {operator!r}; use one of {', '.join(OPERATORS)}")


_COMPARISONS: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "gt": lambda a, b: bool(a > b),
    "ge": lambda a, b: bool(a >= b),
    "lt": lambda a, b: bool(a < b),
    "le": lambda a, b: bool(a <= b),
}


def is_json(value: Any) -> bool:
    """Whether `value` is plain JSON: no NaN or infinity, no dates, sets or other objects.
    Without recursion: any depth is checked safely."""
    stack = [value]
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, str | bool | int):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return False
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            if not all(isinstance(k, str) for k in item):
                return False
            stack.extend(item.values())
        else:
            return False
    return True


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _comparable(value: Any, operand: Any) -> bool:
    if _is_number(operand):
        return _is_number(value)
    return isinstance(value, str)


def _json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: booleans are not numbers, 1 equals 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and bool(a == b)
