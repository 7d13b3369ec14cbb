"""Reading and changing the policy through the API: versions, the admin role, every replica."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

from signoff import Policy
from signoff.agent import Agent, ModelTurn, tool
from signoff.gate import Gate
from signoff.server import Auth, Principal, Service, create_app
from signoff.store import SQLStore
from signoff.testing import ScriptedModel, call
from tests.deadline import HANG

DOCUMENT: dict[str, Any] = {"default": "ask", "rules": [{"allow": "list_pods"}]}
TOKENS = {
    "admin-token": Principal(name="ada", roles=frozenset({"admin"})),
    "ops-token": Principal(name="olga", roles=frozenset({"ops"})),
}


@tool
def delete_pod(name: str) -> str:
    """Delete a pod."""
    return f"deleted {name}"


def make_service(store: SQLStore, document: dict[str, Any] = DOCUMENT) -> Service:
    turns = [ModelTurn(tool_calls=(call("delete_pod", name="a"),)), ModelTurn(text="done")] * 5
    agent = Agent(name="ops", model=ScriptedModel(turns), tools=[delete_pod])
    return Service(
        store=store,
        gate=Gate(Policy.from_dict(document), store),
        agents=[agent],
        policy_document=document,
        policy_interval=0.05,
        poll_interval=0.05,
    )


@contextlib.asynccontextmanager
async def client_of(
    service: Service, token: str, tokens: dict[str, Principal] = TOKENS
) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process client of the API over `service`, with `token` (one of `tokens`)."""
    app = create_app(service, Auth(tokens=tokens))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://signoff",
            headers={"Authorization": f"Bearer {token}"},
        ) as client,
    ):
        yield client


async def test_an_admin_changes_the_policy_and_the_next_run_follows_it(store: SQLStore):
    async with client_of(make_service(store), "admin-token") as admin:
        before = (await admin.get("/v1/policy")).json()
        assert before["document"] == DOCUMENT
        run = (
            await admin.post(
                "/v1/threads/t1/runs", params={"wait": 5}, json={"agent": "ops", "input": "go"}
            )
        ).json()
        assert run["status"] == "paused"  # delete_pod asks, by default

        bad = await admin.put(
            "/v1/policy",
            json={"document": {"rules": [{"allow": "x", "when": {"n": {"between": 1}}}]}},
        )
        assert bad.status_code == 422
        assert bad.json()["problems"][0]["path"].startswith("rules[0].when")
        assert (await admin.get("/v1/policy")).json()["version"] == before["version"]

        toggled = await admin.put("/v1/policy/tools/delete_pod", json={"verdict": "allow"})
        assert toggled.status_code == 200
        after = toggled.json()
        assert after["version"] != before["version"]
        assert after["document"]["tools"] == {"delete_pod": {"verdict": "allow"}}
        explained = await admin.post("/v1/policy/explain", json={"tool": "delete_pod"})
        assert explained.json()["kind"] == "allow"
        second = (
            await admin.post(
                "/v1/threads/t2/runs", params={"wait": 5}, json={"agent": "ops", "input": "go"}
            )
        ).json()
        assert second["status"] == "completed"  # it ran without asking
        audit = (await admin.get("/v1/audit")).json()["items"]
        changes = [e for e in audit if e["action"] == "policy"]
        assert [(e["actor"], e["subject"]) for e in changes][-1] == ("ada", after["version"])


async def test_changing_the_policy_needs_the_admin_role(store: SQLStore):
    async with client_of(make_service(store), "ops-token") as ops:
        refused = await ops.put("/v1/policy/tools/delete_pod", json={"verdict": "allow"})
        assert refused.status_code == 403
        assert "needs the admin role" in refused.json()["detail"]
        refused = await ops.put("/v1/policy", json={"document": DOCUMENT})
        assert refused.status_code == 403
        assert (await ops.get("/v1/policy")).json()["document"] == DOCUMENT


async def test_every_replica_follows_a_change_and_a_restart_keeps_it(store: SQLStore):
    first, second = make_service(store), make_service(store)
    async with client_of(first, "admin-token") as a, client_of(second, "admin-token") as b:
        await a.put("/v1/policy/tools/delete_pod", json={"verdict": "deny"})
        async with asyncio.timeout(HANG):
            while (await b.post("/v1/policy/explain", json={"tool": "delete_pod"})).json()[
                "kind"
            ] != "deny":
                await asyncio.sleep(0.02)
        edited = (await a.get("/v1/policy")).json()["version"]
    # A restart with the same config keeps the edit; a changed config wins.
    async with client_of(make_service(store), "admin-token") as again:
        assert (await again.get("/v1/policy")).json()["version"] == edited
    changed = {"default": "deny", "rules": []}
    async with client_of(make_service(store, changed), "admin-token") as fresh:
        assert (await fresh.get("/v1/policy")).json()["document"] == changed
