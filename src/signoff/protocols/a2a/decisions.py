"""A2A decision payloads as decisions: the answer to a task that waits is one data part in a
message on the same task, in any of the three vocabularies its request speaks (`hitl`) —
kagent's ``{decision_type: approve|deny, reason?, versions?: {ID: N}}`` for the whole batch, ADR
0012's ``{type: a2a.hitl.formResponse, formId, values}`` (the form's hidden ``ID.version`` among
them), or ``{decisions: {ID: {kind, args?, content?, reason?, always?, value?, version?}}}`` per
call (ID: the approval's id, or the call's). A question (`questions`) is answered by
``{answer: VALUE, version?}``, or by the message's text, when it is the one question waiting.
Every pending call must be decided by the one message; anything else is refused with words
saying what is wrong. A decision names the version of the call it was
made on (see `signoff.gate.versions`).

Plain JSON, as `hitl`: nothing of protobuf or of the server here (a decision's body is read as
the REST API reads it, `DecisionBody`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from signoff.errors import InvalidDecisionError
from signoff.gate.versions import MAX_VERSION, version_of
from signoff.protocols.a2a.hitl import FORM_RESPONSE, VERSION, Pending, count_calls
from signoff.protocols.a2a.questions import asked, sent_value
from signoff.server.shapes import DecisionBody
from signoff.types import Answer as Answered
from signoff.types import Approve, Decision, Reject

__all__ = ["Answer", "LateDecision", "PayloadError", "is_decision", "read_decisions"]

_KINDS = ("approve", "edit", "respond", "reject")


class PayloadError(ValueError):
    """A decision message that cannot be taken as it is; `data` says which ids are at fault."""

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.data = data


class LateDecision(PayloadError):
    """A decision on calls that were decided already."""


@dataclass(frozen=True, kw_only=True)
class Answer:
    """What a decision message decides: a decision for each pending call, by approval id, and
    the version of the call each was made on, where the message names one."""

    decisions: dict[str, Decision]
    versions: dict[str, int]


def is_decision(data: object) -> bool:
    """Whether a data part's data is a decision in one of the accepted vocabularies."""
    return isinstance(data, dict) and (
        "decision_type" in data
        or data.get("type") == FORM_RESPONSE
        or "decisions" in data
        or "answer" in data
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
    said = "\n".join(str(p["text"]) for p in parts if isinstance(p.get("text"), str)).strip()
    if not payloads and said and len([p for p in pending if asked(p)]) == 1:
        return _complete(*_answer({"answer": said}, pending), pending, decided)
    if not payloads:
        raise PayloadError(
            f"this task waits for a decision on {count_calls(len(pending))}: {waiting}. Send a "
            'data part: {"decision_type": "approve"} or {"decision_type": "deny", "reason": ...} '
            'for all of them, {"decisions": {ID: {"kind": "approve" | "edit" | "respond" | '
            '"reject", ...}}} per call, or the a2a.hitl.formResponse of the form; a question '
            'takes {"answer": ...}',
            pending=[p.approval_id for p in pending],
        )
    if len(payloads) > 1:
        raise PayloadError(f"send one decision part, not {len(payloads)}")
    payload: dict[str, Any] = payloads[0]
    if "decision_type" in payload:
        chosen, versions = _kagent(payload, pending)
    elif payload.get("type") == FORM_RESPONSE:
        chosen, versions = _form_response(payload, form_id=form_id)
    elif "decisions" in payload:
        chosen, versions = _per_call(payload)
    else:
        chosen, versions = _answer(payload, pending)
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
        elif dot and field == VERSION[1:]:
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


def _answer(payload: dict[str, Any], pending: Sequence[Pending]) -> _Read:
    """``{answer, version?}``: the answer to the one question the task waits on."""
    questions = [p for p in pending if asked(p)]
    if len(questions) != 1:
        raise PayloadError(
            f"'answer' answers the one question a task waits on; this one waits on "
            f"{len(questions)} questions among {count_calls(len(pending))}: send "
            '{"decisions": {ID: {"kind": "answer", "value": ...}}} for each'
        )
    extra = sorted(set(payload) - {"answer", "version"})
    if extra:
        raise PayloadError(f"{', '.join(extra)}: not part of an answer (answer, version)")
    [question] = questions
    seen: dict[str, int] = {}
    if payload.get("version") is not None:
        seen[question.approval_id] = _version(payload["version"], where="version")
    return {question.approval_id: Answered(value=sent_value(payload["answer"]))}, seen


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
