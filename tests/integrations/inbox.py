"""signoff's server API — what the web inbox calls — over a store of its own on the database an
integration's test uses: the decision a person takes there reaches the framework's run.

`EDITED` is what every framework's run does once `decided_in_the_inbox` took its decisions on
the default script's calls (tests/integrations/harness.py)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx

from signoff import Policy
from signoff.gate import Gate
from signoff.server import Auth, Principal, Service, create_app
from signoff.store import open_store
from tests.integrations.harness import until

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


EDITED = ["read_file report.txt", "send_email carol@example.com hi", "charge 50"]
"""What the default script runs once the inbox edited its email and approved its charge."""


async def decided_in_the_inbox(
    database: str, policy: Policy, done: Callable[[], Awaitable[bool]]
) -> None:
    """Through the inbox's API, bob sends the email to carol instead (an edit) and approves the
    charge; then wait until `done` says the run went on."""
    async with inbox_api(database, policy) as api:
        listed = (await api.get("/v1/approvals", params={"status": "pending"})).json()
        by_tool = {a["tool"]: a["id"] for a in listed["items"]}
        edit = {"kind": "edit", "args": {"to": "carol@example.com", "body": "hi"}}
        for approval, body in ((by_tool["send_email"], edit),
                               (by_tool["charge"], {"kind": "approve"})):  # fmt: skip
            answer = await api.post(f"/v1/approvals/{approval}/decision", json=body)
            assert answer.status_code == 200, answer.text
        await until(done)
