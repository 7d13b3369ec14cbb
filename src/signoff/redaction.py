"""Arguments never shown (ARCHITECTURE §8): tokens, passwords, whatever the config's ``redact:``
names. Masked in every call's arguments the server sends out — approvals, what an edit changed,
run messages, events, audit entries — and in what the gate words itself, and put back when an
edit sends the mask unchanged, so a person edits the rest of a call without seeing (or losing)
its secret.

A pattern is a dotted path into the arguments: ``password`` (a top-level key),
``headers.authorization``, ``env.*.value`` (``*`` is any one key or list index, or part of one:
``*token*``), ``**.api_key`` (``**`` is any depth, none included). Keys match without regard to
case.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

__all__ = ["MASK", "Redaction"]

_Data = TypeVar("_Data")

_ARGUMENT_KEYS = frozenset({"args", "requested_args"})
"""Keys whose values are a call's arguments: those it runs with, and those it was asked with."""
_EDITS = "edits"
"""The key of what an edit changed (`signoff.types.change_to_dict`): each with its ``path``
into the arguments and its values ``before`` and ``after``."""

MASK = "••••••"
"""What a redacted value is shown as (the web inbox greys it)."""


@dataclass(frozen=True)
class Redaction:
    patterns: Sequence[str] = ()
    _compiled: tuple[tuple[str, ...], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        compiled = []
        for pattern in self.patterns:
            parts = tuple(part.lower() for part in pattern.split("."))
            if not pattern or any(not part for part in parts):
                raise ValueError(f"a redact pattern is a dotted path like 'a.b', not {pattern!r}")
            compiled.append(parts)
        object.__setattr__(self, "_compiled", tuple(compiled))

    def __bool__(self) -> bool:
        return bool(self._compiled)

    def hidden(self, path: Sequence[str]) -> bool:
        """Whether the value at `path` (keys and list indices) is redacted."""
        lowered = [step.lower() for step in path]
        return any(_matches(pattern, lowered) for pattern in self._compiled)

    def covers(self, path: Sequence[str]) -> bool:
        """Whether the value at `path` is redacted, or lies within one that is (a pattern may
        name an object whose every value is secret)."""
        return any(self.hidden(path[:end]) for end in range(1, len(path) + 1))

    def args(self, value: Any, path: tuple[str, ...] = ()) -> Any:
        """A copy of call arguments with each redacted value masked."""
        if path and self.hidden(path):
            return MASK
        if isinstance(value, dict):
            return {k: self.args(v, (*path, str(k))) for k, v in value.items()}
        if isinstance(value, list):
            return [self.args(v, (*path, str(i))) for i, v in enumerate(value)]
        return value

    def call_args(self, value: Any) -> Any:
        """A call's arguments as every channel shows them: an object masked at the redacted
        paths, anything else (a model's unparsable text) masked whole."""
        return self._args(value) if self._compiled else value

    def tree(self, data: _Data) -> _Data:
        """A copy of API data with the arguments of every call in it masked: the value of each
        ``args`` or ``requested_args`` key, and the values of each ``edits``, at any depth."""
        return cast(_Data, self._tree(data)) if self._compiled else data

    def _tree(self, data: Any) -> Any:
        if isinstance(data, dict):
            return {
                k: self._args(v)
                if k in _ARGUMENT_KEYS
                else self._edits(v)
                if k == _EDITS
                else self._tree(v)
                for k, v in data.items()
            }
        if isinstance(data, list):
            return [self._tree(v) for v in data]
        return data

    def _edits(self, value: Any) -> Any:
        """An edit's changes with the values at redacted paths masked; anything else that is
        not such a list masked whole."""
        if not isinstance(value, list):
            return MASK
        out = []
        for edit in value:
            path = edit.get("path") if isinstance(edit, dict) else None
            if not isinstance(path, list) or not all(isinstance(p, str) for p in path):
                out.append(MASK)
                continue
            out.append(
                edit | {k: self.value_at(edit.get(k), tuple(path)) for k in ("before", "after")}
            )
        return out

    def value_at(self, value: Any, path: tuple[str, ...]) -> Any:
        """`value`, found at `path` in a call's arguments, as it may be shown: masked when it lies
        within a redacted value (an edit's change of one of its parts, say)."""
        return MASK if value is not None and self.covers(path) else self.args(value, path)

    def _args(self, value: Any) -> Any:
        """Arguments that are not an object (a model's unparsable text, a list) are masked
        whole: what they hold cannot be told apart."""
        if isinstance(value, dict):
            return self.args(value)
        return value if value is None else MASK

    def restore(self, edited: Any, original: Any, path: tuple[str, ...] = ()) -> Any:
        """Edited arguments with each mask left unchanged at a redacted path replaced by the
        original value there (a mask where the original had nothing stays a mask). Raises
        `ValueError` for a list that holds masks and no longer has the original's length:
        which value belongs where cannot be known."""
        if isinstance(edited, str) and edited == MASK and path and self.hidden(path):
            found, value = _at(original, path)
            return value if found else edited
        if isinstance(edited, dict):
            return {k: self.restore(v, original, (*path, str(k))) for k, v in edited.items()}
        if isinstance(edited, list):
            found, before = _at(original, path)
            if self.masks(edited, path) and not (
                found and isinstance(before, list) and len(before) == len(edited)
            ):
                where = "/" + "/".join(path)
                raise ValueError(
                    f"{where}: the list holds redacted values and its length changed; "
                    "give those values again"
                )
            return [self.restore(v, original, (*path, str(i))) for i, v in enumerate(edited)]
        return edited

    def masks(self, value: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
        """The paths under `path` where `value` holds the mask at a redacted path."""
        if isinstance(value, str):
            return [path] if value == MASK and path and self.hidden(path) else []
        if isinstance(value, dict):
            items: Iterable[tuple[str, Any]] = ((str(k), v) for k, v in value.items())
        elif isinstance(value, list):
            items = ((str(i), v) for i, v in enumerate(value))
        else:
            return []
        return [found for key, item in items for found in self.masks(item, (*path, key))]

    def secrets(self, value: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
        """The redacted paths in `value` (not looking below one)."""
        if path and self.hidden(path):
            return [path]
        if isinstance(value, dict):
            return [p for k, v in value.items() for p in self.secrets(v, (*path, str(k)))]
        if isinstance(value, list):
            return [p for i, v in enumerate(value) for p in self.secrets(v, (*path, str(i)))]
        return []


def _matches(pattern: Sequence[str], path: Sequence[str]) -> bool:
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_matches(rest, path[skip:]) for skip in range(len(path) + 1))
    return bool(path) and fnmatch.fnmatchcase(path[0], head) and _matches(rest, path[1:])


def _at(value: Any, path: Iterable[str]) -> tuple[bool, Any]:
    for step in path:
        if isinstance(value, dict) and step in value:
            value = value[step]
        elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        else:
            return False, None
    return True, value
