"""The values every layer of signoff passes around.

They are frozen, keyword-only dataclasses: a `ToolCall` proposed by a model (`call`), the
`Verdict` a policy gives it (`verdict`), the `Approval` that holds it (`approval`) and the
`Change`s made to it while it waits (`change`), the `Decision` a person takes (`decision`), the
`Grant` an "approve always" leaves behind (`grant`) and the `AuditEntry` that records it all
(`audit`). Import them from here: this module is their public address.
"""

# Who decided what signoff decided itself: read across the layers, not a user's name.
from signoff.types.approval import AUTOMATIC as AUTOMATIC
from signoff.types.approval import (
    DECIDED_STATUS,
    Approval,
    ApprovalStatus,
    Assignment,
    Preview,
    PreviewKind,
    Vote,
    approval_to_dict,
    preview_from_dict,
    preview_to_dict,
)
from signoff.types.audit import AuditEntry
from signoff.types.call import CallKind, ToolCall, call_json, canonical_json
from signoff.types.change import KEPT_CHANGES, ArgChange, Change, ChangeKind, change_to_dict
from signoff.types.decision import (
    Answer,
    Approve,
    Cancelled,
    Decision,
    Edit,
    Expired,
    Reject,
    Respond,
    Scope,
    ScopeKind,
    decision_from_dict,
    decision_to_dict,
)
from signoff.types.grant import Context, Grant, grant_to_dict
from signoff.types.verdict import Escalation, OnTimeout, Quorum, Verdict, VerdictKind

__all__ = [
    "DECIDED_STATUS",
    "KEPT_CHANGES",
    "Answer",
    "Approval",
    "ApprovalStatus",
    "Approve",
    "ArgChange",
    "Assignment",
    "AuditEntry",
    "CallKind",
    "Cancelled",
    "Change",
    "ChangeKind",
    "Context",
    "Decision",
    "Edit",
    "Escalation",
    "Expired",
    "Grant",
    "OnTimeout",
    "Preview",
    "PreviewKind",
    "Quorum",
    "Reject",
    "Respond",
    "Scope",
    "ScopeKind",
    "ToolCall",
    "Verdict",
    "VerdictKind",
    "Vote",
    "approval_to_dict",
    "call_json",
    "canonical_json",
    "change_to_dict",
    "decision_from_dict",
    "decision_to_dict",
    "grant_to_dict",
    "preview_from_dict",
    "preview_to_dict",
]
