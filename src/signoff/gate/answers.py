"""What a model is told about a call that signoff did not let run as proposed — the same words
in every framework: blocked by the policy, rejected (in kagent's shape: a normal result that
says not to retry), expired, answered by a person (a response, or a question's outcome), or run
with a person's edit."""

from __future__ import annotations

import json
from typing import Any

from signoff.gate.questions import question_result
from signoff.types import AUTOMATIC, Approval, Reject, Respond

__all__ = ["answer_text", "blocked_text", "edited_text", "rejected_text"]


def blocked_text(reason: str) -> str:
    return f"signoff blocked this call: {reason}. It did not run."


def rejected_text(approval: Approval) -> str:
    """What a model reads of a rejected call: who rejected it — a person, or signoff itself (on
    timeout, or because the policy now denies it) — and why, and not to retry it."""
    decision = approval.decision
    reason = (decision.reason if isinstance(decision, Reject) else "") or "no reason given"
    who = "signoff" if approval.decided_by == AUTOMATIC else "The user"
    return f"{who} rejected this call: {reason}. Do not retry it."


def answer_text(approval: Approval) -> tuple[str, bool]:
    """The result a decided call that does not run gives the model, and whether it is a
    success (a person's response, or the outcome of a question, is the tool's result)."""
    if approval.call.kind == "question":
        return json.dumps(question_result(approval)), True
    decision = approval.decision
    if isinstance(decision, Respond):
        return decision.content, True
    if isinstance(decision, Reject):
        return json.dumps({"status": "rejected", "message": rejected_text(approval)}), False
    if approval.status == "expired":
        expired = "Nobody approved this call in time; it did not run."
        return json.dumps({"status": "expired", "message": expired}), False
    return json.dumps({"status": approval.status, "message": "This call did not run."}), False


def edited_text(args: dict[str, Any], content: str) -> str:
    """A result of a call a person edited before it ran, with a note the model can read."""
    return (
        f"A person edited this call before it ran; it ran with the arguments "
        f"{json.dumps(args, sort_keys=True)}.\n\n{content}"
    )
