"""A held call and everything that gathers on it while it waits — votes, an assignment, a
preview of what it would change, its changes — up to the decision it carries."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Final, Literal, TypeAlias

from signoff.types.call import ToolCall
from signoff.types.change import Change, change_to_dict
from signoff.types.decision import Decision, decision_to_dict
from signoff.types.verdict import Escalation, OnTimeout, Quorum

__all__ = [
    "AUTOMATIC",
    "DECIDED_STATUS",
    "Approval",
    "ApprovalStatus",
    "Assignment",
    "Preview",
    "PreviewKind",
    "Vote",
    "approval_to_dict",
    "preview_from_dict",
    "preview_to_dict",
]

ApprovalStatus: TypeAlias = Literal[
    "pending", "approved", "edited", "responded", "answered", "rejected", "expired", "cancelled"
]
DECIDED_STATUS: Final[dict[str, ApprovalStatus]] = {
    "approve": "approved",
    "edit": "edited",
    "respond": "responded",
    "answer": "answered",
    "reject": "rejected",
    "expired": "expired",
    "cancelled": "cancelled",
}
"""The status an approval takes for each decision kind."""
AUTOMATIC: Final = "signoff"
"""Who decided an approval that signoff decided itself: an expiry, a decision on timeout."""


@dataclass(frozen=True, kw_only=True)
class Vote:
    """One person's approval of a call that needs several (`Quorum`)."""

    by: str
    roles: tuple[str, ...] = ()
    """The roles they decided with."""
    at: datetime


@dataclass(frozen=True, kw_only=True)
class Assignment:
    """An approval handed to a person, or to everyone with a role (`to` is ``role:NAME``),
    by someone who may decide it, with a note."""

    to: str
    by: str
    note: str = ""
    at: datetime

    @property
    def role(self) -> str | None:
        """The role it is assigned to, or None when it is assigned to a person."""
        return self.to.removeprefix("role:") if self.to.startswith("role:") else None


PreviewKind: TypeAlias = Literal["text", "diff", "table"]


@dataclass(frozen=True, kw_only=True)
class Preview:
    """What a held call would change, computed without running it by its tool's preview."""

    kind: PreviewKind = "text"
    """How to show `body`: plain ``text``, a unified ``diff``, or a ``table`` of rows."""
    body: str | list[dict[str, Any]] = ""
    """The text or diff, or (a table) a list of rows, each a dict of column to value."""
    truncated: bool = False
    """Whether `body` was cut to the preview's size bound."""
    error: str | None = None
    """Why there is no preview: it failed, or took longer than its time bound."""


def preview_to_dict(preview: Preview) -> dict[str, Any]:
    """The preview as JSON-ready data, as it is stored and as the API shows it."""
    return asdict(preview)


def preview_from_dict(data: dict[str, Any]) -> Preview:
    """The inverse of `preview_to_dict`, for data this package stored itself."""
    return Preview(
        kind=data["kind"], body=data["body"], truncated=data["truncated"], error=data["error"]
    )


@dataclass(frozen=True, kw_only=True)
class Approval:
    """A held call waiting for, or carrying, a person's decision."""

    id: str
    call: ToolCall
    batch_id: str
    """The held calls of one model turn share a batch: the run resumes when all are decided."""
    run_id: str | None = None
    thread_id: str | None = None
    origin: str = "gate"
    """Who holds the call: ``gate`` (in-process), ``runtime``, ``mcp-gateway``, ..."""
    rule: str | None
    rule_digest: str | None = None
    """What the rule that asked said when it asked (see `Verdict.rule_digest`)."""
    reason: str
    status: ApprovalStatus = "pending"
    requested_at: datetime
    requested_by: str | None = None
    """The principal that started the run, for rules that forbid self-approval."""
    expires_at: datetime | None = None
    approvers: tuple[str, ...] = ()
    forbid_self_approval: bool = False
    destructive: bool = False
    """Whether the rule that asked marks the call as one that cannot be undone
    (`Verdict.destructive`)."""
    decided_by: str | None = None
    decided_at: datetime | None = None
    decision: Decision | None = None
    requested_args: dict[str, Any] | None = None
    """The arguments the call was requested with, when an edit replaced them in `call`; None
    when `call` runs as requested."""
    version: int = 1
    """Bumped by every change; a decision is a compare-and-set on it."""
    args_schema: dict[str, Any] | None = None
    """The JSON schema of the tool's arguments as the asker knew it when the call was held (a
    framework's tool, an MCP server's tool): an edit is checked against it wherever it is
    decided — the inbox of another process too."""
    quorum: Quorum | None = None
    """How many people must approve the call (`Verdict.quorum`); None: one."""
    votes: tuple[Vote, ...] = ()
    """The approvals given so far, when it needs several; an edit starts them again."""
    escalate: tuple[Escalation, ...] = ()
    escalated: int = 0
    """How many of the `escalate` steps have been announced."""
    on_timeout: OnTimeout | None = None
    assigned: Assignment | None = None
    preview: Preview | None = None
    """What the call would change, as its tool's preview computed it when the call was held;
    None when its tool has none."""
    changes: tuple[Change, ...] = ()
    """The changes made while it waited, oldest first (the newest `KEPT_CHANGES` of them):
    each made one version."""
    policy: str | None = None
    """The version of the policy that judged it (and ruled it since): a new version of the
    same policy — one saved in the store — judges it again; None before signoff kept it."""

    @property
    def pending(self) -> bool:
        return self.status == "pending"

    @property
    def next_escalation(self) -> datetime | None:
        """When the next escalation step not announced yet comes, while it waits."""
        if not self.pending or self.escalated >= len(self.escalate):
            return None
        return self.requested_at + timedelta(seconds=self.escalate[self.escalated].after)

    @property
    def automatic(self) -> bool:
        """Whether signoff decided it itself, when nobody decided in time (`on_timeout`)."""
        return self.decided_by == AUTOMATIC and self.status not in ("pending", "expired")

    @property
    def requested_call(self) -> ToolCall:
        """The call as it was requested, before any edit."""
        if self.requested_args is None:
            return self.call
        return replace(self.call, args=self.requested_args)


def approval_to_dict(approval: Approval) -> dict[str, Any]:
    """The approval as JSON-ready data, as the API and every channel show it: `args` are
    those the call runs with, `requested_args` those it was requested with (they differ after
    an edit)."""
    call = approval.call

    def iso(moment: datetime | None) -> str | None:
        return None if moment is None else moment.isoformat()

    return {
        "id": approval.id,
        "run_id": approval.run_id,
        "thread_id": approval.thread_id,
        "call_id": call.id,
        "tool": call.name,
        "kind": call.kind,
        "args": call.args,
        "requested_args": approval.requested_call.args,
        "edited": approval.requested_args is not None,
        "server": call.server,
        "agent": call.agent,
        "status": approval.status,
        "rule": approval.rule,
        "reason": approval.reason,
        "approvers": list(approval.approvers),
        "destructive": approval.destructive,
        "origin": approval.origin,
        "requested_by": approval.requested_by,
        "requested_at": iso(approval.requested_at),
        "expires_at": iso(approval.expires_at),
        "decided_by": approval.decided_by,
        "decided_at": iso(approval.decided_at),
        "decision": None if approval.decision is None else decision_to_dict(approval.decision),
        "automatic": approval.automatic,
        "quorum": None
        if approval.quorum is None
        else {"count": approval.quorum.count, "roles": list(approval.quorum.roles)},
        "votes": [{"by": v.by, "roles": list(v.roles), "at": iso(v.at)} for v in approval.votes],
        "escalate": [{"after": e.after, "to": list(e.to)} for e in approval.escalate],
        "escalated": approval.escalated,
        "on_timeout": None
        if approval.on_timeout is None
        else {"decide": approval.on_timeout.decide, "reason": approval.on_timeout.reason},
        "assigned": None
        if approval.assigned is None
        else {
            "to": approval.assigned.to,
            "by": approval.assigned.by,
            "note": approval.assigned.note,
            "at": iso(approval.assigned.at),
        },
        "preview": None if approval.preview is None else preview_to_dict(approval.preview),
        "version": approval.version,
        "changes": [change_to_dict(c) for c in approval.changes],
    }
