"""The shared scenarios of what the people around a framework's run see of it — the server's
inbox on the same database, and the app that started the run — run against every integration's
adapter on SQLite and PostgreSQL (the adapters and fixtures of test_scenarios.py; a file of its
own so that the suite's two workers share the scenarios)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from signoff import Approve
from signoff.gate.external import Resumed
from tests.deadline import HANG
from tests.integrations.inbox import inbox_api
from tests.integrations.scenarios import POLICY, Adapter, NotSupported, Outcome, executions, told
from tests.integrations.test_scenarios import TRANSFER, adapter, database, decide, pending

__all__ = ["adapter", "database"]  # the fixtures, shared


async def test_the_resumer_hands_the_resumed_run_s_output_to_the_app(adapter: Adapter) -> None:
    # The same shape in every framework: the app's callback and its wait on the thread get
    # the run the resumer resumed, with the framework's own output.
    await adapter.start("t-output", TRANSFER)
    called: list[Resumed] = []
    try:
        resumer = adapter.resumer("t-output", on_resumed=called.append)
    except NotSupported as exc:
        pytest.skip(str(exc))
    runs = adapter.runs
    waiting = asyncio.ensure_future(resumer.resumed("t-output"))

    await decide(adapter, Approve())
    [pause] = await runs.bridge.arun(runs.store.ready_pauses(runs.origin, now=datetime.now(UTC)))
    assert await runs.bridge.arun(resumer.resume_ready(pause))
    done = await asyncio.wait_for(waiting, HANG)

    assert called == [done]
    assert (done.thread, done.pause, done.origin) == ("t-output", pause, runs.origin)
    text = adapter.text(done.output)
    assert text is not None
    assert told(Outcome(paused=False, text=text)) == [("call_0", "transfer ok")]
    assert executions(adapter.side_effects) == ["transfer 500 acme"]


async def test_a_server_on_the_same_database_refuses_an_edit_that_breaks_the_tools_schema(
    adapter: Adapter, database: str
) -> None:
    await adapter.start("t-served-edit", TRANSFER)
    [approval] = await pending(adapter)

    # `signoff serve` knows no tool of the framework's: the schema kept with the approval
    # checks the edit when it is decided, not later in the run.
    async with inbox_api(database, POLICY) as api:
        refused = await api.post(
            f"/v1/approvals/{approval.id}/decision",
            json={"kind": "edit", "args": {"amount": "lots", "to": "acme"}},
        )
        shown = (await api.get(f"/v1/approvals/{approval.id}")).json()

    assert refused.status_code == 422, refused.text
    assert refused.json()["schema_path"] == "properties/amount/type"
    assert refused.json()["path"] == "/amount"
    assert shown["status"] == "pending"
    assert shown["args_schema"]["properties"]["amount"]["type"] == "integer"


KEEPS_NO_CONVERSATION = {"adalflow", "mcp-gateway", "claude-agent-sdk"}
"""Integrations whose pauses keep no conversation: AdalFlow's run is one synchronous step, the
MCP gateway's client keeps its own, and Claude Code its transcript, which an SDK session writes
behind its hooks (none yet at a session's first call: a held call's card shows the turns
written by then)."""


async def test_a_server_shows_the_conversation_and_agent_of_a_held_call(
    adapter: Adapter, database: str
) -> None:
    if adapter.name in KEEPS_NO_CONVERSATION:
        pytest.skip(f"{adapter.name} keeps no conversation with its pauses")
    await adapter.start("t-conversation", TRANSFER)
    [approval] = await pending(adapter)

    async with inbox_api(database, POLICY) as api:
        shown = await api.get(f"/v1/approvals/{approval.id}/conversation")

    assert shown.status_code == 200, shown.text
    body = shown.json()
    assert body["thread_id"] == approval.thread_id and body["origin"] == approval.origin
    assert body["agent"]
    asked = [m for m in body["messages"] if m.get("tool_calls")]
    assert asked[-1]["tool_calls"][0]["name"] == "transfer"
    assert asked[-1]["tool_calls"][0]["args"] == {"amount": 500, "to": "acme"}
    assert asked[-1]["role"] == "assistant" and asked[-1]["agent"] == body["agent"]
    assert body["messages"][0]["role"] in ("user", "system")
