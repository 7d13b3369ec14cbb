"""CrewAI crews behind signoff's hooks: the real `Agent`, `Task` and `Crew`, a `BaseLLM` playing a
script through native function calling (offline), signoff's store on SQLite and PostgreSQL,
tools that count every real execution — and the crew waiting, in memory, for a decision taken
in signoff's store, another process's store or its REST API."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

from signoff import Answer, Approve, Edit, Scope
from signoff.gate.answers import edited_text
from signoff.gate.questions import ASK_PARAMETERS
from signoff.integrations.crewai import ORIGIN, SignoffHooks, ask_person
from signoff.types import Approval
from tests.deadline import HANG
from tests.integrations import crewai_app
from tests.integrations.crewai_app import POLICY, Reacting, Scripted, crew_of, crewai_tools
from tests.integrations.harness import Harness, side_effects_in
from tests.integrations.harness import tools as counting
from tests.integrations.inbox import inbox_api
from tests.integrations.scenarios import final_text

RIG = crewai_app
THREAD = "t-1"


def kicked_off(harness: Harness, script: list[Any]) -> asyncio.Future[Any]:
    """A crew of `script`, kicked off in a thread of its own (CrewAI's kickoff is synchronous)."""
    read_file, send_email, charge, _ = counting(side_effects_in(harness.folder))
    crew = crew_of(script, crewai_tools([read_file, send_email, charge]), [], final_text)
    return asyncio.ensure_future(asyncio.to_thread(crew.kickoff))


@contextlib.asynccontextmanager
async def hooked(harness: Harness, **options: Any) -> AsyncIterator[SignoffHooks]:
    hooks = SignoffHooks(harness.runs, thread=THREAD, requested_by="alice", **options).register()
    try:
        yield hooks
    finally:
        hooks.unregister()


async def waiting(hooks: SignoffHooks) -> list[Approval]:
    """The approvals a crew waits on, once it does (as its hooks list them)."""
    async with asyncio.timeout(HANG):
        while not hooks.waiting:
            await asyncio.sleep(0.02)
    return list(hooks.waiting.values())


def told(output: Any) -> dict[str, str]:
    """What the model was told of each call, by call id, as its final answer lists it."""
    _, _, results = str(output.raw).partition(" ")
    return dict(json.loads(results))


async def test_allowed_calls_run_denied_ones_are_answered_and_an_asked_one_waits(
    harness: Harness,
) -> None:
    script = [[("c1", "read_file", {"path": "report.txt"}), ("c2", "charge", {"amount": 5000}),
               ("c3", "charge", {"amount": 50})], "done"]  # fmt: skip
    async with hooked(harness) as hooks:
        run = kicked_off(harness, script)
        [approval] = await waiting(hooks)

        assert (approval.origin, approval.thread_id, approval.requested_by, approval.call) == (
            ORIGIN, THREAD, "alice", approval.call.__class__(
                id="c3", name="charge", args={"amount": 50}, agent="assistant"))  # fmt: skip
        # CrewAI runs one turn's calls side by side (a thread each): the read may not be done
        # yet, but the held charge has not run.
        assert not run.done() and "charge 50" not in harness.executions()
        # Decided in another store on the database, as a server's would be.
        other = await asyncio.to_thread(RIG.open_runs, harness.database)
        try:
            decided = other.gate.decide(approval.id, Approve(), actor="bob", roles=["finance"])
            await other.bridge.arun(decided)
            output = await run
        finally:
            await asyncio.to_thread(other.close)

    assert told(output) == {
        "c1": "contents of report.txt",
        "c2": "signoff blocked this call: denied: charge when amount gt 1000. It did not run.",
        "c3": "charged 50",
    }
    assert sorted(harness.executions()) == ["charge 50", "read_file report.txt"]
    assert hooks.waiting == {}


async def test_a_rejection_through_the_rest_api_reaches_the_model(harness: Harness) -> None:
    async with hooked(harness) as hooks:
        run = kicked_off(harness, [[("c1", "charge", {"amount": 50})], "done"])
        [approval] = await waiting(hooks)
        async with inbox_api(harness.database, POLICY) as api:
            rejected = {"kind": "reject", "reason": "wrong customer"}
            answer = await api.post(f"/v1/approvals/{approval.id}/decision", json=rejected)
            assert answer.status_code == 200, answer.text
            output = await run

    assert json.loads(told(output)["c1"]) == {
        "status": "rejected",
        "message": "The user rejected this call: wrong customer. Do not retry it.",
    }
    assert harness.executions() == []


async def test_an_edit_runs_with_the_edited_arguments_and_the_model_is_told(
    harness: Harness,
) -> None:
    async with hooked(harness) as hooks:
        run = kicked_off(harness, [[("c1", "charge", {"amount": 50})], "done"])
        [approval] = await waiting(hooks)
        await harness.decide(approval.id, Edit(args={"amount": 40}))
        output = await run

    assert told(output) == {"c1": edited_text({"amount": 40}, "charged 40")}
    assert harness.executions() == ["charge 40"]


async def test_approve_always_is_a_grant_the_next_such_call_runs_under(harness: Harness) -> None:
    script = [[("c1", "send_email", {"to": "bob@example.com"})],
              [("c2", "send_email", {"to": "eve@x.org"})], "done"]  # fmt: skip
    async with hooked(harness) as hooks:
        run = kicked_off(harness, script)
        [approval] = await waiting(hooks)
        await harness.decide(approval.id, Approve(always=Scope(kind="thread", with_args=False)))
        await run

    assert harness.executions() == ["send_email bob@example.com ", "send_email eve@x.org "]


async def test_a_call_nobody_decides_in_time_expires_and_does_not_run(harness: Harness) -> None:
    async with hooked(harness, timeout=0.01):
        output = await kicked_off(harness, [[("c1", "charge", {"amount": 50})], "done"])

    assert json.loads(told(output)["c1"])["status"] == "expired"
    assert harness.executions() == []
    expired = await harness.runs.bridge.arun(harness.runs.store.list_approvals(status="expired"))
    assert [a.call.args for a in expired] == [{"amount": 50}]


class Failing(SignoffHooks):
    """Hooks whose judging fails (a store that is down)."""

    async def _settle(self, context: Any) -> str:
        raise ConnectionError("the database is down")


async def test_a_hook_that_cannot_judge_a_call_keeps_it_from_running(harness: Harness) -> None:
    # CrewAI runs a call whose hook raised: signoff's never raises, it blocks the call.
    hooks = Failing(harness.runs, thread=THREAD).register()
    try:
        output = await kicked_off(harness, [[("c1", "read_file", {"path": "a"})], "done"])
    finally:
        hooks.unregister()

    assert told(output)["c1"] == (
        "signoff blocked this call: signoff could not judge it (ConnectionError). It did not run."
    )
    assert harness.executions() == []


async def test_a_crew_kicked_off_on_an_event_loop_is_judged_off_that_loop(
    harness: Harness,
) -> None:
    read_file, _, _, _ = counting(side_effects_in(harness.folder))
    script = [[("c1", "read_file", {"path": "a"}), ("c2", "delete_all", {})], "done"]
    crew = crew_of(script, crewai_tools([read_file]), [], final_text)
    async with hooked(harness):
        output = await crew.akickoff()

    said = told(output)
    assert said["c1"] == "contents of a" and "no tool of this agent" in said["c2"]
    assert harness.executions() == ["read_file a"]


async def test_a_model_without_function_calling_is_judged_in_crewais_react_loop(
    harness: Harness,
) -> None:
    _, _, charge, _ = counting(side_effects_in(harness.folder))
    script = [[("c1", "charge", {"amount": 50})], [("c2", "charge", {"amount": 5000})], "done"]
    crew = crew_of(script, crewai_tools([charge]), [], final_text, Reacting)
    async with hooked(harness) as hooks:
        run = asyncio.ensure_future(asyncio.to_thread(crew.kickoff))
        [approval] = await waiting(hooks)
        await harness.decide(approval.id, Approve())
        output: Any = await run

    _, _, results = str(output.raw).partition(" ")
    assert json.loads(results) == [
        ["react", "charged 50"],
        ["react", "signoff blocked this call: denied: charge when amount gt 1000. It did not run."],
    ]
    assert harness.executions() == ["charge 50"]


class Declared(Scripted):
    """`Scripted`, keeping the tools CrewAI declares to it in `DECLARED`."""

    def call(self, messages: Any, tools: Any = None, *args: Any, **kwargs: Any) -> Any:
        DECLARED.extend(tools or [])
        return super().call(messages, tools, *args, **kwargs)


DECLARED: list[dict[str, Any]] = []


async def test_the_ask_tool_is_declared_by_its_arguments_and_a_strict_model_s_nulls_are_absent(
    harness: Harness,
) -> None:
    # CrewAI declares each tool strictly: every argument required, the ones left out null.
    nulls = dict.fromkeys(["multiple", "schema", "to", "timeout", "default"])
    asked = {"question": "Which region?", "choices": ["eu", "us"], **nulls}
    crew = crew_of([[("c1", "ask_person", asked)], "done"], [ask_person()], [], final_text,
                   Declared)  # fmt: skip
    DECLARED.clear()
    async with hooked(harness) as hooks:
        run = asyncio.ensure_future(asyncio.to_thread(crew.kickoff))
        [question] = await waiting(hooks)
        await harness.decide(question.id, Answer(value="us"))
        output: Any = await run

    [declared] = {d["function"]["name"]: d["function"] for d in DECLARED}.values()
    assert declared["name"] == "ask_person"
    assert list(declared["parameters"]["properties"]) == list(ASK_PARAMETERS["properties"])
    assert (question.call.kind, question.call.args) == ("question", asked)
    assert json.loads(told(output)["c1"]) == {
        "status": "answered", "answer": "us", "answered_by": "bob"}  # fmt: skip
    assert harness.executions() == []


def test_importing_the_integration_leaves_crewai_unimported() -> None:
    # `import crewai` takes seconds: an app pays for it where it builds its crew, not here.
    probe = "import sys, signoff.integrations.crewai; print('crewai' in sys.modules)"
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                           check=True, timeout=HANG)  # fmt: skip
    assert found.stdout.strip() == "False"
