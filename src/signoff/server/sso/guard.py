"""The session cookie's guard: a request that changes something, or a WebSocket, authenticated
by the cookie alone must come from a page of this server."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from signoff.server.auth import Auth
from signoff.server.intake import refuse
from signoff.server.sso.session import SESSION_COOKIE, cookie_value

__all__ = ["CookieOrigin", "origin"]

_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})


def origin(url: str) -> str:
    """The origin (scheme and authority) of `url`."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class CookieOrigin:
    """Requests that change something, and WebSockets, authenticated by the session cookie
    alone must come from a page of this server: their ``Origin`` is the request's own host, a
    host the config allows, or the configured ``redirect_uri``'s; else 403 (a WebSocket is
    closed with 4403). ``SameSite=Lax`` already keeps the cookie off other sites' posts; this
    also stops a page of the same site on another port or subdomain. Requests with a bearer
    token carry no ambient authority and are left alone."""

    def __init__(self, app: Any, auth: Auth) -> None:
        self.app = app
        self.auth = auth
        redirect = auth.sign_on.settings.redirect_uri if auth.sign_on is not None else None
        self.configured = "" if redirect is None else origin(redirect).lower()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self._refused(scope):
            if scope["type"] == "websocket":  # accepted, then closed with a code it can read
                await receive()  # the handshake
                await send({"type": "websocket.accept"})
                await send({"type": "websocket.close", "code": 4403})
            else:
                detail = "a session cookie is accepted only from this server's own pages"
                await refuse(send, 403, "Forbidden", detail)
            return
        await self.app(scope, receive, send)

    def _refused(self, scope: Any) -> bool:
        if scope["type"] == "http" and scope["method"] in _SAFE:
            return False
        if scope["type"] not in ("http", "websocket"):
            return False
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return False
        if cookie_value(headers.get("cookie", ""), SESSION_COOKIE) is None:
            return False
        origin = headers.get("origin", "").lower()
        # The request's own origin (scheme, Host and port), or redirect_uri's (behind a proxy
        # that ends TLS or rewrites Host): never another port or scheme of the host, which is
        # another site's page with the same cookie.
        scheme = {"ws": "http", "wss": "https"}.get(scope["scheme"], scope["scheme"])
        own = f"{scheme}://{headers.get('host', '').lower()}"
        return not origin or origin not in (own, self.configured)
