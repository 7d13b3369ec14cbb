"""The tests every framework whose threads signoff keeps passes — Pydantic AI's message history,
the OpenAI Agents SDK's paused `RunState` — each through its own app (the test module's
``RIG``), on SQLite and PostgreSQL: a resume that finds nothing decided, a pause left to the
resume that holds the thread, and the mark a resume renews while a tool runs. A framework's test
file takes them in with ``from tests.integrations.shared_kept import *``."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from signoff import Approve
from signoff.integrations._threads import Hold
from tests.deadline import HANG
from tests.integrations.harness import EVERY, Harness

__all__ = [
    "test_a_resume_before_any_decision_leaves_the_pause_to_the_later_decision",
    "test_a_resume_renews_its_mark_while_a_tool_runs_and_ends_it",
    "test_a_streamed_run_pauses_and_resumes_the_same_way",
    "test_an_undecided_call_waits_on_and_the_decided_one_runs",
    "test_the_resumer_leaves_a_pause_waiting_while_another_process_resumes_the_thread",
]


async def test_an_undecided_call_waits_on_and_the_decided_one_runs(harness: Harness) -> None:
    rig, agent = harness.rig, harness.agent()
    await rig.start(agent, rig.THREAD)
    pending = await harness.pending()
    assert await rig.resume(agent, rig.THREAD) is None  # nothing decided: nothing goes on
    await harness.decide(pending['charge {"amount": 50}'].id, Approve())

    again = await rig.resume(agent, rig.THREAD)

    assert again is not None and rig.asked(again) == ["call_0_1"]  # asked again
    assert harness.executions() == ["read_file report.txt", "charge 50"]
    await harness.decide(
        pending['send_email {"body": "hi", "to": "bob@example.com"}'].id, Approve()
    )
    assert harness.said(await rig.resume(agent, rig.THREAD))["call_0_1"] == (
        "sent to bob@example.com")  # fmt: skip
    assert harness.executions() == ["read_file report.txt", "charge 50",
                                    "send_email bob@example.com hi"]  # fmt: skip
    assert harness.turns() == [0, 1]


async def test_a_streamed_run_pauses_and_resumes_the_same_way(harness: Harness) -> None:
    rig, agent = harness.rig, harness.agent()

    kinds = await rig.stream(agent, rig.THREAD)

    assert rig.STREAMED in kinds
    assert harness.executions() == ["read_file report.txt"]
    assert len(await harness.pending()) == 2
    await harness.approve_all()
    results = harness.said(await rig.resume(agent, rig.THREAD))
    assert results["call_0_3"] == "charged 50"
    assert harness.turns() == [0, 1]
    assert sorted(harness.executions()) == sorted(EVERY)


async def test_a_resume_before_any_decision_leaves_the_pause_to_the_later_decision(
    harness: Harness,
) -> None:
    rig, agent = harness.rig, harness.agent()
    await rig.start(agent, rig.THREAD)

    assert await rig.resume(agent, rig.THREAD) is None  # nothing decided: nothing goes on
    await harness.approve_all()

    # The early resume left no mark behind: the resumer goes on, and the approved calls run.
    pause = await harness.approved_pause()
    assert await resumed(harness, agent, pause) is True
    assert sorted(harness.executions()) == sorted(EVERY)
    found = await harness.runs.bridge.arun(harness.runs.store.list_approvals())
    assert await harness.runs.open_pause([a.id for a in found]) is None


async def test_the_resumer_leaves_a_pause_waiting_while_another_process_resumes_the_thread(
    harness: Harness,
) -> None:
    rig, agent = harness.rig, harness.agent()
    await rig.start(agent, rig.THREAD)
    await harness.approve_all()
    pause = await harness.approved_pause()
    other = await Hold.take(harness.runs, rig.ORIGIN, rig.THREAD, await harness.history())
    assert other is not None  # another process resumes the thread now

    assert await resumed(harness, agent, pause) is False

    # Not marked done with its calls unanswered: once the other lets go, it is continued once.
    await other.release()
    assert await resumed(harness, agent, pause) is True
    assert await resumed(harness, agent, pause) is False
    assert harness.turns() == [0, 1]
    assert sorted(harness.executions()) == sorted(EVERY)


async def test_a_resume_renews_its_mark_while_a_tool_runs_and_ends_it(harness: Harness) -> None:
    rig, lease = harness.rig, timedelta(seconds=1.5)  # renewed every half second
    seen: list[object] = []

    async def slow_export() -> str:
        """An export that outlasts a lease: it returns once its resume renewed the mark."""
        async with asyncio.timeout(HANG):
            while sum('"taken"' in e for e in await harness.history()) < 2:
                await asyncio.sleep(0.05)
        seen.append(await rig.resume(agents[0], rig.THREAD))
        return "exported"

    agents = [harness.agent([[("slow_export", {})], "done"], more=[slow_export], lease=lease)]
    await rig.start(agents[0], rig.THREAD)
    await harness.approve_all()

    result = await rig.resume(agents[0], rig.THREAD)

    assert result is not None and harness.said(result) == {"call_0_0": "exported"}
    assert seen == [None]  # a resume meanwhile found the thread held
    assert '"taken"' not in (await harness.history())[-1]


async def resumed(harness: Harness, agent: object, pause: str) -> bool:
    """What the resumer does with a ready pause (on the store's loop, as it works)."""
    resumer = agent.resumer()  # type: ignore[attr-defined]
    return bool(await harness.runs.bridge.arun(resumer.resume_ready(pause)))
