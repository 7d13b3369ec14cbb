"""Agno agents behind signoff: the real `Agent` with its own `SqliteDb`, a `Model` of Agno's
interface playing a script (offline), signoff's store on SQLite and PostgreSQL, tools that count
every real execution in a side-effect file, worker processes that resume, race and die, a real
MCP server, and DCAF's wire format — this framework's own tests, and those every framework
shares, on its app (tests/integrations/ag_app.py)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from agno.exceptions import ModelProviderError
from agno.models.fallback import FallbackConfig
from agno.tools.mcp import MCPTools
from agno.tools.user_control_flow import UserControlFlowTools
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from pydantic import ValidationError

from signoff import Approve, Edit, Policy
from signoff.errors import ForbiddenError, SignoffError
from signoff.integrations.agno import ORIGIN, SignoffAgent, connect
from tests.integrations import ag_app
from tests.integrations.ag_app import THREAD as SESSION
from tests.integrations.ag_app import Script, Scripted, build
from tests.integrations.harness import DEFAULT, EVERY, ROOT, Harness, lines
from tests.integrations.harness import POLICY as RULES
from tests.integrations.shared import *  # noqa: F403 - the shared tests run here, on this rig

RIG = ag_app
UPSTREAM = ROOT / "tests" / "protocols" / "mcp_upstream.py"


async def test_a_run_is_continued_only_once_every_call_of_its_pause_is_decided(
    harness: Harness,
) -> None:
    agent = harness.agent()
    await agent.run("go", session_id=SESSION)
    pending = await harness.pending()
    await harness.decide(pending['charge {"amount": 50}'].id, Approve())

    again = await agent.resume(SESSION)

    # Agno would reject the undecided call silently: the run stays paused, nothing runs.
    assert again is not None and again.is_paused
    assert harness.executions() == ["read_file report.txt"]
    assert harness.turns() == [0]
    await harness.decide(
        pending['send_email {"body": "hi", "to": "bob@example.com"}'].id, Approve()
    )
    assert harness.said(await agent.resume(SESSION))["call_0_1"] == "sent to bob@example.com"
    assert sorted(harness.executions()) == sorted(EVERY)


async def test_a_run_of_the_agent_around_signoff_runs_nothing_the_policy_holds(
    harness: Harness,
) -> None:
    guarded: SignoffAgent = harness.agent()
    agent = guarded.agent  # the Agno agent itself, run without SignoffAgent

    out = await agent.arun("go", session_id=SESSION)
    assert out.is_paused
    for requirement in out.active_requirements:
        requirement.confirm()  # type: ignore[no-untyped-call]  # everything "confirmed" through Agno's own API
    out = await agent.acontinue_run(run_id=out.run_id, session_id=SESSION,
                                    requirements=out.requirements)  # fmt: skip

    results = harness.said(out)
    assert results["call_0_2"].startswith("signoff blocked this call: denied")
    assert "did not run" in results["call_0_1"] and "did not run" in results["call_0_3"]
    assert harness.executions() == ["read_file report.txt"]
    assert len(await harness.pending()) == 2  # still in the inbox, never decided by Agno


async def test_an_agent_without_a_db_or_a_model_instance_is_refused(harness: Harness) -> None:
    agent = build(DEFAULT, harness.side_effects, harness.calls)
    agent.db = None
    with pytest.raises(SignoffError, match="needs a db"):
        SignoffAgent(agent, harness.runs)
    agent = build(DEFAULT, harness.side_effects, harness.calls)
    agent.model = "openai:gpt-4o"  # type: ignore[assignment]
    with pytest.raises(SignoffError, match="Model instance"):
        SignoffAgent(agent, harness.runs)


# -- DCAF's wire format --------------------------------------------------------------------


async def test_a_dcaf_client_approves_and_rejects_with_its_wire_format(harness: Harness) -> None:
    agent = harness.agent()

    first = await agent.dcaf({"messages": [{"role": "user", "content": "go"}]},
                             session_id=SESSION, user_id="alice")  # fmt: skip

    assert (first["has_pending_approvals"], first["is_complete"]) == (True, False)
    waiting = {p["tool_name"]: p for p in first["pending_requirements"]}
    assert set(waiting) == {"send_email", "charge"}  # the denied charge is not offered
    assert waiting["charge"]["tool_args"] == {"amount": 50}
    assert [c["id"] for c in first["data"]["tool_calls"]] == [
        p["requirement_id"] for p in first["pending_requirements"]]  # fmt: skip

    # An answer that leaves a call undecided (execute false, no reason) continues nothing.
    half = await agent.dcaf({"messages": [{"role": "user", "content": "", "data": {
        "tool_calls": [{"id": waiting["charge"]["requirement_id"], "execute": False}]}}]},
        session_id=SESSION, actor="bob")  # fmt: skip
    assert half["has_pending_approvals"] and harness.executions() == ["read_file report.txt"]

    last = await agent.dcaf({"messages": [{"role": "user", "content": "", "data": {"tool_calls": [
        {"id": waiting["send_email"]["requirement_id"], "execute": True},
        {"id": waiting["charge"]["requirement_id"], "execute": False,
         "rejection_reason": "too much"}]}}]},
        session_id=SESSION, actor="bob", roles=["finance"])  # fmt: skip

    assert (last["has_pending_approvals"], last["is_complete"]) == (False, True)
    assert last["pending_requirements"] == []
    results = json.loads(last["text"][last["text"].index("{") :])
    assert results["call_0_1"] == "sent to bob@example.com"
    assert "too much" in results["call_0_3"]
    assert harness.executions() == ["read_file report.txt", "send_email bob@example.com hi"]
    decided = await harness.runs.bridge.arun(harness.runs.store.list_approvals(status="rejected"))
    assert [(a.call.name, a.decided_by) for a in decided] == [("charge", "bob")]


async def test_a_dcaf_decision_is_held_to_the_policys_rules_and_bad_bodies_are_refused(
    harness: Harness,
) -> None:
    agent = harness.agent()
    first = await agent.dcaf({"messages": [{"content": "go"}]}, session_id=SESSION)
    charge = next(p for p in first["pending_requirements"] if p["tool_name"] == "charge")

    # alice asked for the charge and is not in finance: her "execute" decides nothing.
    answer = await agent.dcaf({"messages": [{"data": {"tool_calls": [
        {"id": charge["requirement_id"], "execute": True}]}}]},
        session_id=SESSION, actor="alice")  # fmt: skip

    assert answer["has_pending_approvals"]
    assert "charge 50" not in harness.executions()
    assert (await harness.pending())['charge {"amount": 50}'].pending  # not taken
    with pytest.raises(ForbiddenError, match="actor"):  # a decision is someone's
        await agent.dcaf({"messages": [{"data": {"tool_calls": [
            {"id": charge["requirement_id"], "execute": True}]}}]}, session_id=SESSION)  # fmt: skip
    version = {"id": charge["requirement_id"], "execute": True, "version": "1"}  # not a number
    for bad in ({}, {"messages": []}, {"messages": [{"data": {"tool_calls": "all"}}]},
                {"messages": [{"content": "x" * 70_000}]},
                {"messages": [{"data": {"tool_calls": [version]}}]}):  # fmt: skip
        with pytest.raises(ValidationError):
            await agent.dcaf(bad, session_id=SESSION)


async def test_a_dcaf_answer_lists_each_call_as_it_stands_and_a_stale_decision_is_not_taken(
    harness: Harness,
) -> None:
    agent = harness.agent([[("charge", {"amount": 50})], "charged"])
    first = await agent.dcaf({"messages": [{"content": "go"}]}, session_id=SESSION)
    [listed] = first["pending_requirements"]
    [approval] = (await harness.pending()).values()
    assert (listed["approval_id"], listed["version"]) == (approval.id, approval.version)
    assert first["data"]["tool_calls"][0]["version"] == approval.version

    # Two people of finance must approve now; bob lowers the amount, his approval the first.
    runs, two = harness.runs, {"ask": "charge", "approvers": ["finance"], "approvals": {"count": 2}}
    await runs.bridge.arun(runs.gate.use_policy(Policy.from_dict(
        {**RULES, "rules": [*RULES["rules"][:-1], two]})))  # fmt: skip
    await harness.decide(approval.id, Edit(args={"amount": 40}))

    def decision(version: int) -> dict[str, Any]:
        return {"messages": [{"data": {"tool_calls": [
            {"id": listed["requirement_id"], "execute": True, "version": version}]}}]}  # fmt: skip

    # Carol approves the call as she was first shown it: not taken; the answer lists it anew.
    stale = await agent.dcaf(decision(listed["version"]), session_id=SESSION, actor="carol",
                             roles=["finance"])  # fmt: skip
    [now] = stale["pending_requirements"]
    assert now["tool_args"] == {"amount": 40} and now["version"] > listed["version"]
    assert harness.executions() == []

    done = await agent.dcaf(decision(now["version"]), session_id=SESSION, actor="carol",
                            roles=["finance"])  # fmt: skip

    assert done["is_complete"] and harness.executions() == ["charge 40"]


async def test_dcaf_decisions_sent_again_after_the_run_ended_start_nothing(
    harness: Harness,
) -> None:
    agent = harness.agent([[("send_email", {"to": "bob@example.com"})], "sent"])
    first = await agent.dcaf({"messages": [{"content": "go"}]}, session_id=SESSION)
    [waiting] = first["pending_requirements"]
    approve = {"messages": [{"data": {"tool_calls": [
        {"id": waiting["requirement_id"], "execute": True}]}}]}  # fmt: skip

    done = await agent.dcaf(approve, session_id=SESSION, actor="bob")
    again = await agent.dcaf(approve, session_id=SESSION, actor="bob")

    assert done["is_complete"] and again == done
    assert harness.turns() == [0, 1]  # the second answer called no model
    assert harness.executions() == ["send_email bob@example.com "]


async def test_a_dcaf_run_started_by_an_actor_with_no_user_is_hers_to_not_approve(
    harness: Harness,
) -> None:
    policy = Policy.from_dict({"rules": [{"ask": "send_email", "forbid_self_approval": True}]})
    runs = await asyncio.to_thread(connect, policy, origin=ORIGIN, database=harness.database)
    try:
        built = build([[("send_email", {"to": "bob@example.com"})], "sent"], harness.side_effects,
                      harness.calls)  # fmt: skip
        agent = SignoffAgent(built, runs)  # no requested_by: the run's own requester counts
        # The route of docs/integrations/agno.md: the authenticated person, no user id.
        first = await agent.dcaf({"messages": [{"content": "go"}]}, session_id=SESSION,
                                 actor="alice")  # fmt: skip
        [waiting] = first["pending_requirements"]

        mine = await agent.dcaf({"messages": [{"data": {"tool_calls": [
            {"id": waiting["requirement_id"], "execute": True}]}}]},
            session_id=SESSION, actor="alice")  # fmt: skip

        assert mine["has_pending_approvals"] and harness.executions() == []
        [approval] = await runs.bridge.arun(runs.store.list_approvals(status="pending"))
        assert approval.requested_by == "alice"
        done = await agent.dcaf({"messages": [{"data": {"tool_calls": [
            {"id": waiting["requirement_id"], "execute": True}]}}]},
            session_id=SESSION, actor="bob")  # fmt: skip
        assert done["is_complete"] and harness.executions() == ["send_email bob@example.com "]
    finally:
        await asyncio.to_thread(runs.close)


# -- what would go around the guard ----------------------------------------------------------


async def test_a_fallback_model_is_guarded_as_the_model_is(harness: Harness) -> None:
    class Failing(Scripted):
        async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
            raise ModelProviderError("rate limited", status_code=429)

    agent = build(DEFAULT, harness.side_effects, harness.calls)
    agent.model = Failing(id="primary")
    agent.fallback_config = FallbackConfig(on_error=[Scripted(script=DEFAULT)])

    out = await SignoffAgent(agent, harness.runs).run("go", session_id=SESSION)

    assert out.is_paused
    assert harness.executions() == ["read_file report.txt"]
    assert len(await harness.pending()) == 2


async def test_what_signoff_cannot_judge_is_refused(harness: Harness) -> None:
    refused: list[dict[str, Any]] = [
        {"tools": [{"type": "web_search_preview"}]},
        {"tools": [UserControlFlowTools()]},
        {"fallback_models": ["openai:gpt-4o"]},
    ]
    for change in refused:
        agent = build(DEFAULT, harness.side_effects, harness.calls)
        for name, value in change.items():
            if name == "fallback_models":
                agent.fallback_config = FallbackConfig(on_error=value)
            else:
                agent.tools = [*(agent.tools or []), *value]  # type: ignore[misc]
        with pytest.raises(SignoffError):
            SignoffAgent(agent, harness.runs)


async def test_calls_numbered_the_same_in_each_run_are_each_judged(harness: Harness) -> None:
    script: Script = [[("send_email", {"to": "bob@example.com"})], "sent",
                      [("send_email", {"to": "bob@example.com"})], "sent again"]  # fmt: skip
    built = build(script, harness.side_effects, harness.calls)
    built.model.numbered = True  # type: ignore[union-attr]
    agent = SignoffAgent(built, harness.runs)
    await agent.run("go", session_id=SESSION)
    await harness.approve_all()
    await agent.resume(SESSION)

    again = await agent.run("the same again", session_id=SESSION)

    # call_0 of the second run is a call of its own: asked again, not answered from the first.
    assert again.is_paused
    assert harness.executions() == ["send_email bob@example.com "]
    assert len(await harness.pending()) == 1


# -- MCP -------------------------------------------------------------------------------------


async def test_an_mcp_servers_tools_are_judged_with_their_server(
    harness: Harness, tmp_path: Path
) -> None:
    counted = tmp_path / "upstream-count.txt"
    env = {**os.environ, "UPSTREAM_COUNT_FILE": str(counted)}
    server = StdioServerParameters(command=sys.executable, args=[str(UPSTREAM), "stdio"], env=env)
    script: Script = [[("up_echo", {"text": "hello"}), ("up_count", {})], "done"]
    # Agno's MCPTools over a session of the official MCP SDK (its own would need fastmcp).
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = MCPTools(session=session, tool_name_prefix="up")
        await tools.initialize()
        built = build(script, harness.side_effects, harness.calls, tools=[tools])
        agent = SignoffAgent(built, harness.runs, servers={"upstream": tools})

        out = await agent.run("go", session_id=SESSION)

        assert out.is_paused
        pending = await harness.pending()
        assert {(a.call.name, a.call.server) for a in pending.values()} == {
            ("echo", "upstream"), ("count", "upstream")}  # fmt: skip
        await harness.decide(pending['echo {"text": "hello"}'].id, Edit(args={"text": "bye"}))
        await harness.decide(pending["count {}"].id, Approve())
        results = harness.said(await agent.resume(SESSION))
        assert await agent.resume(SESSION) is None

    assert "it ran with the arguments" in results["call_0_0"] and "bye" in results["call_0_0"]
    assert len(lines(counted)) == 1  # the upstream's count ran once
