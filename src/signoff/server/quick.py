"""The decision route's short way through the framework.

``POST /v1/approvals/{id}/decision`` is the route people and channels hit hardest, and FastAPI's
path to it (the exception and exit-stack middlewares, matching every route in turn, solving the
dependencies, validating the returned dict against its annotation) cost more of the server's CPU
than deciding did. `QuickDecision` sits inside `Intake`, so the token, the body's size and depth,
and every outer check have run; it takes a well-formed decision straight to the same function the
route calls, and answers with the same JSON. Errors are answered by the app's own exception
handlers, as the route's are. Anything else — another path, a body that is not JSON or that the
model refuses, a content type FastAPI would not read as JSON — goes on to FastAPI unchanged, so
refusals keep their exact words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from signoff.server.auth import Auth
from signoff.server.service import Principal
from signoff.server.shapes import DecisionBody

__all__ = ["QuickDecision", "Take"]

Take = Callable[[Principal, str, DecisionBody, str | None], Awaitable[dict[str, Any]]]
"""The route's own work: decide as the principal (on the version the body or the
``If-Match`` header names), and the approval as the API shows it."""

_PATH = re.compile(r"/v1/approvals/([^/]+)/decision")


class QuickDecision:
    """Pure ASGI: a well-formed decision goes straight to `take`; everything else to `app`."""

    def __init__(self, app: ASGIApp, *, auth: Auth, take: Take) -> None:
        self.app = app
        self.auth = auth
        self.take = take

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = (
            _PATH.fullmatch(scope["path"])
            if scope["type"] == "http" and scope["method"] == "POST"
            else None
        )
        if found is None or not _json(scope):
            await self.app(scope, receive, send)
            return
        message = await receive()  # `Intake` read the body whole and hands it over at once
        body = message.get("body", b"") if message["type"] == "http.request" else b""
        replay = _replay(message, receive)
        if message.get("more_body", False):
            await self.app(scope, replay, send)
            return
        try:
            decision = DecisionBody.model_validate(json.loads(body))
        except (ValueError, ValidationError):  # FastAPI words the refusal
            await self.app(scope, replay, send)
            return
        request = Request(scope, replay)
        response: Response
        try:
            who = await self.auth.principal(request)  # as the route's dependency: 401 first
            response = JSONResponse(
                await self.take(who, found[1], decision, _header(scope, b"if-match"))
            )
        except Exception as exc:
            handler = _handler(scope, exc)
            if handler is None:
                raise
            response = await handler(request, exc)
        await response(scope, replay, send)


def _header(scope: Scope, wanted: bytes) -> str | None:
    """The header's value, if it came (once: a second one goes to FastAPI's own reading)."""
    for name, value in scope["headers"]:
        if name == wanted:
            return bytes(value).decode("latin-1")
    return None


def _json(scope: Scope) -> bool:
    """Whether FastAPI would read the body as JSON: ``application/json``, as every client of
    the API sends it (other types it also reads are left to it)."""
    for name, value in scope["headers"]:
        if name == b"content-type":
            return bool(value.split(b";")[0].strip().lower() == b"application/json")
    return False


def _handler(scope: Scope, exc: Exception) -> Callable[..., Awaitable[Response]] | None:
    """The app's handler for `exc`, looked up as Starlette looks it up: by the exception's
    classes, nearest first."""
    handlers = scope["app"].exception_handlers
    for kind in type(exc).__mro__:
        if kind in handlers:
            return handlers[kind]  # type: ignore[no-any-return]
    return None


def _replay(message: Message, receive: Receive) -> Receive:
    """A `receive` that gives `message` again first, then whatever comes next."""
    pending = [message]

    async def again() -> Message:
        return pending.pop() if pending else await receive()

    return again
