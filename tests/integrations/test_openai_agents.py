"""OpenAI Agents SDK agents behind signoff: the real `Agent` and `Runner`, a `Model` of the SDK's
interface that plays a script (offline), signoff's store on SQLite and PostgreSQL, tools that
count every real execution in a side-effect file, and worker processes that resume, race and
die."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    CustomTool,
    HandoffInputData,
    Model,
    ModelResponse,
    Usage,
    function_tool,
    set_tracing_disabled,
)
from agents.mcp import MCPServerStdio
from agents.testing import assistant_message, function_call
from openai.types.responses import ResponseCustomToolCall
from pydantic_core import to_jsonable_python

from signoff import Approve, Edit, Policy, Reject, Respond, Scope
from signoff.errors import ConflictError, ForbiddenError, InvalidEditError, SignoffError
from signoff.gate.external import ExternalRuns
from signoff.integrations._threads import Hold
from signoff.integrations.openai_agents import ORIGIN, SignoffAgent
from tests.deadline import HANG
from tests.integrations import harness as harness_base
from tests.integrations.harness import finished, killed_inside_the_tool, lines, opened
from tests.integrations.inbox import inbox_api
from tests.integrations.oa_app import (
    DEFAULT,
    HANG_IN_TOOL,
    POLICY,
    THREAD,
    Script,
    build,
    open_runs,
    signoff_agent,
)

UPSTREAM = harness_base.ROOT / "tests" / "protocols" / "mcp_upstream.py"


@pytest.fixture(autouse=True, scope="module")
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)  # offline: the SDK would export traces to OpenAI
    yield
    set_tracing_disabled(False)


@dataclass
class Harness(harness_base.Harness):
    def agent(self, script: Script = DEFAULT, runs: ExternalRuns | None = None,
              **kwargs: Any) -> SignoffAgent:  # fmt: skip
        return signoff_agent(runs or self.runs, script, self.side_effects, self.calls, **kwargs)

    async def history(self, thread: str = THREAD) -> list[str]:
        return await self.runs.bridge.arun(self.runs.store.history(ORIGIN, thread))


@pytest.fixture(params=["sqlite", "postgres"])
async def harness(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Harness]:
    async with opened(request.param, tmp_path, open_runs) as found:
        yield Harness(*found)


def said(result: Any) -> dict[str, Any]:
    """The tool results the model's last text listed, by call id."""
    text = str(result.final_output)
    found: dict[str, Any] = json.loads(text[text.index("{") :])
    return found


async def test_allowed_calls_run_denied_ones_are_blocked_and_asked_ones_wait(
    harness: Harness,
) -> None:
    result = await harness.agent().run("go", thread=THREAD)

    assert result.final_output is None
    assert [i.call_id for i in result.interruptions] == ["call_0_1", "call_0_3"]
    assert harness.executions() == ["read_file report.txt"]
    pending = await harness.pending()
    assert set(pending) == {'send_email {"body": "hi", "to": "bob@example.com"}',
                            'charge {"amount": 50}'}  # fmt: skip
    approval = pending['charge {"amount": 50}']
    assert (approval.origin, approval.thread_id, approval.requested_by, approval.call.agent) == (
        ORIGIN, THREAD, "alice", "assistant")  # fmt: skip
    # The thread waits: a new input is refused until its calls are answered.
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


async def test_an_undecided_call_waits_on_and_the_decided_one_runs(harness: Harness) -> None:
    agent = harness.agent()
    await agent.run("go", thread=THREAD)
    pending = await harness.pending()
    assert await agent.resume(THREAD) is None  # nothing decided: nothing to go on with
    await harness.decide(pending['charge {"amount": 50}'].id, Approve())

    again = await agent.resume(THREAD)

    assert again is not None
    assert [i.call_id for i in again.interruptions] == ["call_0_1"]
    assert harness.executions() == ["read_file report.txt", "charge 50"]
    await harness.decide(
        pending['send_email {"body": "hi", "to": "bob@example.com"}'].id, Approve()
    )
    assert said(await agent.resume(THREAD))["call_0_1"] == "sent to bob@example.com"
    assert harness.executions() == ["read_file report.txt", "charge 50",
                                    "send_email bob@example.com hi"]  # fmt: skip
    assert harness.turns() == [0, 1]


async def test_the_same_pause_resumed_by_two_at_once_runs_each_tool_once(
    harness: Harness,
) -> None:
    other = await asyncio.to_thread(open_runs, harness.database)  # another replica's store
    try:
        await harness.agent().run("go", thread=THREAD)
        await harness.approve_all()

        outcomes = await asyncio.gather(
            harness.agent().resume(THREAD),
            harness.agent(runs=other).resume(THREAD),
            return_exceptions=True,
        )
    finally:
        await asyncio.to_thread(other.close)

    # One resume extended the thread; the other lost the race to keep its run (ConflictError),
    # or found nothing waiting once the first had finished (None).
    kept = [o for o in outcomes if o is not None and not isinstance(o, BaseException)]
    lost = [o for o in outcomes if o is None or isinstance(o, ConflictError)]
    assert (len(kept), len(lost)) == (1, 1), outcomes
    assert sum('"text": "done' in entry for entry in await harness.history()) == 1
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

    assert str(again.final_output).startswith("sent again")
    assert harness.executions() == ["send_email bob@example.com ", "send_email eve@x.org "]
    other = await harness.agent(script).run("go", thread="t-2")
    assert [i.call_id for i in other.interruptions] == ["call_0_0"]  # another thread asks


async def test_a_tool_that_asks_for_approval_itself_is_judged_by_the_policy(
    harness: Harness,
) -> None:
    result = await harness.agent([[("read_secrets", {})], "done"]).run("go", thread=THREAD)

    # The policy allows read_*: the tool's own needs_approval=True gives way to it.
    assert said(result)["call_0_0"] == "the secrets"
    assert harness.executions() == ["read_secrets"]


async def test_a_call_with_empty_arguments_is_judged_as_no_arguments(harness: Harness) -> None:
    result = await harness.agent([[("read_secrets", "")], "done"]).run("go", thread=THREAD)

    # The SDK could not read "" and stopped on it; signoff judged it as {} (allowed) and went on.
    assert said(result)["call_0_0"] == "the secrets"


async def test_two_resumes_at_once_call_the_model_once_and_its_new_calls_run_once(
    harness: Harness,
) -> None:
    # A hosted model's call ids differ in each process: after the resume, the model's new call
    # would run once per resuming process if both went on.
    script: Script = [[("send_email", {"to": "bob@example.com"})],
                      [("read_file", {"path": "next.txt"})], "done"]  # fmt: skip
    other = await asyncio.to_thread(open_runs, harness.database)
    try:
        await harness.agent(script, fresh_ids=True).run("go", thread=THREAD)
        await harness.approve_all()

        outcomes = await asyncio.gather(
            harness.agent(script, fresh_ids=True).resume(THREAD),
            harness.agent(script, runs=other, fresh_ids=True).resume(THREAD),
        )
    finally:
        await asyncio.to_thread(other.close)

    assert sum(o is not None for o in outcomes) == 1, outcomes
    assert harness.executions() == ["send_email bob@example.com ", "read_file next.txt"]
    assert harness.turns() == [0, 1, 2]


async def test_a_tool_that_failed_is_not_run_again_and_the_thread_goes_on(
    harness: Harness,
) -> None:
    agent = harness.agent([[("flaky", {"note": "q3"})], "done"])
    await agent.run("go", thread=THREAD)
    await harness.approve_all()
    with pytest.raises(Exception, match="printer is on fire"):
        await agent.resume(THREAD)  # the SDK ends the run with the tool's exception

    again = await agent.resume(THREAD)

    assert again is not None
    assert "printer is on fire" in said(again)["call_0_0"]  # its one execution's error
    assert harness.executions() == ["flaky q3"]


class Noting(Model):
    """A model that calls the custom tool `note` with free text, then reports its result."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any,
                           **kwargs: Any) -> ModelResponse:  # fmt: skip
        last = input[-1] if isinstance(input, list) and input else {}
        if isinstance(last, dict) and last.get("type") == "custom_tool_call_output":
            output = [assistant_message(f"done {last.get('output')}")]
        else:
            output = [ResponseCustomToolCall(type="custom_tool_call", call_id="c1", name="note",
                                             input="buy milk")]  # fmt: skip
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


@pytest.mark.parametrize(
    ("decision", "said"),
    [(Approve(), "noted buy milk"), (Respond(content="noted already"), "noted already"),
     (Edit(args={"arguments": "buy oat milk"}), "cannot change this tool's arguments"),
     (Reject(reason="no notes"), "no notes")],
)  # fmt: skip
async def test_a_custom_tool_stops_the_run_and_runs_only_as_proposed(
    harness: Harness, decision: Any, said: str
) -> None:
    noted: list[str] = []

    async def note(ctx: Any, text: str) -> str:
        noted.append(text)
        return f"noted {text}"

    tool = CustomTool(name="note", description="Take a note.", on_invoke_tool=note)
    agent = SignoffAgent(Agent(name="assistant", model=Noting(), tools=[tool]), harness.runs)
    result = await agent.run("go", thread=THREAD)
    assert [i.call_id for i in result.interruptions] == ["c1"]  # the policy asks about it
    [approval] = (await harness.pending()).values()
    await harness.decide(approval.id, decision)

    resumed = await agent.resume(THREAD)

    assert resumed is not None and said in str(resumed.final_output)
    assert noted == (["buy milk"] if isinstance(decision, Approve) else [])


async def test_an_agent_running_an_agent_with_tools_as_a_tool_is_refused(harness: Harness) -> None:
    inner = build(DEFAULT, harness.side_effects, harness.calls)
    outer = Agent(name="outer", model=inner.model, tools=[inner.as_tool("helper", "Helps.")])

    with pytest.raises(SignoffError, match=r"Agent\.as_tool"):
        await SignoffAgent(outer, harness.runs).run("go", thread=THREAD)
    assert harness.executions() == []


async def test_a_handoff_that_rewrites_the_conversation_keeps_it_whole(harness: Harness) -> None:
    def without_the_user(data: HandoffInputData) -> HandoffInputData:
        kept = [i for i in data.input_history if _role(i) != "user"]
        return dataclasses.replace(data, input_history=tuple(kept))

    script: Script = ["hello", [("transfer_to_billing", {})], [("charge", {"amount": 70})],
                      "billed"]  # fmt: skip
    agent = harness.agent(script, billing=True, billing_filter=without_the_user)
    await agent.run("hi", thread=THREAD)

    result = await agent.run("bill me", thread=THREAD)

    # The handoff dropped what the users said from the conversation: the thread is kept as
    # the run left it, not as what it had plus what the run added.
    assert str(result.final_output).startswith("billed")
    entries = [json.loads(e) for e in await harness.history()]
    assert entries[-1]["conversation"] == to_jsonable_python(result.to_input_list())
    assert not any(i.get("role") == "user" for i in entries[-1]["conversation"])
    after = await agent.run("and then?", thread=THREAD)  # the thread goes on from there
    assert str(after.final_output).startswith("done")


def _role(item: Any) -> Any:
    return item.get("role") if isinstance(item, dict) else None


async def test_an_agent_handed_off_to_is_judged_by_its_own_path(harness: Harness) -> None:
    script: Script = [[("transfer_to_billing", {})],
                      [("charge", {"amount": 70}), ("send_email", {"to": "bob@example.com"})],
                      "billed"]  # fmt: skip
    agent = harness.agent(script, billing=True)

    result = await agent.run("go", thread=THREAD)

    # assistant/billing's own section allows charge; its email still asks.
    assert harness.executions() == ["charge 70"]
    [email] = (await harness.pending()).values()
    assert (email.call.name, email.call.agent) == ("send_email", "assistant/billing")
    assert [i.call_id for i in result.interruptions] == ["call_1_1"]
    await harness.decide(email.id, Approve())

    resumed = await agent.resume(THREAD)

    assert resumed is not None and resumed.last_agent.name == "billing"
    assert said(resumed)["call_1_1"] == "sent to bob@example.com"
    assert harness.executions() == ["charge 70", "send_email bob@example.com "]


async def test_a_streamed_run_pauses_and_resumes_the_same_way(harness: Harness) -> None:
    agent = harness.agent()

    kinds = [event.type async for event in agent.stream("go", thread=THREAD)]

    assert "run_item_stream_event" in kinds
    assert harness.executions() == ["read_file report.txt"]
    assert len(await harness.pending()) == 2
    await harness.approve_all()
    results = said(await agent.resume(THREAD))
    assert results["call_0_3"] == "charged 50"
    assert sorted(harness.executions()) == sorted(
        ["read_file report.txt", "send_email bob@example.com hi", "charge 50"]
    )


async def test_an_mcp_servers_tools_are_judged_with_their_server(
    harness: Harness, tmp_path: Path
) -> None:
    counted = tmp_path / "upstream-count.txt"
    server = MCPServerStdio(
        {"command": sys.executable, "args": [str(UPSTREAM), "stdio"],
         "env": {**os.environ, "UPSTREAM_COUNT_FILE": str(counted)}},
        name="upstream", client_session_timeout_seconds=HANG,
    )  # fmt: skip
    script: Script = [[("echo", {"text": "hello"}), ("count", {})], "done"]
    async with server:
        agent = build(script, harness.side_effects, harness.calls)
        agent.mcp_servers = [server]
        signoff = SignoffAgent(agent, harness.runs)

        result = await signoff.run("go", thread=THREAD)

        pending = await harness.pending()
        assert {(a.call.name, a.call.server) for a in pending.values()} == {
            ("echo", "upstream"), ("count", "upstream")}  # fmt: skip
        assert [i.call_id for i in result.interruptions] == ["call_0_0", "call_0_1"]
        await harness.decide(pending['echo {"text": "hello"}'].id, Edit(args={"text": "bye"}))
        await harness.decide(pending["count {}"].id, Approve())
        resumed = await signoff.resume(THREAD)
        assert await signoff.resume(THREAD) is None

    # The model sees the upstream's content parts, after a note that a person edited the call.
    note, echoed, *_ = [part["text"] for part in said(resumed)["call_0_0"]]
    assert "it ran with the arguments" in note and echoed == "bye"
    assert len(lines(counted)) == 1  # the upstream's count ran once


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
            while '"text": "done' not in (await harness.history())[-1]:
                await asyncio.sleep(0.05)
    finally:
        await asyncio.to_thread(stop)
        await asyncio.to_thread(inbox.close)
    assert harness.turns() == [0, 1]
    assert sorted(harness.executions()) == sorted(
        ["read_file report.txt", "send_email bob@example.com hi", "charge 50"]
    )


async def test_a_decision_taken_through_the_inbox_api_resumes_the_run(harness: Harness) -> None:
    agent = harness.agent()
    await agent.run("go", thread=THREAD)
    stop = agent.resumer().start(poll_interval=0.05)
    try:
        async with inbox_api(harness.database, Policy.from_dict(POLICY)) as api:
            listed = (await api.get("/v1/approvals", params={"status": "pending"})).json()
            by_tool = {a["tool"]: a["id"] for a in listed["items"]}
            edit = {"kind": "edit", "args": {"to": "carol@example.com", "body": "hi"}}
            for approval, body in ((by_tool["send_email"], edit),
                                   (by_tool["charge"], {"kind": "approve"})):  # fmt: skip
                answer = await api.post(f"/v1/approvals/{approval}/decision", json=body)
                assert answer.status_code == 200, answer.text
            async with asyncio.timeout(HANG):
                while '"text": "done' not in (await harness.history())[-1]:
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
    return harness_base.worker("tests.integrations.oa_worker", harness, THREAD, action, env)


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
    assert '"text": "done' in (await harness.history())[-1]
    assert sorted(harness.executions()) == sorted(
        ["read_file report.txt", "send_email bob@example.com hi", "charge 50"]
    )


async def test_a_worker_killed_inside_the_tool_leaves_the_call_unknown_and_not_run_again(
    harness: Harness,
) -> None:
    await killed_inside_the_charge(harness)

    await finished(worker(harness, "resume"))

    assert [e for e in harness.executions() if e.startswith("charge")] == ["charge 50"]
    entries = await harness.history()
    assert '"text": "done' in entries[-1]
    assert "not run again" in said_in(entries[-1])["call_0_3"]


async def test_an_idempotent_tool_whose_worker_was_killed_inside_it_runs_again_once(
    harness: Harness,
) -> None:
    await killed_inside_the_charge(harness, {"IDEMPOTENT": "1"})

    await finished(worker(harness, "resume", env={"IDEMPOTENT": "1"}))

    charges = [e for e in harness.executions() if e.startswith("charge")]
    assert charges == ["charge 50", "charge 50"]  # the killed one, and its re-run
    assert said_in((await harness.history())[-1])["call_0_3"] == "charged 50"


async def killed_inside_the_charge(harness: Harness, env: dict[str, str] | None = None) -> None:
    """Start the thread, approve its calls, and resume it in a worker that is SIGKILLed
    inside `charge`."""
    await harness.agent().run("go", thread=THREAD)
    await harness.approve_all()
    await killed_inside_the_tool(worker(harness, "resume", env={HANG_IN_TOOL: "1", **(env or {})}))


def said_in(entry: str) -> dict[str, str]:
    """The tool results listed by the model's text in a thread's last entry."""
    [part] = json.loads(entry)["item"]["content"]
    text: str = part["text"]
    found: dict[str, str] = json.loads(text[text.index("{") :])
    return found


# -- resume marks and pauses ---------------------------------------------------------------


async def test_a_resume_before_any_decision_leaves_the_pause_to_the_later_decision(
    harness: Harness,
) -> None:
    agent = harness.agent()
    await agent.run("go", thread=THREAD)

    assert await agent.resume(THREAD) is None  # nothing decided: nothing goes on
    await harness.approve_all()

    pause = await open_pause(harness)
    assert await resumed(harness, agent, pause) is True
    assert sorted(harness.executions()) == sorted(
        ["read_file report.txt", "send_email bob@example.com hi", "charge 50"]
    )


async def test_the_resumer_leaves_a_pause_waiting_while_another_process_resumes_the_thread(
    harness: Harness,
) -> None:
    agent = harness.agent()
    await agent.run("go", thread=THREAD)
    await harness.approve_all()
    pause = await open_pause(harness)
    other = await Hold.take(harness.runs, ORIGIN, THREAD, await harness.history())
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


class Exporting(Model):
    """A model that calls `slow_export`, then says it is done."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any,
                           **kwargs: Any) -> ModelResponse:  # fmt: skip
        called = any(isinstance(i, dict) and i.get("type") == "function_call" for i in input)
        export = function_call("slow_export", {}, call_id="c1")
        output = [assistant_message("done") if called else export]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


async def test_a_resume_renews_its_mark_while_a_tool_runs_and_ends_it(harness: Harness) -> None:
    lease = timedelta(seconds=1.5)  # renewed every half second
    seen: list[object] = []
    agents: list[SignoffAgent] = []

    @function_tool
    async def slow_export() -> str:
        """An export that outlasts a lease: it returns once its resume renewed the mark."""
        async with asyncio.timeout(HANG):
            while sum('"taken"' in e for e in await harness.history()) < 2:
                await asyncio.sleep(0.05)
        seen.append(await agents[0].resume(THREAD))
        return "exported"

    agent = Agent(name="assistant", model=Exporting(), tools=[slow_export])
    agents.append(SignoffAgent(agent, harness.runs, lease=lease))
    await agents[0].run("go", thread=THREAD)
    await harness.approve_all()

    result = await agents[0].resume(THREAD)

    assert result is not None and result.final_output == "done"
    assert seen == [None]  # a resume meanwhile found the thread held
    assert '"taken"' not in (await harness.history())[-1]


async def open_pause(harness: Harness) -> str:
    found = await harness.runs.bridge.arun(harness.runs.store.list_approvals())
    pause = await harness.runs.open_pause([a.id for a in found])
    assert pause is not None
    return pause.id


async def resumed(harness: Harness, agent: SignoffAgent, pause: str) -> bool:
    """What the resumer does with a ready pause (on the store's loop, as it works)."""
    return await harness.runs.bridge.arun(agent.resumer().resume_ready(pause))
