"""What a `Resumer`'s resumes return reaches the app that started the runs: `on_resumed`, and a
wait per thread (`resumed` on any event loop, `wait` from synchronous code), the same for every
framework (tests/integrations/test_scenarios.py runs it through each)."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from signoff import Approve
from signoff.gate import Gate
from signoff.gate.external import ExternalRuns, Pause, Resumed, Resumer, connect
from signoff.gate.resumed import Outputs
from signoff.store import SQLStore
from tests.deadline import HANG
from tests.gate.test_external import ORIGIN, POLICY, approval_id, email


@pytest.fixture
async def runs(store: SQLStore) -> ExternalRuns:
    return ExternalRuns(Gate(POLICY, store), origin=ORIGIN)  # built in the test's loop


async def paused(runs: ExternalRuns, thread: str) -> tuple[Pause, str]:
    """A pause of `thread` waiting on one call, decided."""
    [held] = await runs.judge([email(f"{thread}-c")], thread=thread)
    pause = await runs.pause(thread=thread, approvals=[approval_id(held)], data={})
    await runs.gate.decide(approval_id(held), Approve(), actor="bob")
    return pause, approval_id(held)


async def test_a_resume_s_output_reaches_on_resumed_and_the_thread_s_waiter(runs: ExternalRuns):
    pause, _ = await paused(runs, "t1")
    called: list[Resumed] = []

    async def resume(claimed: Pause) -> Resumed:
        return Resumed(claimed.thread_id, {"answer": 42})

    resumer = Resumer(runs, resume, on_resumed=called.append)
    waiting = asyncio.ensure_future(resumer.resumed("t1"))
    await asyncio.sleep(0)  # the waiter is registered before the resume
    assert await resumer.resume_ready(pause.id) is True
    done = await asyncio.wait_for(waiting, HANG)
    assert done == Resumed("t1", {"answer": 42}, pause=pause.id, origin=runs.origin)
    assert called == [done]


async def test_an_output_that_came_before_the_app_asked_is_kept_for_it_once(runs: ExternalRuns):
    first, _ = await paused(runs, "t1")
    other, _ = await paused(runs, "t2")

    async def resume(claimed: Pause) -> Resumed:
        return Resumed(claimed.thread_id, f"{claimed.thread_id} done")

    resumer = Resumer(runs, resume)
    assert await resumer.resume_ready(first.id) and await resumer.resume_ready(other.id)
    assert (await resumer.resumed("t2")).output == "t2 done"
    assert (await resumer.resumed("t1")).output == "t1 done"
    with pytest.raises(TimeoutError):  # taken: the next is another resume, not this one again
        await resumer.resumed("t1", timeout=0)


async def test_a_pause_that_waits_on_or_a_run_past_it_delivers_nothing(runs: ExternalRuns):
    pause, _ = await paused(runs, "t1")
    answers: list[Any] = [False, None]
    called: list[Resumed] = []

    async def resume(_claimed: Pause) -> Any:
        return answers.pop(0)

    resumer = Resumer(runs, resume, on_resumed=called.append)
    assert await resumer.resume_ready(pause.id) is False  # waits on
    assert await resumer.resume_ready(pause.id) is True  # the run went on elsewhere
    assert called == []
    with pytest.raises(TimeoutError):
        await resumer.resumed("t1", timeout=0)


async def test_a_failing_callback_is_logged_and_the_pause_stays_done(
    runs: ExternalRuns, caplog: pytest.LogCaptureFixture
):
    pause, _ = await paused(runs, "t1")

    async def resume(claimed: Pause) -> Resumed:
        return Resumed(claimed.thread_id, "ok")

    async def broken(_resumed: Resumed) -> None:
        raise RuntimeError("the app's bug")

    resumer = Resumer(runs, resume, on_resumed=broken)
    with caplog.at_level(logging.ERROR, logger="signoff.external"):
        assert await resumer.resume_ready(pause.id) is True
    assert "on_resumed failed" in caplog.text
    stored = await runs.store.get_pause(pause.id)
    assert stored is not None and stored.status == "done"
    assert (await resumer.resumed("t1")).output == "ok"  # the waiter still gets it


def test_a_synchronous_app_waits_for_its_thread_while_the_resumer_works(tmp_path: Path):
    runs = connect(POLICY, origin="script", database=f"sqlite:///{tmp_path / 's.db'}")
    on_bridge: list[bool] = []

    def note(resumed: Resumed) -> None:
        on_bridge.append(threading.current_thread() is not threading.main_thread())

    async def resume(claimed: Pause) -> Resumed:
        return Resumed(claimed.thread_id, "answered")

    try:
        [held] = runs.run(runs.judge([email()], thread="t1"))
        runs.run(runs.pause(thread="t1", approvals=[approval_id(held)], data={}))
        resumer = Resumer(runs, resume, on_resumed=note)
        stop = resumer.start(poll_interval=0.01)
        try:
            with pytest.raises(TimeoutError):  # undecided: nothing comes
                resumer.wait("t1", timeout=0)
            runs.run(runs.decide({approval_id(held): Approve()}, actor="bob"))
            assert resumer.wait("t1", timeout=HANG).output == "answered"
        finally:
            stop()
        assert on_bridge == [True]  # the callback ran on the resumer's own loop
    finally:
        runs.close()


def test_a_waiter_that_gave_up_does_not_swallow_the_output():
    outputs = Outputs()
    gave_up = outputs.take("t1")
    outputs.put(Resumed("t1", "first"))  # handed to the waiter just as it gives up
    outputs.forget("t1", gave_up)
    assert outputs.take("t1").result(0).output == "first"
    cancelled = outputs.take("t1")
    cancelled.cancel()
    outputs.put(Resumed("t1", "second"))  # nobody takes it: kept
    assert outputs.take("t1").result(0).output == "second"


async def test_an_output_kept_is_returned_whatever_the_timeout_and_a_timeout_loses_none(
    runs: ExternalRuns,
):
    async def resume(claimed: Pause) -> Resumed:
        return Resumed(claimed.thread_id, "kept")

    resumer = Resumer(runs, resume)
    pause, _ = await paused(runs, "t1")
    assert await resumer.resume_ready(pause.id)
    assert (await resumer.resumed("t1", timeout=0)).output == "kept"  # there already: no wait

    waiting = asyncio.ensure_future(resumer.resumed("t2"))
    await asyncio.sleep(0)  # registered
    waiting.cancel()  # the app gave up
    with pytest.raises(asyncio.CancelledError):
        await waiting
    later, _ = await paused(runs, "t2")
    assert await resumer.resume_ready(later.id)
    assert (await resumer.resumed("t2", timeout=0)).output == "kept"  # not handed to the gone


async def test_the_app_reads_what_its_thread_waits_on_and_nothing_of_other_threads_or_origins(
    runs: ExternalRuns,
):
    [first, second] = await runs.judge([email("c1"), email("c2", to="b@example.com")],
                                       thread="t1")  # fmt: skip
    await runs.judge([email("c3")], thread="t2")
    other = ExternalRuns(runs.gate, origin="google-adk")
    await other.judge([email("c4")], thread="t1")
    await runs.gate.decide(approval_id(first), Approve(), actor="bob")

    waiting = await runs.waiting("t1")

    assert [a.id for a in waiting] == [approval_id(second)]
    assert (waiting[0].origin, waiting[0].thread_id, waiting[0].call.id) == (ORIGIN, "t1", "c2")
