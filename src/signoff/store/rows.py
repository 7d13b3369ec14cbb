"""Records as rows of their tables and back: approvals in full, and for every record the columns
that hold its fields as they are (`same_named`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from signoff.errors import NotFoundError
from signoff.names import assignee_key
from signoff.store.times import from_micros, to_micros
from signoff.types import (
    KEPT_CHANGES,
    Approval,
    ArgChange,
    Assignment,
    Change,
    Escalation,
    OnTimeout,
    Quorum,
    ToolCall,
    Vote,
    canonical_json,
    decision_from_dict,
    decision_to_dict,
    preview_from_dict,
    preview_to_dict,
)
from signoff.types.fields import same_named

__all__ = ["approval_from_row", "approval_row", "decision_values", "known_ids", "same_named"]


def known_ids(ids: Iterable[str], what: str) -> list[str]:
    """`ids`, or `NotFoundError` for one that no row can have: a NUL character, which SQLite
    would compare and PostgreSQL refuses with its own words, is in none of signoff's ids."""
    ids = list(ids)
    for found in ids:
        if "\x00" in found:
            raise NotFoundError(f"no {what} with id {found!r}")
    return ids


def _json(value: Any) -> str:
    return canonical_json(value).decode()


def approval_row(approval: Approval) -> dict[str, Any]:
    call = approval.call
    return {
        **same_named(approval, ("id", "batch_id", "run_id", "thread_id", "origin")),
        "call_id": call.id,
        "tool": call.name,
        **same_named(call, ("kind", "server", "agent")),
        "requested_at": to_micros(approval.requested_at),
        "requested_by": approval.requested_by,
        "args_schema": None if approval.args_schema is None else _json(approval.args_schema),
        # Not canonical: a table's columns keep the order its preview gave them.
        "preview": None
        if approval.preview is None
        else json.dumps(preview_to_dict(approval.preview), ensure_ascii=False),
        **decision_values(approval),
    }


def _rule_values(approval: Approval) -> dict[str, Any]:
    """What the rule that asks says of the approval: a new policy may change it while it
    waits (`signoff.gate.rejudge`)."""
    return {
        "rule": approval.rule,
        "rule_digest": approval.rule_digest,
        "reason": approval.reason,
        "expires_at": None if approval.expires_at is None else to_micros(approval.expires_at),
        "approvers": _json(list(approval.approvers)),
        "forbid_self_approval": approval.forbid_self_approval,
        "destructive": approval.destructive,
        "quorum": None
        if approval.quorum is None
        else _json({"count": approval.quorum.count, "roles": list(approval.quorum.roles)}),
        "escalate": None
        if not approval.escalate
        else _json([{"after": e.after, "to": list(e.to)} for e in approval.escalate]),
        "on_timeout": None if approval.on_timeout is None else _json(_on_timeout(approval)),
        "policy": approval.policy,
    }


def _on_timeout(approval: Approval) -> dict[str, Any]:
    assert approval.on_timeout is not None
    on_timeout = approval.on_timeout
    return {
        "decide": on_timeout.decide,
        "reason": on_timeout.reason,
        "despite_approvers": on_timeout.despite_approvers,
    }


def decision_values(approval: Approval) -> dict[str, Any]:
    """The columns a change of a stored approval writes: a decision, a vote, an edit, an
    assignment, an escalation, a new policy's rule."""
    decided_at = approval.decided_at
    decision = approval.decision
    assigned = approval.assigned
    return _rule_values(approval) | {
        "status": approval.status,
        "decided_by": approval.decided_by,
        "decided_at": None if decided_at is None else to_micros(decided_at),
        "decision": None if decision is None else _json(decision_to_dict(decision)),
        "args": _json(approval.call.args),
        "requested_args": None
        if approval.requested_args is None
        else _json(approval.requested_args),
        "digest": approval.call.digest,
        "version": approval.version,
        "votes": None
        if not approval.votes
        else _json(
            [{"by": v.by, "roles": list(v.roles), "at": to_micros(v.at)} for v in approval.votes]
        ),
        "escalated": approval.escalated,
        "next_escalation_at": _micros(approval.next_escalation),
        "assigned": None
        if assigned is None
        else _json(
            {
                "to": assigned.to,
                "by": assigned.by,
                "note": assigned.note,
                "at": to_micros(assigned.at),
            }
        ),
        # Found by its key: an approval handed to 'Mallory' is in mallory's "assigned to me".
        "assigned_to": None if assigned is None else assignee_key(assigned.to),
        "changes": None
        if not approval.changes
        else _json([_change_row(c) for c in approval.changes[-KEPT_CHANGES:]]),
    }


def _change_row(change: Change) -> dict[str, Any]:
    row: dict[str, Any] = {
        "version": change.version,
        "kind": change.kind,
        "by": change.by,
        "at": to_micros(change.at),
    }
    if change.args:
        row["args"] = [
            {"path": list(a.path), "before": a.before, "after": a.after,
             "added": a.added, "removed": a.removed}
            for a in change.args
        ]  # fmt: skip
    if change.more:
        row["more"] = change.more
    if change.note:
        row["note"] = change.note
    return row


def _change(data: dict[str, Any]) -> Change:
    return Change(
        version=data["version"],
        kind=data["kind"],
        by=data["by"],
        at=from_micros(data["at"]),
        args=tuple(
            ArgChange(
                path=tuple(a["path"]),
                before=a["before"],
                after=a["after"],
                added=a["added"],
                removed=a["removed"],
            )
            for a in data.get("args", ())
        ),
        more=data.get("more", 0),
        note=data.get("note", ""),
    )


def _micros(moment: datetime | None) -> int | None:
    return None if moment is None else to_micros(moment)


def approval_from_row(row: Any) -> Approval:
    return Approval(
        id=row.id,
        call=ToolCall(
            id=row.call_id,
            name=row.tool,
            args=json.loads(row.args),
            server=row.server,
            agent=row.agent,
            kind=row.kind,
        ),
        **same_named(row, ("batch_id", "run_id", "thread_id", "origin", "status")),
        **same_named(row, ("rule", "rule_digest", "reason", "requested_by")),
        requested_at=from_micros(row.requested_at),
        expires_at=None if row.expires_at is None else from_micros(row.expires_at),
        approvers=tuple(json.loads(row.approvers)),
        forbid_self_approval=bool(row.forbid_self_approval),
        destructive=bool(row.destructive),
        decided_by=row.decided_by,
        decided_at=None if row.decided_at is None else from_micros(row.decided_at),
        decision=None if row.decision is None else decision_from_dict(json.loads(row.decision)),
        requested_args=None if row.requested_args is None else json.loads(row.requested_args),
        version=row.version,
        args_schema=None if row.args_schema is None else json.loads(row.args_schema),
        quorum=None if row.quorum is None else _quorum(json.loads(row.quorum)),
        votes=()
        if row.votes is None
        else tuple(
            Vote(by=v["by"], roles=tuple(v["roles"]), at=from_micros(v["at"]))
            for v in json.loads(row.votes)
        ),
        escalate=()
        if row.escalate is None
        else tuple(
            Escalation(after=e["after"], to=tuple(e["to"])) for e in json.loads(row.escalate)
        ),
        escalated=row.escalated,
        on_timeout=None if row.on_timeout is None else OnTimeout(**json.loads(row.on_timeout)),
        assigned=None if row.assigned is None else _assignment(json.loads(row.assigned)),
        preview=None if row.preview is None else preview_from_dict(json.loads(row.preview)),
        changes=() if row.changes is None else tuple(map(_change, json.loads(row.changes))),
        policy=row.policy,
    )


def _quorum(data: dict[str, Any]) -> Quorum:
    return Quorum(count=data["count"], roles=tuple(data["roles"]))


def _assignment(data: dict[str, Any]) -> Assignment:
    return Assignment(to=data["to"], by=data["by"], note=data["note"], at=from_micros(data["at"]))
