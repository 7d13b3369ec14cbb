"""Patterns: what one argument of many approved calls shares, as a condition no wider than they
are.

Three shapes are looked for, most specific first:

- **one value**: ``eq`` that value;
- **one mail domain**: every value is one address at it, ``<name>@example.com``;
- **one folder**: every value is one name directly in it, ``/tmp/<name>``.

A *name* is one or more of `NAME_CHARACTERS` — letters, digits, ``.``, ``_``, ``+``, ``-`` —
so it holds no separator (``/``, ``\\``), no second address (``,``, ``;``, ``@``, a space,
``<``), no control character; in a folder it is never ``.`` or ``..``. A glob cannot say that
(its ``*`` matches ``/`` and ``..``: ``/tmp/*`` matches ``/tmp/../etc/shadow``, ``*@example.com``
matches ``attacker@evil.test, boss@example.com``), so these conditions are the policy's
``regex``, anchored with ``\\A`` and ``\\Z`` (``$`` would let a trailing newline through). The
database runs the same test as `ArgumentTest` ``in_folder`` and ``at_domain``, and a wider one
(``prefix``, ``suffix``) to find the calls people refused that look alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from signoff.store.insights import ArgumentMatch, ArgumentTest
from signoff.types import ToolCall

__all__ = ["NAME", "Pattern", "shared"]

NAME: Final = "[A-Za-z0-9._+-]+"
"""One name, as a regular expression: one or more of `NAME_CHARACTERS` (the database spells
them out; a test keeps the two alike)."""
_NAME: Final = re.compile(NAME)
_KEY: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_DOMAIN: Final = re.compile(r"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*")
_DOTS: Final = (".", "..")


@dataclass(frozen=True, kw_only=True)
class Pattern:
    """What the values of one argument share, as a rule's condition and as the database's
    tests."""

    key: str
    """The argument: a plain name at the top of the call's arguments."""
    test: ArgumentTest
    """``eq``, ``in_folder`` or ``at_domain``: the condition, as the database runs it."""
    value: str
    """The value, the folder (``/tmp/``), or ``@`` and the domain (``@example.com``)."""
    near: ArgumentTest
    """A wider test the database runs to find the calls people refused that look alike:
    ``eq``, ``prefix`` or ``suffix`` of `value`."""
    condition: dict[str, str]
    """The rule's test of the argument: ``{"eq": value}`` or ``{"regex": ...}``."""
    shown: str
    """The condition as a person reads it: ``to`` like ``<name>@example.com``."""

    @property
    def match(self) -> ArgumentMatch:
        return ArgumentMatch(key=self.key, test=self.test, value=self.value)

    @property
    def near_match(self) -> ArgumentMatch:
        return ArgumentMatch(key=self.key, test=self.near, value=self.value)

    def holds(self, value: Any) -> bool:
        """Whether the condition holds for an argument's `value`."""
        if not isinstance(value, str):
            return False
        if "eq" in self.condition:
            return value == self.value
        return re.search(self.condition["regex"], value) is not None


def shared(calls: Sequence[ToolCall]) -> list[Pattern]:
    """What each string argument of every one of `calls` shares, most specific first: one
    value, else one mail domain, else one folder."""
    if not calls:
        return []
    found: list[Pattern] = []
    for key in sorted(k for k in calls[0].args if _KEY.fullmatch(k)):
        values = [call.args.get(key) for call in calls]
        texts = [value for value in values if isinstance(value, str) and value]
        if len(texts) < len(values):
            continue
        pattern = _one_value(key, texts) or _one_domain(key, texts) or _one_folder(key, texts)
        if pattern is not None:
            found.append(pattern)
    return found


def _one_value(key: str, texts: Sequence[str]) -> Pattern | None:
    if len(set(texts)) != 1:
        return None
    value = texts[0]
    return Pattern(key=key, test="eq", value=value, near="eq", condition={"eq": value},
                   shown=f"`{key}` = `{value}`")  # fmt: skip


def _one_domain(key: str, texts: Sequence[str]) -> Pattern | None:
    """Every text one address (a name, ``@``, a domain) at one domain."""
    parts = [text.rpartition("@") for text in texts]
    domains = {domain for _, _, domain in parts}
    if len(domains) != 1 or not all(at and _NAME.fullmatch(name) for name, at, _ in parts):
        return None
    domain = domains.pop()
    if not _DOMAIN.fullmatch(domain):
        return None
    suffix = f"@{domain}"
    regex = rf"\A{NAME}{re.escape(suffix)}\Z"
    return _like(key, "at_domain", suffix, "suffix", regex, f"<name>{suffix}")


def _one_folder(key: str, texts: Sequence[str]) -> Pattern | None:
    """Every text one name (not ``.`` or ``..``) in one folder, itself named plainly: each of
    its segments a name, none ``.`` or ``..``, none empty but a leading one (``/``)."""
    parts = [text.rpartition("/") for text in texts]
    folders = {folder for folder, _, _ in parts}
    if len(folders) != 1 or not all(
        slash and _NAME.fullmatch(name) and name not in _DOTS for _, slash, name in parts
    ):
        return None
    folder = folders.pop()
    segments = folder.removeprefix("/").split("/")
    if not all(_NAME.fullmatch(s) and s not in _DOTS for s in segments):
        return None
    prefix = f"{folder}/"
    regex = rf"\A{re.escape(prefix)}(?!\.\.?\Z){NAME}\Z"
    return _like(key, "in_folder", prefix, "prefix", regex, f"{prefix}<name>")


def _like(
    key: str, test: ArgumentTest, value: str, near: ArgumentTest, regex: str, example: str
) -> Pattern:
    """`key` like `example` (``<name>`` standing for any one name): the rule tests it with
    `regex`, the database with `test` (and `near`) of `value`."""
    return Pattern(key=key, test=test, value=value, near=near, condition={"regex": regex},
                   shown=f"`{key}` like `{example}`")  # fmt: skip
