"""Suggestions: policy changes the decisions argue for, each with its evidence, never applied by
themselves.

Three lessons are looked for in each (rule, tool, agent) group of a window:

- **allow with a condition**: among the calls a person approved unchanged, one argument's
  values share a pattern (one fixed value, one mail domain ``*@example.com``, one folder
  ``/tmp/*``), and of all the group's decided calls whose argument matches it, at least
  `ALLOW_RATIO` were approved unchanged;
- **deny**: at least `DENY_RATIO` of the group's calls decided by a person were rejected;
- **allow below a bound**: at least `LIMIT_RATIO` of the group's edits lowered one numeric
  argument, all to below the lowest value asked for: calls under that bound are allowed.

Each needs at least `MIN_SAMPLES` calls behind it. A suggestion is one rule appended to the
policy document's ``rules``, for the group's tool and calling agent, within what the asking rule
matches (its servers and conditions kept), so it changes only calls that rule asks about: an
allow one priority above that rule (at priority 0 when a default asked: any rule comes before a
default), a deny at that rule's priority (deny wins within a priority). No allow is suggested
where a deny rule stands at the asking rule's priority for the tool: above it, the allow would
override that deny. Before it is offered, the new document is loaded and the evidence calls
evaluated by it: a suggestion whose rule does not judge them as it says is dropped.
"""

from __future__ import annotations

import copy
import difflib
import fnmatch
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

import yaml

from signoff.errors import PolicyError
from signoff.insights.report import window_days
from signoff.types import Approval, ToolCall, VerdictKind

if TYPE_CHECKING:
    from signoff.policy import PolicyEngine
    from signoff.policy.model import Rule
    from signoff.store.base import Store
    from signoff.store.insights import ArgumentTest, GroupKey, GroupStats

__all__ = [
    "ALLOW_RATIO",
    "DENY_RATIO",
    "LIMIT_RATIO",
    "MIN_SAMPLES",
    "SAMPLE",
    "Suggestion",
    "policy_diff",
    "suggest",
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

SuggestionKind: TypeAlias = Literal["allow", "deny", "limit"]
_DECIDED: Final = ("approved", "edited", "responded", "rejected", "expired")
_BY_PERSON: Final = ("approved", "edited", "responded", "rejected")
_KEY: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_GLOB: Final = re.compile(r"[*?\[\]]")
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
    checks: tuple[tuple[ToolCall, VerdictKind], ...]
    """Evidence calls and the verdict each gets once the rule is added (verified)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "text": self.text,
            "rule": self.rule,
            "document": self.document,
            "diff": self.diff,
            "matched": self.matched,
            "total": self.total,
            "checked": len(self.checks),
        }


@dataclass(frozen=True, kw_only=True)
class _Draft:
    kind: SuggestionKind
    text: str
    rule: dict[str, Any]
    matched: int
    total: int
    checks: tuple[tuple[ToolCall, VerdictKind], ...]


async def suggest(
    store: Store,
    engine: PolicyEngine,
    document: dict[str, Any],
    *,
    days: int,
    now: datetime,
    groups: Sequence[GroupStats] | None = None,
) -> list[Suggestion]:
    """The suggestions the window's decisions make for the policy `document` (which `engine`
    enforces); `groups` when the window's stats were read already."""
    since = now - timedelta(days=window_days(days))
    if groups is None:
        groups = await store.decision_stats(since=since)
    found: list[Suggestion] = []
    for group in groups:
        key: GroupKey = (group.rule, group.tool, group.agent)
        for draft in (
            await _allow(store, engine, group, key, since, days),
            await _deny(store, engine, group, key, since, days),
            await _limit(store, engine, group, key, since, days),
        ):
            if draft is not None:
                suggestion = _verified(draft, engine, document)
                if suggestion is not None:
                    found.append(suggestion)
    return found


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
) -> _Draft | None:
    if group.counts["approved"] < MIN_SAMPLES:
        return None
    sample = await store.group_sample(key, status="approved", since=since, limit=SAMPLE)
    calls = [a.requested_call for a in sample]
    asker = _asker(engine, calls)
    if asker is None or _denied_beside(engine, group, asker):
        return None
    for name, test, value in _shared(calls):
        counts = await store.count_matching(key, since=since, key=name, test=test, value=value)
        approved, total = counts["approved"], sum(counts[s] for s in _DECIDED)
        if approved < MIN_SAMPLES or approved < ALLOW_RATIO * total:
            continue
        pattern = {"eq": value, "prefix": f"{value}*", "suffix": f"*{value}"}[test]
        operator = "eq" if test == "eq" else "glob"
        condition = {name: {operator: pattern}}
        evidence = [c for c in calls if _passes(c.args.get(name), test, value)]
        rule = _rule("allow", group, engine, asker, asker.allow_priority(), condition)
        if rule is None:
            continue
        shown = f"`{name}` = `{value}`" if test == "eq" else f"`{name}` like `{pattern}`"
        text = (
            f"`{group.tool}`{_of(group)} with {shown} was approved unchanged {approved:,} of "
            f"{total:,} times in {days} days: allow it with that condition?"
        )
        checks = tuple((c, _ALLOW) for c in evidence)
        return _Draft(kind="allow", text=text, rule=rule, matched=approved, total=total,
                      checks=checks)  # fmt: skip
    return None


async def _deny(
    store: Store,
    engine: PolicyEngine,
    group: GroupStats,
    key: GroupKey,
    since: datetime,
    days: int,
) -> _Draft | None:
    rejected = group.counts["rejected"]
    decided = sum(group.counts[s] for s in _BY_PERSON)
    if decided < MIN_SAMPLES or rejected < DENY_RATIO * decided:
        return None
    sample = await store.group_sample(key, status="rejected", since=since, limit=SAMPLE)
    calls = [a.requested_call for a in sample]
    asker = _asker(engine, calls)
    if asker is None:
        return None
    rule = _rule("deny", group, engine, asker, asker.priority, {})
    if rule is None:
        return None
    share = math.floor(100 * rejected / decided)
    text = (
        f"`{group.tool}`{_of(group)} was rejected {share}% of the time ({rejected:,} of "
        f"{decided:,} decisions in {days} days): deny it?"
    )
    return _Draft(kind="deny", text=text, rule=rule, matched=rejected, total=decided,
                  checks=tuple((c, _DENY) for c in calls))  # fmt: skip


async def _limit(
    store: Store,
    engine: PolicyEngine,
    group: GroupStats,
    key: GroupKey,
    since: datetime,
    days: int,
) -> _Draft | None:
    if group.counts["edited"] < MIN_SAMPLES:
        return None
    sample = await store.group_sample(key, status="edited", since=since, limit=SAMPLE)
    asked = [a.requested_call for a in sample]
    asker = _asker(engine, asked)
    if asker is None or _denied_beside(engine, group, asker):
        return None
    for name in sorted({k for call in asked for k in call.args if _KEY.fullmatch(k)}):
        lowered = _lowered(sample, name)
        if len(lowered) < MIN_SAMPLES or len(lowered) < LIMIT_RATIO * len(sample):
            continue
        highest = max(after for _, after, _ in lowered)
        lowest_asked = min(before for before, _, _ in lowered)
        if highest >= lowest_asked:
            continue
        bound = _round_above(highest)
        condition: dict[str, Any]
        if bound <= lowest_asked:
            condition, words = {name: {"lt": bound}}, f"under {bound}"
        else:
            condition, words = {name: {"le": highest}}, f"to {highest} or less"
        edits = "edits" if len(sample) == group.counts["edited"] else "newest edits"
        text = (
            f"edits of `{group.tool}`{_of(group)} always lower `{name}` {words} "
            f"({len(lowered):,} of the {len(sample):,} {edits} in {days} days): allow it "
            f"{words} without asking?"
        )
        checks: list[tuple[ToolCall, VerdictKind]] = [(a.call, "allow") for *_, a in lowered]
        checks += [(a.requested_call, "ask") for *_, a in lowered]
        rule = _rule("allow", group, engine, asker, asker.allow_priority(), condition)
        if rule is None:
            continue
        return _Draft(kind="limit", text=text, rule=rule, matched=len(lowered),
                      total=len(sample), checks=tuple(checks))  # fmt: skip
    return None


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


@dataclass(frozen=True, kw_only=True)
class _Asker:
    """What asks about a group's calls now: a rule (None for a default) and its priority."""

    rule: Rule | None
    priority: int

    def allow_priority(self) -> int:
        """An allow above the asking rule; beside a default, any rule already comes first."""
        return 0 if self.rule is None else self.priority + 1


def _asker(engine: PolicyEngine, calls: Sequence[ToolCall]) -> _Asker | None:
    """What asks about these calls now, or None when the policy no longer asks about the first
    of them (it changed since: nothing to suggest) or a rule of another kind asks."""
    if not calls:
        return None
    verdict = engine.evaluate(calls[0])
    if verdict.kind != "ask":
        return None
    if verdict.rule is None:
        return _Asker(rule=None, priority=0)
    try:
        rule = engine.rule(verdict.rule)
    except KeyError:  # a section's default: any rule comes before it
        return _Asker(rule=None, priority=0)
    return _Asker(rule=rule, priority=rule.priority) if rule.kind == "tool" else None


def _denied_beside(engine: PolicyEngine, group: GroupStats, asker: _Asker) -> bool:
    """Whether a deny rule at the asking rule's priority may judge the group's calls: an allow
    placed above it would override that deny, so none is suggested."""
    if asker.rule is None:
        return False
    for rule in engine.policy.rules:
        if rule.effect != "deny" or rule.priority != asker.priority or rule.kind != "tool":
            continue
        named = any(fnmatch.fnmatchcase(group.tool, p) for p in rule.tools)
        spared = any(fnmatch.fnmatchcase(group.tool, p) for p in rule.except_tools)
        agent = group.agent
        ours = (
            not rule.agents
            or agent is None
            or any(fnmatch.fnmatchcase(agent, p) for p in rule.agents)
        )
        if named and not spared and ours:
            return True
    return False


def _shared(calls: Sequence[ToolCall]) -> list[tuple[str, ArgumentTest, str]]:
    """What one string argument of every call shares: one value; else one mail domain; else
    one folder. Most specific first."""
    if not calls:
        return []
    found: list[tuple[str, ArgumentTest, str]] = []
    for name in sorted(k for k in calls[0].args if _KEY.fullmatch(k)):
        values = [c.args.get(name) for c in calls]
        if not all(isinstance(v, str) and v for v in values):
            continue
        texts: list[str] = values  # type: ignore[assignment]  # all strings, checked above
        if len(set(texts)) == 1:
            found.append((name, "eq", texts[0]))
            continue
        domains = {t.rpartition("@")[2] for t in texts if "@" in t}
        if len(domains) == 1 and all("@" in t for t in texts):
            suffix = "@" + domains.pop()
            if not _GLOB.search(suffix):
                found.append((name, "suffix", suffix))
                continue
        folders = {t.rpartition("/")[0] for t in texts if "/" in t}
        if len(folders) == 1 and all("/" in t for t in texts):
            prefix = folders.pop() + "/"
            if len(prefix) > 1 and not _GLOB.search(prefix):
                found.append((name, "prefix", prefix))
    return found


def _passes(value: Any, test: ArgumentTest, text: str) -> bool:
    if not isinstance(value, str):
        return False
    return {"eq": value == text, "prefix": value.startswith(text),
            "suffix": value.endswith(text)}[test]  # fmt: skip


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


def _rule(
    effect: VerdictKind,
    group: GroupStats,
    engine: PolicyEngine,
    asker: _Asker,
    priority: int,
    when: dict[str, Any],
) -> dict[str, Any] | None:
    """The rule to add: the group's tool and agent, within what the asking rule matches (its
    servers and conditions too), with `when` added; None when `when` would test a path and
    operator the asking rule tests already."""
    taken = {rule.id for rule in engine.policy.rules}
    base = f"suggested-{effect}-{group.tool}"
    rule_id = next(
        name for name in (base, *(f"{base}-{n}" for n in range(2, 1000))) if name not in taken
    )
    rule: dict[str, Any] = {"id": rule_id, effect: _literal_glob(group.tool)}
    asked = {} if asker.rule is None else asker.rule.to_dict()
    if "server" in asked:
        rule["server"] = asked["server"]
    if group.agent is not None:
        rule["agent"] = _literal_glob(group.agent)
    elif "agent" in asked:
        rule["agent"] = asked["agent"]
    conditions: dict[str, dict[str, Any]] = copy.deepcopy(asked.get("when", {}))
    for path, tests in when.items():
        if set(tests) & set(conditions.get(path, {})):
            return None
        conditions.setdefault(path, {}).update(tests)
    if conditions:
        rule["when"] = conditions
    if priority:
        rule["priority"] = priority
    return rule


def _literal_glob(name: str) -> str:
    """A glob that matches `name` only: ``*``, ``?`` and ``[`` in brackets."""
    return re.sub(r"[*?\[]", lambda m: f"[{m.group()}]", name)


def _verified(draft: _Draft, engine: PolicyEngine, document: dict[str, Any]) -> Suggestion | None:
    """The draft as a suggestion if the policy with its rule loads and gives each evidence
    call the verdict the draft says; else None."""
    from signoff.policy import Policy, PolicyEngine

    rules = document.get("rules", [])
    if not isinstance(rules, list) or not draft.checks:
        return None
    changed = copy.deepcopy(document)
    changed["rules"] = [*copy.deepcopy(rules), draft.rule]
    try:
        applied = PolicyEngine(Policy.from_dict(changed, source="the suggested policy"))
    except PolicyError:
        return None
    if any(applied.evaluate(call).kind != kind for call, kind in draft.checks):
        return None
    return Suggestion(
        kind=draft.kind,
        text=draft.text,
        rule=draft.rule,
        document=changed,
        diff=policy_diff(document, changed, version=engine.version),
        matched=draft.matched,
        total=draft.total,
        checks=draft.checks,
    )
