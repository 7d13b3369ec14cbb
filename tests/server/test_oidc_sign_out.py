"""Signing out ends the session on the server: the cookie, even copied before, works on no replica
from then on — in process on both stores, and through real ``signoff serve`` processes: two
replicas on one PostgreSQL, one process on SQLite. People sign in at a real OpenID provider
(tests/js/oidc_provider.mjs)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from signoff import Policy
from signoff.gate import Gate
from signoff.server import Auth, Service, create_app
from signoff.server.sso import OidcSettings, SignOn
from signoff.server.sso.session import SESSION_COOKIE
from signoff.store import SQLStore
from signoff.store.sessions import KEPT_PAST_EXPIRY
from tests.deadline import HANG
from tests.processes import signoff_server
from tests.server.oidc_provider import (
    AUDIENCE,
    ROOT,
    RunningProvider,
    free_port,
    provider_running,
    signed_in_by_hand,
)

SESSION_KEY = "k" * 40
ROLES = {"sre": frozenset({"ops", "admin"})}


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProvider]:
    folder = tmp_path_factory.mktemp("provider")
    with provider_running(folder, port=free_port(), inbox="http://signoff") as running:
        yield running


def sign_on(provider: RunningProvider, store: SQLStore) -> SignOn:
    settings = OidcSettings(
        issuer=provider.issuer,
        client_id="inbox",
        client_secret="inbox-secret",
        audience=AUDIENCE,
        session_key=SESSION_KEY,
        roles=ROLES,
    )
    return SignOn(settings, sessions=store)


@contextlib.asynccontextmanager
async def browsers(
    provider: RunningProvider, store: SQLStore
) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    """Two clients of one in-process server, each with cookies of its own, as pages of it
    send them (their ``Origin``)."""
    gate = Gate(Policy.from_dict({}), store)
    service = Service(store=store, gate=gate, agents=[], poll_interval=0.05)
    app = create_app(service, Auth(tokens={}, sign_on=sign_on(provider, store)))
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(app.router.lifespan_context(app))
        clients = [
            await stack.enter_async_context(
                httpx.AsyncClient(
                    transport=httpx.ASGITransport(app=app),
                    base_url="http://signoff",
                    headers={"Origin": "http://signoff"},
                )
            )
            for _ in range(2)
        ]
        yield clients[0], clients[1]


async def test_a_copied_cookie_stops_working_once_its_person_signs_out(
    provider: RunningProvider, store: SQLStore
):
    async with browsers(provider, store) as (ada, thief):
        await signed_in_by_hand(ada, "ada")
        copied = ada.cookies[SESSION_COOKIE]
        thief.cookies.set(SESSION_COOKIE, copied)
        assert (await thief.get("/v1/me")).json()["name"] == "ada"

        signed_out = await ada.post("/auth/logout")
        assert signed_out.status_code == 200, signed_out.text
        assert SESSION_COOKIE not in ada.cookies
        assert (await thief.get("/v1/me")).status_code == 401
        run = {"agent": "ops", "input": "go"}
        assert (await thief.post("/v1/threads/t1/runs", json=run)).status_code == 401
        again = await thief.post("/auth/logout")  # no one's session now: a stranger's request
        assert again.status_code == 401, again.text

        await signed_in_by_hand(ada, "ada")  # a new sign-in is a new session
        assert (await ada.get("/v1/me")).json()["name"] == "ada"
        assert (await thief.get("/v1/me")).status_code == 401


async def test_a_session_cookie_sealed_without_an_id_cannot_be_ended_and_is_refused(
    provider: RunningProvider, store: SQLStore
):
    old = sign_on(provider, store).sealer.seal(
        "session", {"sub": "ada", "roles": ["ops"]}, seconds=600
    )
    async with browsers(provider, store) as (client, _):
        client.cookies.set(SESSION_COOKIE, old)
        assert (await client.get("/v1/me")).status_code == 401


async def test_an_ended_session_is_forgotten_a_day_after_its_cookie_expired(store: SQLStore):
    now = datetime(2026, 3, 1, 12, tzinfo=UTC)
    await store.end_session("old", until=now - KEPT_PAST_EXPIRY - timedelta(seconds=1), now=now)
    await store.end_session("recent", until=now - timedelta(hours=1), now=now)
    await store.end_session("live", until=now + timedelta(hours=8), now=now)
    await store.end_session("live", until=now + timedelta(hours=8), now=now)  # twice: once
    assert await store.session_ended("live") and await store.session_ended("recent")
    await store.end_session("another", until=now + timedelta(hours=8), now=now)
    assert not await store.session_ended("old")  # its cookie is refused as expired anyway
    assert await store.session_ended("recent") and await store.session_ended("live")


CONFIG = """\
database: {database}
auth:
  oidc:
    issuer: {issuer}
    client_id: inbox
    client_secret_env: SIGNOFF_TEST_OIDC_SECRET
    roles: {{sre: [ops]}}
    session_key_env: SIGNOFF_TEST_SESSION_KEY
rules:
  - ask: delete_pod
"""


async def test_signing_out_on_one_replica_ends_the_session_on_every_replica(
    store_url: str, tmp_path: Path
):
    import websockets

    port = free_port()
    first = f"http://127.0.0.1:{port}"
    with provider_running(tmp_path, port=free_port(), inbox=first) as provider:
        config = tmp_path / "signoff.yaml"
        config.write_text(CONFIG.format(database=store_url, issuer=provider.issuer))
        env = os.environ | {
            "SIGNOFF_TEST_OIDC_SECRET": "inbox-secret",
            "SIGNOFF_TEST_SESSION_KEY": "s" * 48,
            "PYTHONPATH": str(ROOT),
        }
        serve = ("serve", "--config", str(config))
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(signoff_server(*serve, "--port", str(port), env=env))
            other = first
            if store_url.startswith("postgresql"):  # SQLite is one process's
                other, _ = await stack.enter_async_context(
                    signoff_server(*serve, "--port", "0", env=env)
                )
            ada = await stack.enter_async_context(
                httpx.AsyncClient(base_url=first, headers={"Origin": first})
            )
            await signed_in_by_hand(ada, "ada")
            copied = {"Cookie": f"{SESSION_COOKIE}={ada.cookies[SESSION_COOKIE]}"}
            thief = await stack.enter_async_context(
                httpx.AsyncClient(base_url=other, headers=copied | {"Origin": other})
            )
            assert (await thief.get("/v1/me")).json()["name"] == "ada"
            socket = await stack.enter_async_context(
                websockets.connect(
                    other.replace("http", "ws") + "/v1/ws",
                    additional_headers=copied | {"Origin": other},
                    open_timeout=HANG,
                )
            )
            hello = json.loads(await socket.recv())
            assert (hello["type"], hello["principal"]) == ("hello", "ada")
            # A second socket that never sends anything, and a stream of approvals' changes.
            quiet = await stack.enter_async_context(
                websockets.connect(
                    other.replace("http", "ws") + "/v1/ws",
                    additional_headers=copied | {"Origin": other},
                    open_timeout=HANG,
                )
            )
            await quiet.recv()  # its hello
            changes = await stack.enter_async_context(thief.stream("GET", "/v1/approvals/changes"))
            assert changes.status_code == 200

            assert (await ada.post("/auth/logout")).status_code == 200

            assert (await thief.get("/v1/me")).status_code == 401
            decision = {"type": "decide", "id": "x", "decision": {"kind": "approve"}}
            await socket.send(json.dumps(decision))
            async with asyncio.timeout(HANG):
                await socket.wait_closed()  # (after any events pushed meanwhile)
            assert socket.close_code == 4401, socket.close_reason
            # What was opened with it and sends nothing ends too: the stream, the quiet socket.
            async with asyncio.timeout(HANG):
                async for _ in changes.aiter_lines():
                    pass
                await quiet.wait_closed()
            assert quiet.close_code == 4401, quiet.close_reason
