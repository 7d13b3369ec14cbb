"""Glob patterns with `fnmatch` meaning, case-sensitive, and their shapes for indexing.

`*` matches any run of characters (``/`` included), `?` one character, `[abc]`/`[a-z]` one of a
set and `[!abc]` one not in it. There is no escape character: `[*]` matches a literal star.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = ["Glob", "Shape", "check_glob", "compile_glob"]

Shape: TypeAlias = Literal["exact", "any", "prefix", "suffix", "infix", "complex"]

_META = frozenset("*?[")
_META_BACKWARDS = frozenset("*?[]")


@dataclass(frozen=True, slots=True)
class Glob:
    """A checked pattern, with the literal text the index keys it by."""

    pattern: str
    shape: Shape
    key: str
    """exact: the name; prefix/suffix/infix: the literal part; complex: its literal prefix or
    suffix (see `key_side`); any: empty."""
    key_side: Literal["prefix", "suffix", "none"]
    regex: re.Pattern[str] | None
    """Set for complex patterns only: the others are matched by the index alone."""

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
                assert self.regex is not None  # set for every complex glob by compile_glob
                return self.regex.match(name) is not None


def check_glob(pattern: str) -> str | None:
    """Return what is wrong with `pattern`, or None when it is a valid glob."""
    if not pattern:
        return "empty pattern: it would match nothing; remove it or write '*' to match everything"
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
    stars = pattern.count("*")
    if not _META.intersection(pattern):
        return Glob(pattern, "exact", pattern, "none", None)
    core = pattern.strip("*")
    if not core:
        return Glob(pattern, "any", "", "none", None)
    if not _META.intersection(core):
        leading, trailing = pattern.startswith("*"), pattern.endswith("*")
        # A run of stars means the same as one star, so `**x**` is an infix like `*x*`.
        if stars == len(pattern) - len(core):
            if leading and trailing:
                return Glob(pattern, "infix", core, "none", None)
            if trailing:
                return Glob(pattern, "prefix", core, "none", None)
            return Glob(pattern, "suffix", core, "none", None)
    regex = re.compile(fnmatch.translate(pattern), re.DOTALL)
    prefix = _literal_run(pattern, _META)
    if prefix:
        return Glob(pattern, "complex", prefix, "prefix", regex)
    # Read backwards a set ends at `]`, so that stops the literal run too.
    suffix = _literal_run(pattern[::-1], _META_BACKWARDS)[::-1]
    if suffix:
        return Glob(pattern, "complex", suffix, "suffix", regex)
    return Glob(pattern, "complex", "", "none", regex)


def _literal_run(pattern: str, meta: frozenset[str]) -> str:
    """The characters before the first of `meta`."""
    for i, char in enumerate(pattern):
        if char in meta:
            return pattern[:i]
    return pattern
