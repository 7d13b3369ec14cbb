"""What a server behind asks of a 2026-07-28 client before it answers — its input requests
(an elicitation form, a sampling request, the client's roots) and its own request state — passed
on to the client, and the client's answers carried back.

A 2026-07-28 server asks inside its result: an input-required result, which the client answers
by making the same request again with its responses and the state. The gateway passes the
result on as the server said it — its resource contents screened — with its own request state
wrapping the server's: the approval that let the call through, if one did, who was asked, the
server, and the server's state. The gateway seals its state (`RequestStateBoundary`), bound to
the request and its arguments, so a client can neither read nor change what it carries back; the
server checks its own. The state goes back only to the server that asked, even where the request
now goes to another (a read goes to the server listing its URI now), and only with the answers
of whom it asked.

Over 2025-11-25 a server asks in the middle of the request instead, on the client's own
connection (`peer`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mcp import types
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from signoff.protocols.mcp.requesting import Round
from signoff.store import AuditRecord

__all__ = ["MAX_INPUTS", "MAX_INPUT_KEY", "MAX_STATE", "Relayed", "relayed", "relayed_in", "relays"]

MAX_STATE = 64 * 1024
"""The longest request state of a server's the gateway carries (characters): past it, the
server's input-required result is refused rather than handed to the client to send back."""
MAX_INPUTS = 32
"""The most input requests of a server's the gateway passes on at once (each is audited)."""
MAX_INPUT_KEY = 256
"""The longest key a server may name an input request by (characters)."""
_KEY = "relay"


@dataclass(frozen=True)
class Relayed:
    """What a retry's (unsealed) request state says it answers: a server's input requests,
    asked in a call the approval `approval_id` let through (None: the policy did)."""

    approval_id: str | None
    asker: str
    """Who was asked: only they answer (a call the policy let through names no approval)."""
    server: str
    """The server that asked: its state goes back to it only."""
    state: str | None
    """The server's own request state, to send back to it."""
    number: int
    """How many times the server asked in this call so far."""
    answered: Mapping[str, types.ElicitResult] = field(default_factory=dict)
    """What signoff's inbox answered of the server's input requests (`questions`)."""

    def again(self, responses: Mapping[str, Any] | None) -> Round:
        """The request to the server again, with the client's `responses` and the inbox's
        answers (the client's for the same keys are not taken: they were not asked of it)."""
        if self.answered:
            responses = {**(responses or {}), **self.answered}
        return Round(responses=responses, state=self.state, number=self.number)


def relayed(
    result: types.InputRequiredResult,
    *,
    approval: str | None,
    asker: str,
    server: str,
    number: int,
    answered: Mapping[str, types.ElicitResult] | None = None,
) -> types.InputRequiredResult:
    """The server's input-required result as the client is given it: its input requests, and
    the gateway's state carrying the server's, that it asked for the `number`th time, and what
    signoff's inbox `answered` of it."""
    state = result.request_state
    if state is not None and len(state) > MAX_STATE:
        raise ValueError(
            f"MCP server {server!r} asked for input with a request state of {len(state)} "
            f"characters; the gateway carries at most {MAX_STATE}"
        )
    asks = result.input_requests or {}
    if len(asks) > MAX_INPUTS:
        raise ValueError(
            f"MCP server {server!r} asked for {len(asks)} inputs at once; the gateway passes "
            f"on at most {MAX_INPUTS}"
        )
    if any(len(key) > MAX_INPUT_KEY for key in asks):
        raise ValueError(
            f"MCP server {server!r} named an input it asked for with a key longer than "
            f"{MAX_INPUT_KEY} characters"
        )
    ours = {
        _KEY: {
            "approval": approval,
            "asker": asker,
            "server": server,
            "state": state,
            "number": number,
            "answered": {k: _wire(a) for k, a in (answered or {}).items()},
        }
    }
    return types.InputRequiredResult(
        input_requests=result.input_requests, request_state=json.dumps(ours)
    )


def relayed_in(state: str) -> Relayed | None:
    """What a retry's (unsealed) request state says it answers, when it answers a server's
    input requests; None when it is another state of the gateway's (its approval form)."""
    try:
        data = json.loads(state)
    except ValueError:
        return None
    if not isinstance(data, dict) or _KEY not in data:
        return None
    relay = data[_KEY]
    if not isinstance(relay, dict):
        raise MCPError(INVALID_PARAMS, "requestState is not one this gateway made")
    approval, kept, number = relay.get("approval"), relay.get("state"), relay.get("number")
    asker, server = relay.get("asker"), relay.get("server")
    answered = _answered(relay.get("answered", {}))
    if (
        not isinstance(approval, str | None)
        or not isinstance(asker, str)
        or not isinstance(server, str)
        or not isinstance(kept, str | None)
        or not isinstance(number, int)
        or number < 1
    ):
        raise MCPError(INVALID_PARAMS, "requestState is not one this gateway made")
    return Relayed(approval_id=approval, asker=asker, server=server, state=kept, number=number,
                   answered=answered)  # fmt: skip


def _answered(value: Any) -> dict[str, types.ElicitResult]:
    """The inbox's answers a state carries."""
    if not isinstance(value, dict):
        raise MCPError(INVALID_PARAMS, "requestState is not one this gateway made")
    try:
        return {str(k): types.ElicitResult.model_validate(a) for k, a in value.items()}
    except ValueError:
        raise MCPError(INVALID_PARAMS, "requestState is not one this gateway made") from None


def _wire(answer: types.ElicitResult) -> dict[str, Any]:
    wire: dict[str, Any] = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
    return wire


def relays(result: types.InputRequiredResult, *, actor: str, server: str) -> list[AuditRecord]:
    """The audit entries of a server's input requests passed on to the client: one per
    request, under its key in the result (`relay`, as a 2025-era request's is; whether the
    client answers shows in the call made again, forwarded and audited in its turn)."""
    now = datetime.now(UTC)
    return [
        AuditRecord(
            actor=actor,
            action="relay",
            subject=server,
            at=now,
            data={"server": server, "method": request.method, "input": key},
        )
        for key, request in (result.input_requests or {}).items()
    ]
