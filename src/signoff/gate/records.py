"""What a decision leaves behind, apart from its approval's new status: its audit entry, the
grant an "approve always" makes and the grant's own entry, and the entry of each call a grant
lets through (`Gate.decide_batch`, `Gate.hold`)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from signoff.gate.ids import new_id
from signoff.store import AuditRecord
from signoff.types import Approval, Approve, Edit, Grant, ToolCall, decision_to_dict

if TYPE_CHECKING:
    from signoff.gate.core import CheckContext

__all__ = ["decision_record", "grant_for", "grant_record", "use_record"]


def decision_record(before: Approval, after: Approval, *, actor: str, at: datetime) -> AuditRecord:
    """The audit entry of a decision: for an edit both argument sets, as requested (`args`)
    and as decided (in the decision)."""
    assert after.decision is not None  # only decided approvals are recorded
    data: dict[str, Any] = {
        "status": after.status,
        "decision": decision_to_dict(after.decision),
        "tool": before.call.name,
        "digest": before.call.digest,
        "decided_digest": after.call.digest,
        "run_id": before.run_id,
    }
    if isinstance(after.decision, Edit):
        data["args"] = before.call.args
    return AuditRecord(actor=actor, action="decision", subject=before.id, at=at, data=data)


def grant_record(grant: Grant, approval: Approval, *, actor: str, at: datetime) -> AuditRecord:
    return AuditRecord(
        actor=actor,
        action="grant",
        subject=grant.id,
        at=at,
        data={
            "tool": grant.tool,
            **({} if grant.kind == "tool" else {"kind": grant.kind}),
            "agent": grant.agent,
            "scope": grant.scope,
            "subject": grant.subject,
            "requested_by": grant.requested_by,
            "args_digest": grant.args_digest,
            "rule": grant.rule,
            "rule_digest": grant.rule_digest,
            "roles": list(grant.roles),
            "approval": approval.id,
        },
    )


def use_record(
    grant_id: str, call: ToolCall, context: CheckContext, *, at: datetime
) -> AuditRecord:
    """The audit entry of one call a grant let through without asking anyone."""
    return AuditRecord(
        actor=context.requested_by or "agent",
        action="grant_use",
        subject=grant_id,
        at=at,
        data={
            "tool": call.name,
            **({} if call.kind == "tool" else {"kind": call.kind}),
            "server": call.server,
            "agent": call.agent,
            "digest": call.digest,
            "call_id": call.id,
            "run_id": context.run_id,
            "thread_id": context.thread_id,
        },
    )


def grant_for(
    approval: Approval, decision: Approve, *, actor: str, roles: frozenset[str], at: datetime
) -> Grant:
    scope = decision.always
    assert scope is not None  # only approve-always leaves a grant
    subject = {
        "run": approval.run_id,
        "thread": approval.thread_id,
        "agent": approval.call.agent,
        "global": None,
    }[scope.kind]
    return Grant(
        id=new_id(),
        tool=approval.call.name,
        kind=approval.call.kind,
        server=approval.call.server,
        agent=approval.call.agent,
        scope=scope.kind,
        subject=subject,
        requested_by=approval.requested_by,
        args_digest=approval.call.digest if scope.with_args else None,
        rule=approval.rule,
        rule_digest=approval.rule_digest,
        approval_id=approval.id,
        created_by=actor,
        roles=tuple(sorted(roles)),
        created_at=at,
    )
