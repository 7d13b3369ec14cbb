"""The form the gateway shows the person at the client, where the client can show one and the
rule lets that person decide: what it asks, its fields, and the decision read from the answer.

Over 2025-11-25 it goes as an ``elicitation/create`` request in the middle of the call; over
2026-07-28 as an input-required result whose sealed request state names the approval and the
version of it the form shows. The answer is a decision on that version: if the call changed
meanwhile (handed to someone, escalated, judged again by a new policy), it is not taken, and the
person is shown the call again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from mcp import types
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from signoff.gate.versions import version_of
from signoff.types import Approval, Approve, Decision, Reject, canonical_json

__all__ = [
    "INPUT",
    "SCHEMA",
    "ShowArgs",
    "Shown",
    "decision_in",
    "input_required",
    "question",
    "shown_in",
]

ShowArgs: TypeAlias = Callable[[dict[str, Any]], Any]
"""How the form shows a call's arguments (masked where redacted)."""
INPUT = "approval"
"""The key of the form in a 2026-07-28 input-required result."""
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Decision",
            "oneOf": [
                {"const": "approve", "title": "Approve: run the call"},
                {"const": "reject", "title": "Reject: do not run it"},
            ],
        },
        "reason": {
            "type": "string",
            "title": "Reason",
            "description": "Why not (passed on to the agent when you reject)",
        },
    },
    "required": ["decision"],
}


@dataclass(frozen=True)
class Shown:
    """What a 2026-07-28 retry's request state says its form showed."""

    approval_id: str
    version: int | None
    """The version of the approval the form showed; None in a state made before versions."""


def question(approval: Approval, show: ShowArgs, *, changed: str = "") -> str:
    """What the form asks, the arguments as `show` masks them; `changed` says first what changed
    since the person was last asked (and that their answer, if they gave one, was not taken)."""
    call = approval.call
    asking = {
        "tool": f"Allow {call.name} on {call.server}?",
        "resource": f"Allow reading {call.name} on {call.server}?",
        "prompt": f"Allow the prompt {call.name} of {call.server}?",
    }[call.kind]
    lines = [
        *([changed, ""] if changed else []),
        asking,
        *(
            []
            if call.kind == "resource"
            else [f"Arguments: {canonical_json(show(call.args)).decode()}"]
        ),
        f"Why it asks: {approval.reason}" + (f" (rule {approval.rule})" if approval.rule else ""),
        f"Approval {approval.id}, version {approval.version}: it can also be decided in the "
        "signoff inbox.",
    ]
    return "\n".join(lines)


def input_required(
    approval: Approval, show: ShowArgs, *, changed: str = ""
) -> types.InputRequiredResult:
    """The form as a 2026-07-28 client is shown it: answered, the call comes again with it,
    and with the state naming the approval and the version the form shows."""
    request = types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=question(approval, show, changed=changed), requested_schema=SCHEMA
        )
    )
    state = {"approval": approval.id, "version": approval.version}
    return types.InputRequiredResult(
        input_requests={INPUT: request}, request_state=json.dumps(state)
    )


def shown_in(state: str) -> Shown:
    """What a request state (as the gateway made it, unsealed) says the form showed; `ValueError`
    when it says no such thing."""
    try:
        data = json.loads(state)
    except ValueError:
        data = None
    named = data.get("version") if isinstance(data, dict) else None
    version = version_of(named)
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("approval"), str)
        or (named is not None and version is None)
    ):
        raise ValueError(f"{state!r} is not a request state of this gateway's")
    return Shown(approval_id=data["approval"], version=version)


def decision_in(answer: Any) -> Decision | None:
    """The decision in the form's answer (None: dismissed, or no decision)."""
    if not isinstance(answer, types.ElicitResult):
        try:
            answer = types.ElicitResult.model_validate(
                answer.model_dump(by_alias=True) if hasattr(answer, "model_dump") else answer
            )
        except ValueError:
            raise MCPError(
                INVALID_PARAMS, "the approval's answer is not an elicitation result"
            ) from None
    if answer.action == "decline":
        return Reject(reason="declined in the MCP client")
    if answer.action != "accept":
        return None
    content = answer.content or {}
    choice = content.get("decision")
    reason = content.get("reason")
    if choice == "approve":
        return Approve()
    if choice == "reject":
        return Reject(reason=str(reason) if reason else "rejected in the MCP client")
    raise MCPError(INVALID_PARAMS, f"decision must be 'approve' or 'reject', not {choice!r}")
