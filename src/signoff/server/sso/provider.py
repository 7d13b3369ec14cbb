"""The OpenID provider as signoff knows it: its endpoints (discovery) and its signing keys (its
JWKS), fetched asynchronously and kept, and the tokens it issued, verified synchronously with
the keys kept — a request is never held up by the provider, except once for a key it has not
seen (a provider rotating its keys): then the keys are fetched again, at most once every
`REFRESH_SECONDS`, so a flood of made-up key ids costs the provider one request.

Only asymmetric signatures are accepted (`ALGORITHMS`): never ``none``, never an HMAC, whose
"secret" could be the provider's public key.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx
from joserfc import jws, jwt
from joserfc.errors import (
    ExpiredTokenError,
    InvalidClaimError,
    JoseError,
    MissingClaimError,
)
from joserfc.jwk import ECKey, KeySet, OKPKey, RSAKey

from signoff.names import name_key, name_refusal, same_person
from signoff.server.service import Principal
from signoff.server.sso.settings import OidcSettings
from signoff.types import AUTOMATIC

__all__ = [
    "ALGORITHMS",
    "LEEWAY_SECONDS",
    "REFRESH_SECONDS",
    "NameRefused",
    "Provider",
    "TokenRefused",
]

ALGORITHMS = (
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
)  # fmt: skip
"""The signatures accepted: asymmetric ones only."""
LEEWAY_SECONDS = 60
"""The clock skew tolerated on ``exp``, ``nbf`` and ``iat``."""
REFRESH_SECONDS = 30.0
"""The least time between two fetches of the provider's keys for a key id it did not have."""
_TIMEOUT = httpx.Timeout(10.0)
_PublicKey = RSAKey | ECKey | OKPKey
logger = logging.getLogger(__name__)


class TokenRefused(Exception):
    """A token that is not accepted, and why (never the token itself)."""

    def __init__(self, reason: str, *, unknown_key: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.unknown_key = unknown_key
        """Signed with a key id the keys kept do not have: fetching them again may help."""


class NameRefused(TokenRefused):
    """A token whose person has a name no one may have here (see `signoff.names`): the provider
    vouched for them, and signoff refuses the name."""


class ProviderUnavailable(Exception):
    """The provider could not be reached, or answered something that is no OIDC metadata."""


class Provider:
    """One OpenID provider: discovery and keys (async), token checks (sync)."""

    def __init__(
        self,
        settings: OidcSettings,
        *,
        client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.monotonic,
        keys: Mapping[str, Any] | None = None,
    ) -> None:
        self.settings = settings
        self.client = client
        self.clock = clock
        self.metadata: dict[str, Any] | None = None
        """The provider's ``/.well-known/openid-configuration``, once read."""
        self.keys: dict[str, _PublicKey] = {} if keys is None else _keys(keys)
        """The provider's signing keys by key id, as last fetched (or as given)."""
        self.reserved: frozenset[str] = frozenset()
        """The keys (`name_key`) of the names no signed-in person may have: the principals of
        the config's static tokens (a person named so would act, and be judged, as that
        machine)."""
        self.key_fetches = 0
        """How often the keys were fetched: at start-up, then for unknown key ids."""
        self._fetched_at: float | None = None
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        """Read the metadata and the keys; a provider that cannot be reached now is told in
        the log and asked again when a person signs in or a token names an unknown key."""
        try:
            await self.refresh_keys()
        except ProviderUnavailable as exc:
            logger.warning("sign-on: %s; will try again when needed", exc)

    async def discovery(self) -> dict[str, Any]:
        """The provider's metadata, read once."""
        if self.metadata is None:
            url = self.settings.issuer.rstrip("/") + "/.well-known/openid-configuration"
            found = await self._get_json(url)
            if found.get("issuer") != self.settings.issuer:
                raise ProviderUnavailable(
                    f"{url} names the issuer {found.get('issuer')!r}, not "
                    f"{self.settings.issuer!r}: set auth.oidc.issuer to what it names"
                )
            for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                if not isinstance(found.get(key), str):
                    raise ProviderUnavailable(f"{url} has no {key}")
            self.metadata = found
        return self.metadata

    async def refresh_keys(self) -> bool:
        """Fetch the keys again unless they were fetched less than `REFRESH_SECONDS` ago;
        whether they were. Concurrent callers wait for one fetch."""
        async with self._lock:
            now = self.clock()
            if self._fetched_at is not None and now - self._fetched_at < REFRESH_SECONDS:
                return False
            self._fetched_at = now
            metadata = await self.discovery()
            found = await self._get_json(metadata["jwks_uri"])
            self.key_fetches += 1
            try:
                self.keys = _keys(found)
            except (ValueError, JoseError) as exc:
                raise ProviderUnavailable(f"the provider's keys cannot be read: {exc}") from None
            return True

    def access_principal(self, token: str) -> Principal:
        """The principal of an access token for `settings.audience`, or `TokenRefused`."""
        if self.settings.audience is None:
            raise TokenRefused("this server accepts no access tokens (auth.oidc.audience)")
        claims = self.claims(token, audience=self.settings.audience)
        return self.principal(claims)

    def claims(self, token: str, *, audience: str, nonce: str | None = None) -> dict[str, Any]:
        """The claims of a token the provider signed for `audience`, checked: signature,
        issuer, audience, expiry, not-before (with `LEEWAY_SECONDS`), and `nonce` if given."""
        key = self._key(token)
        try:
            decoded = jwt.decode(token, key, algorithms=ALGORITHMS)
        except JoseError as exc:
            raise TokenRefused(f"bad signature or token ({exc.error})") from None
        registry = jwt.JWTClaimsRegistry(
            leeway=LEEWAY_SECONDS,
            iss={"essential": True, "value": self.settings.issuer},
            aud={"essential": True, "value": audience},
            exp={"essential": True},
        )
        try:
            registry.validate(decoded.claims)
        except ExpiredTokenError:
            raise TokenRefused("expired") from None
        except MissingClaimError as exc:
            raise TokenRefused(f"a claim is missing ({exc.claim})") from None
        except InvalidClaimError as exc:
            if exc.claim in ("nbf", "iat"):
                raise TokenRefused(f"not valid yet ({exc.claim} in the future)") from None
            raise TokenRefused(f"wrong {exc.claim}") from None
        except JoseError as exc:
            raise TokenRefused(f"bad claims ({exc.error})") from None
        if nonce is not None and not hmac.compare_digest(
            str(decoded.claims.get("nonce", "")).encode(), nonce.encode()
        ):
            raise TokenRefused("wrong nonce")
        return dict(decoded.claims)

    def principal(self, claims: Mapping[str, Any]) -> Principal:
        """Who the claims name (the first of the principal claims there; ``email`` only once
        the provider says it verified it), with the roles their groups give. A name that could
        pass for another (`name_refusal`), or that is signoff's own or a machine's however it
        is spelt, is refused (`NameRefused`)."""
        claim, name = next(
            (
                (claim, claims[claim])
                for claim in self.settings.principal_claims
                if isinstance(claims.get(claim), str)
                and claims[claim]
                and (claim != "email" or claims.get("email_verified") is True)
            ),
            (None, None),
        )
        if name is None:
            claims_named = ", ".join(self.settings.principal_claims)
            raise TokenRefused(f"the token names no principal (none of {claims_named})")
        problem = name_refusal(name)
        if problem is not None:
            raise NameRefused(
                f"the provider's {claim} for this person is refused: {problem}. Ask the "
                "provider's administrators to correct it"
            )
        if same_person(name, AUTOMATIC):
            raise NameRefused(f"{name!r} is signoff itself ({AUTOMATIC!r}), never a person")
        if name_key(name) in self.reserved:
            raise NameRefused(f"{name[:64]!r} is the name of one of auth.tokens' principals")
        return Principal(
            name=name, roles=self.settings.roles_of(claims.get(self.settings.roles_claim))
        )

    def _key(self, token: str) -> _PublicKey:
        try:
            header = jws.extract_compact(token.encode()).protected
        except (JoseError, ValueError, UnicodeError):
            raise TokenRefused("not a JWS compact token") from None
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            raise TokenRefused(f"algorithm {str(algorithm)[:20]!r} is not accepted")
        kid = header.get("kid")
        if not isinstance(kid, str):
            if len(self.keys) == 1:  # a provider with one key need not name it
                return next(iter(self.keys.values()))
            raise TokenRefused("the token names no key (kid)", unknown_key=not self.keys)
        key = self.keys.get(kid)
        if key is None:
            raise TokenRefused(f"unknown key id {kid[:64]!r}", unknown_key=True)
        return key

    async def _get_json(self, url: str) -> dict[str, Any]:
        try:
            if self.client is not None:
                response = await self.client.get(url, timeout=_TIMEOUT)
            else:
                async with httpx.AsyncClient(timeout=_TIMEOUT) as client:
                    response = await client.get(url)
            response.raise_for_status()
            found = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise ProviderUnavailable(f"cannot read {url}: {exc}") from None
        if not isinstance(found, dict):
            raise ProviderUnavailable(f"{url} is not a JSON object")
        return found


def _keys(jwks: Mapping[str, Any]) -> dict[str, _PublicKey]:
    """The signing keys of a JWKS by key id (keys for encryption, or symmetric ones, left out)."""
    found: dict[str, _PublicKey] = {}
    for key in KeySet.import_key_set(dict(jwks)).keys:  # type: ignore[arg-type]
        if not isinstance(key, RSAKey | ECKey | OKPKey) or key.get("use", "sig") != "sig":
            continue
        found[key.kid or ""] = key
    return found
