"""What every request passes before the app sees it: a host the server answers to, an origin
it serves (without authentication), and no NUL character in its path or query. Each refusal is
JSON, like every error of the API; a WebSocket is closed with 4000 + the status."""

from __future__ import annotations

from typing import Any

from signoff.server.auth import Auth
from signoff.server.hosts import LOOPBACK_NAMES, host_name
from signoff.server.intake import refuse
from signoff.server.probes import PROBES

__all__ = ["KnownHost", "NoNul", "SameOrigin"]


class KnownHost:
    """Requests for a host the server does not answer to (`Auth.serves`) are refused: 421, a
    WebSocket closed with 4421. Without authentication this is what stops DNS rebinding: a page
    whose own DNS name an attacker points at 127.0.0.1 is same-origin with itself (its
    ``Origin`` matches), but its requests name that host."""

    def __init__(self, app: Any, auth: Auth) -> None:
        self.app = app
        self.auth = auth

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and scope["path"] not in PROBES:
            header = _header(scope, b"host")
            host = host_name(header)
            refusal = None
            if not header:
                refusal = 400, "InvalidRequest", "the request has no Host header"
            elif host is None:
                refusal = 400, "InvalidRequest", f"Host {header!r} is not host[:port]"
            elif not self.auth.serves(host):
                refusal = 421, "MisdirectedRequest", _misdirected(host)
            if refusal is not None:
                await _refuse(scope, send, *refusal)
                return
        await self.app(scope, receive, send)


def _misdirected(host: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return (
        f"this server does not answer to the host {shown!r}: it answers to "
        f"{', '.join(LOOPBACK_NAMES)} and the hosts its config's allowed_hosts names. To reach "
        f"it as {shown}, add {shown!r} to allowed_hosts (or pass --allowed-host {shown})"
    )


class SameOrigin:
    """Without authentication, refuse requests a web page of another origin makes: browsers
    send them (a WebSocket, a form post) with the local user's rights. Tools without a browser
    send no ``Origin``. An origin is the request's own (its host and port are the ``Host``) or
    one on a host the config allows (a proxy in front may rewrite ``Host``); a page on another
    local port is another origin."""

    def __init__(self, app: Any, auth: Auth) -> None:
        self.app = app
        self.auth = auth

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            origin = _header(scope, b"origin")
            authority = origin.partition("://")[2]
            if origin and not (
                authority == _header(scope, b"host") or host_name(authority) in self.auth.hosts
            ):
                await _refuse(
                    scope, send, 403, "Forbidden", f"requests from {origin} are not served"
                )
                return
        await self.app(scope, receive, send)


class NoNul:
    """A NUL character in a path or query is refused up front: SQLite would store it and
    PostgreSQL refuse it, and no id of signoff's has one."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and (
            "\x00" in scope.get("path", "")
            or b"%00" in scope.get("query_string", b"")
            or b"\x00" in scope.get("query_string", b"")
        ):
            await _refuse(scope, send, 400, "InvalidRequest", "NUL characters are not allowed")
            return
        await self.app(scope, receive, send)


def _header(scope: Any, name: bytes) -> str:
    """The request's header `name` (lower case), "" without one."""
    value: bytes = dict(scope.get("headers") or []).get(name, b"")
    return value.decode("latin-1").lower()


async def _refuse(scope: Any, send: Any, status: int, error: str, detail: str) -> None:
    """Answer with the error as JSON; a WebSocket is closed with 4000 + `status`."""
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 4000 + status})
        return
    await refuse(send, status, error, detail)
