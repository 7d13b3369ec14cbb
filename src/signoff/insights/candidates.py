"""Candidates: the suggestions the decisions of a window came near to but did not make — each
bar it had to clear with how far it got, or why it was dropped though it cleared them all —
so that "no suggestions" is never a riddle."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from signoff.types.fields import same_named

if TYPE_CHECKING:
    from signoff.store.insights import GroupStats, Voices

__all__ = ["NEAREST", "Candidate", "Need", "described", "nearest", "voices_needed"]

NEAREST: Final = 5
"""The most candidates told, nearest first."""

SuggestionKind: TypeAlias = Literal["allow", "deny", "limit"]

_VOICES: Final = (("person deciding", "people deciding"),
                  ("principal requesting", "principals requesting"))  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Need:
    """One bar a suggestion has to clear, and how far its calls got."""

    what: str
    """What is measured: ``approved unchanged`` (a share), ``approvals`` (a count), …"""
    have: float
    need: float
    share: bool = False
    """Whether `have` and `need` are shares of the calls (0 to 1) rather than counts."""
    one: str = ""
    """`what` for a count of one (``person deciding``); `what` itself when empty."""

    @property
    def met(self) -> bool:
        return self.have >= self.need

    def shown(self) -> str:
        """``95.7% approved unchanged, needs 98%`` or ``22 approvals, needs 20``."""
        if self.share:
            return f"{_percent(self.have, self.need)} {self.what}, needs {_percent(self.need)}"
        what = self.one if self.have == 1 and self.one else self.what
        return f"{self.have:,.0f} {what}, needs {self.need:,.0f}"

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "have": self.have, "need": self.need, "met": self.met}


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """A suggestion not offered: what it would have been, and what kept it back."""

    kind: SuggestionKind
    rule: str | None
    """The rule that asked about the calls (None for a default)."""
    tool: str
    agent: str | None
    subject: str
    """What it would have suggested: ``allow `send_email` (agent `mailer`) with …``."""
    argument: str | None
    """The argument its condition would have tested (None for a deny or none found yet)."""
    needs: tuple[Need, ...]
    """The bars it had to clear, as far as it got."""
    dropped: str | None = None
    """Why it was not offered, besides the bars in `needs`: a rule it would override, a call
    people refused that it would allow, … (None when the bars are the whole story)."""

    @property
    def closeness(self) -> float:
        """1 for a candidate that cleared every bar; less the further it is from them."""
        return math.prod(min(1.0, n.have / n.need) for n in self.needs if n.need > 0)

    @property
    def text(self) -> str:
        """The candidate in one sentence: each bar, and why it was dropped."""
        said = "; ".join(need.shown() for need in self.needs)
        dropped = "" if self.dropped is None else f"; not offered: {self.dropped}"
        return f"{self.subject}: {said}{dropped}"

    def to_json(self) -> dict[str, Any]:
        return {
            **same_named(self, ("kind", "rule", "tool", "agent", "text")),
            "needs": [need.to_json() for need in self.needs],
            "dropped": self.dropped,
        }


def nearest(candidates: Iterable[Candidate]) -> tuple[Candidate, ...]:
    """The `NEAREST` candidates nearest to a suggestion, nearest first."""
    return tuple(
        sorted(candidates, key=lambda c: (-c.closeness, c.tool, c.agent or "", c.kind))[:NEAREST]
    )


def voices_needed(voices: Voices, people: int, requesters: int) -> tuple[Need, Need]:
    """The bars of distinct deciders and requesters."""
    (person, persons), (principal, principals) = _VOICES
    return (
        Need(what=persons, one=person, have=voices.people, need=people),
        Need(what=principals, one=principal, have=voices.requesters, need=requesters),
    )


def described(kind: SuggestionKind, group: GroupStats, condition: str = "") -> str:
    """``allow `send_email` (agent `mailer`) with `to` like …``: what would be suggested."""
    effect = "deny" if kind == "deny" else "allow"
    of = "" if group.agent is None else f" (agent `{group.agent}`)"
    return f"{effect} `{group.tool}`{of}{condition and f' {condition}'}"


def _percent(share: float, bar: float | None = None) -> str:
    """`share` as a percentage to a tenth; one below `bar` is never shown as reaching it."""
    shown = round(100 * share, 1)
    if bar is not None and share < bar and shown >= round(100 * bar, 1):
        shown = math.floor(1000 * share) / 10
    return f"{shown:g}%"
