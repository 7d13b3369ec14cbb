"""Held calls as A2A parts, and A2A decision payloads as decisions (seeds 000 and 001).

Plain JSON both ways — the parts as A2A 1.0 writes them (``{"text"}`` or ``{"data",
"metadata"}``) — so this module knows nothing of protobuf or of the server.

A task that waits says so three ways at once, for three kinds of client:

- ``signoff.approvals``: one data part listing every pending call (approval id, tool,
  arguments, agent, rule, reason, expiry, and the version of the call it shows — with, once it
  was edited while it waited, the arguments it was asked with and what changed);
- kagent (seed 000): per call, an ``adk_request_confirmation`` function call whose
  ``originalFunctionCall`` is the held call, with metadata ``{type: function_call,
  is_long_running: true}``;
- ADR 0012 (seed 001): an ``a2a.hitl.form`` with one field per call.

The answer is one data part in a message on the same task, in any of the three vocabularies:
kagent's ``{decision_type: approve|deny, reason?, versions?: {ID: N}}`` for the whole batch, ADR
0012's ``{type: a2a.hitl.formResponse, formId, values}`` (the form's hidden ``ID.version`` among
them), or ``{decisions: {ID: {kind, args?, content?, reason?, always?, version?}}}`` per call (ID:
the approval's id, or the call's). Every pending call must be decided by the one message; anything
else is refused with words saying what is wrong. A decision names the version of the call it was
made on (see `signoff.gate.versions`): one made on a version that changed since is not taken.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from signoff.errors import InvalidDecisionError, StaleDecisionError
from signoff.gate.versions import MAX_VERSION, describe, version_of
from signoff.redaction import Redaction
from signoff.server.shapes import DecisionBody
from signoff.types import Approval, Approve, Decision, Reject, change_to_dict

__all__ = [
    "APPROVALS",
    "EXTENSION",
    "FORM",
    "FORM_RESPONSE",
    "STALE",
    "Answer",
    "LateDecision",
    "PayloadError",
    "Pending",
    "decision_part",
    "is_decision",
    "pending_of",
    "read_decisions",
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
_KINDS = ("approve", "edit", "respond", "reject")
_VERSION = ".version"
"""The suffix of a form's field that holds the version of the call it shows."""


class PayloadError(ValueError):
    """A decision message that cannot be taken as it is; `data` says which ids are at fault."""

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.data = data


class LateDecision(PayloadError):
    """A decision on calls that were decided already."""


@dataclass(frozen=True, kw_only=True)
class Pending:
    """A held call as the task shows it (arguments already masked where redacted)."""

    approval_id: str
    call_id: str
    tool: str
    args: Any
    agent: str | None
    rule: str | None
    reason: str
    expires_at: str | None
    version: int | None = None
    """The approval's version this request shows: a decision names it. None where it is not
    known (a request as the task's history kept it)."""
    requested_args: Any = None
    """The arguments the call was asked with, when an edit changed them (masked alike)."""
    changes: tuple[dict[str, Any], ...] = ()
    """What changed while it waited, oldest first, as the API shows changes (masked)."""
    changed: str = ""
    """The same in words."""


@dataclass(frozen=True, kw_only=True)
class Answer:
    """What a decision message decides: a decision for each pending call, by approval id, and
    the version of the call each was made on, where the message names one."""

    decisions: dict[str, Decision]
    versions: dict[str, int]


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
    )


def request_parts(pending: Sequence[Pending], *, agent: str, form_id: str) -> list[dict[str, Any]]:
    """The parts of the input-required message: the words, the listing, kagent's confirmations
    and the ADR 0012 form."""
    text = _words(pending, agent=agent)
    listing = {"type": APPROVALS, "formId": form_id, "approvals": [_listed(p) for p in pending]}
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
        for p in pending
    ]
    fields: list[dict[str, Any]] = []
    for p in pending:
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
                    "name": p.approval_id + _VERSION,
                    "label": "Version of the call shown",
                    "type": "hidden",
                    "required": False,
                    "value": p.version,
                }
            )
    form = {
        "type": FORM,
        "formId": form_id,
        "title": f"Approve {_count(len(pending))}?",
        "description": text,
        "fields": fields,
    }
    return [
        {"text": text},
        _data(listing, kind=APPROVALS),
        *confirmations,
        _data(form, kind=FORM),
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
        "decision_type": "approve" if status in ("approved", "edited") else "deny",
        "approvalId": approval_id,
        "callId": call_id,
        "tool": tool,
        "status": status,
        "decision": decision,
        "decidedBy": decided_by,
    }
    return _data(data, kind="signoff.decision")


def is_decision(data: object) -> bool:
    """Whether a data part's data is a decision in one of the accepted vocabularies."""
    return isinstance(data, dict) and (
        "decision_type" in data or data.get("type") == FORM_RESPONSE or "decisions" in data
    )


def read_decisions(
    parts: Sequence[Mapping[str, Any]],
    pending: Sequence[Pending],
    *,
    decided: Mapping[str, str],
    form_id: str,
) -> Answer:
    """The decision for every pending call, from a message's parts, with the versions it names.
    `decided` maps the task's calls decided already (approval id → status) to refuse a late
    decision on one of them.

    Raises `PayloadError` naming what is wrong: no decision part or several, an unknown
    vocabulary or kind, a call named that the task does not hold, a pending call left out."""
    payloads = [p["data"] for p in parts if is_decision(p.get("data"))]
    waiting = ", ".join(f"{p.approval_id} ({p.tool})" for p in pending)
    if not payloads:
        raise PayloadError(
            f"this task waits for a decision on {_count(len(pending))}: {waiting}. Send a data "
            'part: {"decision_type": "approve"} or {"decision_type": "deny", "reason": ...} for '
            'all of them, {"decisions": {ID: {"kind": "approve" | "edit" | "respond" | "reject", '
            "...}}} per call, or the a2a.hitl.formResponse of the form",
            pending=[p.approval_id for p in pending],
        )
    if len(payloads) > 1:
        raise PayloadError(f"send one decision part, not {len(payloads)}")
    payload: dict[str, Any] = payloads[0]
    if "decision_type" in payload:
        chosen, versions = _kagent(payload, pending)
    elif payload.get("type") == FORM_RESPONSE:
        chosen, versions = _form_response(payload, form_id=form_id)
    else:
        chosen, versions = _per_call(payload)
    return _complete(chosen, versions, pending, decided)


_Read = tuple[dict[str, Decision], dict[str, int]]
"""Decisions and versions by the names a message gives the calls (approval or call ids)."""


def _kagent(payload: dict[str, Any], pending: Sequence[Pending]) -> _Read:
    kind = payload["decision_type"]
    reason = payload.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise PayloadError("decision_type's 'reason' must be a string")
    versions = payload.get("versions", {})
    if not isinstance(versions, dict):
        raise PayloadError("'versions' must be an object: approval id → the version decided on")
    seen = {name: _version(v, where=f"versions.{name}") for name, v in versions.items()}
    if kind == "approve":
        return {p.approval_id: Approve() for p in pending}, seen
    if kind in ("deny", "reject"):
        return {p.approval_id: Reject(reason=reason or "") for p in pending}, seen
    raise PayloadError(f"decision_type must be 'approve' or 'deny', not {json.dumps(kind)}")


def _form_response(payload: dict[str, Any], *, form_id: str) -> _Read:
    if payload.get("formId") != form_id:
        raise PayloadError(
            f"formId {json.dumps(payload.get('formId'))} is not the form this task waits on "
            f"({form_id}): read the task again"
        )
    values = payload.get("values")
    if not isinstance(values, dict):
        raise PayloadError("a2a.hitl.formResponse needs 'values': an object of the form's fields")
    reasons: dict[str, Any] = {}
    seen: dict[str, int] = {}
    chosen: dict[str, Any] = {}
    for name, value in values.items():
        base, dot, field = name.rpartition(".")
        if dot and field == "reason":
            reasons[base] = value
        elif dot and field == _VERSION[1:]:
            seen[base] = _version(value, where=f"values.{name}")
        else:
            chosen[name] = value
    for name, reason in reasons.items():
        if reason is None or reason == "":
            continue
        if not isinstance(reason, str):
            raise PayloadError(f"values.{name}.reason must be a string")
        if chosen.get(name) in ("reject", "deny"):
            chosen[name] = {"kind": "reject", "reason": reason}
    decisions, given = _bodies(chosen, where="values")  # a value may be an object too
    for name, version in given.items():
        if seen.setdefault(name, version) != version:
            raise PayloadError(f"values.{name}: the response names two versions of the call")
    return decisions, seen


def _per_call(payload: dict[str, Any]) -> _Read:
    decisions = payload["decisions"]
    if not isinstance(decisions, dict) or not decisions:
        raise PayloadError(
            "'decisions' must be an object: approval id → {kind, args?, content?, reason?, "
            "version?}"
        )
    return _bodies(decisions, where="decisions")


def _bodies(values: Mapping[str, Any], *, where: str) -> _Read:
    """Each value as a decision: a kind's name, or an object shaped like the REST API's (with
    the ``version`` it was made on)."""
    bodies: dict[str, Decision] = {}
    seen: dict[str, int] = {}
    for name, value in values.items():
        if value == "deny":
            value = "reject"
        if isinstance(value, str):
            if value not in _KINDS:
                raise PayloadError(
                    f"{where}.{name}: {json.dumps(value)} is not one of {', '.join(_KINDS)}"
                )
            value = {"kind": value}
        if isinstance(value, dict) and value.get("version") is not None:
            # A2A's data parts carry every number as a float: the version is read as A2A sends it.
            seen[name] = _version(value["version"], where=f"{where}.{name}.version")
            value = {k: v for k, v in value.items() if k != "version"}
        try:
            body = DecisionBody.model_validate(value)
            bodies[name] = body.decision()
        except ValidationError as exc:
            first = exc.errors()[0]
            at = ".".join(str(step) for step in (where, name, *first["loc"]))
            raise PayloadError(f"{at}: {first['msg']}") from None
        except InvalidDecisionError as exc:
            raise PayloadError(f"{where}.{name}: {exc}") from None

    return bodies, seen


def _version(value: Any, *, where: str) -> int:
    """A version as a message names it: a whole number from 1 — as a float too, as A2A's
    protobuf carries every number of a data part, and as text, as a form may send it."""
    whole = isinstance(value, float) and value.is_integer() and abs(value) <= MAX_VERSION
    digits = isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 10
    version = version_of(int(value) if whole or digits else value)
    if version is None:
        raise PayloadError(
            f"{where}: {json.dumps(value)[:40]} is not a version; send the one the call was "
            "shown with (the listing's 'version')"
        )
    return version


def _complete(
    chosen: dict[str, Decision],
    versions: dict[str, int],
    pending: Sequence[Pending],
    decided: Mapping[str, str],
) -> Answer:
    """`chosen` and `versions` keyed by approval id (a call's id is taken for its approval's),
    once they are known to decide every pending call and nothing else."""
    by_call = {p.call_id: p.approval_id for p in pending}
    waiting = {p.approval_id: p for p in pending}
    keyed: dict[str, Decision] = {}
    seen: dict[str, int] = {}
    unknown: list[str] = []
    late: list[str] = []

    def key(name: str) -> str | None:
        approval_id = name if name in waiting or name in decided else by_call.get(name)
        if approval_id is None:
            unknown.append(name)
        elif approval_id in decided:
            late.append(f"{approval_id} ({decided[approval_id]})")
            return None
        return approval_id

    for name, body in chosen.items():
        approval_id = key(name)
        if approval_id is not None and approval_id in keyed:
            raise PayloadError(f"{name}: the call is decided twice in this message")
        if approval_id is not None:
            keyed[approval_id] = body
    for name, version in versions.items():
        approval_id = key(name)
        if approval_id is not None and seen.setdefault(approval_id, version) != version:
            raise PayloadError(f"{name}: the message names two versions of the call")
    if late:
        late = list(dict.fromkeys(late))
        raise LateDecision(
            f"already decided, nothing changed: {', '.join(late)}",
            decided=[entry.split()[0] for entry in late],
        )
    if unknown:
        unknown = list(dict.fromkeys(unknown))
        raise PayloadError(
            f"this task holds no call {', '.join(unknown)}; it waits on "
            f"{', '.join(waiting) or 'nothing'}",
            unknown=unknown,
        )
    missing = [p for p in pending if p.approval_id not in keyed]
    if missing:
        raise PayloadError(
            "decide every pending call in one message; left out: "
            + ", ".join(f"{p.approval_id} ({p.tool})" for p in missing),
            missing=[p.approval_id for p in missing],
        )
    return Answer(decisions=keyed, versions=seen)


def _words(pending: Sequence[Pending], *, agent: str) -> str:
    needs = "needs" if len(pending) == 1 else "need"
    lines = [f"{agent} wants to make {_count(len(pending))} that {needs} your approval:"]
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
    return "\n".join(lines)


def _brief(args: Any, limit: int = 120) -> str:
    """The arguments on one line, cut to `limit` characters."""
    if isinstance(args, dict):
        text = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    else:
        text = json.dumps(args, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _count(n: int) -> str:
    return f"{n} tool call" + ("" if n == 1 else "s")


def _data(data: dict[str, Any], *, kind: str) -> dict[str, Any]:
    return {"data": data, "metadata": {"type": kind}, "mediaType": "application/json"}
