"""Suggestions: policy changes the decisions argue for, each with its evidence, never applied by
themselves, and never wider than that evidence.

The lessons looked for in each (rule, tool, agent) group of a window, and the bars each must
clear (`MIN_SAMPLES`, `ALLOW_RATIO`, …, named here too), are `signoff.insights.lessons`'s. A
suggestion is one rule appended to the policy document's ``rules``, for the group's tool and
calling agent, within what the asking rule matches (its servers and conditions kept), so it
changes only calls that rule asks about: an allow one priority above that rule (at priority 0
when a default asked: any rule comes before a default), a deny at that rule's priority (deny
wins within a priority). No allow is suggested where a deny rule stands at
the asking rule's priority for the tool: above it, the allow would override that deny.

Before it is offered, the new document is loaded and evaluated: the evidence calls must get the
verdict the suggestion says, and an allow must allow **none** of the calls of the tool that
people refused in the window (rejected, edited, answered with text; as they were requested) —
each one whose argument looks like the condition's, read from the database, at most
`REFUSED_LIMIT` of them (with more, the suggestion is not offered).

What is not offered is a candidate (`signoff.insights.candidates`): `weigh` tells the nearest,
each bar with how far its calls got, or why it was dropped though they cleared every bar.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import yaml

from signoff.errors import PolicyError
from signoff.insights.candidates import Candidate, SuggestionKind, nearest
from signoff.insights.lessons import (
    ALLOW_RATIO,
    DENY_RATIO,
    LIMIT_RATIO,
    MIN_PEOPLE,
    MIN_REQUESTERS,
    MIN_SAMPLES,
    REFUSED_LIMIT,
    SAMPLE,
    Draft,
    Window,
    count_of_calls,
    lessons,
)
from signoff.insights.report import window_days
from signoff.types import ToolCall, VerdictKind
from signoff.types.fields import same_named

if TYPE_CHECKING:
    from signoff.policy import PolicyEngine
    from signoff.store.base import Store
    from signoff.store.insights import GroupStats

__all__ = [
    "ALLOW_RATIO",
    "DENY_RATIO",
    "LIMIT_RATIO",
    "MIN_PEOPLE",
    "MIN_REQUESTERS",
    "MIN_SAMPLES",
    "REFUSED_LIMIT",
    "SAMPLE",
    "Suggestion",
    "Weighed",
    "policy_diff",
    "suggest",
    "weigh",
]


@dataclass(frozen=True, kw_only=True)
class Suggestion:
    """One rule to add to the policy, why, and what it would do."""

    kind: SuggestionKind
    """``allow`` (with an argument condition), ``deny``, or ``limit`` (allow below a bound)."""
    text: str
    """The suggestion in one sentence, with its evidence."""
    rule: dict[str, Any]
    """The rule to append to ``rules``, as a policy file writes it."""
    document: dict[str, Any]
    """The whole policy document with the rule appended: what applying it puts in force."""
    diff: str
    """The change as a unified diff of the document's YAML."""
    matched: int
    """How many calls of the window bear the suggestion out ..."""
    total: int
    """... of how many it was weighed against."""
    people: int
    """How many distinct people decided the calls that bear it out (one's flood counts once)."""
    requesters: int
    """How many distinct principals requested them (one's flood counts once)."""
    checks: tuple[tuple[ToolCall, VerdictKind], ...]
    """Evidence calls and the verdict each gets once the rule is added (verified)."""
    refused: tuple[ToolCall, ...]
    """The calls people refused, as requested, that look like the suggestion's and were
    evaluated with the rule added; none for a deny, which lets nothing through."""
    let_through: int
    """How many of `refused` the policy with the rule allows: 0, or the suggestion is not
    offered. Stated, so that nobody has to take it on trust."""

    def to_json(self) -> dict[str, Any]:
        return {
            **same_named(self, ("kind", "text", "rule", "document", "diff")),
            **same_named(self, ("matched", "total", "people", "requesters")),
            "checked": len(self.checks),
            "refused": len(self.refused),
            "let_through": self.let_through,
        }


@dataclass(frozen=True, kw_only=True)
class Weighed:
    """What the decisions of a window argue for, and what they came near to."""

    suggestions: tuple[Suggestion, ...]
    nearest: tuple[Candidate, ...]
    """The candidates not offered, nearest first (at most `candidates.NEAREST`)."""


async def weigh(
    store: Store,
    engine: PolicyEngine,
    document: dict[str, Any],
    *,
    days: int,
    now: datetime,
    groups: Sequence[GroupStats] | None = None,
    shown: Callable[[Candidate], bool] = lambda _: True,
) -> Weighed:
    """The suggestions the window's decisions make for the policy `document` (which `engine`
    enforces), and the candidates nearest to one of those that may be `shown`; `groups` when
    the window's stats were read already."""
    since = now - timedelta(days=window_days(days))
    if groups is None:
        groups = await store.decision_stats(since=since)
    window = Window(store=store, engine=engine, since=since, days=days)
    found: list[Suggestion] = []
    missed: list[Candidate] = []
    for group in groups:
        for weighed in await lessons(window, group):
            outcome = _verified(weighed, engine, document)
            if isinstance(outcome, Suggestion):
                found.append(outcome)
            elif outcome is not None:
                missed.append(outcome)
    return Weighed(suggestions=tuple(found), nearest=nearest(filter(shown, missed)))


async def suggest(
    store: Store,
    engine: PolicyEngine,
    document: dict[str, Any],
    *,
    days: int,
    now: datetime,
    groups: Sequence[GroupStats] | None = None,
) -> list[Suggestion]:
    """The suggestions of `weigh`, without the candidates."""
    weighed = await weigh(store, engine, document, days=days, now=now, groups=groups)
    return list(weighed.suggestions)


def policy_diff(before: dict[str, Any], after: dict[str, Any], *, version: str) -> str:
    """The change from `before` to `after` as a unified diff of their YAML."""
    return "".join(
        difflib.unified_diff(
            _yaml(before).splitlines(keepends=True),
            _yaml(after).splitlines(keepends=True),
            fromfile=f"policy {version}",
            tofile="policy suggested",
        )
    )


def _yaml(document: dict[str, Any]) -> str:
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)


def _verified(
    draft: Draft | Candidate | None, engine: PolicyEngine, document: dict[str, Any]
) -> Suggestion | Candidate | None:
    """A draft as a suggestion if the policy with its rule loads, gives each evidence call
    the verdict the draft says, and allows none of the calls people refused; else its
    candidate, saying which of these failed (None for a document with no list of rules).
    What is no draft stays as it is."""
    from signoff.policy import Policy, PolicyEngine

    if not isinstance(draft, Draft):
        return draft
    rules = document.get("rules", [])
    if not isinstance(rules, list) or not draft.checks:
        return None
    changed = copy.deepcopy(document)
    changed["rules"] = [*copy.deepcopy(rules), draft.rule]
    try:
        applied = PolicyEngine(Policy.from_dict(changed, source="the suggested policy"))
    except PolicyError:
        return replace(draft.candidate, dropped="the policy with its rule does not load")
    if any(applied.evaluate(call).kind != kind for call, kind in draft.checks):
        dropped = "the policy with its rule would not judge the calls behind it as said"
        return replace(draft.candidate, dropped=dropped)
    let_through = sum(applied.evaluate(call).kind == "allow" for call in draft.refused)
    if let_through:
        dropped = (
            f"it would have allowed {let_through:,} of the {count_of_calls(len(draft.refused))} "
            "like these that people refused (rejected, edited or answered with text)"
        )
        return replace(draft.candidate, dropped=dropped)
    return Suggestion(
        kind=draft.kind,
        text=draft.text,
        rule=draft.rule,
        document=changed,
        diff=policy_diff(document, changed, version=engine.version),
        matched=draft.matched,
        total=draft.total,
        people=draft.voices.people,
        requesters=draft.voices.requesters,
        checks=draft.checks,
        refused=draft.refused,
        let_through=let_through,
    )
