"""Suggestions: policy changes the decisions argue for, each with its evidence, never applied by
themselves, and never wider than that evidence.

Three lessons are looked for in each (rule, tool, agent) group of a window:

- **allow with a condition**: among the calls a person approved unchanged, one argument's
  values share a pattern (`signoff.insights.patterns`: one value; one address at one mail
  domain, ``<name>@example.com``; one name in one folder, ``/tmp/<name>``), and of all the
  group's decided calls whose argument matches it, at least `ALLOW_RATIO` were approved
  unchanged;
- **deny**: at least `DENY_RATIO` of the group's calls decided by a person were rejected;
- **allow below a bound**: at least `LIMIT_RATIO` of the group's edits lowered one numeric
  argument, all to below the lowest value asked for: calls under that bound are allowed.

Each needs at least `MIN_SAMPLES` calls behind it, decided by at least `MIN_PEOPLE` people and
requested by at least `MIN_REQUESTERS` principals: a flood of calls from one approver or one
requester is one voice. A suggestion is one rule appended to the policy document's ``rules``,
for the group's tool and calling agent, within what the asking rule matches (its servers and
conditions kept), so it changes only calls that rule asks about: an allow one priority above
that rule (at priority 0 when a default asked: any rule comes before a default), a deny at that
rule's priority (deny wins within a priority). No allow is suggested where a deny rule stands at
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
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

import yaml

from signoff.errors import PolicyError
from signoff.insights.candidates import Candidate, Need, described, nearest, voices_needed
from signoff.insights.patterns import shared
from signoff.insights.placement import asker_of, denied_beside, suggested_rule
from signoff.insights.report import window_days
from signoff.store.insights import ArgumentMatch, Voices
from signoff.types import Approval, ToolCall, VerdictKind

if TYPE_CHECKING:
    from signoff.policy import PolicyEngine
    from signoff.store.base import Store
    from signoff.store.insights import GroupKey, GroupStats

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

MIN_SAMPLES: Final = 20
"""Fewer calls than this teach nothing yet."""
ALLOW_RATIO: Final = 0.98
"""Allowing runs calls no one will see again: nearly every one must have been approved as is."""
DENY_RATIO: Final = 0.95
LIMIT_RATIO: Final = 0.95
SAMPLE: Final = 200
"""The newest calls of a group read to find what their arguments share, and evaluated by the
suggested policy."""
MIN_PEOPLE: Final = 2
"""The fewest distinct people who decided a suggestion's calls: a flood of decisions from one
person is one voice, and taking people out of the loop needs four eyes."""
MIN_REQUESTERS: Final = 2
"""The fewest distinct principals who requested a suggestion's calls: a flood of calls from one
requester — who chooses what to ask — is one voice."""
REFUSED_LIMIT: Final = 1000
"""The most calls people refused, like a suggestion's, that it is checked against: with more,
it is not offered (too many refusals look like it to vouch for it)."""

SuggestionKind: TypeAlias = Literal["allow", "deny", "limit"]
_DECIDED: Final = ("approved", "edited", "responded", "rejected", "expired")
_BY_PERSON: Final = ("approved", "edited", "responded", "rejected")
_KEY: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_OVERRIDES: Final = "it would override a deny rule beside the rule that asked"
_ALLOW: Final[VerdictKind] = "allow"
_DENY: Final[VerdictKind] = "deny"


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
            "kind": self.kind,
            "text": self.text,
            "rule": self.rule,
            "document": self.document,
            "diff": self.diff,
            "matched": self.matched,
            "total": self.total,
            "people": self.people,
            "requesters": self.requesters,
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


@dataclass(frozen=True, kw_only=True)
class _Draft:
    kind: SuggestionKind
    text: str
    rule: dict[str, Any]
    matched: int
    total: int
    voices: Voices
    checks: tuple[tuple[ToolCall, VerdictKind], ...]
    candidate: Candidate
    """What it is if it is dropped: every bar cleared."""
    refused: tuple[ToolCall, ...] = ()


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
    found: list[Suggestion] = []
    missed: list[Candidate] = []
    for group in groups:
        key: GroupKey = (group.rule, group.tool, group.agent)
        for weighed in (
            await _allow(store, engine, group, key, since, days),
            await _deny(store, engine, group, key, since, days),
            await _limit(store, engine, group, key, since, days),
        ):
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


async def _allow(
    store: Store,
    engine: PolicyEngine,
    group: GroupStats,
    key: GroupKey,
    since: datetime,
    days: int,
) -> _Draft | Candidate | None:
    approved = group.counts["approved"]
    if not approved:
        return None
    total = sum(group.counts[s] for s in _DECIDED)
    near = _candidate("allow", group, _approvals(approved, total))
    if approved < MIN_SAMPLES:
        return near
    sample = await store.group_sample(key, status="approved", since=since, limit=SAMPLE)
    calls = [a.requested_call for a in sample]
    asker = asker_of(engine, calls)
    if asker is None:
        return None
    if denied_beside(engine, group, asker):
        return replace(near, dropped=_OVERRIDES)
    misses: list[Candidate] = []
    for pattern in shared(calls):
        tally = await store.tally(key, since=since, match=pattern.match)
        approved, total = tally.counts["approved"], sum(tally.counts[s] for s in _DECIDED)
        if not total:  # pruned since the sample was read
            continue
        voices = tally.voices["approved"]
        needs = (*_approvals(approved, total), *voices_needed(voices, MIN_PEOPLE, MIN_REQUESTERS))
        near = _candidate("allow", group, needs, f"with {pattern.shown}", pattern.key)
        if not _cleared(near):
            misses.append(near)
            continue
        refused = await _refused(store, group, since, pattern.near_match)
        condition = {pattern.key: pattern.condition}
        rule = suggested_rule("allow", group, engine, asker, asker.allow_priority(), condition)
        if rule is None or refused is None:
            misses.append(_held_back(near, too_many_refused=refused is None))
            continue
        text = (
            f"`{group.tool}`{_of(group)} with {pattern.shown} was approved unchanged "
            f"{approved:,} of {total:,} times in {days} days, {_said(voices)}; "
            f"{_refusals(refused)}: allow it with that condition?"
        )
        checks = tuple((c, _ALLOW) for c in calls if pattern.holds(c.args.get(pattern.key)))
        return _Draft(kind="allow", text=text, rule=rule, matched=approved, total=total,
                      voices=voices, checks=checks, refused=refused, candidate=near)  # fmt: skip
    if not misses:
        return replace(near, dropped="the approved calls share no value, mail domain or folder")
    return max(misses, key=lambda c: c.closeness)


async def _deny(
    store: Store,
    engine: PolicyEngine,
    group: GroupStats,
    key: GroupKey,
    since: datetime,
    days: int,
) -> _Draft | Candidate | None:
    rejected = group.counts["rejected"]
    if not rejected:
        return None
    decided = sum(group.counts[s] for s in _BY_PERSON)
    needs = (
        Need(what="rejected", have=rejected / decided, need=DENY_RATIO, share=True),
        Need(what="decisions", one="decision", have=decided, need=MIN_SAMPLES),
    )
    near = _candidate("deny", group, needs)
    if not _cleared(near):
        return near
    sample = await store.group_sample(key, status="rejected", since=since, limit=SAMPLE)
    calls = [a.requested_call for a in sample]
    asker = asker_of(engine, calls)
    if asker is None:
        return None
    voices = (await store.tally(key, since=since)).voices["rejected"]
    near = replace(near, needs=(*needs, *voices_needed(voices, MIN_PEOPLE, MIN_REQUESTERS)))
    rule = suggested_rule("deny", group, engine, asker, asker.priority, {})
    if rule is None or not _cleared(near):
        return near
    share = math.floor(100 * rejected / decided)
    text = (
        f"`{group.tool}`{_of(group)} was rejected {share}% of the time ({rejected:,} of "
        f"{decided:,} decisions in {days} days, {_said(voices)}): deny it?"
    )
    return _Draft(kind="deny", text=text, rule=rule, matched=rejected, total=decided,
                  voices=voices, checks=tuple((c, _DENY) for c in calls),
                  candidate=near)  # fmt: skip


async def _limit(
    store: Store,
    engine: PolicyEngine,
    group: GroupStats,
    key: GroupKey,
    since: datetime,
    days: int,
) -> _Draft | Candidate | None:
    edited = group.counts["edited"]
    if not edited:
        return None
    count = Need(what="edits", one="edit", have=edited, need=MIN_SAMPLES)
    near = _candidate("limit", group, (count,), "below a bound")
    if edited < MIN_SAMPLES:
        return near
    sample = await store.group_sample(key, status="edited", since=since, limit=SAMPLE)
    asked = [a.requested_call for a in sample]
    asker = asker_of(engine, asked)
    if asker is None:
        return None
    if denied_beside(engine, group, asker):
        return replace(near, dropped=_OVERRIDES)
    misses: list[Candidate] = []
    for name in sorted({k for call in asked for k in call.args if _KEY.fullmatch(k)}):
        lowered = _lowered(sample, name)
        if not lowered:
            continue
        needs: tuple[Need, ...] = (
            Need(what=f"of edits lower `{name}`", have=len(lowered) / len(sample),
                 need=LIMIT_RATIO, share=True),
            Need(what=f"edits lower `{name}`", one=f"edit lowers `{name}`", have=len(lowered),
                 need=MIN_SAMPLES),
        )  # fmt: skip
        near = _candidate("limit", group, needs, f"with `{name}` below a bound", name)
        if not _cleared(near):
            misses.append(near)
            continue
        highest = max(after for _, after, _ in lowered)
        lowest_asked = min(before for before, _, _ in lowered)
        if highest >= lowest_asked:
            misses.append(replace(near, dropped=f"edits lowered `{name}` to values asked for"))
            continue
        bound = _round_above(highest)
        condition: dict[str, Any]
        if bound <= lowest_asked:
            condition, words, most = {name: {"lt": bound}}, f"under {bound}", float(bound)
        else:
            condition, words, most = {name: {"le": highest}}, f"to {highest} or less", highest
        edits = [a for *_, a in lowered]
        voices = Voices.count((a.decided_by for a in edits), (a.requested_by for a in edits))
        needs = (*needs, *voices_needed(voices, MIN_PEOPLE, MIN_REQUESTERS))
        near = _candidate("limit", group, needs, f"with `{name}` {words}", name)
        looks = ArgumentMatch(key=name, test="at_most", value=most)
        refused = await _refused(store, group, since, looks)
        rule = suggested_rule("allow", group, engine, asker, asker.allow_priority(), condition)
        if rule is None or refused is None:
            misses.append(_held_back(near, too_many_refused=refused is None))
            continue
        newest = "edits" if len(sample) == group.counts["edited"] else "newest edits"
        text = (
            f"edits of `{group.tool}`{_of(group)} always lower `{name}` {words} "
            f"({len(lowered):,} of the {len(sample):,} {newest} in {days} days, "
            f"{_said(voices)}); {_refusals(refused)}: allow it {words} without asking?"
        )
        checks: list[tuple[ToolCall, VerdictKind]] = [(a.call, "allow") for a in edits]
        checks += [(a.requested_call, "ask") for a in edits]
        return _Draft(kind="limit", text=text, rule=rule, matched=len(lowered),
                      total=len(sample), voices=voices, checks=tuple(checks),
                      refused=refused, candidate=near)  # fmt: skip
    if not misses:
        return replace(near, dropped="the edits lowered no number")
    return max(misses, key=lambda c: c.closeness)


async def _refused(
    store: Store, group: GroupStats, since: datetime, near: ArgumentMatch
) -> tuple[ToolCall, ...] | None:
    """The calls of the group's tool people refused in the window, as requested, whose
    argument passes `near` (wider than the suggested condition); None when there are more than
    `REFUSED_LIMIT`."""
    found = await store.refused_like(
        group.tool, agent=group.agent, since=since, match=near, limit=REFUSED_LIMIT + 1
    )
    if len(found) > REFUSED_LIMIT:
        return None
    return tuple(approval.requested_call for approval in found)


def _candidate(
    kind: SuggestionKind,
    group: GroupStats,
    needs: Sequence[Need],
    condition: str = "",
    argument: str | None = None,
) -> Candidate:
    return Candidate(kind=kind, rule=group.rule, tool=group.tool, agent=group.agent,
                     subject=described(kind, group, condition), argument=argument,
                     needs=tuple(needs))  # fmt: skip


def _approvals(approved: int, total: int) -> tuple[Need, Need]:
    return (
        Need(what="approved unchanged", have=approved / total, need=ALLOW_RATIO, share=True),
        Need(what="approvals", one="approval", have=approved, need=MIN_SAMPLES),
    )


def _cleared(candidate: Candidate) -> bool:
    """Whether the calls behind a candidate clear every bar it has: enough of them, agreeing,
    from enough voices."""
    return all(need.met for need in candidate.needs)


def _held_back(near: Candidate, *, too_many_refused: bool) -> Candidate:
    """`near`, saying why it was dropped if its calls clear every bar: more calls like them
    were refused than it is checked against, or it has no rule to add."""
    if not _cleared(near):
        return near
    if too_many_refused:
        return replace(near, dropped=f"more than {REFUSED_LIMIT:,} calls like these were refused")
    return replace(near, dropped="the rule that asked tests that argument so already")


def _said(voices: Voices) -> str:
    return f"by {voices.people:,} people, requested by {voices.requesters:,} principals"


def _refusals(refused: Sequence[ToolCall]) -> str:
    """What a rule that is offered lets through of the calls people refused: none."""
    if not refused:
        return "people refused no call like these"
    return f"it lets through none of the {_calls(len(refused))} like these that people refused"


def _calls(count: int) -> str:
    return "1 call" if count == 1 else f"{count:,} calls"


def _lowered(edited: Sequence[Approval], name: str) -> list[tuple[float, float, Approval]]:
    """The edits that lowered the number at `name`: what was asked, what it became, and the
    approval."""
    found: list[tuple[float, float, Approval]] = []
    for approval in edited:
        before: Any = approval.requested_call.args.get(name)
        after: Any = approval.call.args.get(name)
        if _number(before) and _number(after) and after < before:
            found.append((before, after, approval))
    return found


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _round_above(value: float) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50, … above `value`."""
    scale = 1
    while True:
        for step in (1, 2, 5):
            if step * scale > value:
                return step * scale
        scale *= 10


def _of(group: GroupStats) -> str:
    return "" if group.agent is None else f" (agent `{group.agent}`)"


def _verified(
    draft: _Draft | Candidate | None, engine: PolicyEngine, document: dict[str, Any]
) -> Suggestion | Candidate | None:
    """A draft as a suggestion if the policy with its rule loads, gives each evidence call
    the verdict the draft says, and allows none of the calls people refused; else its
    candidate, saying which of these failed (None for a document with no list of rules).
    What is no draft stays as it is."""
    from signoff.policy import Policy, PolicyEngine

    if not isinstance(draft, _Draft):
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
    let_through = sum(applied.evaluate(call).kind == _ALLOW for call in draft.refused)
    if let_through:
        dropped = (
            f"it would have allowed {let_through:,} of the {_calls(len(draft.refused))} like "
            "these that people refused (rejected, edited or answered with text)"
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
