"""The sign-in routes, installed with the guard that keeps other sites from using a session
cookie (`signoff.server.sso.guard`).

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
import secrets
from collections.abc import AsyncIterator
from typing import Annotated, Any
from urllib.parse import urlencode, urlsplit

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from signoff.server.auth import Auth
from signoff.server.sso.flow import exchange, id_claims, metadata, problem, with_userinfo, word
from signoff.server.sso.guard import CookieOrigin, origin
from signoff.server.sso.provider import NameRefused, ProviderUnavailable, TokenRefused
from signoff.server.sso.session import LOGIN_COOKIE, SESSION_COOKIE, cookie_value
from signoff.server.sso.sign_on import SignOn

__all__ = ["LOGIN_SECONDS", "install_sign_on"]

LOGIN_SECONDS = 600
"""How long a person has to sign in at the provider."""
logger = logging.getLogger(__name__)


def install_sign_on(app: FastAPI, auth: Auth) -> None:
    """Add the routes and the cookie's guard to `app`, and read the provider's metadata and
    keys as it starts. Does nothing without sign-on."""
    sign_on = auth.sign_on
    if sign_on is None:
        return
    app.state.sign_on = sign_on
    app.include_router(_router)
    app.add_middleware(CookieOrigin, auth=auth)
    started = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[Any]:
        async with started(app) as state:
            await sign_on.provider.start()
            yield state

    app.router.lifespan_context = lifespan


def _sign_on(request: Request) -> SignOn:
    sign_on: SignOn = request.app.state.sign_on
    return sign_on


_SignOn = Annotated[SignOn, Depends(_sign_on)]
"""The app's sign-on (kept on ``app.state`` by `install_sign_on`)."""

_router = APIRouter(prefix="/auth", include_in_schema=False)


@_router.get("/info")
async def info(sign_on: _SignOn) -> dict[str, Any]:
    """People sign in here through the provider, named so."""
    return {"sign_on": {"name": sign_on.settings.shown_name, "login": "/auth/login"}}


@_router.get("/login")
async def login(
    request: Request, sign_on: _SignOn, after: Annotated[str, Query(alias="next")] = "/"
) -> Response:
    settings = sign_on.settings
    found = await metadata(sign_on)
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
    response = RedirectResponse(f"{found['authorization_endpoint']}?{urlencode(query)}")
    response.set_cookie(
        LOGIN_COOKIE,
        sign_on.sealer.seal("login", flow, seconds=LOGIN_SECONDS),
        max_age=LOGIN_SECONDS,
        path="/auth",
        **_cookie(request, sign_on),
    )
    return response


@_router.get("/callback", name="callback")
async def callback(request: Request, sign_on: _SignOn) -> Response:
    try:
        return await _signed_in(request, sign_on)
    except HTTPException as exc:
        if "text/html" not in request.headers.get("accept", ""):
            raise
        return _refusal_page(exc)


@_router.post("/logout")
async def logout(request: Request, sign_on: _SignOn) -> Response:
    """End the session, here and on every replica, and clear its cookie; `next` is where
    the page goes: the provider, to end its session too (and come back to the inbox), or
    the inbox."""
    settings = sign_on.settings
    ended = await sign_on.end(request.headers)
    if ended is not None:
        logger.info("%s signed out", ended.name)
    after = origin(settings.redirect_uri or str(request.url_for("callback"))) + "/"
    going = after
    with contextlib.suppress(ProviderUnavailable, HTTPException):
        ending = (await metadata(sign_on)).get("end_session_endpoint")
        if isinstance(ending, str):
            query = {"client_id": settings.client_id, "post_logout_redirect_uri": after}
            going = f"{ending}?{urlencode(query)}"
    response = JSONResponse({"next": going})
    response.delete_cookie(SESSION_COOKIE, path="/", **_cookie(request, sign_on))
    return response


async def _signed_in(request: Request, sign_on: SignOn) -> Response:
    """The provider's answer taken: the person signed in and sent back to where they were
    going, or an HTTP error that says why not."""
    settings = sign_on.settings
    params = request.query_params
    sealed = cookie_value(request.headers.get("cookie", ""), LOGIN_COOKIE)
    flow = None if sealed is None else sign_on.sealer.open("login", sealed)
    if flow is None:
        raise problem(400, "this sign-in was not started here, or took too long: sign in again")
    if "error" in params:
        error = word(params["error"])
        logger.info("sign-in refused by the provider: %s", error)
        raise problem(401, f"the provider refused the sign-in ({error}): sign in again")
    if not hmac.compare_digest(params.get("state", "").encode(), str(flow["state"]).encode()):
        raise problem(400, "this sign-in's state does not match: sign in again")
    if params.get("iss", settings.issuer) != settings.issuer:  # RFC 9207: another provider
        raise problem(400, "this answer comes from another provider: sign in again")
    tokens = await exchange(sign_on, params.get("code", ""), flow)
    id_token = tokens.get("id_token")
    if not isinstance(id_token, str):
        raise problem(502, "the provider sent no ID token")
    try:
        claims = await id_claims(sign_on, id_token, flow["nonce"])
        claims = await with_userinfo(sign_on, claims, tokens.get("access_token"))
        principal = sign_on.provider.principal(claims)
    except NameRefused as exc:
        logger.warning("refused a sign-in: %s", exc.reason)
        raise problem(403, f"this sign-in is refused: {exc.reason}") from None
    except TokenRefused as exc:
        logger.warning("refused an ID token: %s", exc.reason)
        raise problem(401, f"the provider's ID token is refused: {exc.reason}") from None
    logger.info("%s signed in, roles %s", principal.name, sorted(principal.roles))
    response = RedirectResponse(str(flow["next"]), status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        sign_on.sealer.session(principal, seconds=sign_on.session_seconds),
        max_age=int(sign_on.session_seconds),
        path="/",
        **_cookie(request, sign_on),
    )
    response.delete_cookie(LOGIN_COOKIE, path="/auth")
    sign_on.seen(principal)
    return response


def _cookie(request: Request, sign_on: SignOn) -> dict[str, Any]:
    """How the sign-in's cookies are set (see the module): ``Secure`` when the request came
    over https or the configured ``redirect_uri`` is https."""
    configured = sign_on.settings.redirect_uri or ""
    secure = request.url.scheme == "https" or configured.startswith("https://")
    return {"httponly": True, "samesite": "lax", "secure": secure}


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


def _refusal_page(exc: HTTPException) -> HTMLResponse:
    """A sign-in refused, as a page a person reads in the browser that came back from the
    provider: why, and where to sign in again."""
    said: Any = exc.detail  # `problem`'s {"error", "detail"}
    detail = str(said["detail"] if isinstance(said, dict) else said)
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        "<title>Sign-in refused · signoff</title></head><body><main>"
        f'<h1>Sign-in refused</h1><p id="why">{html.escape(detail)}</p>'
        '<p><a href="/auth/login">Sign in again</a></p></main></body></html>'
    )
    return HTMLResponse(page, status_code=exc.status_code)
