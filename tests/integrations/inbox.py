"""signoff's server API — what the web inbox calls — over a store of its own on the database an
integration's test uses: the decision a person takes there reaches the framework's run."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx

from signoff import Policy
from signoff.gate import Gate
from signoff.server import Auth, Principal, Service, create_app
from signoff.store import open_store

TOKEN = "bob-token"
BOB = Principal(name="bob", roles=frozenset({"finance"}))


@contextlib.asynccontextmanager
async def inbox_api(database: str, policy: Policy) -> AsyncIterator[httpx.AsyncClient]:
    """An API client, as bob of finance, of a server on `database` (no agents of its own)."""
    async with open_store(database) as store:
        service = Service(store=store, gate=Gate(policy, store), agents=[], poll_interval=0.05)
        app = create_app(service, Auth(tokens={TOKEN: BOB}))
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app),
                base_url="http://signoff",
                headers={"Authorization": f"Bearer {TOKEN}"},
            ) as client,
        ):
            yield client
