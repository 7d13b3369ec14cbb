"""`SignOn`: who a request is, for a server whose people sign in through an OpenID provider —
from the provider's access token (the API's clients), or from the session cookie (the inbox).

Refused tokens are logged with the reason, never with the token.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import httpx

from signoff.server.service import Principal
from signoff.server.sso.provider import Provider, ProviderUnavailable, TokenRefused
from signoff.server.sso.session import SESSION_COOKIE, Sealer, cookie_value
from signoff.server.sso.settings import OidcSettings

__all__ = ["SEEN_KEPT", "SignOn"]

SEEN_KEPT = 10_000
"""People whose roles a server remembers (the last seen), for their grants and assignments."""
logger = logging.getLogger(__name__)


class SignOn:
    """The provider, the cookies' sealer, and the roles of the people seen lately."""

    def __init__(
        self,
        settings: OidcSettings,
        *,
        client: httpx.AsyncClient | None = None,
        keys: Mapping[str, Any] | None = None,
    ) -> None:
        """`keys`: the provider's JWKS as last known, if kept (else fetched as it starts)."""
        self.settings = settings
        self.provider = Provider(settings, client=client, keys=keys)
        self.sealer = Sealer(settings.session_key)
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

    def session(self, headers: Mapping[str, str]) -> Principal | None:
        """The principal of the request's session cookie (headers with lower-case names)."""
        value = cookie_value(headers.get("cookie", ""), SESSION_COOKIE)
        found = None if value is None else self.sealer.principal(value)
        return None if found is None else self.seen(found)

    def roles_of(self, name: str) -> frozenset[str] | None:
        """The roles `name` had when this server last saw them signed in, or None."""
        return self._seen.get(name)

    def seen(self, principal: Principal) -> Principal:
        """Remember `principal`'s roles (see `roles_of`); `principal` itself."""
        self._seen[principal.name] = principal.roles
        self._seen.move_to_end(principal.name)
        if len(self._seen) > SEEN_KEPT:
            self._seen.popitem(last=False)
        return principal
