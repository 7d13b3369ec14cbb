"""The sign-in routes, and the guard that keeps other sites from using a session cookie.

- ``GET /auth/info``: whether people sign in here, and with what (the inbox asks before
  showing its sign-in);
- ``GET /auth/login?next=PATH``: to the provider (authorization code flow, PKCE S256, ``state``
  and ``nonce``), the flow's secrets kept in a sealed cookie for ten minutes;
- ``GET /auth/callback``: the provider's answer: the code exchanged, the ID token checked
  (issuer, audience = our client, nonce, expiry) and the name it gives the person
  (`signoff.names`), the session cookie set, back to ``next``. A sign-in refused is a 4xx that
  says why: a page for a browser, JSON for anything else;
- ``POST /auth/logout``: the session ended, on every replica (its cookie, even copied, works
  nowhere again), and the cookie cleared; answers where to go next (the provider's
  ``end_session_endpoint`` when it has one, to end the session there too).

The session cookie is ``HttpOnly``, ``SameSite=Lax`` (the provider's redirect back is a
top-level GET from another site) and ``Secure`` when the request came over https or the
configured ``redirect_uri`` is https (a TLS proxy in front: its ``X-Forwarded-Proto`` is not
trusted, the config says it instead).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import html
import logging
import re
import secrets
from collections.abc import AsyncIterator
from typing import Annotated, Any
from urllib.parse import urlencode, urlsplit

import httpx
from fastapi import APIRouter, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from signoff.server.auth import Auth
from signoff.server.intake import refuse
from signoff.server.sso.provider import NameRefused, ProviderUnavailable, TokenRefused
from signoff.server.sso.session import LOGIN_COOKIE, SESSION_COOKIE, cookie_value
from signoff.server.sso.sign_on import SignOn

__all__ = ["LOGIN_SECONDS", "install_sign_on"]

LOGIN_SECONDS = 600
"""How long a person has to sign in at the provider."""
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
_TIMEOUT = httpx.Timeout(10.0)
logger = logging.getLogger(__name__)


def install_sign_on(app: FastAPI, auth: Auth) -> None:
    """Add the routes and the cookie's guard to `app`, and read the provider's metadata and
    keys as it starts. Does nothing without sign-on."""
    sign_on = auth.sign_on
    if sign_on is None:
        return
    app.include_router(_router(sign_on))
    app.add_middleware(CookieOrigin, auth=auth)
    started = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[Any]:
        async with started(app) as state:
            await sign_on.provider.start()
            yield state

    app.router.lifespan_context = lifespan


def _router(sign_on: SignOn) -> APIRouter:
    router = APIRouter(prefix="/auth", include_in_schema=False)
    settings = sign_on.settings
    provider = sign_on.provider

    @router.get("/info")
    async def info() -> dict[str, Any]:
        """People sign in here through the provider, named so."""
        return {"sign_on": {"name": settings.shown_name, "login": "/auth/login"}}

    @router.get("/login")
    async def login(request: Request, after: Annotated[str, Query(alias="next")] = "/") -> Response:
        metadata = await _metadata(sign_on)
        state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        verifier = secrets.token_urlsafe(64)
        redirect_uri = settings.redirect_uri or str(request.url_for("callback"))
        query = {
            "response_type": "code",
            "client_id": settings.client_id,
            "redirect_uri": redirect_uri,
            "scope": " ".join(settings.scopes),
            "state": state,
            "nonce": nonce,
            "code_challenge": _challenge(verifier),
            "code_challenge_method": "S256",
        }
        flow = {
            "state": state,
            "nonce": nonce,
            "verifier": verifier,
            "next": _same_site(after),
            "redirect_uri": redirect_uri,
        }
        response = RedirectResponse(f"{metadata['authorization_endpoint']}?{urlencode(query)}")
        response.set_cookie(
            LOGIN_COOKIE,
            sign_on.sealer.seal("login", flow, seconds=LOGIN_SECONDS),
            max_age=LOGIN_SECONDS,
            path="/auth",
            httponly=True,
            samesite="lax",
            secure=_secure(request, sign_on),
        )
        return response

    @router.get("/callback", name="callback")
    async def callback(request: Request) -> Response:
        try:
            return await signed_in(request)
        except HTTPException as exc:
            if "text/html" not in request.headers.get("accept", ""):
                raise
            return _refusal_page(exc)

    async def signed_in(request: Request) -> Response:
        params = request.query_params
        sealed = cookie_value(request.headers.get("cookie", ""), LOGIN_COOKIE)
        flow = None if sealed is None else sign_on.sealer.open("login", sealed)
        if flow is None:
            raise _problem(
                400, "this sign-in was not started here, or took too long: sign in again"
            )
        if "error" in params:
            error = _word(params["error"])
            logger.info("sign-in refused by the provider: %s", error)
            raise _problem(401, f"the provider refused the sign-in ({error}): sign in again")
        if not hmac.compare_digest(params.get("state", "").encode(), str(flow["state"]).encode()):
            raise _problem(400, "this sign-in's state does not match: sign in again")
        if params.get("iss", settings.issuer) != settings.issuer:  # RFC 9207: another provider
            raise _problem(400, "this answer comes from another provider: sign in again")
        tokens = await _exchange(sign_on, params.get("code", ""), flow)
        id_token = tokens.get("id_token")
        if not isinstance(id_token, str):
            raise _problem(502, "the provider sent no ID token")
        try:
            claims = await _id_claims(sign_on, id_token, flow["nonce"])
            claims = await _with_userinfo(sign_on, claims, tokens.get("access_token"))
            principal = provider.principal(claims)
        except NameRefused as exc:
            logger.warning("refused a sign-in: %s", exc.reason)
            raise _problem(403, f"this sign-in is refused: {exc.reason}") from None
        except TokenRefused as exc:
            logger.warning("refused an ID token: %s", exc.reason)
            raise _problem(401, f"the provider's ID token is refused: {exc.reason}") from None
        logger.info("%s signed in, roles %s", principal.name, sorted(principal.roles))
        response = RedirectResponse(str(flow["next"]), status_code=303)
        response.set_cookie(
            SESSION_COOKIE,
            sign_on.sealer.session(principal, seconds=sign_on.session_seconds),
            max_age=int(sign_on.session_seconds),
            path="/",
            httponly=True,
            samesite="lax",
            secure=_secure(request, sign_on),
        )
        response.delete_cookie(LOGIN_COOKIE, path="/auth")
        sign_on.seen(principal)
        return response

    @router.post("/logout")
    async def logout(request: Request) -> Response:
        """End the session, here and on every replica, and clear its cookie; `next` is where
        the page goes: the provider, to end its session too (and come back to the inbox), or
        the inbox."""
        ended = await sign_on.end(request.headers)
        if ended is not None:
            logger.info("%s signed out", ended.name)
        after = _origin(settings.redirect_uri or str(request.url_for("callback"))) + "/"
        going = after
        with contextlib.suppress(ProviderUnavailable, HTTPException):
            ending = (await _metadata(sign_on)).get("end_session_endpoint")
            if isinstance(ending, str):
                query = {"client_id": settings.client_id, "post_logout_redirect_uri": after}
                going = f"{ending}?{urlencode(query)}"
        response = JSONResponse({"next": going})
        response.delete_cookie(
            SESSION_COOKIE,
            path="/",
            httponly=True,
            samesite="lax",
            secure=_secure(request, sign_on),
        )
        return response

    return router


async def _metadata(sign_on: SignOn) -> dict[str, Any]:
    try:
        return await sign_on.provider.discovery()
    except ProviderUnavailable as exc:
        logger.warning("sign-on: %s", exc)
        raise _problem(503, "the sign-in provider cannot be reached now: try again") from None


async def _exchange(sign_on: SignOn, code: str, flow: dict[str, Any]) -> dict[str, Any]:
    """The provider's tokens for `code` (with the PKCE verifier); 401 when it refuses it."""
    settings = sign_on.settings
    metadata = await _metadata(sign_on)
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
            answer = await client.post(metadata["token_endpoint"], data=form)
        found = answer.json()
    except (httpx.HTTPError, ValueError) as exc:
        logger.warning("sign-on: the code exchange failed: %s", exc)
        raise _problem(502, "the sign-in provider did not answer: try again") from None
    if answer.status_code != 200 or not isinstance(found, dict):
        error = _word(str(found.get("error") if isinstance(found, dict) else answer.status_code))
        logger.warning("sign-in: the provider refused the code: %s", error)
        raise _problem(401, f"the provider refused the sign-in's code ({error}): sign in again")
    return found


async def _id_claims(sign_on: SignOn, id_token: str, nonce: str) -> dict[str, Any]:
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


async def _with_userinfo(
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


def _word(text: str) -> str:
    """A provider's error code, as much of it as is safe to log and show."""
    return re.sub(r"[^A-Za-z0-9_.-]", "?", text[:100])


def _challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _same_site(path: str) -> str:
    """`path` when it is a path of this site (``/…``, not ``//host`` nor ``/\\host``), else
    ``/``: a sign-in never sends anyone elsewhere."""
    parts = urlsplit(path)
    if (
        not path.startswith("/")
        or path.startswith(("//", "/\\"))
        or parts.scheme
        or parts.netloc
        or any(c in path for c in "\r\n\t\\")
    ):
        return "/"
    return path


def _secure(request: Request, sign_on: SignOn) -> bool:
    configured = sign_on.settings.redirect_uri or ""
    return request.url.scheme == "https" or configured.startswith("https://")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _problem(status: int, detail: str) -> HTTPException:
    phrases = {
        400: "InvalidRequest",
        401: "Unauthorized",
        403: "Forbidden",
        502: "BadGateway",
        503: "Unavailable",
    }
    return HTTPException(status, detail={"error": phrases[status], "detail": detail})


def _refusal_page(exc: HTTPException) -> HTMLResponse:
    """A sign-in refused, as a page a person reads in the browser that came back from the
    provider: why, and where to sign in again."""
    said: Any = exc.detail  # `_problem`'s {"error", "detail"}
    detail = str(said["detail"] if isinstance(said, dict) else said)
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        "<title>Sign-in refused · signoff</title></head><body><main>"
        f'<h1>Sign-in refused</h1><p id="why">{html.escape(detail)}</p>'
        '<p><a href="/auth/login">Sign in again</a></p></main></body></html>'
    )
    return HTMLResponse(page, status_code=exc.status_code)


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
        self.configured = "" if redirect is None else _origin(redirect).lower()

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
