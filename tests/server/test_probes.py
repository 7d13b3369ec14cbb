"""`/healthz` and `/readyz`: unauthenticated, for any Host (a kubelet probes the pod's IP), and
saying nothing but whether the process serves and whether its store is there and current."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

import httpx
from fastapi import FastAPI

from signoff import Policy
from signoff.gate import Gate
from signoff.server import Auth, Principal, Service, create_app
from signoff.server.probes import mount_probes
from signoff.store import SQLStore, open_store
from signoff.store.migrations import LATEST

TOKENS = {"ops-token": Principal(name="olga", roles=frozenset({"admin"}))}


@contextlib.asynccontextmanager
async def server(store: SQLStore, auth: Auth) -> AsyncIterator[Callable[[str], httpx.AsyncClient]]:
    """The app over `store`; yields a function making a client that names one Host."""
    service = Service(store=store, gate=Gate(Policy.from_dict({}), store), agents=[])
    app = create_app(service, auth)
    async with app.router.lifespan_context(app), contextlib.AsyncExitStack() as clients:

        def client(host: str) -> httpx.AsyncClient:
            made = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url=f"http://{host}"
            )
            clients.push_async_callback(made.aclose)
            return made

        yield client


async def test_the_probes_answer_any_host_without_a_token_and_reveal_nothing_more(
    store: SQLStore,
):
    auth = Auth(tokens=TOKENS, hosts=frozenset({"inbox.internal"}))
    async with server(store, auth) as client:
        pod = client("10.42.0.17:8000")
        health = await pod.get("/healthz")
        ready = await pod.get("/readyz")

        assert (health.status_code, health.json()) == (200, {"status": "ok"})
        assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
        # Only the probes: the API on that host is still refused, and needs a token on its own.
        assert (await pod.get("/v1/health")).status_code == 421
        assert (await client("inbox.internal").get("/v1/approvals")).status_code == 401
        assert (await client("inbox.internal").get("/readyz")).status_code == 200


async def test_without_authentication_the_probes_answer_any_host_too(store: SQLStore):
    async with server(store, Auth.none()) as client:
        assert (await client("10.42.0.17").get("/healthz")).status_code == 200
        assert (await client("10.42.0.17").get("/readyz")).status_code == 200
        assert (await client("10.42.0.17").get("/v1/approvals")).status_code == 421


async def test_a_store_whose_schema_is_not_current_is_not_ready_and_says_no_more(
    store: SQLStore,
):
    async with server(store, Auth(tokens=TOKENS)) as client:
        await set_version(store, LATEST - 1)
        ready = await client("localhost").get("/readyz")
        assert (ready.status_code, ready.json()) == (503, {"status": "not ready"})
        assert (await client("localhost").get("/healthz")).status_code == 200

        await set_version(store, LATEST)
        assert (await client("localhost").get("/readyz")).status_code == 200


async def set_version(store: SQLStore, version: int) -> None:
    await store.run(lambda c: c.exec_driver_sql(f"UPDATE signoff_schema SET version = {version}"))


async def test_a_store_that_does_not_answer_is_not_ready(store_url: str):
    async with open_store(store_url) as store:
        pass  # closed: its next transaction fails
    app = FastAPI()
    mount_probes(app, store)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        ready = await client.get("/readyz")
        assert (ready.status_code, ready.json()) == (503, {"status": "not ready"})
        assert (await client.get("/healthz")).status_code == 200
