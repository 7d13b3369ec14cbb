"""Where a suggested rule goes: within what the rule that asks about its calls matches (that
rule's servers and conditions kept, the group's tool and agent named), an allow one priority
above it — at priority 0 beside a default, which any rule comes before — and a deny at its
priority, where deny wins. No allow goes above a deny that stands at the asking rule's
priority for the tool: it would override that deny.
"""

from __future__ import annotations

import copy
import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from signoff.types import ToolCall, VerdictKind

if TYPE_CHECKING:
    from signoff.policy import PolicyEngine
    from signoff.policy.model import Rule
    from signoff.store.insights import GroupStats

__all__ = ["Asker", "asker_of", "denied_beside", "literal_glob", "suggested_rule"]


@dataclass(frozen=True, kw_only=True)
class Asker:
    """What asks about a group's calls now: a rule (None for a default) and its priority."""

    rule: Rule | None
    priority: int

    def allow_priority(self) -> int:
        """An allow above the asking rule; beside a default, any rule already comes first."""
        return 0 if self.rule is None else self.priority + 1


def asker_of(engine: PolicyEngine, calls: Sequence[ToolCall]) -> Asker | None:
    """What asks about these calls now, or None when the policy no longer asks about the first
    of them (it changed since: nothing to suggest) or a rule of another kind asks."""
    if not calls:
        return None
    verdict = engine.evaluate(calls[0])
    if verdict.kind != "ask":
        return None
    if verdict.rule is None:
        return Asker(rule=None, priority=0)
    try:
        rule = engine.rule(verdict.rule)
    except KeyError:  # a section's default: any rule comes before it
        return Asker(rule=None, priority=0)
    return Asker(rule=rule, priority=rule.priority) if rule.kind == "tool" else None


def denied_beside(engine: PolicyEngine, group: GroupStats, asker: Asker) -> bool:
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


def suggested_rule(
    effect: VerdictKind,
    group: GroupStats,
    engine: PolicyEngine,
    asker: Asker,
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
    rule: dict[str, Any] = {"id": rule_id, effect: literal_glob(group.tool)}
    asked = {} if asker.rule is None else asker.rule.to_dict()
    if "server" in asked:
        rule["server"] = asked["server"]
    if group.agent is not None:
        rule["agent"] = literal_glob(group.agent)
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


def literal_glob(name: str) -> str:
    """A glob that matches `name` only: ``*``, ``?`` and ``[`` in brackets."""
    return re.sub(r"[*?\[]", lambda m: f"[{m.group()}]", name)
