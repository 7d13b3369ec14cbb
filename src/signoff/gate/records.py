"""The audit entries the gate writes, and what a decision leaves behind apart from its approval's
new status: each verdict's entry, a decision's (or a vote's, a lapse's, an escalation's, an
assignment's), the grant an "approve always" makes and the grant's own entry, and the entry of
each call a grant lets through (`Gate.hold`, `Gate.decide_batch`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from signoff.gate.deciders import needed
from signoff.gate.ids import new_id
from signoff.gate.outcome import CheckContext
from signoff.store import AuditRecord
from signoff.types import (
    AUTOMATIC,
    Approval,
    Approve,
    Assignment,
    Edit,
    Escalation,
    Grant,
    ToolCall,
    Verdict,
    decision_to_dict,
)
from signoff.types.fields import same_named

__all__ = [
    "approval_record",
    "assignment_record",
    "decision_record",
    "escalation_record",
    "grant_for",
    "grant_record",
    "lapse_record",
    "use_record",
    "verdict_record",
    "vote_record",
]


def verdict_record(
    call: ToolCall,
    verdict: Verdict,
    context: CheckContext,
    *,
    subject: str,
    digest: str | None,
    policy: str,
    keyed: bool,
    at: datetime,
) -> AuditRecord:
    """The audit entry of the policy's verdict on a call (`subject`: its approval's id when it
    is held, else the call's), under which `policy` version; `keyed` for a call of another
    framework's run, named by its origin, thread and call id."""
    data: dict[str, Any] = {
        "verdict": verdict.kind,
        "rule": verdict.rule,
        "reason": verdict.reason,
        "tool": call.name,
        "server": call.server,
        "agent": call.agent,
        "digest": digest,
        "run_id": context.run_id,
        "policy": policy,
    }
    if call.kind != "tool":
        data["kind"] = call.kind
    if keyed:
        data |= {"origin": context.origin, "thread_id": context.thread_id, "call_id": call.id}
    actor = context.requested_by or "agent"
    return AuditRecord(actor=actor, action="verdict", subject=subject, at=at, data=data)


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


def lapse_record(before: Approval, after: Approval, *, at: datetime) -> AuditRecord:
    """The audit entry of an approval whose time ran out: expired, or decided by signoff as
    the rule that asked says (`on_timeout`), naming that rule."""
    record = decision_record(before, after, actor=AUTOMATIC, at=at)
    if after.status != "expired":
        record.data.update(automatic=True, rule=before.rule)
    return record


def vote_record(before: Approval, after: Approval, *, actor: str, at: datetime) -> AuditRecord:
    """The audit entry of one person's approval of a call that needs several: the decision's
    own entry when it completes them, else a ``vote`` with what is still needed."""
    assert before.quorum is not None  # only such calls are voted on
    voters = [v.by for v in after.votes]
    if not after.pending:
        record = decision_record(before, after, actor=actor, at=at)
        record.data["votes"] = voters
        return record
    data: dict[str, Any] = {
        "tool": before.call.name,
        "digest": after.call.digest,
        "run_id": before.run_id,
        "votes": voters,
        "needed": needed(before.quorum, after.votes).people,
    }
    if after.call.args != before.call.args:
        data |= {"edit": after.call.args, "args": before.call.args}
    return AuditRecord(actor=actor, action="vote", subject=before.id, at=at, data=data)


def escalation_record(
    before: Approval,
    after: Approval,
    steps: Sequence[Escalation],
    approvers: Sequence[str],
    *,
    at: datetime,
) -> AuditRecord:
    """The audit entry of escalation steps reached: who may decide now, and who is told."""
    return approval_record(
        before,
        "escalate",
        actor=AUTOMATIC,
        at=at,
        data={
            "rule": before.rule,
            "to": sorted({role for step in steps for role in step.to}),
            "approvers": list(approvers),
            "step": after.escalated,
        },
    )


def assignment_record(before: Approval, assigned: Assignment) -> AuditRecord:
    """The audit entry of an approval handed to someone: to whom, by whom, with what note."""
    return approval_record(
        before,
        "assign",
        actor=assigned.by,
        at=assigned.at,
        data={
            "rule": before.rule,
            "to": assigned.to,
            "note": assigned.note,
            "from": None if before.assigned is None else before.assigned.to,
        },
    )


def approval_record(
    approval: Approval, action: str, *, actor: str, at: datetime, data: dict[str, Any]
) -> AuditRecord:
    """An audit entry of `action` on `approval`: its data names the call's tool, then `data`."""
    return AuditRecord(
        actor=actor,
        action=action,
        subject=approval.id,
        at=at,
        data={"tool": approval.call.name, **data},
    )


def grant_record(grant: Grant, approval: Approval, *, actor: str, at: datetime) -> AuditRecord:
    data = {
        **_tool(grant.tool, grant.kind),
        **same_named(grant, ("agent", "scope", "subject", "requested_by")),
        **same_named(grant, ("args_digest", "rule", "rule_digest")),
        "roles": list(grant.roles),
        "approval": approval.id,
    }
    return AuditRecord(actor=actor, action="grant", subject=grant.id, at=at, data=data)


def use_record(
    grant_id: str, call: ToolCall, context: CheckContext, *, at: datetime
) -> AuditRecord:
    """The audit entry of one call a grant let through without asking anyone."""
    data = {
        **_tool(call.name, call.kind),
        **same_named(call, ("server", "agent", "digest")),
        "call_id": call.id,
        **same_named(context, ("run_id", "thread_id")),
    }
    actor = context.requested_by or "agent"
    return AuditRecord(actor=actor, action="grant_use", subject=grant_id, at=at, data=data)


def _tool(name: str, kind: str) -> dict[str, Any]:
    """The tool an entry is about, and what kind of call it is when it is not a tool's."""
    return {"tool": name} if kind == "tool" else {"tool": name, "kind": kind}


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
