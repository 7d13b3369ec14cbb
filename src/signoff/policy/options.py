"""What a rule says besides what it matches, read from its mapping: its priority, how long an
asked call waits, who may decide it and how many of them, its escalation steps, what signoff
decides when nobody does in time — and the conditions on the call's arguments.

Each reader records what is wrong with the path to it (see `Reader`) and returns None for it.
"""

from __future__ import annotations

from typing import Any

from signoff.policy.conditions import OPERATORS, Condition, compile_condition
from signoff.policy.reader import Reader
from signoff.policy.source import Path, format_path
from signoff.types import Escalation, OnTimeout, Quorum, VerdictKind

__all__ = ["MAX_ESCALATIONS", "MAX_QUORUM", "RULE_OPTIONS", "read_conditions", "read_options"]

RULE_OPTIONS = frozenset(
    {"timeout", "approvers", "forbid_self_approval", "destructive", "reason", "priority",
     "approvals", "escalate", "on_timeout", "idempotent"}
)  # fmt: skip
_ASKING_OPTIONS = ("timeout", "approvers", "forbid_self_approval", "destructive", "approvals",
                   "escalate", "on_timeout")  # fmt: skip
_APPROVALS_KEYS = frozenset({"count", "distinct", "from"})
_ESCALATION_KEYS = frozenset({"after", "to"})
_ON_TIMEOUT_KEYS = frozenset({"after", "decide", "reason", "despite_approvers"})
MAX_QUORUM = 10
"""The most people a rule may require: more is a mistake, not a safeguard."""
MAX_ESCALATIONS = 10


def read_options(
    reader: Reader, data: dict[str, Any], path: Path, effect: VerdictKind | None
) -> dict[str, Any]:
    """The options of a rule (or a tool's toggle) as `Rule` fields; a wrong one is None."""
    out: dict[str, Any] = {}
    if effect in ("allow", "deny"):
        for key in _ASKING_OPTIONS:
            if key in data:
                reader.warn(
                    (*path, key),
                    f"{key!r} has no effect on a rule that does not ask",
                    at_key=True,
                )
    if "priority" in data:
        out["priority"] = reader.integer(data["priority"], (*path, "priority"), "priority")
    if "timeout" in data:
        out["timeout"] = reader.duration(data["timeout"], (*path, "timeout"))
    if "approvers" in data:
        out["approvers"] = reader.strings(data["approvers"], (*path, "approvers"), "approvers")
    if "forbid_self_approval" in data:
        out["forbid_self_approval"] = reader.boolean(
            data["forbid_self_approval"],
            (*path, "forbid_self_approval"),
            "forbid_self_approval",
        )
    if "destructive" in data:
        out["destructive"] = reader.boolean(
            data["destructive"], (*path, "destructive"), "destructive"
        )
    if "idempotent" in data:
        if effect == "deny":
            reader.warn((*path, "idempotent"), "'idempotent' has no effect on a rule that denies",
                        at_key=True)  # fmt: skip
        out["idempotent"] = reader.boolean(data["idempotent"], (*path, "idempotent"), "idempotent")
    if "reason" in data:
        out["reason"] = reader.string(data["reason"], (*path, "reason"), "reason")
    if "approvals" in data:
        out["quorum"] = _quorum(reader, data["approvals"], (*path, "approvals"))
    if "escalate" in data:
        out["escalate"] = _escalate(reader, data["escalate"], (*path, "escalate"))
    if "on_timeout" in data:
        on_timeout = _on_timeout(reader, data, path, out)
        if on_timeout is not None:
            out["on_timeout"], out["timeout"] = on_timeout
        else:
            out["on_timeout"] = None
    return out


def _quorum(reader: Reader, value: Any, path: Path) -> Quorum | None:
    """``approvals: {count: 2, distinct: true, from: [ops, finance]}``: how many people."""
    data = reader.mapping_with(
        value,
        path,
        "approvals",
        _APPROVALS_KEYS,
        needs=("count",),
        missing="approvals needs 'count': how many people must approve",
    )
    if data is None:
        return None
    count = reader.integer(data["count"], (*path, "count"), "approvals.count")
    if count is not None and not 1 <= count <= MAX_QUORUM:
        reader.error((*path, "count"), f"approvals.count must be 1 to {MAX_QUORUM}")
        count = None
    if "distinct" in data and data["distinct"] is not True:
        reader.error(
            (*path, "distinct"),
            "approvals are always from distinct people: 'distinct' can only be true",
        )
        return None
    roles: tuple[str, ...] | None = ()
    if "from" in data:
        roles = reader.strings(data["from"], (*path, "from"), "approvals.from")
    if count is None or roles is None:
        return None
    if len(roles) > count:
        reader.error(
            (*path, "from"),
            f"approvals.from names {len(roles)} roles, one person each, but count is "
            f"{count}: raise count to at least {len(roles)}",
        )
        return None
    if count == 1 and not roles:
        return None  # one person: as without the option
    return Quorum(count=count, roles=roles)


def _escalate(reader: Reader, value: Any, path: Path) -> tuple[Escalation, ...] | None:
    """``escalate: [{after: 30m, to: [security]}, {after: 2h, to: [cto]}]``."""
    if not isinstance(value, list) or not value:
        reader.error(path, "escalate must be a non-empty list of {after, to} steps")
        return None
    if len(value) > MAX_ESCALATIONS:
        reader.error(path, f"escalate has at most {MAX_ESCALATIONS} steps")
        return None
    steps: list[Escalation] = []
    for i, item in enumerate(value):
        where = (*path, i)
        data = reader.mapping_with(
            item,
            where,
            "an escalation step",
            _ESCALATION_KEYS,
            needs=("after", "to"),
            missing="an escalation step needs 'after' and 'to'",
        )
        if data is None:
            return None
        after = reader.duration(data["after"], (*where, "after"), "escalate.after")
        to = reader.strings(data["to"], (*where, "to"), "escalate.to")
        if after is None or to is None:
            return None
        if steps and after <= steps[-1].after:
            reader.error((*where, "after"), "each escalation step comes after the one before it")
            return None
        steps.append(Escalation(after=after, to=to))
    return tuple(steps)


def _on_timeout(
    reader: Reader, data: dict[str, Any], path: Path, options: dict[str, Any]
) -> tuple[OnTimeout, float] | None:
    """``on_timeout: {after: 15m, decide: approve}`` (or ``reject``, with a ``reason``):
    what signoff decides when nobody does in time; and the time."""
    where = (*path, "on_timeout")
    found = reader.mapping_with(
        data["on_timeout"],
        where,
        "on_timeout",
        _ON_TIMEOUT_KEYS,
        needs=("after", "decide"),
        missing="on_timeout needs 'after' and 'decide' (approve or reject)",
    )
    if found is None:
        return None
    if "timeout" in data:
        reader.error(
            (*path, "timeout"),
            "give the time once: 'on_timeout.after' is the rule's timeout",
            at_key=True,
        )
        return None
    after = reader.duration(found["after"], (*where, "after"), "on_timeout.after")
    decide = found["decide"]
    if decide not in ("approve", "reject"):
        reader.error(
            (*where, "decide"), f"on_timeout.decide must be approve or reject, not {decide!r}"
        )
        return None
    reason = None
    if "reason" in found:
        if decide != "reject":
            reader.error((*where, "reason"), "a reason goes with decide: reject", at_key=True)
            return None
        reason = reader.string(found["reason"], (*where, "reason"), "on_timeout.reason")
    despite = False
    if "despite_approvers" in found:
        despite = bool(
            reader.boolean(
                found["despite_approvers"], (*where, "despite_approvers"), "despite_approvers"
            )
        )
    guarded = [k for k in ("approvers", "forbid_self_approval", "approvals") if data.get(k)]
    if decide == "approve" and guarded:
        names = ", ".join(repr(k) for k in guarded)
        if not despite:
            reader.error(
                (*where, "decide"),
                f"this rule says who may decide ({names}): approving on timeout would "
                "approve without them. Add 'despite_approvers: true' to mean it",
            )
            return None
        reader.warn(
            (*where, "despite_approvers"),
            f"calls of this rule are approved on timeout without the people its {names} require",
            at_key=True,
        )
    if after is None:
        return None
    return OnTimeout(decide=decide, reason=reason, despite_approvers=despite), after


def read_conditions(reader: Reader, value: Any, path: Path) -> tuple[Condition, ...] | None:
    data = reader.mapping(value, path, format_path(path) or "the policy")
    if data is None:
        return None
    out: list[Condition] = []
    ok = True
    for arg_path, test in data.items():
        where = (*path, arg_path)
        # A bare value is shorthand for equality: `when: {mode: fast}`.
        tests = test if isinstance(test, dict) and test else {"eq": test}
        for operator, operand in tests.items():
            at = where if tests is not test else (*where, operator)
            if operator not in OPERATORS:
                reader.error(
                    at,
                    f"unknown condition {operator!r}; use one of {', '.join(OPERATORS)}",
                    at_key=True,
                )
                ok = False
                continue
            try:
                out.append(compile_condition(arg_path, str(operator), operand))
                if operator in ("gt", "ge", "lt", "le") and _numeric_text(operand):
                    reader.warn(
                        at,
                        f"{operand!r} is text, so it is compared with text only; "
                        "for a number write it as one (1000, 1.0e+3)",
                    )
            except ValueError as exc:
                reader.error(at, str(exc))
                ok = False
    return tuple(out) if ok else None


def _numeric_text(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        float(value)
    except ValueError:
        return False
    return True
