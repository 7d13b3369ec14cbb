"""What every request must pass before the app reads its body: the token (a stranger's body is
never read at all), a size cap, and a nesting limit (a JSON parser recurses, and a few hundred
levels down gives up with a 500; thousands down it drops the connection).

Answers are JSON, like every error of the API: 401, 413 or 400, naming the limit (503 when the
database that says whether a session ended does not answer). And once the app has read a body:
`validation_refusal`, what a body or parameters that fail validation get.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from signoff.errors import StoreUnavailableError
from signoff.limits import MAX_ARGS_BYTES, MAX_DEPTH, text_depth
from signoff.server.auth import Auth

__all__ = ["BODY_DEPTH", "MAX_BODY", "BodyLimits", "Intake", "refuse", "validation_refusal"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

MAX_BODY: Final = 2 * MAX_ARGS_BYTES
"""The bytes a request body (or a WebSocket message) may have: room for the biggest arguments
a call may have, even with every character escaped."""
BODY_DEPTH: Final = MAX_DEPTH + 8
"""The levels a request body may nest: the deepest arguments, inside a batch of decisions."""
SIGNED_BYTES: Final = 64 * 1024
"""The biggest body read on a path whose requests are signed instead of authenticated."""
_BODILESS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True, kw_only=True)
class BodyLimits:
    max_bytes: int = MAX_BODY
    max_depth: int = BODY_DEPTH

    def problem(self, body: bytes) -> str | None:
        """Why `body` is refused (too big, nested too deep), or None."""
        if len(body) > self.max_bytes:
            return f"the body is bigger than {self.max_bytes:,} bytes"
        if text_depth(body, stop_after=self.max_depth) > self.max_depth:
            return f"the body is nested more than {self.max_depth} levels deep"
        return None


class Intake:
    """Pure ASGI: checks the token, then the body's size and depth, before the app runs."""

    def __init__(
        self, app: Any, *, auth: Auth, limits: BodyLimits, signed: frozenset[str] = frozenset()
    ) -> None:
        self.app = app
        self.auth = auth
        self.limits = limits
        self.signed = signed
        """Paths whose requests carry a signature instead of a token (Slack's), which their
        route checks: their bodies are read up to `SIGNED_BYTES`, and no further."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in _BODILESS:
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        try:
            stranger = (
                self.auth.anonymous is None
                and scope["path"] not in self.signed
                and await self.auth.authenticate(headers) is None
            )
        except StoreUnavailableError:  # a session cookie's: as the app answers it
            detail = "the database cannot be reached now: try again"
            await refuse(send, 503, "StoreUnavailableError", detail, extra=[(b"retry-after", b"1")])
            return
        if stranger:
            # Nothing the stranger sent is read: the app's own check would parse it first.
            detail = "send 'Authorization: Bearer <token>' with a known token" + (
                ", or sign in at /auth/login" if self.auth.sign_on is not None else ""
            )
            challenge = [(b"www-authenticate", b"Bearer")]
            await refuse(send, 401, "Unauthorized", detail, extra=challenge)
            return
        # A signed path's stranger is read too, before its route checks the signature: only
        # as much as a signed request needs.
        limit = (
            min(self.limits.max_bytes, SIGNED_BYTES)
            if scope["path"] in self.signed
            else (self.limits.max_bytes)
        )
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await _too_large(send, limit)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _too_large(send, limit)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        problem = self.limits.problem(body)
        if problem is not None:
            await refuse(send, 400, "InvalidRequest", f"{problem}; it was not read")
            return
        await self.app(scope, _replay(body, receive), send)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the body read already, then whatever comes next (a disconnect)."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


def _headers(scope: Scope) -> dict[str, str]:
    return {
        key.decode("latin-1").lower(): value.decode("latin-1")
        for key, value in scope.get("headers") or []
    }


async def _too_large(send: Send, limit: int) -> None:
    await refuse(send, 413, "ContentTooLarge", f"the body is bigger than {limit:,} bytes")


async def refuse(
    send: Send, status: int, error: str, detail: str, *, extra: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """Answer with the API's JSON error shape, before the app has seen the request."""
    body = json.dumps({"error": error, "detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def validation_refusal(
    errors: Sequence[Mapping[str, Any]], body: object
) -> tuple[int, dict[str, Any]]:
    """The status and JSON answer for a request that fails validation (FastAPI's `errors`, and
    the `body` it read): each problem with the field it is in (422); or, for a body that is not
    JSON at all, where it stops being JSON (400) — its offset is no field."""
    for error in errors:
        if error.get("type") == "json_invalid":
            where = error["loc"][-1]
            words = error.get("ctx", {}).get("error") or "it cannot be read"
            if isinstance(body, str) and isinstance(where, int):
                line = body.count("\n", 0, where) + 1
                column = where - body.rfind("\n", 0, where)
                words = f"{words} at line {line} column {column}"
            detail = f"the body is not valid JSON: {words}"
            problems = [{"field": "body", "problem": f"not valid JSON: {words}"}]
            return 400, {"error": "InvalidRequest", "detail": detail, "problems": problems}
    problems = [{"field": ".".join(str(p) for p in e["loc"]), "problem": e["msg"]} for e in errors]
    detail = "; ".join(f"{p['field']}: {p['problem']}" for p in problems)
    return 422, {"error": "InvalidRequest", "detail": detail, "problems": problems}
