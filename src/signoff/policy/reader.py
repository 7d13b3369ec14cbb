"""Typed reads from a parsed document that record every problem with its path.

A reader never raises on bad input: it records a `Problem` and returns None, so one pass over a
document reports every mistake in it. The loader turns the recorded paths into lines and columns.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast, get_args

from signoff.policy.glob import check_glob
from signoff.policy.source import Path
from signoff.types import VerdictKind

__all__ = ["Reader", "Recorded", "show"]

_VERDICTS: tuple[str, ...] = get_args(VerdictKind)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_SIZE = re.compile(r"([0-9]{1,12})([KMG]i?B|B)?", re.IGNORECASE)
_SIZES = {"b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "kib": 1024, "mib": 1024**2,
          "gib": 1024**3}  # fmt: skip


@dataclass(frozen=True)
class Recorded:
    path: Path
    message: str
    at_key: bool = False


@dataclass
class Reader:
    problems: list[Recorded] = field(default_factory=list)
    warnings: list[Recorded] = field(default_factory=list)

    def error(self, path: Path, message: str, *, at_key: bool = False) -> None:
        self.problems.append(Recorded(path, message, at_key))

    def warn(self, path: Path, message: str, *, at_key: bool = False) -> None:
        self.warnings.append(Recorded(path, message, at_key))

    def mapping(self, value: Any, path: Path, what: str) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.error(path, f"{what} must be a mapping, not {describe(value)}")
            return None
        for key in value:
            if not isinstance(key, str):
                hint = " (YAML reads unquoted yes/no/on/off/null as non-strings: quote it)"
                self.error(
                    (*path, key), f"keys must be strings, not {describe(key)}{hint}", at_key=True
                )
                return None
        return value

    def keys(self, data: dict[str, Any], path: Path, allowed: frozenset[str], what: str) -> None:
        if allowed.issuperset(data):
            return
        for key in data:
            if key not in allowed:
                hint = difflib.get_close_matches(key, list(allowed), n=1)
                suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
                self.error(
                    (*path, key),
                    f"unknown key {key!r} in {what}{suggestion} "
                    f"(expected one of: {', '.join(sorted(allowed))})",
                    at_key=True,
                )

    def mapping_with(
        self,
        value: Any,
        path: Path,
        what: str,
        allowed: frozenset[str],
        *,
        needs: tuple[str, ...],
        missing: str,
    ) -> dict[str, Any] | None:
        """`value` as a mapping of `allowed` keys (an unknown one recorded) that has every key
        it `needs`; None when it is no mapping or lacks one (`missing`, what to write, is
        recorded)."""
        data = self.mapping(value, path, what)
        if data is None:
            return None
        self.keys(data, path, allowed, what)
        if not data.keys() >= set(needs):
            self.error(path, missing)
            return None
        return data

    def section(self, value: Any, name: str, allowed: frozenset[str]) -> dict[str, Any] | None:
        """The top-level section ``name:`` as a mapping, its unknown keys recorded; None when
        it is left out (null) or is no mapping."""
        if value is None:
            return None
        data = self.mapping(value, (name,), name)
        if data is not None:
            self.keys(data, (name,), allowed, name)
        return data

    def variable(self, value: Any, path: Path, what: str, env: Mapping[str, str]) -> str | None:
        """The value of the environment variable that `value` names, looked up in `env`."""
        variable = self.string(value, path, what)
        if variable is None:
            return None
        found = env.get(variable)
        if not found:
            self.error(path, f"the environment variable {variable} is not set")
            return None
        return found

    def string(self, value: Any, path: Path, what: str) -> str | None:
        if not isinstance(value, str) or not value:
            self.error(path, f"{what} must be a non-empty string, not {show(value)}")
            return None
        return value

    def strings(
        self, value: Any, path: Path, what: str, *, allow_empty: bool = False
    ) -> tuple[str, ...] | None:
        """A string or a list of strings."""
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not (items or allow_empty):
            self.error(
                path, f"{what} must be a string or a non-empty list of strings, not {show(value)}"
            )
            return None
        out: list[str] = []
        for i, item in enumerate(items):
            where = path if isinstance(value, str) else (*path, i)
            if (text := self.string(item, where, what)) is not None:
                out.append(text)
        return tuple(out) if len(out) == len(items) else None

    def globs(
        self, value: Any, path: Path, what: str, *, allow_empty: bool = False
    ) -> tuple[str, ...] | None:
        patterns = self.strings(value, path, what, allow_empty=allow_empty)
        if patterns is None:
            return None
        ok = True
        for i, pattern in enumerate(patterns):
            if problem := check_glob(pattern):
                where = path if isinstance(value, str) else (*path, i)
                self.error(where, f"invalid glob {pattern!r}: {problem}")
                ok = False
        return patterns if ok else None

    def boolean(self, value: Any, path: Path, what: str) -> bool | None:
        if not isinstance(value, bool):
            self.error(path, f"{what} must be true or false, not {show(value)}")
            return None
        return value

    def integer(self, value: Any, path: Path, what: str) -> int | None:
        if not isinstance(value, int) or isinstance(value, bool):
            self.error(path, f"{what} must be an integer, not {show(value)}")
            return None
        return value

    def size(self, value: Any, path: Path, what: str) -> int | None:
        """Bytes, from a whole number or a text like ``512KB``, ``16MiB``, ``1GB``."""
        found = None
        if isinstance(value, int) and not isinstance(value, bool):
            found = value
        elif isinstance(value, str) and (match := _SIZE.fullmatch(value.replace(" ", ""))):
            found = int(match.group(1)) * _SIZES[(match.group(2) or "b").lower()]
        if found is None or found <= 0:
            self.error(
                path,
                f"{what} must be a positive number of bytes or a size like '512KB', '16MiB'; "
                f"not {show(value)}",
            )
            return None
        return found

    def verdict(self, value: Any, path: Path, what: str) -> VerdictKind | None:
        if value not in _VERDICTS:
            self.error(path, f"{what} must be one of allow, ask, deny; not {show(value)}")
            return None
        return cast(VerdictKind, value)

    def duration(self, value: Any, path: Path, what: str = "timeout") -> float | None:
        """Seconds, from a number or a text like ``30s``, ``5m``, ``1h30m``, ``2d``."""
        seconds: float | None = None
        if isinstance(value, int | float) and not isinstance(value, bool):
            seconds = float(value)
        elif isinstance(value, str):
            text = value.replace(" ", "")
            parts = _DURATION.findall(text)
            if parts and "".join(number + unit for number, unit in parts) == text:
                seconds = sum(float(number) * _UNITS[unit] for number, unit in parts)
        if seconds is None or not 0 < seconds < float("inf"):
            self.error(
                path,
                f"{what} must be a positive number of seconds or a duration like '30s', '5m', "
                f"'1h30m', '2d'; not {show(value)}",
            )
            return None
        return seconds


def describe(value: Any) -> str:
    """``a string 'x'``, ``null``, ``a boolean True``: the value and what YAML made of it."""
    return "null" if value is None else f"{_kind(value)} {show(value)}"


def _kind(value: Any) -> str:
    kinds = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return kinds.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )


def show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
