"""How deep and how big the JSON that signoff takes in may be, and how it is cut for display.

JSON nested a few hundred levels deep breaks readers far from where it came in: a recursive
encoder gives up, and every inbox that lists the call answers 500. So every boundary checks what
enters — the gate a call's arguments (a call over the limits is blocked, never stored), the
server each body and WebSocket frame — and every reader shows stored data through `clip`, which
never recurses past `MAX_DEPTH`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from signoff.errors import InvalidArgumentsError
from signoff.types import canonical_json

__all__ = [
    "MAX_ARGS_BYTES",
    "MAX_DEPTH",
    "PREVIEW_CHARS",
    "REFUSED",
    "ArgumentLimits",
    "clip",
    "json_depth",
    "refused",
    "text_depth",
]

MAX_DEPTH: Final = 64
"""Levels of objects and lists a tool call's arguments may nest (``{"a": 1}`` is one)."""
MAX_ARGS_BYTES: Final = 8 * 1024 * 1024
"""Bytes a tool call's arguments may take as canonical JSON."""
PREVIEW_CHARS: Final = 2000
"""Characters of each string a listing shows; the rest is on the item's own page."""
CUT: Final = "…"
"""Ends a string `clip` shortened."""
TOO_DEEP: Final = f"…(nested deeper than {MAX_DEPTH} levels)"
"""What `clip` shows in place of a value nested past its depth."""
REFUSED: Final = "signoff:refused"
"""The one key of `refused` arguments."""


@dataclass(frozen=True, kw_only=True)
class ArgumentLimits:
    """The bounds the gate holds a call's arguments (and an edit's) to."""

    max_depth: int = MAX_DEPTH
    max_bytes: int = MAX_ARGS_BYTES

    def problem(self, args: Any) -> str | None:
        """Why `args` is out of bounds, in words; None when it is within them. Only the depth
        is measured here (the size needs the canonical bytes, which the caller makes anyway).
        Arguments `refused` already stay refused."""
        if isinstance(args, dict) and isinstance(args.get(REFUSED), str) and len(args) == 1:
            return str(args[REFUSED])
        depth = json_depth(args, stop_after=self.max_depth)
        if depth > self.max_depth:
            return (
                f"the arguments are nested more than {self.max_depth} levels deep; "
                f"signoff takes at most {self.max_depth}"
            )
        return None

    def admit(self, args: Any) -> Any:
        """`args` if the gate can take them, else `refused` arguments saying why: what a
        runtime keeps of a call it got from a model, so that nothing it stores breaks a reader
        and the gate still blocks the call, with that reason."""
        try:
            problem = self.check(args)
        except InvalidArgumentsError:
            return args  # not JSON: the gate says so, and it is stored as text
        return args if problem is None else refused(problem)

    def check(self, args: Any) -> str | None:
        """Why `args` is out of bounds (too deep, then too big), or None; raises
        `InvalidArgumentsError` when they are not JSON."""
        return self.problem(args) or self.size_problem(len(canonical_json(args)))

    def size_problem(self, size: int) -> str | None:
        if size > self.max_bytes:
            return (
                f"the arguments take {size:,} bytes as JSON; signoff takes at most "
                f"{self.max_bytes:,}"
            )
        return None


def refused(problem: str) -> dict[str, str]:
    """Arguments standing in for ones the gate cannot take (`ArgumentLimits.admit`): any call
    with exactly these is blocked with `problem` as its reason."""
    return {REFUSED: problem}


def json_depth(value: Any, *, stop_after: int | None = None) -> int:
    """How many levels of dicts and lists `value` nests, without recursion (so any depth is
    measured safely). With `stop_after`, counting stops once past it: the result is then
    ``stop_after + 1``, however deep the value goes."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if stop_after is not None and deepest > stop_after:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = b"[]{}"
_NOT_BRACKETS = bytes(b for b in range(256) if b not in _BRACKETS)
_OPENING = frozenset(b"[{")


def text_depth(text: bytes, *, stop_after: int) -> int:
    """How deep the JSON document `text` nests, read from its brackets without parsing it (a
    parser recurses, and gives up a few hundred levels down). At most a bound: a document with
    fewer than `stop_after` opening brackets is not measured further, and counting stops once
    past `stop_after`."""
    opening = text.count(b"[") + text.count(b"{")
    if opening <= stop_after:
        return opening
    brackets = _STRING.sub(b"", text).translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for bracket in brackets:
        # Counted from zero up: a stray closing bracket (in YAML, one in a plain scalar)
        # never lets the openings after it count for less.
        depth = depth + 1 if bracket in _OPENING else max(0, depth - 1)
        if depth > deepest:
            deepest = depth
            if deepest > stop_after:
                break
    return deepest


def clip(value: Any, *, max_depth: int = MAX_DEPTH, chars: int | None = None) -> tuple[Any, bool]:
    """A copy of `value` safe to show anywhere: whatever nests past `max_depth` replaced by a
    marker and, with `chars`, every longer string cut to that many characters. Returns the copy
    and whether anything was cut."""
    cut = False

    def copy(item: Any, level: int) -> Any:
        nonlocal cut
        if isinstance(item, dict | list):
            if level > max_depth:
                cut = True
                return TOO_DEEP
            if isinstance(item, dict):
                return {k: copy(v, level + 1) for k, v in item.items()}
            return [copy(v, level + 1) for v in item]
        if chars is not None and isinstance(item, str) and len(item) > chars:
            cut = True
            return item[:chars] + CUT
        return item

    return copy(value, 1), cut
