"""Strands agents behind signoff: the real `Agent`, its hooks and `FileSessionManager`, a `Model`
that plays a script (offline), signoff's store on SQLite and PostgreSQL, and tools that count
every real execution in a side-effect file. The shared scenarios run it too
(tests/integrations/adapters/strands.py); these are what an app of Strands' own does: answer the
interrupts itself, at once, malformed, or from a saved state someone changed."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("strands") is None:  # pragma: no cover
    pytest.skip("Strands Agents is not installed: pip install 'signoff[strands]'",
                allow_module_level=True)  # fmt: skip

from signoff import Approve, Policy, Scope
from signoff.errors import ConflictError, InvalidDecisionError, InvalidEditError
from signoff.integrations.strands import DECIDED, NAME
from tests.deadline import HANG
from tests.integrations import harness as harness_base
from tests.integrations import st_app
from tests.integrations.harness import EVERY, listed
from tests.integrations.inbox import EDITED, decided_in_the_inbox
from tests.integrations.st_app import POLICY, THREAD, App, start

RIG = st_app
EMAIL = 'send_email {"body": "hi", "to": "bob@example.com"}'
CHARGE = 'charge {"amount": 50}'


@dataclass
class Harness(harness_base.Harness):
    def app(self, script: Any = st_app.DEFAULT, **options: Any) -> App:
        app: App = self.agent(script, **options)
        return app

    async def answer(self, app: App, result: Any, response: Any, user: str | None = None) -> Any:
        """The app's own answer to each of signoff's interrupts in `result`, as `user`."""
        answers: Any = [{"interruptResponse": {"interruptId": i.id, "response": response}}
                        for i in result.interrupts if i.name == NAME]  # fmt: skip
        state = {"user_id": user} if user else {}
        return await app(THREAD).invoke_async(answers, invocation_state=state)


def told(result: Any) -> dict[str, Any]:
    """What the model's final text says each tool result told it, by call id."""
    return listed(str(result))


async def test_the_agent_stops_at_the_asked_calls_and_the_model_is_not_called_again(
    harness: Harness,
) -> None:
    result = await start(harness.app(), THREAD)

    assert result.stop_reason == "interrupt"
    pending = await harness.pending()
    assert set(pending) == {EMAIL, CHARGE}
    shown = {i.reason["signoff"]["approval"]: i.reason["signoff"]["version"]
             for i in result.interrupts or [] if i.name == NAME}  # fmt: skip
    assert shown == {a.id: a.version for a in pending.values()}
    charge = pending[CHARGE]
    assert (charge.origin, charge.thread_id, charge.requested_by, charge.call.agent) == (
        "strands", f"{THREAD}/default", "alice", "assistant")  # fmt: skip
    assert harness.executions() == ["read_file report.txt"]  # the large charge was denied
    assert harness.turns() == [0]
    # What the card shows: the tool's schema, and the conversation at the pause.
    assert charge.args_schema is not None and "amount" in charge.args_schema["properties"]
    pause = await harness.runs.open_pause([charge.id])
    assert pause is not None
    said = [(m["role"], m.get("agent")) for m in pause.data["conversation"]]
    assert said == [("user", None), ("assistant", "assistant")]
    assert [c["name"] for c in pause.data["conversation"][1]["tool_calls"]] == [
        "read_file", "send_email", "charge", "charge"]  # fmt: skip


async def test_a_decision_in_the_inbox_resumes_the_session_with_the_edit(
    harness: Harness,
) -> None:
    app = harness.app()
    await start(app, THREAD)
    approvals = [a.id for a in (await harness.pending()).values()]

    async def done() -> bool:  # the resumer is done with the pause
        return await harness.runs.open_pause(approvals) is None

    resumes = app.hooks.resumer(app)
    async with resumes.running(poll_interval=0.05):
        await decided_in_the_inbox(harness.database, Policy.from_dict(POLICY), done)
        result = (await asyncio.wait_for(resumes.resumed(THREAD), HANG)).output

    assert sorted(harness.executions()) == sorted(EDITED)
    said = told(result)
    assert "A person edited this call" in said["call_0_1"][0]
    assert "signoff blocked this call" in said["call_0_2"][0]
    assert harness.turns() == [0, 1]


async def test_an_answer_from_nobody_named_decides_nothing(harness: Harness) -> None:
    app = harness.app()
    result = await start(app, THREAD)

    again = await harness.answer(app, result, {"type": "approve"})

    assert again.stop_reason == "interrupt"
    assert harness.executions() == ["read_file report.txt"]
    assert set(await harness.pending()) == {EMAIL, CHARGE}
    assert harness.turns() == [0]


async def test_an_answer_is_the_invocation_users_decision_held_to_the_policys_rules(
    harness: Harness,
) -> None:
    app = harness.app()
    result = await start(app, THREAD)

    # Carol may approve the email; the charge needs finance, which she is not.
    again = await harness.answer(app, result, {"type": "approve"}, user="carol")

    assert sorted(harness.executions()) == ["read_file report.txt", "send_email bob@example.com hi"]
    assert again.stop_reason == "interrupt" and set(await harness.pending()) == {CHARGE}
    [asked] = [i for i in again.interrupts or [] if i.name == NAME]
    assert asked.reason["args"] == {"amount": 50}
    await harness.approve_all()
    done = await st_app.resume(app, THREAD)
    assert sorted(harness.executions()) == sorted(EVERY)
    assert told(done)["call_0_3"] == ["charged 50"]


@pytest.mark.parametrize(
    "response",
    [
        "yes",
        {"type": "approve", "version": "one"},
        {"type": "whatever"},
        {"type": "edit"},
        {"type": "edit", "edited_action": {"args": json.loads("[" * 100 + "]" * 100)}},
    ],
    ids=["not-an-object", "a-bad-version", "an-unknown-kind", "an-edit-without-args", "too-deep"],
)
async def test_a_malformed_answer_is_refused_before_anything_runs(
    harness: Harness, response: Any
) -> None:
    app = harness.app()
    result = await start(app, THREAD)

    with pytest.raises(InvalidDecisionError):
        await harness.answer(app, result, response, user="bob")

    assert harness.executions() == ["read_file report.txt"]
    assert set(await harness.pending()) == {EMAIL, CHARGE}
    await harness.approve_all()  # the session was left as it was: the resumer goes on
    assert await st_app.resume(app, THREAD) is not None
    assert sorted(harness.executions()) == sorted(EVERY)


async def test_an_edit_the_app_sends_that_breaks_the_tools_schema_is_refused(
    harness: Harness,
) -> None:
    app = harness.app()
    result = await start(app, THREAD)
    edit = {"type": "edit", "edited_action": {"args": {"to": 5}}}

    with pytest.raises(InvalidEditError):
        await harness.answer(app, result, edit, user="bob")

    assert harness.executions() == ["read_file report.txt"]
    assert set(await harness.pending()) == {EMAIL, CHARGE}


async def test_an_interrupt_whose_saved_reason_names_another_approval_is_refused(
    harness: Harness,
) -> None:
    app = harness.app()
    result = await start(app, THREAD)
    await harness.approve_all()
    # Someone edits the saved session: each interrupt now names an approval of nobody's.
    for path in (harness.folder / "sessions").rglob("*.json"):
        text = path.read_text()
        for i in result.interrupts or []:
            text = text.replace(i.reason["signoff"]["approval"], "0" * 32)
        path.write_text(text)

    with pytest.raises(ConflictError, match="not the calls it holds"):
        await harness.answer(app, result, DECIDED)

    assert harness.executions() == ["read_file report.txt"]


async def test_two_invocations_answering_the_pause_at_once_continue_it_once(
    harness: Harness,
) -> None:
    app = harness.app()
    result = await start(app, THREAD)
    await harness.approve_all()

    outcomes = await asyncio.gather(
        harness.answer(app, result, DECIDED), harness.answer(app, result, DECIDED),
        return_exceptions=True,
    )  # fmt: skip

    refused = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(refused) == 1 and isinstance(refused[0], ConflictError), outcomes
    assert sorted(harness.executions()) == sorted(EVERY)
    assert harness.turns() == [0, 1]
    assert await st_app.resume(app, THREAD) is None  # and the resumer finds nothing to do


async def test_approve_always_for_the_session_lets_the_next_such_call_through(
    harness: Harness,
) -> None:
    script = [[("charge", {"amount": 50})], [("charge", {"amount": 50})], "done"]
    app = harness.app(script)
    await start(app, THREAD)
    [approval] = (await harness.pending()).values()
    await harness.decide(approval.id, Approve(always=Scope(kind="thread")))

    done = await st_app.resume(app, THREAD)

    assert done.stop_reason == "end_turn"
    assert harness.executions() == ["charge 50", "charge 50"]
    assert told(done) == {"call_0_0": ["charged 50"], "call_1_0": ["charged 50"]}


def test_the_session_keeps_signoffs_interrupt_for_another_process(tmp_path: Path) -> None:
    # What the resumer of another process reads: the interrupt, by Strands' session manager.
    runs = st_app.open_runs(f"sqlite:///{tmp_path / 'signoff.db'}")
    try:
        app = st_app.agent(runs, tmp_path)
        result = asyncio.run(start(app, THREAD))
        restored = app(THREAD)._interrupt_state
        assert restored.activated
        assert {i.id for i in result.interrupts or []} <= set(restored.interrupts)
        saved = json.dumps([i.to_dict() for i in restored.interrupts.values()])
        assert '"signoff"' in saved
    finally:
        runs.close()


async def test_a_call_runs_as_judged_whatever_a_tool_input_middleware_makes_of_it(
    harness: Harness,
) -> None:
    # Strands' middleware runs after the hooks and may rewrite a call's input: the call judged
    # allowed was read_file report.txt, and the tool read /etc/shadow.
    from strands.middleware import ExecuteToolStage

    def rewrite(context: Any) -> Any:
        return context.replace(tool_use={**context.tool_use, "input": {"path": "/etc/shadow"}})

    agent = harness.app([[("read_file", {"path": "report.txt"})], "done"])(THREAD)
    agent.add_middleware(ExecuteToolStage.Input, rewrite)

    result = await agent.invoke_async("go", invocation_state={"user_id": "alice"})

    assert harness.executions() == ["read_file report.txt"]
    assert told(result) == {"call_0_0": ["contents of report.txt"]}
