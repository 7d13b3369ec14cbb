"""OpenAI Agents SDK agents behind signoff: the real `Agent` and `Runner`, a `Model` of the SDK's
interface that plays a script (offline), signoff's store on SQLite and PostgreSQL, tools that
count every real execution in a side-effect file, and worker processes that resume, race and
die — this framework's own tests, and those every framework shares, on its app
(tests/integrations/oa_app.py). An edit the tool's schema or the policy refuses is refused as in
every integration (tests/integrations/test_scenarios.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
from collections.abc import Iterator
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
    set_tracing_disabled,
)
from agents.mcp import MCPServerStdio
from agents.testing import assistant_message
from openai.types.responses import ResponseCustomToolCall
from pydantic_core import to_jsonable_python

from signoff import Approve, Edit, Reject, Respond
from signoff.errors import SignoffError
from signoff.integrations.openai_agents import SignoffAgent
from tests.deadline import HANG
from tests.integrations import oa_app
from tests.integrations.harness import (
    DEFAULT,
    ROOT,
    Harness,
    lines,
)
from tests.integrations.oa_app import THREAD, Script, build
from tests.integrations.shared import *  # noqa: F403 - the shared tests run here, on this rig
from tests.integrations.shared import (  # noqa: F401 - run here: this app marks charge idempotent
    test_an_idempotent_tool_whose_worker_was_killed_inside_it_runs_again_once,
)
from tests.integrations.shared_kept import *  # noqa: F403

RIG = oa_app
UPSTREAM = ROOT / "tests" / "protocols" / "mcp_upstream.py"


@pytest.fixture(autouse=True, scope="module")
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)  # offline: the SDK would export traces to OpenAI
    yield
    set_tracing_disabled(False)


async def test_a_call_with_empty_arguments_is_judged_as_no_arguments(harness: Harness) -> None:
    result = await harness.agent([[("read_secrets", "")], "done"]).run("go", thread=THREAD)

    # The SDK could not read "" and stopped on it; signoff judged it as {} (allowed) and went on.
    assert harness.said(result)["call_0_0"] == "the secrets"


async def test_two_resumes_at_once_call_the_model_once_and_its_new_calls_run_once(
    harness: Harness,
) -> None:
    # A hosted model's call ids differ in each process: after the resume, the model's new call
    # would run once per resuming process if both went on.
    script: Script = [[("send_email", {"to": "bob@example.com"})],
                      [("read_file", {"path": "next.txt"})], "done"]  # fmt: skip
    other = await asyncio.to_thread(oa_app.open_runs, harness.database)
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
    assert "printer is on fire" in harness.said(again)["call_0_0"]  # its one execution's error
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
    assert harness.said(resumed)["call_1_1"] == "sent to bob@example.com"
    assert harness.executions() == ["charge 70", "send_email bob@example.com "]


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
    note, echoed, *_ = [part["text"] for part in harness.said(resumed)["call_0_0"]]
    assert "it ran with the arguments" in note and echoed == "bye"
    assert len(lines(counted)) == 1  # the upstream's count ran once
