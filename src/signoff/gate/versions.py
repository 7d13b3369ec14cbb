"""What you see is what you approve: a decision is bound to the version of the call its sender saw.

Every change to a pending approval — an edit of its call, a vote, an assignment, an escalation
step, a new policy's rule — makes a new version and is kept with it (`Approval.changes`). Every
channel shows the version with the call and sends it back with the decision; a decision sent on a
version that changed since is refused, naming what changed ("edited by olga at 10:02:11 UTC:
amount 100 → 999999"), and writes nothing. A person's own changes do not make their view stale:
they made them.

A decision that names no version is taken as before where a single person decides a call nobody
edited; it never completes the approvals of a call edited while it waited.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Final

from signoff.errors import StaleDecisionError
from signoff.names import same_person
from signoff.redaction import Redaction
from signoff.types import (
    KEPT_CHANGES,
    Approval,
    Approve,
    ArgChange,
    Change,
    ChangeKind,
    Decision,
    Edit,
)

__all__ = [
    "MAX_ARG_CHANGES",
    "MAX_VERSION",
    "arg_changes",
    "changed",
    "check_seen",
    "describe",
    "since",
    "version_of",
]

MAX_ARG_CHANGES: Final = 20
"""The most arguments an edit's change keeps; the rest are counted."""
MAX_VERSION: Final = 2**31
"""The highest version a decision may name (a store's integer column holds it)."""
_VALUE_CHARS: Final = 80
"""The most of one string value a change keeps (and of a list, as JSON)."""
_MISSING: Final = object()


def version_of(value: object) -> int | None:
    """`value` as the version of an approval a decision names — a whole number from 1 to
    `MAX_VERSION` (``true`` is not one, though Python says so) — or None when it is not one:
    every channel reads what its payload says with this, and refuses None."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_VERSION:
        return None
    return value


def changed(
    approval: Approval,
    kind: ChangeKind,
    *,
    by: str,
    at: datetime,
    args: tuple[ArgChange, ...] = (),
    note: str = "",
    base: Approval | None = None,
) -> Approval:
    """`approval` at its next version, the change that made it kept (the newest
    `KEPT_CHANGES`). `base` is the approval as it stood before, when `approval` is already
    that approval with its new content: its version is the one counted from."""
    version = (base or approval).version + 1
    change = Change(version=version, kind=kind, by=by, at=at, args=args[:MAX_ARG_CHANGES],
                    more=max(0, len(args) - MAX_ARG_CHANGES), note=note)  # fmt: skip
    kept = (*(base or approval).changes, change)[-KEPT_CHANGES:]
    return replace(approval, version=version, changes=kept)


def arg_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[ArgChange, ...]:
    """What an edit changed, argument by argument: down through objects to the values that
    differ (a list that changed length is one value), long values cut."""
    found: list[ArgChange] = []
    _diff(before, after, (), found)
    return tuple(found)


def _diff(before: Any, after: Any, path: tuple[str, ...], found: list[ArgChange]) -> None:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in [*before, *(k for k in after if k not in before)]:
            _diff(before.get(key, _MISSING), after.get(key, _MISSING), (*path, str(key)), found)
        return
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (b, a) in enumerate(zip(before, after, strict=True)):
            _diff(b, a, (*path, str(index)), found)
        return
    if before is not _MISSING and after is not _MISSING and _same(before, after):
        return
    found.append(
        ArgChange(
            path=path,
            before=None if before is _MISSING else _kept(before),
            after=None if after is _MISSING else _kept(after),
            added=before is _MISSING,
            removed=after is _MISSING,
        )
    )


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON (``true`` is not ``1``)."""
    return type(a) is type(b) and json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _kept(value: Any) -> Any:
    """A value as a change keeps it: a string cut; an object or a list kept while short, else
    a count of what it holds (never its content cut mid-way: a secret in it could not be told
    from the rest)."""
    if isinstance(value, str):
        return value if len(value) <= _VALUE_CHARS else value[: _VALUE_CHARS - 1] + "…"
    if isinstance(value, dict | list):
        if len(json.dumps(value, ensure_ascii=False)) <= _VALUE_CHARS:
            return value
        what = "keys" if isinstance(value, dict) else "items"
        return {"…": f"{len(value)} {what}"}
    return value


def since(approval: Approval, seen: int) -> tuple[Change, ...]:
    """The changes `approval` keeps that came after version `seen`."""
    return tuple(c for c in approval.changes if c.version > seen)


def check_seen(
    approval: Approval,
    seen: int | None,
    decision: Decision,
    *,
    actor: str,
    redaction: Redaction | None = None,
) -> None:
    """`StaleDecisionError` unless `decision`, by `actor` sent on version `seen` of the pending
    `approval`, decides what stands now: nothing changed since by anyone else. With no `seen`,
    only an approval of a call edited while it waited (one that needs several people) is
    refused: whoever approves it must say which arguments they saw (a rejection or a response
    runs nothing)."""
    redaction = redaction or Redaction()
    if seen is None:
        if approval.requested_args is None or not isinstance(decision, Approve | Edit):
            return
        edits = tuple(c for c in approval.changes if c.kind == "edit")
        what = describe(edits[-1:], redaction) if edits else "its arguments were edited"
        raise _stale(
            approval, None, edits,
            f"was edited while it waited ({what}); a decision on it must say which version it "
            f"was made on (now {approval.version})",
        )  # fmt: skip
    if seen == approval.version:
        return
    if seen > approval.version or seen < 1:
        raise _stale(approval, seen, (), f"never had version {seen}")
    missed = since(approval, seen)
    unseen = approval.version - seen - len(missed)  # changes older than those kept
    if unseen == 0 and all(same_person(c.by, actor) for c in missed):
        return  # their own changes: they know what they did
    lost = f"; and {unseen} earlier changes" if unseen else ""
    raise _stale(
        approval, seen, missed,
        f"changed since version {seen}, which this decision was made on: "
        f"{describe(missed, redaction)}{lost}",
    )  # fmt: skip


def _stale(
    approval: Approval, seen: int | None, changes: tuple[Change, ...], what: str
) -> StaleDecisionError:
    return StaleDecisionError(
        f"approval {approval.id!r} {what}. It is at version {approval.version} now: look again",
        approval_id=approval.id,
        seen=seen,
        version=approval.version,
        changes=changes,
    )


def describe(changes: Sequence[Change], redaction: Redaction | None = None) -> str:
    """The changes in words, oldest first, redacted values masked."""
    redaction = redaction or Redaction()
    return "; ".join(_one(change, redaction) for change in changes) or "nothing kept"


def _one(change: Change, redaction: Redaction) -> str:
    at = change.at.strftime("%H:%M:%S UTC")
    match change.kind:
        case "edit":
            shown = ", ".join(_arg(a, redaction) for a in change.args)
            shown += f" and {change.more} more" if change.more else ""
            return f"edited by {change.by} at {at}: {shown or 'no argument changed'}"
        case "vote":
            return f"approved by {change.by} at {at}"
        case "assign":
            return f"assigned {change.note} by {change.by} at {at}"
        case "escalate":
            return f"escalated at {at}: {change.note}"
        case "policy":
            return f"judged again at {at} by a new policy: {change.note}"


def _arg(change: ArgChange, redaction: Redaction) -> str:
    where = ".".join(change.path) or "(the arguments)"
    before = redaction.value_at(change.before, change.path)
    after = redaction.value_at(change.after, change.path)
    if change.added:
        return f"{where} added: {_value(after)}"
    if change.removed:
        return f"{where} removed (was {_value(before)})"
    return f"{where} {_value(before)} → {_value(after)}"


def _value(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)
