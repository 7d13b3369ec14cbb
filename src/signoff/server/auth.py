"""Bearer tokens mapped to principals and their roles; or no authentication, on loopback only.

Tokens are compared in constant time. The token travels in the ``Authorization`` header, never
in a cookie or a URL. With sign-on (`signoff.server.sso`), a bearer token that is none of the
config's is checked as the OpenID provider's access token, and a request without one is whoever
its session cookie says — unless that session ended (its person signed out). Principals are
compared by the key of their names (`signoff.names`): no one signs in as a machine by spelling
its name otherwise.

Without authentication, a request is answered only when its ``Host`` names this machine's
loopback or a host the config allows (`signoff.server.hosts`).
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, TypeVar

from fastapi import Depends, HTTPException, Request

from signoff.names import name_key, same_person
from signoff.server.hosts import allowed_host, is_loopback
from signoff.server.service import Principal

if TYPE_CHECKING:
    from signoff.server.sso.sign_on import SignOn

SESSION_CHECK = 5.0
"""How often, in seconds, a long-lived response checks that whoever opened it may still (a
session signed out, a token taken away): it ends within that long."""

__all__ = ["SESSION_CHECK", "Auth", "Who"]

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class Auth:
    tokens: Mapping[str, Principal]
    """Token → principal. Empty with `anonymous` set: no authentication."""
    anonymous: Principal | None = None
    """Who every request is without authentication (the demo's local user)."""
    hosts: frozenset[str] = frozenset()
    """Hosts (``allowed_hosts``) served besides the loopback ones; kept as `host_name` gives
    them (ValueError for one that is not a host). With tokens and none given, every host is
    served: the token is what protects."""
    sign_on: SignOn | None = None
    """People sign in through an OpenID provider (``auth.oidc``), and its tokens are accepted."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "hosts", frozenset(allowed_host(h) for h in self.hosts))
        if self.sign_on is not None:  # a person may not sign in as one of the machines
            reserved = frozenset(name_key(p.name) for p in self.tokens.values())
            self.sign_on.provider.reserved = reserved

    @classmethod
    def none(cls, roles: Iterable[str] = (), hosts: Iterable[str] = ()) -> Auth:
        """No authentication: every request is the local user, with `roles`. Only for a server
        bound to loopback (`signoff serve --no-auth` refuses anything else), and only for
        requests whose ``Host`` is a loopback name or one of `hosts`."""
        return cls(
            tokens={},
            anonymous=Principal(name="local", roles=frozenset(roles)),
            hosts=frozenset(hosts),
        )

    @property
    def checks_hosts(self) -> bool:
        """Whether requests are answered only for some ``Host`` names (see `serves`)."""
        return self.anonymous is not None or bool(self.hosts)

    def serves(self, host: str) -> bool:
        """Whether to answer a request whose ``Host`` names `host` (see `host_name`)."""
        return not self.checks_hosts or is_loopback(host) or host in self.hosts

    async def principal(self, request: Request) -> Principal:
        """The request's principal, or 401."""
        if self.anonymous is not None:
            return self.anonymous
        principal = await self.authenticate(request.headers)
        if principal is not None:
            return principal
        if _bearer(request.headers) is not None:
            raise _unauthorized("the token is not known")
        if self.sign_on is not None:
            raise _unauthorized("sign in at /auth/login, or send 'Authorization: Bearer <token>'")
        raise _unauthorized("send 'Authorization: Bearer <token>'")

    def identify(self, headers: Mapping[str, str]) -> Principal | None:
        """The principal of a request with these headers (lower-case names) by its bearer
        token alone (one of the config's, else the provider's, checked with the keys kept), or
        None: for the MCP gateway, where no person signs in. A session cookie takes the
        database to check (`authenticate`)."""
        if self.anonymous is not None:
            return self.anonymous
        token = _bearer(headers)
        if token is None:
            return None
        if self.sign_on is None:
            return self.find(token)
        return self.find(token) or self.sign_on.token_now(token)

    async def authenticate(self, headers: Mapping[str, str]) -> Principal | None:
        """The principal of a request with these headers (lower-case names), or None: the
        bearer token's (one of the config's, else the provider's — its keys fetched again
        first, rate-limited, for a key this server has not seen yet), or without one, the
        session cookie's, unless its session ended."""
        token = _bearer(headers)
        if self.sign_on is None or self.anonymous is not None:
            return self.identify(headers)
        if token is None:
            return await self.sign_on.session(headers)
        return self.find(token) or await self.sign_on.token(token)

    async def while_signed_in(
        self, headers: Mapping[str, str], stream: AsyncIterator[T]
    ) -> AsyncIterator[T]:
        """`stream`, for as long as the request with these headers would still be let in: a
        long-lived response (server-sent events) ends within `SESSION_CHECK` seconds of the
        session it was opened with ending, on any replica — a copied cookie's stream with it —
        or of its token no longer being known."""
        if self.anonymous is not None:
            async for item in stream:
                yield item
            return
        items = aiter(stream)
        check = time.monotonic() + SESSION_CHECK
        waiting: asyncio.Task[T] | None = None
        try:
            while True:
                waiting = waiting or asyncio.ensure_future(anext(items))
                done, _ = await asyncio.wait({waiting}, timeout=max(0.0, check - time.monotonic()))
                if waiting in done:
                    try:
                        item = waiting.result()
                    except StopAsyncIteration:
                        return
                    waiting = None
                    yield item
                if time.monotonic() >= check:
                    if await self.authenticate(headers) is None:
                        return
                    check = time.monotonic() + SESSION_CHECK
        finally:
            if waiting is not None:
                waiting.cancel()

    def roles_of(self, name: str) -> frozenset[str] | None:
        """The roles of the principal called `name`, however spelt (`same_person`) — of all
        its tokens together, and of their sign-in as this server last saw it — or None when no
        token (nor the local user, nor a sign-in seen) is theirs: the gate's directory of
        principals, so a grant is judged by its granter's roles as the config (or the
        provider) gives them now."""
        if self.anonymous is not None and same_person(self.anonymous.name, name):
            return self.anonymous.roles
        found = [p.roles for p in self.tokens.values() if same_person(p.name, name)]
        signed_in = None if self.sign_on is None else self.sign_on.roles_of(name)
        if signed_in is not None:
            found.append(signed_in)
        return frozenset().union(*found) if found else None

    @property
    def principals_from(self) -> str:
        """Where the principals of `roles_of` come from, in words: said when a call is handed
        to a name that is none of them."""
        if self.anonymous is not None:
            return (
                "without authentication (the demo, `signoff serve --no-auth`) the only "
                f"principal is {self.anonymous.name!r}; to hand calls to people, serve a config "
                "whose auth.tokens name them"
            )
        said = "the principals are the names auth.tokens gives in the server's config"
        if self.sign_on is not None:
            said += ", and the people who have signed in since it started"
        return said

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


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(
        status_code=401,
        detail={"error": "Unauthorized", "detail": detail},
        headers={"WWW-Authenticate": "Bearer"},
    )


async def _principal(request: Request) -> Principal:
    auth: Auth = request.app.state.auth
    return await auth.principal(request)


Who = Annotated[Principal, Depends(_principal)]
"""The request's authenticated principal (or 401), for an endpoint's signature."""
