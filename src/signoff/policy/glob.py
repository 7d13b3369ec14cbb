"""Glob patterns with `fnmatch` meaning, case-sensitive, and their shapes for indexing.

`*` matches any run of characters (``/`` included), `?` one character, `[abc]`/`[a-z]` one of a
set and `[!abc]` one not in it. There is no escape character: `[*]` matches a literal star.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = ["Glob", "Shape", "check_glob", "compile_glob"]

Shape: TypeAlias = Literal["exact", "any", "prefix", "suffix", "infix", "complex"]

_META = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class Glob:
    """A checked pattern, with the literal text the index keys it by."""

    pattern: str
    shape: Shape
    key: str
    """exact: the name; prefix/suffix/infix: the literal part; complex: its longest literal run
    (where it must occur is `key_side`), or empty; any: empty."""
    key_side: Literal["prefix", "suffix", "infix", "none"]

    def matches(self, name: str) -> bool:
        match self.shape:
            case "exact":
                return name == self.key
            case "any":
                return True
            case "prefix":
                return name.startswith(self.key)
            case "suffix":
                return name.endswith(self.key)
            case "infix":
                return self.key in name
            case "complex":
                return _regex(self.pattern).match(name) is not None


def check_glob(pattern: str) -> str | None:
    """Return what is wrong with `pattern`, or None when it is a valid glob."""
    if not pattern:
        return "empty pattern: it would match nothing; remove it or write '*' to match everything"
    if "[" not in pattern:
        return None
    i, n = 0, len(pattern)
    while i < n:
        if pattern[i] == "[":
            # The same scan fnmatch.translate does: `[!` and a leading `]` belong to the set.
            j = i + 1
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                return (
                    f"'[' at position {i + 1} is never closed; close the set with ']' "
                    "or write '[[]' for a literal '['"
                )
            i = j
        i += 1
    return None


def compile_glob(pattern: str) -> Glob:
    """Classify a valid pattern (see `check_glob`) so the engine can index it."""
    if not _META.intersection(pattern):
        return Glob(pattern, "exact", pattern, "none")
    core = pattern.strip("*")
    if not core:
        return Glob(pattern, "any", "", "none")
    if not _META.intersection(core):
        # Only stars at the ends; a run of them means one star, so `**x**` is like `*x*`.
        if pattern[0] == "*" and pattern[-1] == "*":
            return Glob(pattern, "infix", core, "none")
        if pattern[-1] == "*":
            return Glob(pattern, "prefix", core, "none")
        return Glob(pattern, "suffix", core, "none")
    # Key a complex glob by its longest literal run: the index tries its regex only on names
    # that contain that text where the glob needs it (at the start, at the end, or anywhere).
    runs = _literal_runs(pattern)
    best = max(runs, key=lambda run: (len(run[1]), run[0] == "prefix", run[0] == "suffix"))
    if best[1]:
        return Glob(pattern, "complex", best[1], best[0])
    return Glob(pattern, "complex", "", "none")


def _literal_runs(pattern: str) -> list[tuple[Literal["prefix", "suffix", "infix"], str]]:
    """The runs of literal text between wildcards and sets, each with where it must occur."""
    runs: list[str] = [""]
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "[":
            j = i + 1
            j += j < n and pattern[j] == "!"
            j += j < n and pattern[j] == "]"
            i = pattern.index("]", j) + 1
            runs.append("")
        elif char in "*?":
            i += 1
            runs.append("")
        else:
            runs[-1] += char
            i += 1
    labelled: list[tuple[Literal["prefix", "suffix", "infix"], str]] = [("infix", r) for r in runs]
    labelled[0] = ("prefix", runs[0])
    if len(runs) > 1:
        labelled[-1] = ("suffix", runs[-1])
    return labelled


@functools.lru_cache(maxsize=65_536)
def _regex(pattern: str) -> re.Pattern[str]:
    """Compiled on first use: most complex globs are only tried when a new tool name shows up."""
    return re.compile(fnmatch.translate(pattern))
