"""``GET /v1/approvals/catalog``: the agents and tools of the approvals held on the server's
database — another framework's, the MCP gateway's, the server's own — which then filter
``GET /v1/approvals``. In-process."""

from __future__ import annotations

from signoff import Policy, ToolCall
from signoff.gate import CheckContext, Gate
from signoff.store import SQLStore
from tests.server.test_web_api import DOCUMENT, LOGIN, client_for


async def held(store: SQLStore, call: ToolCall, origin: str) -> str:
    """`call` held as `origin` holds it (a framework's integration, the MCP gateway)."""
    gate = Gate(Policy.from_dict(DOCUMENT), store)
    context = CheckContext(origin=origin, thread_id="t-1", requested_by="alice")
    [outcome] = await gate.hold_external([call], context)
    assert outcome.approval is not None
    return outcome.approval.id


async def test_the_catalog_names_the_agents_and_tools_of_calls_held_elsewhere_and_they_filter(
    store: SQLStore,
):
    payer = "crew/payer"
    transfer = await held(
        store, ToolCall(id="c1", name="transfer", args={"to": "acme"}, agent=payer), "langgraph"
    )
    write = await held(
        store, ToolCall(id="c2", name="write_file", args={"path": "/a"}, server="fs"), "mcp-gateway"
    )

    async with client_for(store, LOGIN) as client:
        own = {"agent": "ops", "input": "log in"}  # the server's own agent asks too
        run = await client.post("/v1/threads/t-9/runs", params={"wait": 60}, json=own)
        assert run.json()["status"] == "paused"
        await client.post(f"/v1/approvals/{write}/decision", json={"kind": "reject"})
        catalog = (await client.get("/v1/approvals/catalog")).json()
        by_agent = (await client.get("/v1/approvals", params={"agent": payer})).json()
        by_tool = (await client.get("/v1/approvals", params={"tool": "write_file"})).json()
        both = await client.get(
            "/v1/approvals", params={"status": "pending", "agent": payer, "tool": "transfer"}
        )
        cut = (await client.get("/v1/approvals/catalog", params={"limit": 1})).json()
        anonymous = await client.get("/v1/approvals/catalog", headers={"Authorization": ""})

    # The decided call of the gateway too: what has waited, not only what waits.
    assert catalog == {"agents": [payer, "ops"], "tools": ["login", "transfer", "write_file"]}
    assert [a["id"] for a in by_agent["items"]] == [transfer]
    assert [a["id"] for a in by_tool["items"]] == [write]
    assert [a["id"] for a in both.json()["items"]] == [transfer]
    assert cut == {"agents": [payer], "tools": ["login"]}
    assert anonymous.status_code == 401
