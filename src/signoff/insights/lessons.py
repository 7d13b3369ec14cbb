"""The lessons of a window's decisions, each drawn up as a draft rule with its evidence — or,
short of one, as the candidate that came nearest (`signoff.insights.candidates`).

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
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from signoff.insights.candidates import Candidate, Need, SuggestionKind, described, voices_needed
from signoff.insights.patterns import shared
from signoff.insights.placement import Asker, asker_of, denied_beside, suggested_rule
from signoff.store.insights import ArgumentMatch, Voices
from signoff.types import Approval, ApprovalStatus, ToolCall, VerdictKind

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
    "Draft",
    "Window",
    "count_of_calls",
    "lessons",
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


_DECIDED: Final = ("approved", "edited", "responded", "answered", "rejected", "expired")
_BY_PERSON: Final = ("approved", "edited", "responded", "answered", "rejected")
_KEY: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_OVERRIDES: Final = "it would override a deny rule beside the rule that asked"
_ALLOW: Final[VerdictKind] = "allow"
_DENY: Final[VerdictKind] = "deny"


@dataclass(frozen=True, kw_only=True)
class Draft:
    """A lesson drawn up as a rule, with its evidence: not offered before it is checked."""

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


@dataclass(frozen=True, kw_only=True)
class Window:
    """Where lessons are looked for: the decisions kept in `store` since `since` (a window of
    `days`), for the policy `engine` enforces now."""

    store: Store
    engine: PolicyEngine
    since: datetime
    days: int


def _key(group: GroupStats) -> GroupKey:
    return (group.rule, group.tool, group.agent)


async def lessons(window: Window, group: GroupStats) -> tuple[Draft | Candidate | None, ...]:
    """The group's three lessons (allow with a condition, deny, allow below a bound): each a
    draft, else the candidate nearest to one, or None where there is nothing to weigh."""
    return await _allow(window, group), await _deny(window, group), await _limit(window, group)


async def _allow(window: Window, group: GroupStats) -> Draft | Candidate | None:
    approved = group.counts["approved"]
    if not approved:
        return None
    total = sum(group.counts[s] for s in _DECIDED)
    near = _candidate("allow", group, _approvals(approved, total))
    sampled = await _sampled(window, group, "approved", allowing=near)
    if not isinstance(sampled, tuple):
        return sampled
    _, calls, asker = sampled
    misses: list[Candidate] = []
    for pattern in shared(calls):
        tally = await window.store.tally(_key(group), since=window.since, match=pattern.match)
        approved, total = tally.counts["approved"], sum(tally.counts[s] for s in _DECIDED)
        if not total:  # pruned since the sample was read
            continue
        voices = tally.voices["approved"]
        needs = (*_approvals(approved, total), *voices_needed(voices, MIN_PEOPLE, MIN_REQUESTERS))
        near = _candidate("allow", group, needs, f"with {pattern.shown}", pattern.key)
        if not _cleared(near):
            misses.append(near)
            continue
        condition = {pattern.key: pattern.condition}
        allowed = await _allowing(window, group, asker, pattern.near_match,
                                  condition, near)  # fmt: skip
        if isinstance(allowed, Candidate):
            misses.append(allowed)
            continue
        rule, refused = allowed
        text = (
            f"`{group.tool}`{_of(group)} with {pattern.shown} was approved unchanged "
            f"{approved:,} of {total:,} times in {window.days} days, {_said(voices)}; "
            f"{_refusals(refused)}: allow it with that condition?"
        )
        checks = tuple((c, _ALLOW) for c in calls if pattern.holds(c.args.get(pattern.key)))
        return Draft(kind="allow", text=text, rule=rule, matched=approved, total=total,
                      voices=voices, checks=checks, refused=refused, candidate=near)  # fmt: skip
    return _nearest(misses, near, "the approved calls share no value, mail domain or folder")


async def _deny(window: Window, group: GroupStats) -> Draft | Candidate | None:
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
    if not isinstance(sampled := await _sampled(window, group, "rejected"), tuple):
        return sampled
    _, calls, asker = sampled
    voices = (await window.store.tally(_key(group), since=window.since)).voices["rejected"]
    near = replace(near, needs=(*needs, *voices_needed(voices, MIN_PEOPLE, MIN_REQUESTERS)))
    rule = suggested_rule("deny", group, window.engine, asker, asker.priority, {})
    if rule is None or not _cleared(near):
        return near
    share = math.floor(100 * rejected / decided)
    text = (
        f"`{group.tool}`{_of(group)} was rejected {share}% of the time ({rejected:,} of "
        f"{decided:,} decisions in {window.days} days, {_said(voices)}): deny it?"
    )
    return Draft(kind="deny", text=text, rule=rule, matched=rejected, total=decided,
                  voices=voices, checks=tuple((c, _DENY) for c in calls),
                  candidate=near)  # fmt: skip


async def _limit(window: Window, group: GroupStats) -> Draft | Candidate | None:
    edited = group.counts["edited"]
    if not edited:
        return None
    count = Need(what="edits", one="edit", have=edited, need=MIN_SAMPLES)
    near = _candidate("limit", group, (count,), "below a bound")
    sampled = await _sampled(window, group, "edited", allowing=near)
    if not isinstance(sampled, tuple):
        return sampled
    sample, asked, asker = sampled
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
        allowed = await _allowing(window, group, asker, looks, condition, near)
        if isinstance(allowed, Candidate):
            misses.append(allowed)
            continue
        rule, refused = allowed
        newest = "edits" if len(sample) == group.counts["edited"] else "newest edits"
        text = (
            f"edits of `{group.tool}`{_of(group)} always lower `{name}` {words} "
            f"({len(lowered):,} of the {len(sample):,} {newest} in {window.days} days, "
            f"{_said(voices)}); {_refusals(refused)}: allow it {words} without asking?"
        )
        checks: list[tuple[ToolCall, VerdictKind]] = [(a.call, "allow") for a in edits]
        checks += [(a.requested_call, "ask") for a in edits]
        return Draft(kind="limit", text=text, rule=rule, matched=len(lowered),
                      total=len(sample), voices=voices, checks=tuple(checks),
                      refused=refused, candidate=near)  # fmt: skip
    return _nearest(misses, near, "the edits lowered no number")


async def _sampled(
    window: Window, group: GroupStats, status: ApprovalStatus, *, allowing: Candidate | None = None
) -> tuple[list[Approval], list[ToolCall], Asker] | Candidate | None:
    """The group's newest approvals that ended `status` (at most `SAMPLE`), their calls as
    requested, and what asks about them now; None when nothing does (the policy changed since,
    or a rule of another kind). For a lesson that would allow, its candidate (`allowing`): as
    it is while fewer than `MIN_SAMPLES` calls ended `status`, dropped when an allow would
    override a deny rule beside the one that asks."""
    if allowing is not None and group.counts[status] < MIN_SAMPLES:
        return allowing
    sample = await window.store.group_sample(
        _key(group), status=status, since=window.since, limit=SAMPLE
    )
    calls = [a.requested_call for a in sample]
    asker = asker_of(window.engine, calls)
    if asker is None:
        return None
    if allowing is not None and denied_beside(window.engine, group, asker):
        return replace(allowing, dropped=_OVERRIDES)
    return sample, calls, asker


async def _allowing(
    window: Window,
    group: GroupStats,
    asker: Asker,
    looks: ArgumentMatch,
    condition: dict[str, Any],
    near: Candidate,
) -> tuple[dict[str, Any], tuple[ToolCall, ...]] | Candidate:
    """The allow rule with `condition` to suggest, and the refused calls that look like it
    (`looks`) to check it against; else `near`, saying why it is held back."""
    refused = await _refused(window, group, looks)
    rule = suggested_rule("allow", group, window.engine, asker, asker.allow_priority(), condition)
    if rule is None or refused is None:
        return _held_back(near, too_many_refused=refused is None)
    return rule, refused


def _nearest(misses: Sequence[Candidate], near: Candidate, none: str) -> Candidate:
    """The miss that came nearest; `near` dropped for the reason `none` when there is none."""
    if not misses:
        return replace(near, dropped=none)
    return max(misses, key=lambda c: c.closeness)


async def _refused(
    window: Window, group: GroupStats, near: ArgumentMatch
) -> tuple[ToolCall, ...] | None:
    """The calls of the group's tool people refused in the window, as requested, whose
    argument passes `near` (wider than the suggested condition); None when there are more than
    `REFUSED_LIMIT`."""
    found = await window.store.refused_like(
        group.tool, agent=group.agent, since=window.since, match=near, limit=REFUSED_LIMIT + 1
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
    return (
        f"it lets through none of the {count_of_calls(len(refused))} like these that people refused"
    )


def count_of_calls(count: int) -> str:
    """``1 call``, ``2 calls``, ``1,000 calls``."""
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
