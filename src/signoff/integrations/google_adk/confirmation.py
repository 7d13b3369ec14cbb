"""ADK's confirmation as signoff asks for it and reads it back: `CONFIRMATION`, the function call
by which ADK pauses a run (its payload names signoff's approval and the version of the call),
the confirmation calls ADK made for signoff in an event, a client's answer as a decision, and
the message that confirms the calls once signoff decided them."""

from __future__ import annotations

import logging
from typing import Any

from google.adk.events import Event
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types

from signoff.gate.versions import version_of
from signoff.types import Approve, Decision, Reject

__all__ = ["CONFIRMATION", "confirmation_calls", "confirmations", "confirmed", "decision"]

logger = logging.getLogger("signoff.google_adk")

CONFIRMATION = "adk_request_confirmation"
"""The function call by which ADK pauses a run for a confirmation (and its response resumes it)."""


def confirmations(asked: dict[str, str]) -> types.Content:
    """The message that answers ADK's confirmations (by their call ids): ``confirmed`` so that
    ADK runs each call again, which signoff then runs, answers or refuses as decided."""
    return types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    name=CONFIRMATION,
                    id=call_id,
                    response={"confirmed": True, "payload": {"signoff": {"approval": approval}}},
                )
            )
            for call_id, approval in asked.items()
        ],
    )


def confirmed(part: types.Part) -> types.Part:
    answer = part.function_response
    assert answer is not None
    payload = (answer.response or {}).get("payload")
    return types.Part(
        function_response=types.FunctionResponse(
            name=answer.name, id=answer.id, response={"confirmed": True, "payload": payload}
        )
    )


def confirmation_calls(event: Event) -> dict[str, tuple[str, str]]:
    """The confirmation calls ADK made in `event` for signoff (long-running calls of its own,
    whose payload names an approval): call id → (approval, the original call's id)."""
    ours = set(event.long_running_tool_ids or ())
    found: dict[str, tuple[str, str]] = {}
    for call in event.get_function_calls():
        approval = _approval(call.args)
        original = ((call.args or {}).get("originalFunctionCall") or {}).get("id")
        if call.name == CONFIRMATION and call.id in ours and approval and isinstance(original, str):
            found[call.id] = (approval, original)
    return found


def decision(answer: dict[str, Any]) -> tuple[Decision, int | None] | None:
    """A client's answer to a confirmation, as a decision (a malformed one rejects), and the
    version of the call it was made on where its payload names one — the request's payload
    sent back (``{"signoff": {"approval": ..., "version": ...}}``). None, and nothing taken,
    when that version is not a whole number from 1."""
    try:
        confirmation = ToolConfirmation.from_response_dict(answer)
    except (ValueError, TypeError):
        return Reject(reason="the confirmation could not be read"), None
    payload = confirmation.payload if isinstance(confirmation.payload, dict) else {}
    ours = payload.get("signoff")
    named = ours.get("version") if isinstance(ours, dict) else None
    version = version_of(named)
    if named is not None and version is None:
        logger.warning("a confirmation naming version %.40r was not taken", named)
        return None
    if confirmation.confirmed:
        return Approve(), version
    reason = payload.get("reason")
    return Reject(reason=reason if isinstance(reason, str) else ""), version


def _approval(args: dict[str, Any] | None) -> str | None:
    """The signoff approval a confirmation call asks about."""
    payload = ((args or {}).get("toolConfirmation") or {}).get("payload") or {}
    found = (payload.get("signoff") or {}).get("approval") if isinstance(payload, dict) else None
    return found if isinstance(found, str) else None
