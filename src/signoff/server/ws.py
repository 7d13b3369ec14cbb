"""``WS /v1/ws``: approval requests and decisions pushed as they happen, decisions taken back
(seed 004's WebSocket channel).

The client authenticates with ``Authorization: Bearer TOKEN``, or — browsers cannot set headers
on a WebSocket — by offering the subprotocols ``signoff.bearer`` and the token, or with the
session cookie of a person signed in (its ``Origin`` must be the server's own). Then:

- the server sends ``{"type": "hello", "principal", "pending": [APPROVAL, ...]}``, then
  ``{"type": "event", "event": {run_id, seq, at, type, data}}`` for every run's
  ``approval_requested``, ``decision``, ``paused``, ``resumed``, ``completed`` and ``failed``,
  and ``{"type": "approval", "approval": APPROVAL}`` for every approval changed since the hello
  (held, edited, voted on, handed on, escalated, judged again, decided; as
  ``GET /v1/approvals/changes`` finds them), as it stands then;
- the client sends ``{"type": "decide", "id": APPROVAL_ID, "decision": {"kind", ...,
  "version"}, "request_id"?}`` — ``version``: the approval's version it showed; a question's
  answer is ``{"kind": "answer", "value"}``, checked by the gate as any other — and gets
  ``{"type": "decided", "request_id", "approval"}`` or ``{"type": "error", "request_id",
  "error", "detail"}`` (for a version that changed since, ``StaleDecisionError`` with ``seen``,
  ``version`` and the ``changes`` between).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass
from typing import Any

from fastapi import WebSocket, WebSocketDisconnect
from pydantic import ValidationError
from starlette.types import Message

from signoff.errors import SignoffError, StaleDecisionError, StoreUnavailableError
from signoff.redaction import Redaction
from signoff.server.auth import SESSION_CHECK, Auth
from signoff.server.changes import approval_changes
from signoff.server.intake import BodyLimits
from signoff.server.service import Principal, Service
from signoff.server.shapes import (
    DecisionBody,
    approval_json,
    event_json,
    previewed,
    shown,
    stale_json,
)

__all__ = ["PUSHED", "websocket_channel"]

PUSHED = frozenset({"approval_requested", "decision", "paused", "resumed", "completed", "failed"})
_SUBPROTOCOL = "signoff.bearer"
logger = logging.getLogger(__name__)


async def websocket_channel(
    socket: WebSocket, service: Service, auth: Auth, *, limits: BodyLimits
) -> None:
    """Serve one client: let it in (or close with 4401), say hello, push what happens while
    it is open, and answer its decisions until it goes."""
    principal, subprotocol, headers = await _authenticate(socket, auth)
    if principal is None:
        # Accepted, then closed with a code a client can read (a refused handshake is a bare 403).
        await socket.accept()
        await socket.close(code=4401, reason="unauthorized: send a known bearer token")
        return
    await socket.accept(subprotocol=subprotocol)
    start = await service.store.audit_length()  # before the hello: no change falls between
    pending = await service.store.list_approvals(status="pending", limit=500)
    await socket.send_json(
        {
            "type": "hello",
            "principal": principal.name,
            "pending": [previewed(approval_json(a), service.redaction) for a in pending],
        }
    )
    channel = _Channel(socket, service, auth, principal, headers, limits)
    pushers = [
        asyncio.create_task(channel.push_events()),
        asyncio.create_task(channel.push_changes(after=start)),
        asyncio.create_task(channel.watch()),
    ]
    try:
        while await channel.answer(await socket.receive()):
            pass
    except WebSocketDisconnect:
        pass
    finally:
        for pusher in pushers:
            pusher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pusher


@dataclass(frozen=True)
class _Channel:
    """One client's socket, as who it was let in as."""

    socket: WebSocket
    service: Service
    auth: Auth
    principal: Principal
    headers: dict[str, str]
    """The headers it was known by, to know it again."""
    limits: BodyLimits

    async def push_events(self) -> None:
        async for event in self.service.follow_all():
            if event.type in PUSHED:
                brief = previewed(event_json(event), self.service.redaction)
                await self.socket.send_json({"type": "event", "event": brief})

    async def push_changes(self, *, after: int) -> None:
        async for _, approval in approval_changes(self.service, after=after):
            shown_approval = previewed(approval_json(approval), self.service.redaction)
            await self.socket.send_json({"type": "approval", "approval": shown_approval})

    async def watch(self) -> None:
        """Close the socket once who opened it is no longer let in (signed out, on any
        replica): its pushes end with it."""
        while self.auth.anonymous is None:
            await asyncio.sleep(SESSION_CHECK)
            if not await self.let_in():
                await self.socket.close(code=4401, reason="unauthorized: sign in again")
                return

    async def let_in(self) -> bool:
        """Whether who opened the socket is still let in."""
        return (
            self.auth.anonymous is not None
            or await self.auth.authenticate(self.headers) is not None
        )

    async def answer(self, frame: Message) -> bool:
        """Answer one frame of the client's: a decision taken, or why not. False once the
        socket is done with."""
        if frame["type"] == "websocket.disconnect":
            return False
        request_id = None
        try:
            message = _read(frame.get("text") or "", self.limits)
            request_id = message.get("request_id") if isinstance(message, dict) else None
            if not isinstance(message, dict) or message.get("type") != "decide":
                raise _Refused("InvalidRequest", 'send {"type": "decide", "id", "decision"}')
            body = DecisionBody.model_validate(message.get("decision"))
            approval_id = str(message.get("id"))
            # Who it is, again: a session signed out (or a provider's token expired) since
            # the socket opened decides nothing more.
            if not await self.let_in():
                await self.socket.close(code=4401, reason="unauthorized: sign in again")
                return False
            approval = await self.service.decide(
                approval_id,
                body.decision(),
                actor=self.principal.name,
                roles=self.principal.roles,
                version=body.version,
            )
        except (ValidationError, _Refused, SignoffError) as exc:
            error, detail, extra = _refusal(exc, self.service.redaction)
            await self.socket.send_json(
                {"type": "error", "request_id": request_id, "error": error, "detail": detail}
                | extra
            )
        else:
            shown_approval = shown(approval_json(approval), self.service.redaction)
            await self.socket.send_json(
                {"type": "decided", "request_id": request_id, "approval": shown_approval}
            )
        return True


def _read(text: str, limits: BodyLimits) -> Any:
    """A text frame's JSON, or `_Refused` (too large or too deep, or no JSON)."""
    problem = limits.problem(text.encode())
    if problem is not None:
        raise _Refused("InvalidRequest", f"{problem}; it was not read")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise _Refused("InvalidRequest", "send JSON text frames") from None


def _refusal(
    exc: ValidationError | _Refused | SignoffError, redaction: Redaction
) -> tuple[str, str, dict[str, Any]]:
    """What an error frame says of `exc`: its error, its detail, and what else it shows."""
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"decision.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
        )
        return "InvalidRequest", problems, {}
    if isinstance(exc, _Refused):
        return exc.error, exc.detail, {}
    if isinstance(exc, StoreUnavailableError):  # what it was is for the server's log
        logger.warning("a decision over the WebSocket: %s", exc)
        return type(exc).__name__, "the database cannot be reached now: try again", {}
    if isinstance(exc, StaleDecisionError):  # what changed, to show again
        return type(exc).__name__, str(exc), stale_json(exc, redaction)
    return type(exc).__name__, str(exc), {}


async def _authenticate(
    socket: WebSocket, auth: Auth
) -> tuple[Principal | None, str | None, dict[str, str]]:
    """The socket's principal (or None), the subprotocol to answer with, and the headers it
    was known by (to know it again)."""
    if auth.anonymous is not None:
        return auth.anonymous, None, {}
    offered = socket.scope.get("subprotocols") or []
    token = None
    if _SUBPROTOCOL in offered:
        rest = [p for p in offered if p != _SUBPROTOCOL]
        token = rest[0] if rest else None
    headers = dict(socket.headers)  # lower-case names; with the session cookie, if any
    if token is not None and "authorization" not in headers:
        headers["authorization"] = f"Bearer {token}"
    principal = await auth.authenticate(headers)
    return principal, _SUBPROTOCOL if _SUBPROTOCOL in offered else None, headers


class _Refused(Exception):
    def __init__(self, error: str, detail: str) -> None:
        super().__init__(detail)
        self.error, self.detail = error, detail
