"""The tests every framework behind a `SignoffAgent` passes — Pydantic AI, the OpenAI Agents SDK,
Agno — each through its own app (its `Rig`, the test module's ``RIG``), on SQLite and
PostgreSQL: what runs, what waits, who resumes and how often, in this process and in worker
processes. A framework's test file takes them in with ``from tests.integrations.shared import
*``, so that they run there, with its own tests, on the framework's rig."""

from __future__ import annotations

import asyncio

import pytest

from signoff import Approve, Respond, Scope
from signoff.errors import ConflictError
from tests.deadline import HANG
from tests.integrations.harness import (
    EVERY,
    HANG_IN_TOOL,
    IDEMPOTENT,
    Harness,
    finished,
    killed_inside_the_tool,
    until,
)
from tests.integrations.inbox import EDITED, decided_in_the_inbox

__all__ = [
    "test_a_decision_taken_through_the_inbox_api_resumes_the_run",
    "test_a_response_is_the_tools_result_and_approve_runs_as_proposed",
    "test_a_thread_started_in_one_process_is_resumed_by_two_others_at_once",
    "test_a_tool_that_asks_for_approval_itself_is_judged_by_the_policy",
    "test_a_worker_killed_inside_the_tool_leaves_the_call_unknown_and_not_run_again",
    "test_allowed_calls_run_denied_ones_are_blocked_and_asked_ones_wait",
    "test_approve_always_for_the_thread_lets_the_next_such_call_through",
    "test_the_resumer_resumes_the_thread_when_a_decision_is_taken_elsewhere",
    "test_the_same_pause_resumed_twice_and_by_two_at_once_runs_each_tool_once",
]

EMAIL = 'send_email {"body": "hi", "to": "bob@example.com"}'
CHARGE = 'charge {"amount": 50}'


async def test_allowed_calls_run_denied_ones_are_blocked_and_asked_ones_wait(
    harness: Harness,
) -> None:
    rig = harness.rig

    result = await rig.start(harness.agent(), rig.THREAD)

    # It waits on the asked calls (Agno's run on the denied one too: signoff answers it there).
    denied = ["call_0_2"] if rig.WAITS_ON_DENIED else []
    assert rig.asked(result) == sorted(["call_0_1", "call_0_3", *denied])
    assert harness.executions() == ["read_file report.txt"]
    pending = await harness.pending()
    assert set(pending) == {EMAIL, CHARGE}
    approval = pending[CHARGE]
    assert (approval.origin, approval.thread_id, approval.requested_by, approval.call.agent) == (
        rig.ORIGIN, rig.THREAD, "alice", "assistant")  # fmt: skip
    # The thread waits: a new input is refused until its calls are answered.
    with pytest.raises(ConflictError, match="resume it"):
        await rig.start(harness.agent(), rig.THREAD, "and another thing")
    assert harness.turns() == [0]


async def test_a_response_is_the_tools_result_and_approve_runs_as_proposed(
    harness: Harness,
) -> None:
    rig, agent = harness.rig, harness.agent()
    await rig.start(agent, rig.THREAD)
    pending = await harness.pending()
    await harness.decide(pending[CHARGE].id, Respond(content="already paid"))
    await harness.decide(pending[EMAIL].id, Approve())

    results = harness.said(await rig.resume(agent, rig.THREAD))

    assert results["call_0_3"] == "already paid"
    assert results["call_0_1"] == "sent to bob@example.com"
    assert "charge 50" not in harness.executions()


async def test_the_same_pause_resumed_twice_and_by_two_at_once_runs_each_tool_once(
    harness: Harness,
) -> None:
    rig = harness.rig
    other = await asyncio.to_thread(rig.open_runs, harness.database)  # another replica's store
    try:
        await rig.start(harness.agent(), rig.THREAD)
        await harness.approve_all()

        outcomes = await asyncio.gather(
            rig.resume(harness.agent(), rig.THREAD),
            rig.resume(harness.agent(runs=other), rig.THREAD),
            return_exceptions=True,
        )
        again = await rig.resume(harness.agent(runs=other), rig.THREAD)
    finally:
        await asyncio.to_thread(other.close)

    # One resume continued the run; the other lost the race to keep it (where the framework
    # says so: ConflictError), or found nothing waiting once the first had finished (None).
    kept = [o for o in outcomes if o is not None and not isinstance(o, BaseException)]
    lost = [o for o in outcomes if o is None or isinstance(o, rig.LOST_RACE)]
    assert (len(kept), len(lost)) == (1, 1), outcomes
    assert again is None
    assert sorted(harness.executions()) == sorted(EVERY)
    assert harness.turns() == [0, 1]
    last = await rig.last(harness.agent(), rig.THREAD)
    assert last is not None and last["call_0_3"] == "charged 50"


async def test_approve_always_for_the_thread_lets_the_next_such_call_through(
    harness: Harness,
) -> None:
    rig = harness.rig
    script = [[("send_email", {"to": "bob@example.com"})], "sent",
              [("send_email", {"to": "eve@x.org"})], "sent again"]  # fmt: skip
    agent = harness.agent(script)
    await rig.start(agent, rig.THREAD)
    [approval] = (await harness.pending()).values()
    await harness.decide(approval.id, Approve(always=Scope(kind="thread", with_args=False)))
    await rig.resume(agent, rig.THREAD)

    again = await rig.start(agent, rig.THREAD, "once more")

    assert rig.text(again).startswith("sent again")
    assert harness.executions() == ["send_email bob@example.com ", "send_email eve@x.org "]
    other = await rig.start(harness.agent(script), "t-2")
    assert rig.asked(other) == ["call_0_0"]  # another thread still asks


async def test_a_tool_that_asks_for_approval_itself_is_judged_by_the_policy(
    harness: Harness,
) -> None:
    rig = harness.rig

    result = await rig.start(harness.agent([[("read_secrets", {})], "done"]), rig.THREAD)

    # The policy allows read_*: the tool's own approval (requires_approval, needs_approval,
    # requires_confirmation) is answered by it.
    assert harness.said(result)["call_0_0"] == "the secrets"
    assert harness.executions() == ["read_secrets"]


async def test_the_resumer_resumes_the_thread_when_a_decision_is_taken_elsewhere(
    harness: Harness,
) -> None:
    rig, agent = harness.rig, harness.agent()
    await rig.start(agent, rig.THREAD)
    inbox = await asyncio.to_thread(rig.open_runs, harness.database)  # the server's store
    stop = agent.resumer().start(poll_interval=0.05)
    try:
        for approval in (await harness.pending()).values():
            await inbox.bridge.arun(
                inbox.gate.decide(approval.id, Approve(), actor="bob", roles=["finance"])
            )
        await until(harness.finished)
    finally:
        await asyncio.to_thread(stop)
        await asyncio.to_thread(inbox.close)
    assert harness.turns() == [0, 1]
    assert sorted(harness.executions()) == sorted(EVERY)


async def test_a_decision_taken_through_the_inbox_api_resumes_the_run(harness: Harness) -> None:
    rig, agent = harness.rig, harness.agent()
    await rig.start(agent, rig.THREAD)
    stop = agent.resumer().start(poll_interval=0.05)
    try:
        await decided_in_the_inbox(harness.database, rig.POLICY, harness.finished)
    finally:
        await asyncio.to_thread(stop)
    assert harness.turns() == [0, 1]
    assert sorted(harness.executions()) == sorted(EDITED)


# -- other processes -----------------------------------------------------------------------


@pytest.mark.heavy
async def test_a_thread_started_in_one_process_is_resumed_by_two_others_at_once(
    harness: Harness,
) -> None:
    rig = harness.rig
    await finished(harness.worker(rig.THREAD, "start"))
    assert len(await harness.pending()) == 2
    await harness.approve_all()

    both = [harness.worker(rig.THREAD, "resume"), harness.worker(rig.THREAD, "resume")]
    outcomes = [await asyncio.to_thread(p.communicate, timeout=HANG) for p in both]

    # One resumed the thread; the other lost the race to keep it (where the framework says so:
    # ConflictError), or found nothing waiting.
    ends = [(p.returncode, out.partition("\n")[0], err)
            for p, (out, err) in zip(both, outcomes, strict=True)]  # fmt: skip
    assert sum(said == "resumed" for code, said, _ in ends if code == 0) == 1, ends
    for code, said, err in ends:
        lost = bool(rig.LOST_RACE) and code == 1 and "ConflictError" in err
        assert (code == 0 and said in ("resumed", "nothing to resume")) or lost, ends
    if not rig.LOST_RACE:
        assert harness.turns() == [0, 1]  # the other called no model
    assert await harness.finished()
    assert sorted(harness.executions()) == sorted(EVERY)


@pytest.mark.heavy
async def test_a_worker_killed_inside_the_tool_leaves_the_call_unknown_and_not_run_again(
    harness: Harness,
) -> None:
    rig = harness.rig
    await rig.start(harness.agent(), rig.THREAD)
    await harness.approve_all()
    await killed_inside_the_tool(harness.worker(rig.THREAD, "resume", env={HANG_IN_TOOL: "1"}))

    await finished(harness.worker(rig.THREAD, "resume"))

    assert [e for e in harness.executions() if e.startswith("charge")] == ["charge 50"]
    last = await rig.last(harness.agent(), rig.THREAD)
    assert last is not None and "not run again" in last["call_0_3"]


@pytest.mark.heavy
async def test_an_idempotent_tool_whose_worker_was_killed_inside_it_runs_again_once(
    harness: Harness,
) -> None:
    # Not in `__all__`: only for a rig whose app marks `charge` idempotent where `IDEMPOTENT` is
    # set, which imports it by name.
    rig = harness.rig
    await rig.start(harness.agent(), rig.THREAD)
    await harness.approve_all()
    idempotent = {IDEMPOTENT: "1"}
    await killed_inside_the_tool(
        harness.worker(rig.THREAD, "resume", env={HANG_IN_TOOL: "1", **idempotent})
    )

    await finished(harness.worker(rig.THREAD, "resume", env=idempotent))

    charges = [e for e in harness.executions() if e.startswith("charge")]
    assert charges == ["charge 50", "charge 50"]  # the killed one, and its re-run
    last = await rig.last(harness.agent(), rig.THREAD)
    assert last is not None and last["call_0_3"] == "charged 50"
