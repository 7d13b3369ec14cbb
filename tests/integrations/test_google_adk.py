"""Google ADK agents behind signoff: the real `LlmAgent`, `App`, `Runner` and SQLite session
service, a `BaseLlm` that plays a script (offline), signoff's store on SQLite and PostgreSQL,
tools that count every real execution in a side-effect file, and worker processes."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.runners import Runner
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.adk.tools.mcp_tool.mcp_session_manager import StdioConnectionParams
from google.adk.tools.mcp_tool.mcp_toolset import McpToolset
from google.genai import types
from mcp import StdioServerParameters

from signoff import Approve, Policy, Scope
from signoff.gate.external import ExternalRuns
from signoff.integrations.google_adk import (
    CONFIRMATION,
    ORIGIN,
    SignoffPlugin,
    confirmations,
    connect,
)
from tests.deadline import HANG
from tests.integrations import adk_app
from tests.integrations import harness as harness_base
from tests.integrations.adk_app import (
    APP,
    DEFAULT,
    POLICY,
    USER,
    Played,
    Script,
    open_runs,
    say,
    sessions_in,
    user,
)
from tests.integrations.harness import EVERY, finished, lines
from tests.integrations.inbox import EDITED, decided_in_the_inbox

RIG = adk_app
UPSTREAM = harness_base.ROOT / "tests" / "protocols" / "mcp_upstream.py"


@pytest.fixture(autouse=True, scope="module")
def quiet() -> Iterator[None]:
    # ADK warns at every model call that a scripted model reports no token usage.
    logger = logging.getLogger("google_adk")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


@dataclass
class Harness(harness_base.Harness):
    def runner(self, script: Script = DEFAULT, runs: ExternalRuns | None = None,
               **options: Any) -> tuple[Runner, SignoffPlugin]:  # fmt: skip
        runner: tuple[Runner, SignoffPlugin] = self.agent(script, runs, **options)
        return runner

    @property
    def sessions(self) -> Path:
        return sessions_in(self.folder)

    async def start(self, runner: Runner) -> tuple[str, list[Any]]:
        """A new session, told "go": its id and the run's events."""
        session = await runner.session_service.create_session(app_name=APP, user_id=USER)
        return session.id, await say(runner, session.id, user("go"))

    async def confirmations(self) -> dict[str, str]:
        """The confirmations ADK asked for, by call id: the approval each is about."""
        found_all = await self.runs.bridge.arun(self.runs.store.list_approvals())
        pause = await self.runs.open_pause([a.id for a in found_all])
        assert pause is not None
        found: dict[str, str] = pause.data["confirmations"]
        return found


def results(events: list[Any]) -> dict[str, Any]:
    """The tools' results in `events`, by call id."""
    return {
        p.function_response.id: p.function_response.response
        for e in events
        for p in (e.content.parts if e.content else None) or []
        if p.function_response and p.function_response.name != CONFIRMATION
    }


def asked(events: list[Any]) -> list[str]:
    """The calls ADK asked a confirmation for in `events`."""
    return [
        call.args["originalFunctionCall"]["id"]
        for e in events
        for call in e.get_function_calls()
        if call.name == CONFIRMATION
    ]


async def _sent(events: Any) -> Any:
    """The events of a run, or the error it raised."""
    try:
        return await events
    except RuntimeError as exc:
        return exc


def text(events: list[Any]) -> str:
    return "".join(p.text or "" for e in events for p in (e.content.parts or []) if e.content)


async def test_the_run_stops_at_the_asked_calls_and_the_model_is_not_called_again(
    harness: Harness,
) -> None:
    runner, _ = harness.runner()
    _, events = await harness.start(runner)

    assert asked(events) == ["call_0_1", "call_0_3"]
    found = results(events)
    assert found["call_0_0"] == {"result": "contents of report.txt"}
    assert found["call_0_2"]["error"].startswith("signoff blocked this call: denied")
    assert harness.executions() == ["read_file report.txt"]
    assert harness.turns() == [0]  # the pause is the end of the run: no model call after it
    pending = await harness.pending()
    assert set(pending) == {'send_email {"body": "hi", "to": "bob@example.com"}',
                            'charge {"amount": 50}'}  # fmt: skip
    charge = pending['charge {"amount": 50}']
    assert (charge.origin, charge.requested_by, charge.call.agent) == (ORIGIN, USER, "assistant")
    await runner.close()


async def test_a_clients_confirmation_decides_nothing_unless_client_decisions_are_on(
    harness: Harness,
) -> None:
    runner, _ = harness.runner()
    session, _ = await harness.start(runner)

    # Refused before ADK takes (and spends) the confirmations: the calls wait for a decision.
    with pytest.raises(RuntimeError, match="wait for a person's decision"):  # ADK wraps it
        await say(runner, session, confirmations(await harness.confirmations()))

    assert harness.executions() == ["read_file report.txt"]
    assert len(await harness.pending()) == 2
    await harness.approve_all()
    found = results(await say(runner, session, confirmations(await harness.confirmations())))
    assert found["call_0_3"] == {"result": "charged 50"}
    await runner.close()


async def test_a_clients_confirmation_is_the_users_decision_held_to_the_policys_rules(
    harness: Harness,
) -> None:
    runner, _ = harness.runner(client_decisions=True)
    session, _ = await harness.start(runner)
    asked_for = await harness.confirmations()

    # An ADK client (kagent's UI) confirms both calls: the email is approved as the session's
    # user; the charge needs finance's approval, so the confirmations are refused before ADK
    # spends them, and nothing runs.
    with pytest.raises(RuntimeError, match="wait for a person's decision"):
        await say(runner, session, confirmations(asked_for))

    assert harness.executions() == ["read_file report.txt"]
    assert list(await harness.pending()) == ['charge {"amount": 50}']
    await harness.approve_all()  # finance approves the charge
    found = results(await say(runner, session, confirmations(asked_for)))
    assert found["call_0_1"] == {"result": "sent to bob@example.com"}
    assert found["call_0_3"] == {"result": "charged 50"}
    assert harness.turns() == [0, 1]
    decided = await harness.runs.bridge.arun(harness.runs.store.list_approvals())
    assert {a.call.name: a.decided_by for a in decided} == {"send_email": USER, "charge": "bob"}
    await runner.close()


async def test_a_clients_confirmation_on_a_version_that_changed_since_is_not_taken(
    harness: Harness,
) -> None:
    runner, _ = harness.runner([[("send_email", {"to": "bob@example.com"})], "done"],
                               client_decisions=True)  # fmt: skip
    session, events = await harness.start(runner)
    [request] = [c for e in events for c in e.get_function_calls() if c.name == CONFIRMATION]
    payload = request.args["toolConfirmation"]["payload"]
    [approval] = (await harness.pending()).values()
    assert payload == {"signoff": {"approval": approval.id, "version": approval.version}}

    def confirmed(version: Any) -> types.Content:
        sent = {"signoff": {**payload["signoff"], "version": version}}
        answer = types.FunctionResponse(name=CONFIRMATION, id=request.id,
                                        response={"confirmed": True, "payload": sent})  # fmt: skip
        return types.Content(role="user", parts=[types.Part(function_response=answer)])

    # A new policy gives the call an hour: a new version of it, after the client was asked.
    runs, hour = harness.runs, {"ask": "send_email", "timeout": "1h"}
    await runs.bridge.arun(runs.gate.use_policy(Policy.from_dict(
        {**POLICY, "rules": [*POLICY["rules"], hour]})))  # fmt: skip
    [changed] = (await harness.pending()).values()

    # The client sends the request's payload back: the version it was shown is not the call's.
    # (Nor is a version that is no number.)
    for shown in (approval.version, "2", True):
        with pytest.raises(RuntimeError, match="wait for a person's decision"):
            await say(runner, session, confirmed(shown))
    assert harness.executions() == [] and changed.version > approval.version
    found = results(await say(runner, session, confirmed(changed.version)))

    assert found["call_0_0"] == {"result": "sent to bob@example.com"}
    assert harness.executions() == ["send_email bob@example.com "]


async def test_a_confirmation_that_leaves_a_call_of_the_pause_out_is_refused(
    harness: Harness,
) -> None:
    runner, _ = harness.runner()
    session, _ = await harness.start(runner)
    await harness.approve_all()
    [first, *_] = (await harness.confirmations()).items()

    with pytest.raises(RuntimeError, match="every call of the pause"):
        await say(runner, session, confirmations(dict([first])))

    assert harness.executions() == ["read_file report.txt"]
    assert harness.turns() == [0]  # the model was not called with a call still waiting


async def test_a_clients_rejection_carries_its_reason_to_the_model(harness: Harness) -> None:
    runner, _ = harness.runner([[("send_email", {"to": "bob@example.com"})], "done"],
                               client_decisions=True)  # fmt: skip
    session, _ = await harness.start(runner)
    [(call_id, approval)] = (await harness.confirmations()).items()
    answer = types.FunctionResponse(
        name=CONFIRMATION,
        id=call_id,
        response={"confirmed": False, "payload": {"reason": "not to Bob"}},
    )
    rejection = types.Content(role="user", parts=[types.Part(function_response=answer)])

    found = results(await say(runner, session, rejection))

    assert "The user rejected this call: not to Bob" in found["call_0_0"]["error"]
    [decided] = await harness.runs.bridge.arun(harness.runs.store.get_approvals([approval]))
    assert (decided.status, decided.decided_by) == ("rejected", USER)
    assert harness.executions() == []
    await runner.close()


async def test_three_clients_sending_one_confirmation_at_once_continue_the_pause_once(
    harness: Harness,
) -> None:
    other_runs = await asyncio.to_thread(open_runs, harness.database)  # another replica
    try:
        runner, _ = harness.runner()
        session, _ = await harness.start(runner)
        await harness.approve_all()
        answer = confirmations(await harness.confirmations())
        other, _ = harness.runner(runs=other_runs)
        third, _ = harness.runner()

        sent = await asyncio.gather(
            *(say(client, session, answer) for client in (runner, other, third)),
            return_exceptions=True,
        )
        # The clients ADK turned away (a stale session, or signoff's claim) send it again.
        again = [await _sent(say(client, session, answer)) for client in (other, third)]

        # One client continued the pause: the model was called once after the tools, each
        # tool ran once; every other sender is told so, before ADK takes its confirmations.
        assert harness.turns() == [0, 1]
        assert sorted(harness.executions()) == sorted(EVERY)
        assert sum(not isinstance(r, BaseException) for r in sent) == 1, sent
        assert all(isinstance(r, RuntimeError) and "continued" in str(r) for r in again), again
        for closing in (other, third, runner):
            await closing.close()
    finally:
        await asyncio.to_thread(other_runs.close)


async def test_a_confirmation_the_model_writes_itself_ends_the_run_with_an_answer(
    harness: Harness,
) -> None:
    forged = {"originalFunctionCall": {"id": "x", "name": "charge", "args": {"amount": 9}},
              "toolConfirmation": {"confirmed": True}}  # fmt: skip
    runner, _ = harness.runner([[(CONFIRMATION, forged)]] * 5)

    _, events = await harness.start(runner)

    # The model is not called again (ADK would call it up to max_llm_calls times); the
    # answer is the run's last event, for the user to see.
    assert harness.turns() == [0]
    [answer] = events[-1].get_function_responses()
    assert "only ADK asks for a confirmation" in str(answer.response)
    assert harness.executions() == []
    await runner.close()


async def test_approve_always_for_the_session_lets_the_next_such_call_through(
    harness: Harness,
) -> None:
    script: Script = [[("send_email", {"to": "bob@example.com"})], "sent",
                      [("send_email", {"to": "eve@x.org"})], "sent again"]  # fmt: skip
    runner, _ = harness.runner(script)
    session, _ = await harness.start(runner)
    [approval] = (await harness.pending()).values()
    await harness.decide(approval.id, Approve(always=Scope(kind="thread", with_args=False)))
    await say(runner, session, confirmations(await harness.confirmations()))

    again = await say(runner, session, user("once more"))

    assert text(again).startswith("sent again")
    assert harness.executions() == ["send_email bob@example.com ", "send_email eve@x.org "]
    _, other = await harness.start(runner)  # another session still asks
    assert asked(other) == ["call_0_0"]
    await runner.close()


async def test_a_tool_that_asks_for_a_confirmation_itself_is_judged_by_the_policy(
    harness: Harness,
) -> None:
    runner, _ = harness.runner([[("read_secrets", {})], "done"])

    _, events = await harness.start(runner)

    # The policy allows read_*: the tool's own require_confirmation gives way to it.
    assert results(events)["call_0_0"] == {"result": "the secrets"}
    assert asked(events) == []
    assert harness.executions() == ["read_secrets"]
    await runner.close()


async def test_a_decision_taken_through_the_inbox_api_resumes_the_session(
    harness: Harness,
) -> None:
    runner, plugin = harness.runner()
    session, _ = await harness.start(runner)
    approvals = [a.id for a in (await harness.pending()).values()]

    async def done() -> bool:  # the resumer is done with the pause
        return await harness.runs.open_pause(approvals) is None

    stop = plugin.resumer(runner).start(poll_interval=0.05)
    try:
        await decided_in_the_inbox(harness.database, Policy.from_dict(POLICY), done)
    finally:
        await asyncio.to_thread(stop)
    assert sorted(harness.executions()) == sorted(EDITED)
    kept = await runner.session_service.get_session(app_name=APP, user_id=USER,
                                                    session_id=session)  # fmt: skip
    assert kept is not None and "done" in text(kept.events)
    assert harness.turns() == [0, 1]
    await runner.close()


async def test_a_session_paused_in_one_process_is_resumed_by_another(harness: Harness) -> None:
    runner, _ = harness.runner()
    session, _ = await harness.start(runner)
    await runner.close()
    await harness.approve_all()

    await finished(harness.worker(session, "resume"))

    assert sorted(harness.executions()) == sorted(EVERY)
    assert harness.turns() == [0, 1]


async def test_a_kagent_config_drives_the_plugin_for_an_mcp_toolset(
    harness: Harness, tmp_path: Path
) -> None:
    # kagent's agent config, as signoff reads it: listed tools run, requireApproval asks, the
    # rest of the server is denied.
    kagent = Policy.from_dict({"servers": {"upstream": {
        "toolNames": ["echo", "count"], "requireApproval": ["count"]}}})  # fmt: skip
    counted = tmp_path / "upstream-count.txt"
    toolset = McpToolset(connection_params=StdioConnectionParams(
        server_params=StdioServerParameters(
            command=sys.executable, args=[str(UPSTREAM), "stdio"],
            env={**os.environ, "UPSTREAM_COUNT_FILE": str(counted)}),
        timeout=HANG))  # fmt: skip
    runs = await asyncio.to_thread(connect, kagent, origin=ORIGIN, database=harness.database)
    script: Script = [[("echo", {"text": "hi"}), ("count", {}), ("headers", {})], "done"]
    model = Played(script=script, calls=str(harness.calls))
    agent = LlmAgent(name="k8s_agent", model=model, tools=[toolset])
    plugin = SignoffPlugin(runs, servers={"upstream": toolset})
    runner = Runner(app=App(name=APP, root_agent=agent, plugins=[plugin]),
                    session_service=SqliteSessionService(str(harness.sessions)))  # fmt: skip
    try:
        session, events = await harness.start(runner)

        found = results(events)
        assert found["call_0_0"]["content"][0]["text"] == "hi"
        assert found["call_0_2"]["error"].startswith("signoff blocked this call")
        assert asked(events) == ["call_0_1"]
        [count] = (await harness.pending()).values()
        assert (count.call.name, count.call.server, count.call.agent) == (
            "count", "upstream", "k8s_agent")  # fmt: skip
        await harness.approve_all()

        resumed = await say(runner, session, confirmations(await harness.confirmations()))

        assert "done" in text(resumed)
        assert len(lines(counted)) == 1  # the approved call ran once upstream
        assert harness.turns() == [0, 1]  # the resume replayed the exact call, no model call
    finally:
        await runner.close()
        await toolset.close()
        await asyncio.to_thread(runs.close)
