"""Bearer tokens mapped to principals and their roles; or no authentication, on loopback only.

Tokens are compared in constant time. The token travels in the ``Authorization`` header, never
in a cookie or a URL.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from fastapi import HTTPException, Request

from signoff.server.service import Principal

__all__ = ["Auth", "is_loopback"]


@dataclass(frozen=True, kw_only=True)
class Auth:
    tokens: Mapping[str, Principal]
    """Token → principal. Empty with `anonymous` set: no authentication."""
    anonymous: Principal | None = None
    """Who every request is without authentication (the demo's local user)."""

    @classmethod
    def none(cls, roles: Iterable[str] = ()) -> Auth:
        """No authentication: every request is the local user, with `roles`. Only for a server
        bound to loopback (`signoff serve --no-auth` refuses anything else)."""
        return cls(tokens={}, anonymous=Principal(name="local", roles=frozenset(roles)))

    async def principal(self, request: Request) -> Principal:
        """The request's principal, or 401."""
        if self.anonymous is not None:
            return self.anonymous
        if _bearer(request.headers) is None:
            raise _unauthorized("send 'Authorization: Bearer <token>'")
        principal = self.identify(request.headers)
        if principal is None:
            raise _unauthorized("the token is not known")
        return principal

    def identify(self, headers: Mapping[str, str]) -> Principal | None:
        """The principal of a request with these headers (lower-case names), or None."""
        if self.anonymous is not None:
            return self.anonymous
        token = _bearer(headers)
        return None if token is None else self.find(token)

    def find(self, token: str) -> Principal | None:
        """The principal of a token, compared in constant time with every known one."""
        found = None
        for known, principal in self.tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                found = principal
        return found


def _bearer(headers: Mapping[str, str]) -> str | None:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(
        status_code=401,
        detail={"error": "Unauthorized", "detail": detail},
        headers={"WWW-Authenticate": "Bearer"},
    )
