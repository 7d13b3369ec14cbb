"""Sealed cookies: the session of a signed-in person, and the short-lived state of a sign-in
under way (its ``state``, ``nonce`` and PKCE verifier).

Each is a JWE (``dir``, ``A256GCM``) under a key derived from the config's session key, one key
per purpose: nobody can read it (the roles, the verifier) or forge one, and a sign-in's cookie is
never taken for a session. It holds all it needs, so replicas share nothing but the key — and
the database, which says which sessions ended early: a session cookie carries its session's id,
which signing out records as ended (`signoff.store.sessions`).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from joserfc import jwe
from joserfc.errors import JoseError
from joserfc.jwk import OctKey

from signoff.server.service import Principal

__all__ = ["LOGIN_COOKIE", "SESSION_COOKIE", "Sealer", "Session", "cookie_value"]

SESSION_COOKIE = "signoff_session"
LOGIN_COOKIE = "signoff_login"
_HEADER = {"alg": "dir", "enc": "A256GCM"}
_ALGORITHMS = ("dir", "A256GCM")
Purpose = Literal["session", "login"]


@dataclass(frozen=True, kw_only=True)
class Session:
    """A signed-in person's session, as its cookie holds it."""

    id: str
    """Random, one per sign-in: what signing out records as ended."""
    principal: Principal
    expires: datetime
    """When the cookie stops working anyway."""


@dataclass(frozen=True)
class Sealer:
    """Seals and opens the cookies with keys derived from `secret`."""

    secret: str
    clock: Callable[[], float] = time.time

    def seal(self, purpose: Purpose, data: dict[str, Any], *, seconds: float) -> str:
        """`data`, sealed, good for `seconds` from now."""
        payload = data | {"exp": int(self.clock() + seconds)}
        return jwe.encrypt_compact(_HEADER, json.dumps(payload).encode(), self._key(purpose))

    def open(self, purpose: Purpose, value: str) -> dict[str, Any] | None:
        """What `seal` sealed for `purpose`, or None: forged, another purpose's, or expired."""
        try:
            plain = jwe.decrypt_compact(value, self._key(purpose), algorithms=_ALGORITHMS)
            data = json.loads(plain.plaintext or b"")
        except (JoseError, ValueError, UnicodeError):
            return None
        if not isinstance(data, dict):
            return None
        expires = data.get("exp")
        if not isinstance(expires, int) or expires <= self.clock():
            return None
        return data

    def session(self, principal: Principal, *, seconds: float) -> str:
        """A session cookie's value for `principal`: a new session, with an id of its own."""
        data = {"sid": secrets.token_urlsafe(24), "sub": principal.name}
        return self.seal("session", data | {"roles": sorted(principal.roles)}, seconds=seconds)

    def opened(self, value: str) -> Session | None:
        """The session of a session cookie's value, or None: forged, expired, or sealed before
        sessions had ids (which could not be ended: their people sign in again)."""
        data = self.open("session", value)
        if data is None:
            return None
        session_id, name, roles = data.get("sid"), data.get("sub"), data.get("roles")
        if not isinstance(session_id, str) or not isinstance(name, str):
            return None
        if not isinstance(roles, list):
            return None
        principal = Principal(name=name, roles=frozenset(r for r in roles if isinstance(r, str)))
        expires = datetime.fromtimestamp(data["exp"], UTC)
        return Session(id=session_id, principal=principal, expires=expires)

    def _key(self, purpose: Purpose) -> OctKey:
        digest = hashlib.sha256(f"signoff {purpose} cookie\0{self.secret}".encode()).digest()
        return OctKey.import_key(digest)


def cookie_value(header: str, name: str) -> str | None:
    """The value of cookie `name` in a ``Cookie`` header, or None."""
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name and value:
            return value
    return None
