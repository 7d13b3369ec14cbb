"""The sign-in's talk with the OpenID provider (authorization code flow): its metadata, the code
exchanged for tokens (with the PKCE verifier), the ID token's claims checked, and what its
userinfo endpoint adds. Each refusal is an HTTP error that says why (`problem`): the routes
answer with it as it is."""

from __future__ import annotations

import contextlib
import logging
import re
from typing import Any

import httpx
from fastapi import HTTPException

from signoff.server.sso.provider import ProviderUnavailable, TokenRefused
from signoff.server.sso.sign_on import SignOn

__all__ = ["exchange", "id_claims", "metadata", "problem", "with_userinfo", "word"]

_TIMEOUT = httpx.Timeout(10.0)
logger = logging.getLogger(__name__)


async def metadata(sign_on: SignOn) -> dict[str, Any]:
    """The provider's metadata (its endpoints); 503 while it cannot be reached."""
    try:
        return await sign_on.provider.discovery()
    except ProviderUnavailable as exc:
        logger.warning("sign-on: %s", exc)
        raise problem(503, "the sign-in provider cannot be reached now: try again") from None


async def exchange(sign_on: SignOn, code: str, flow: dict[str, Any]) -> dict[str, Any]:
    """The provider's tokens for `code` (with the PKCE verifier); 401 when it refuses it."""
    settings = sign_on.settings
    endpoints = await metadata(sign_on)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": flow["redirect_uri"],
        "code_verifier": flow["verifier"],
        "client_id": settings.client_id,
    }
    secret = settings.client_secret
    basic = None if secret is None else httpx.BasicAuth(settings.client_id, secret)
    try:
        async with httpx.AsyncClient(timeout=_TIMEOUT, auth=basic) as client:
            answer = await client.post(endpoints["token_endpoint"], data=form)
        found = answer.json()
    except (httpx.HTTPError, ValueError) as exc:
        logger.warning("sign-on: the code exchange failed: %s", exc)
        raise problem(502, "the sign-in provider did not answer: try again") from None
    if answer.status_code != 200 or not isinstance(found, dict):
        error = word(str(found.get("error") if isinstance(found, dict) else answer.status_code))
        logger.warning("sign-in: the provider refused the code: %s", error)
        raise problem(401, f"the provider refused the sign-in's code ({error}): sign in again")
    return found


async def id_claims(sign_on: SignOn, id_token: str, nonce: str) -> dict[str, Any]:
    """The ID token's claims, checked; the keys fetched again once for a key not kept."""
    provider = sign_on.provider
    audience = sign_on.settings.client_id
    try:
        return provider.claims(id_token, audience=audience, nonce=nonce)
    except TokenRefused as exc:
        if not exc.unknown_key:
            raise
    with contextlib.suppress(ProviderUnavailable):
        await provider.refresh_keys()
    return provider.claims(id_token, audience=audience, nonce=nonce)


async def with_userinfo(
    sign_on: SignOn, claims: dict[str, Any], access_token: object
) -> dict[str, Any]:
    """The ID token's claims, with what the provider's userinfo endpoint says of the same
    person added when the ID token lacks the roles claim or every principal claim: providers
    that follow the letter of OIDC Core (5.4) keep scope-requested claims out of an ID token
    issued with an access token. The ID token's own claims win."""
    settings = sign_on.settings
    wanted = settings.roles_claim not in claims or not any(
        claim in claims for claim in settings.principal_claims
    )
    endpoint = (sign_on.provider.metadata or {}).get("userinfo_endpoint")
    if not wanted or not isinstance(endpoint, str) or not isinstance(access_token, str):
        return claims
    try:
        async with httpx.AsyncClient(timeout=_TIMEOUT) as client:
            answer = await client.get(endpoint, headers={"Authorization": f"Bearer {access_token}"})
        found = answer.json() if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError) as exc:
        logger.warning("sign-on: the userinfo endpoint did not answer: %s", exc)
        return claims
    if not isinstance(found, dict) or found.get("sub") != claims.get("sub"):
        return claims  # OIDC Core 5.3.2: not the same person's, not used
    return found | claims


def word(text: str) -> str:
    """A provider's error code, as much of it as is safe to log and show."""
    return re.sub(r"[^A-Za-z0-9_.-]", "?", text[:100])


def problem(status: int, detail: str) -> HTTPException:
    """A refused sign-in's answer: `detail` under the status's error name."""
    phrases = {
        400: "InvalidRequest",
        401: "Unauthorized",
        403: "Forbidden",
        502: "BadGateway",
        503: "Unavailable",
    }
    return HTTPException(status, detail={"error": phrases[status], "detail": detail})
