"""Pydantic AI agents behind signoff: the real `Agent`, its own `FunctionModel` (offline), signoff's
store on SQLite and PostgreSQL, tools that count every real execution in a side-effect file, and
worker processes that resume, race and die."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests

from signoff import Approve, Edit, Respond, Scope
from signoff.errors import ConflictError, ForbiddenError, InvalidEditError
from signoff.gate.external import ExternalRuns
from signoff.integrations._threads import Hold
from signoff.integrations.pydantic_ai import ORIGIN, SignoffAgent
from tests.deadline import HANG
from tests.integrations import harness as harness_base
from tests.integrations.harness import finished, killed_inside_the_tool, opened
from tests.integrations.inbox import inbox_api
from tests.integrations.pa_app import (
    DEFAULT,
    HANG_IN_TOOL,
    POLICY,
    THREAD,
    Script,
    build,
    open_runs,
)


@dataclass
class Harness(harness_base.Harness):
    def agent(self, script: Script = DEFAULT, runs: ExternalRuns | None = None) -> SignoffAgent:
        built = build(script, self.side_effects, self.calls)
        return SignoffAgent(built, runs or self.runs, requested_by="alice")


@pytest.fixture(params=["sqlite", "postgres"])
async def harness(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Harness]:
    async with opened(request.param, tmp_path, open_runs) as found:
        yield Harness(*found)


def said(result: Any) -> dict[str, str]:
    """The tool results the model's last text listed, by call id."""
    text = str(result.output)
    found: dict[str, str] = json.loads(text[text.index("{") :])
    return found


async def test_allowed_calls_run_denied_ones_are_blocked_and_asked_ones_wait(
    harness: Harness,
) -> None:
    result = await harness.agent().run("go", thread=THREAD)

    assert isinstance(result.output, DeferredToolRequests)
    assert [c.tool_call_id for c in result.output.approvals] == ["call_0_1", "call_0_3"]
    assert harness.executions() == ["read_file report.txt"]
    pending = await harness.pending()
    assert set(pending) == {'send_email {"body": "hi", "to": "bob@example.com"}',
                            'charge {"amount": 50}'}  # fmt: skip
    approval = pending['charge {"amount": 50}']
    assert (approval.origin, approval.thread_id, approval.requested_by, approval.call.agent) == (
        ORIGIN, THREAD, "alice", "assistant")  # fmt: skip
    # The thread waits: a new prompt is refused until its calls are answered.
    with pytest.raises(ConflictError, match="resume it"):
        await harness.agent().run("and another thing", thread=THREAD)


async def test_a_response_is_the_tools_result_and_approve_runs_as_proposed(
    harness: Harness,
) -> None:
    agent = harness.agent()
    await agent.run("go", thread=THREAD)
    pending = await harness.pending()
    await harness.decide(pending['charge {"amount": 50}'].id, Respond(content="already paid"))
    await harness.decide(
        pending['send_email {"body": "hi", "to": "bob@example.com"}'].id, Approve()
    )

    results = said(await agent.resume(THREAD))

    assert results["call_0_3"] == "already paid"
    assert results["call_0_1"] == "sent to bob@example.com"
    assert "charge 50" not in harness.executions()


async def test_an_undecided_call_is_asked_again_and_the_decided_one_runs(
    harness: Harness,
) -> None:
    agent = harness.agent()
    await agent.run("go", thread=THREAD)
    pending = await harness.pending()
    await harness.decide(pending['charge {"amount": 50}'].id, Approve())

    again = await agent.resume(THREAD)

    assert again is not None and isinstance(again.output, DeferredToolRequests)
    assert [c.tool_call_id for c in again.output.approvals] == ["call_0_1"]
    assert harness.executions() == ["read_file report.txt", "charge 50"]
    await harness.decide(
        pending['send_email {"body": "hi", "to": "bob@example.com"}'].id, Approve()
    )
    assert said(await agent.resume(THREAD))["call_0_1"] == "sent to bob@example.com"
    assert harness.executions() == ["read_file report.txt", "charge 50",
                                    "send_email bob@example.com hi"]  # fmt: skip


async def test_the_same_pause_resumed_by_two_at_once_runs_each_tool_once(
    harness: Harness,
) -> None:
    other = await asyncio.to_thread(open_runs, harness.database)  # another replica's store
    try:
        await harness.agent().run("go", thread=THREAD)
        for approval in (await harness.pending()).values():
            await harness.decide(approval.id, Approve())

        outcomes = await asyncio.gather(
            harness.agent().resume(THREAD),
            harness.agent(runs=other).resume(THREAD),
            return_exceptions=True,
        )
    finally:
        await asyncio.to_thread(other.close)

    # One resume extended the thread; the other lost the race to keep its messages
    # (ConflictError), or found nothing waiting once the first had finished (None).
    kept = [o for o in outcomes if o is not None and not isinstance(o, BaseException)]
    lost = [o for o in outcomes if o is None or isinstance(o, ConflictError)]
    assert (len(kept), len(lost)) == (1, 1), outcomes
    assert sum("done" in item for item in await history(harness)) == 1
    assert sorted(harness.executions()) == sorted(
        ["read_file report.txt", "send_email bob@example.com hi", "charge 50"]
    )


async def test_an_edit_the_schema_refuses_or_the_policy_denies_is_not_taken(
    harness: Harness,
) -> None:
    await harness.agent().run("go", thread=THREAD)
    charge = (await harness.pending())['charge {"amount": 50}']

    with pytest.raises(InvalidEditError, match="amount"):
        await harness.decide(charge.id, Edit(args={"amount": "fifty"}))
    with pytest.raises(ForbiddenError, match="denies the edited call"):
        await harness.decide(charge.id, Edit(args={"amount": 5000}))
    assert (await harness.pending())['charge {"amount": 50}'].pending


async def test_approve_always_for_the_thread_lets_the_next_such_call_through(
    harness: Harness,
) -> None:
    script: Script = [[("send_email", {"to": "bob@example.com"})], "sent",
                      [("send_email", {"to": "eve@x.org"})], "sent again"]  # fmt: skip
    agent = harness.agent(script)
    await agent.run("go", thread=THREAD)
    [approval] = (await harness.pending()).values()
    await harness.decide(approval.id, Approve(always=Scope(kind="thread", with_args=False)))
    await agent.resume(THREAD)

    again = await agent.run("once more", thread=THREAD)

    assert str(again.output).startswith("sent again")
    assert harness.executions() == ["send_email bob@example.com ", "send_email eve@x.org "]
    other = await harness.agent(script).run("go", thread="t-2")
    assert isinstance(other.output, DeferredToolRequests)  # another thread still asks


async def test_a_tool_that_asks_for_approval_itself_is_judged_by_the_policy(
    harness: Harness,
) -> None:
    agent = harness.agent([[("read_secrets", {})], "done"])

    result = await agent.run("go", thread=THREAD)

    # The policy allows read_*: the tool's own requires_approval is answered by it.
    assert said(result)["call_0_0"] == "the secrets"
    assert harness.executions() == ["read_secrets"]


async def test_the_resumer_resumes_the_thread_when_a_decision_is_taken_elsewhere(
    harness: Harness,
) -> None:
    agent = harness.agent()
    await agent.run("go", thread=THREAD)
    inbox = await asyncio.to_thread(open_runs, harness.database)  # the server's store
    stop = agent.resumer().start(poll_interval=0.05)
    try:
        for approval in (await harness.pending()).values():
            await inbox.bridge.arun(
                inbox.gate.decide(approval.id, Approve(), actor="bob", roles=["finance"])
            )
        async with asyncio.timeout(HANG):
            while "done" not in (await history(harness))[-1]:
                await asyncio.sleep(0.05)
    finally:
        await asyncio.to_thread(stop)
        await asyncio.to_thread(inbox.close)
    assert harness.turns() == [0, 1]
    assert sorted(harness.executions()) == sorted(
        ["read_file report.txt", "send_email bob@example.com hi", "charge 50"]
    )


async def history(harness: Harness) -> list[str]:
    return await harness.runs.bridge.arun(harness.runs.store.history(ORIGIN, THREAD))


async def test_a_streamed_run_pauses_and_resumes_the_same_way(harness: Harness) -> None:
    agent = harness.agent()

    nodes = [type(node).__name__ async for node in agent.stream("go", thread=THREAD)]

    assert "CallToolsNode" in nodes
    assert harness.executions() == ["read_file report.txt"]
    assert len(await harness.pending()) == 2
    await harness.approve_all()
    results = said(await agent.resume(THREAD))
    assert results["call_0_3"] == "charged 50"
    assert harness.turns() == [0, 1]


async def test_a_decision_taken_through_the_inbox_api_resumes_the_run(harness: Harness) -> None:
    agent = harness.agent()
    await agent.run("go", thread=THREAD)
    stop = agent.resumer().start(poll_interval=0.05)
    try:
        async with inbox_api(harness.database, POLICY) as api:
            listed = (await api.get("/v1/approvals", params={"status": "pending"})).json()
            by_tool = {a["tool"]: a["id"] for a in listed["items"]}
            edit = {"kind": "edit", "args": {"to": "carol@example.com", "body": "hi"}}
            for approval, body in ((by_tool["send_email"], edit),
                                   (by_tool["charge"], {"kind": "approve"})):  # fmt: skip
                answer = await api.post(f"/v1/approvals/{approval}/decision", json=body)
                assert answer.status_code == 200, answer.text
            async with asyncio.timeout(HANG):
                while "done" not in (await history(harness))[-1]:
                    await asyncio.sleep(0.05)
    finally:
        await asyncio.to_thread(stop)
    assert harness.turns() == [0, 1]
    assert sorted(harness.executions()) == sorted(
        ["read_file report.txt", "send_email carol@example.com hi", "charge 50"]
    )


# -- other processes -----------------------------------------------------------------------


def worker(harness: Harness, action: str, env: dict[str, str] | None = None
           ) -> subprocess.Popen[str]:  # fmt: skip
    return harness_base.worker("tests.integrations.pa_worker", harness, THREAD, action, env)


async def test_a_thread_started_in_one_process_is_resumed_by_two_others_at_once(
    harness: Harness,
) -> None:
    await finished(worker(harness, "start"))
    assert len(await harness.pending()) == 2
    await harness.approve_all()

    both = [worker(harness, "resume"), worker(harness, "resume")]
    outcomes = [await asyncio.to_thread(p.communicate, timeout=HANG) for p in both]

    # One kept the thread; the other lost the race to keep it, or found nothing waiting.
    assert sorted(p.returncode for p in both) in ([0, 0], [0, 1]), outcomes
    assert "done" in (await history(harness))[-1]
    assert sorted(harness.executions()) == sorted(
        ["read_file report.txt", "send_email bob@example.com hi", "charge 50"]
    )


async def test_a_worker_killed_inside_the_tool_leaves_the_call_unknown_and_not_run_again(
    harness: Harness,
) -> None:
    await harness.agent().run("go", thread=THREAD)
    await harness.approve_all()
    await killed_inside_the_tool(worker(harness, "resume", env={HANG_IN_TOOL: "1"}))

    await finished(worker(harness, "resume"))

    assert [e for e in harness.executions() if e.startswith("charge")] == ["charge 50"]
    last = (await history(harness))[-1]
    assert "done" in last and "not run again" in last


# -- resume marks and pauses ---------------------------------------------------------------


async def test_a_resume_before_any_decision_leaves_the_pause_to_the_later_decision(
    harness: Harness,
) -> None:
    agent = harness.agent()
    await agent.run("go", thread=THREAD)

    assert await agent.resume(THREAD) is None  # nothing decided: nothing goes on
    await harness.approve_all()

    # The early resume left no mark behind: the resumer goes on, and the approved calls run.
    pause = await open_pause(harness)
    assert await resumed(harness, agent, pause) is True
    assert sorted(harness.executions()) == sorted(
        ["read_file report.txt", "send_email bob@example.com hi", "charge 50"]
    )
    assert await harness.runs.open_pause(list(await decided(harness))) is None


async def test_the_resumer_leaves_a_pause_waiting_while_another_process_resumes_the_thread(
    harness: Harness,
) -> None:
    agent = harness.agent()
    await agent.run("go", thread=THREAD)
    await harness.approve_all()
    pause = await open_pause(harness)
    other = await Hold.take(harness.runs, ORIGIN, THREAD, await history(harness))
    assert other is not None  # another process resumes the thread now

    assert await resumed(harness, agent, pause) is False

    # Not marked done with its calls unanswered: once the other lets go, it is continued once.
    await other.release()
    assert await resumed(harness, agent, pause) is True
    assert await resumed(harness, agent, pause) is False
    assert harness.turns() == [0, 1]
    assert sorted(harness.executions()) == sorted(
        ["read_file report.txt", "send_email bob@example.com hi", "charge 50"]
    )


async def test_a_resume_renews_its_mark_while_a_tool_runs_and_ends_it(harness: Harness) -> None:
    lease = timedelta(seconds=1.5)  # renewed every half second
    seen: list[object] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if sum(isinstance(m, ModelResponse) for m in messages) == 0:
            return ModelResponse(parts=[ToolCallPart("slow_export", {}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(reply), name="assistant")

    @agent.tool_plain
    async def slow_export() -> str:
        """An export that outlasts a lease: it returns once its resume renewed the mark."""
        async with asyncio.timeout(HANG):
            while sum('"taken"' in e for e in await history(harness)) < 2:
                await asyncio.sleep(0.05)
        seen.append(await SignoffAgent(agent, harness.runs, lease=lease).resume(THREAD))
        return "exported"

    signoff = SignoffAgent(agent, harness.runs, lease=lease)
    await signoff.run("go", thread=THREAD)
    await harness.approve_all()

    result = await signoff.resume(THREAD)

    assert result is not None and result.output == "done"
    assert seen == [None]  # a resume meanwhile found the thread held
    assert '"taken"' not in (await history(harness))[-1]


async def open_pause(harness: Harness) -> str:
    pause = await harness.runs.open_pause(await decided(harness))
    assert pause is not None
    return pause.id


async def decided(harness: Harness) -> list[str]:
    found = await harness.runs.bridge.arun(harness.runs.store.list_approvals())
    return [a.id for a in found]


async def resumed(harness: Harness, agent: SignoffAgent, pause: str) -> bool:
    """What the resumer does with a ready pause (on the store's loop, as it works)."""
    return await harness.runs.bridge.arun(agent.resumer().resume_ready(pause))
