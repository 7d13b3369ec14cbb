"""Held calls as A2A parts (seeds 000 and 001); `decisions` reads the answers.

Plain JSON — the parts as A2A 1.0 writes them (``{"text"}`` or ``{"data",
"metadata"}``) — so this module knows nothing of protobuf or of the server.

A task that waits says so three ways at once, for three kinds of client:

- ``signoff.approvals``: one data part listing every pending call (approval id, tool,
  arguments, agent, rule, reason, expiry, and the version of the call it shows — with, once it
  was edited while it waited, the arguments it was asked with and what changed);
- kagent (seed 000): per call, an ``adk_request_confirmation`` function call whose
  ``originalFunctionCall`` is the held call, with metadata ``{type: function_call,
  is_long_running: true}``;
- ADR 0012 (seed 001): an ``a2a.hitl.form`` with one field per call.

Each shows the version of the call it shows (see `signoff.gate.versions`), which the answer
sends back: one made on a version that changed since is not taken, and the task, still waiting,
says so first (`stale_parts`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from signoff.errors import StaleDecisionError
from signoff.gate.versions import describe
from signoff.protocols.a2a.pending import Pending
from signoff.protocols.a2a.questions import asked, question_part, question_words
from signoff.redaction import Redaction
from signoff.types import Approval, change_to_dict

__all__ = [
    "APPROVALS",
    "EXTENSION",
    "FORM",
    "FORM_RESPONSE",
    "STALE",
    "VERSION",
    "Pending",
    "count_calls",
    "decision_part",
    "pending_of",
    "request_parts",
    "stale_parts",
]

EXTENSION = "urn:signoff:a2a:hitl:v1"
"""The agent card's extension: this server holds tool calls for a person's decision."""
APPROVALS = "signoff.approvals"
FORM = "a2a.hitl.form"
FORM_RESPONSE = "a2a.hitl.formResponse"
STALE = "signoff.stale"
"""The data part that says a decision was not taken: the call changed since the version it was
made on."""
KAGENT_CONFIRMATION = "adk_request_confirmation"
VERSION = ".version"
"""The suffix of a form's field that holds the version of the call it shows."""


def pending_of(approval: Approval, redaction: Redaction) -> Pending:
    """A pending approval as a request shows it now: at its version, with what changed while it
    waited, the arguments masked where redacted."""
    return Pending(
        approval_id=approval.id,
        call_id=approval.call.id,
        tool=approval.call.name,
        args=redaction.call_args(approval.call.args),
        agent=approval.call.agent,
        rule=approval.rule,
        reason=approval.reason,
        expires_at=None if approval.expires_at is None else approval.expires_at.isoformat(),
        version=approval.version,
        requested_args=None
        if approval.requested_args is None
        else redaction.call_args(approval.requested_args),
        changes=tuple(redaction.tree([change_to_dict(c) for c in approval.changes])),
        changed=describe(approval.changes, redaction) if approval.changes else "",
        kind=approval.call.kind,
    )


def request_parts(pending: Sequence[Pending], *, agent: str, form_id: str) -> list[dict[str, Any]]:
    """The parts of the input-required message: the words, the listing, kagent's confirmations
    and the ADR 0012 form of the calls to approve, and a part for each question."""
    asking = [question_part(p) for p in pending if asked(p)]
    text = _words(pending, agent=agent)
    listing = {"type": APPROVALS, "formId": form_id, "approvals": [_listed(p) for p in pending]}
    calls = [p for p in pending if not asked(p)]
    if not calls:
        return [{"text": text}, _data(listing, kind=APPROVALS), *asking]
    confirmations = [
        {
            "data": {
                "name": KAGENT_CONFIRMATION,
                "id": p.approval_id,
                "args": {
                    "originalFunctionCall": {"name": p.tool, "args": p.args, "id": p.call_id},
                    "toolConfirmation": {"hint": p.reason, "confirmed": False, "payload": None},
                },
            },
            "metadata": {"type": "function_call", "is_long_running": True},
        }
        for p in calls
    ]
    fields: list[dict[str, Any]] = []
    for p in calls:
        fields.append(
            {
                "name": p.approval_id,
                "label": f"{p.tool}({_brief(p.args)})",
                "description": p.reason,
                "type": "select",
                "required": True,
                "options": [
                    {"value": "approve", "label": "Approve"},
                    {"value": "reject", "label": "Reject"},
                ],
                "metadata": {"tool": p.tool, "args": p.args, "agent": p.agent} | _seen(p),
            }
        )
        fields.append(
            {
                "name": f"{p.approval_id}.reason",
                "label": "Reason (when rejecting)",
                "type": "text",
                "required": False,
            }
        )
        if p.version is not None:  # sent back as it is: the call as this form shows it
            fields.append(
                {
                    "name": p.approval_id + VERSION,
                    "label": "Version of the call shown",
                    "type": "hidden",
                    "required": False,
                    "value": p.version,
                }
            )
    form = {
        "type": FORM,
        "formId": form_id,
        "title": f"Approve {count_calls(len(calls))}?",
        "description": text,
        "fields": fields,
    }
    return [
        {"text": text},
        _data(listing, kind=APPROVALS),
        *confirmations,
        _data(form, kind=FORM),
        *asking,
    ]


def _listed(p: Pending) -> dict[str, Any]:
    entry = {
        "approvalId": p.approval_id,
        "callId": p.call_id,
        "tool": p.tool,
        "args": p.args,
        "agent": p.agent,
        "rule": p.rule,
        "reason": p.reason,
        "expiresAt": p.expires_at,
    }
    if p.kind == "question":
        entry["kind"] = "question"
    return entry | _seen(p)


def _seen(p: Pending) -> dict[str, Any]:
    """The version of the call shown, and, when it changed while it waited, how."""
    seen: dict[str, Any] = {} if p.version is None else {"version": p.version}
    if p.requested_args is not None:
        seen["requestedArgs"] = p.requested_args
    if p.changes:
        seen["changes"] = list(p.changes)
    return seen


def stale_parts(error: StaleDecisionError, redaction: Redaction) -> list[dict[str, Any]]:
    """What a task that still waits says first when a decision was not taken because the call
    changed since the version it was made on: in words, and as the API's 409 says it."""
    data = {
        "type": STALE,
        "approvalId": error.approval_id,
        "seen": error.seen,
        "version": error.version,
        "changes": redaction.tree([change_to_dict(c) for c in error.changes]),
        "detail": str(error),
    }
    text = f"Nothing was decided: {error}."
    return [{"text": text}, _data(data, kind=STALE)]


def decision_part(
    *, approval_id: str, call_id: str, tool: str, status: str, decision: Any, decided_by: str | None
) -> dict[str, Any]:
    """How the task's history shows a decision taken anywhere (the inbox, the CLI, A2A): kagent's
    ``decision_type`` (so its UI badges the card) and what was decided."""
    data = {
        "type": "signoff.decision",
        "decision_type": "approve" if status in ("approved", "edited", "answered") else "deny",
        "approvalId": approval_id,
        "callId": call_id,
        "tool": tool,
        "status": status,
        "decision": decision,
        "decidedBy": decided_by,
    }
    return _data(data, kind="signoff.decision")


def _words(pending: Sequence[Pending], *, agent: str) -> str:
    calls = [p for p in pending if not asked(p)]
    questions = [p for p in pending if asked(p)]
    lines = _asking(calls, agent=agent) if calls else []
    if questions:
        lines += question_words(questions, agent=agent)
    return "\n".join(lines)


def _asking(pending: Sequence[Pending], *, agent: str) -> list[str]:
    needs = "needs" if len(pending) == 1 else "need"
    lines = [f"{agent} wants to make {count_calls(len(pending))} that {needs} your approval:"]
    for n, p in enumerate(pending, 1):
        expiry = f" (until {p.expires_at})" if p.expires_at else ""
        rule = f"rule {p.rule}: " if p.rule else ""
        by = f" (by {p.agent})" if p.agent and p.agent != agent else ""
        lines.append(f"{n}. {p.tool}({_brief(p.args)}){by} — {rule}{p.reason}{expiry}")
        if p.changed:
            lines.append(f"   Changed while it waited: {p.changed}")
    lines.append(
        "Approve or reject on this task: "
        '{"decision_type": "approve"} or {"decision_type": "deny", "reason": "..."} for all, '
        'or {"decisions": {APPROVAL_ID: {"kind": ..., "version": VERSION}}} per call (VERSION: '
        "the listing's, the call as you saw it)."
    )
    return lines


def _brief(args: Any, limit: int = 120) -> str:
    """The arguments on one line, cut to `limit` characters."""
    if isinstance(args, dict):
        text = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    else:
        text = json.dumps(args, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def count_calls(n: int) -> str:
    """`n` tool calls, in words."""
    return f"{n} tool call" + ("" if n == 1 else "s")


def _data(data: dict[str, Any], *, kind: str) -> dict[str, Any]:
    return {"data": data, "metadata": {"type": kind}, "mediaType": "application/json"}
