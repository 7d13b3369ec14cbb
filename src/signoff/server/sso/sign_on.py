"""`SignOn`: who a request is, for a server whose people sign in through an OpenID provider —
from the provider's access token (the API's clients), or from the session cookie (the inbox).

A session cookie works until it expires or its person signs out (`end`), whichever comes first:
signing out records the session as ended in the database, and every replica reads that for each
request that brings the cookie — one look-up by primary key, from people's browsers only
(machines send tokens). Nothing else would be right at once on every replica: a notification
(PostgreSQL's NOTIFY) is only a hint, and a cache of sessions not ended would let a copied cookie
in until it lapsed.

Refused tokens are logged with the reason, never with the token.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

import httpx

from signoff.names import name_key
from signoff.server.service import Principal
from signoff.server.sso.provider import Provider, ProviderUnavailable, TokenRefused
from signoff.server.sso.session import SESSION_COOKIE, Sealer, Session, cookie_value
from signoff.server.sso.settings import OidcSettings

__all__ = ["SEEN_KEPT", "EndedHere", "SessionLog", "SignOn"]

SEEN_KEPT = 10_000
"""People whose roles a server remembers (the last seen), for their grants and assignments."""
logger = logging.getLogger(__name__)


class SessionLog(Protocol):
    """Where ended sessions are recorded: the store, for every replica to see."""

    async def end_session(self, session_id: str, *, until: datetime, now: datetime) -> None: ...

    async def session_ended(self, session_id: str) -> bool: ...


class EndedHere:
    """A `SessionLog` of this process alone, for a `SignOn` given no store: a session ended
    here would still work on other replicas (``signoff serve`` gives it its store)."""

    def __init__(self) -> None:
        self._ended: dict[str, datetime] = {}

    async def end_session(self, session_id: str, *, until: datetime, now: datetime) -> None:
        self._ended = {k: v for k, v in self._ended.items() if v >= now}
        self._ended[session_id] = until

    async def session_ended(self, session_id: str) -> bool:
        return session_id in self._ended


class SignOn:
    """The provider, the cookies' sealer, where ended sessions are recorded, and the roles of
    the people seen lately."""

    def __init__(
        self,
        settings: OidcSettings,
        *,
        client: httpx.AsyncClient | None = None,
        keys: Mapping[str, Any] | None = None,
        sessions: SessionLog | None = None,
    ) -> None:
        """`keys`: the provider's JWKS as last known, if kept (else fetched as it starts);
        `sessions`: where ended sessions are recorded — the store the server's replicas
        share (`SQLStore` is one); None: this process alone (`EndedHere`)."""
        self.settings = settings
        self.provider = Provider(settings, client=client, keys=keys)
        self.sealer = Sealer(settings.session_key)
        self.sessions: SessionLog = EndedHere() if sessions is None else sessions
        self._seen: OrderedDict[str, frozenset[str]] = OrderedDict()

    @property
    def session_seconds(self) -> float:
        return self.settings.session_hours * 3600

    def token_now(self, token: str) -> Principal | None:
        """The principal of an access token, checked with the keys kept; None (logged) when
        it is refused."""
        try:
            return self.seen(self.provider.access_principal(token))
        except TokenRefused as exc:
            logger.warning("refused a bearer token: %s", exc.reason)
            return None

    async def token(self, token: str) -> Principal | None:
        """`token_now`, but a token signed with a key not kept yet has the keys fetched again
        first (at most once every `REFRESH_SECONDS`: a made-up key id stays unknown)."""
        try:
            return self.seen(self.provider.access_principal(token))
        except TokenRefused as exc:
            if not exc.unknown_key:
                logger.warning("refused a bearer token: %s", exc.reason)
                return None
        try:
            await self.provider.refresh_keys()
        except ProviderUnavailable as exc:
            logger.warning("sign-on: %s", exc)
        return self.token_now(token)

    async def session(self, headers: Mapping[str, str]) -> Principal | None:
        """The principal of the request's session cookie (headers with lower-case names):
        None when there is none, it expired, its person signed out, or its name has become a
        machine's (``auth.tokens``) since."""
        found = self._opened(headers)
        if found is None or name_key(found.principal.name) in self.provider.reserved:
            return None
        if await self.sessions.session_ended(found.id):
            return None
        return self.seen(found.principal)

    async def end(self, headers: Mapping[str, str]) -> Principal | None:
        """End the session of the request's cookie, if it has one that works: its cookie, even
        copied, works nowhere from now on. Whose session it was."""
        found = self._opened(headers)
        if found is None:
            return None
        now = datetime.fromtimestamp(self.sealer.clock(), UTC)
        await self.sessions.end_session(found.id, until=found.expires, now=now)
        return found.principal

    def roles_of(self, name: str) -> frozenset[str] | None:
        """The roles `name` (however spelt: `name_key`) had when this server last saw them
        signed in, or None."""
        return self._seen.get(name_key(name))

    def seen(self, principal: Principal) -> Principal:
        """Remember `principal`'s roles (see `roles_of`); `principal` itself."""
        key = name_key(principal.name)
        self._seen[key] = principal.roles
        self._seen.move_to_end(key)
        if len(self._seen) > SEEN_KEPT:
            self._seen.popitem(last=False)
        return principal

    def _opened(self, headers: Mapping[str, str]) -> Session | None:
        value = cookie_value(headers.get("cookie", ""), SESSION_COOKIE)
        return None if value is None else self.sealer.opened(value)
