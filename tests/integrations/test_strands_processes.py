"""Strands sessions paused in one process and resumed by others (worker processes of the same
app, tests/integrations/worker.py): the session manager keeps the interrupted agent, signoff's
store the approvals, the pause and the ledger."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest

if importlib.util.find_spec("strands") is None:  # pragma: no cover
    pytest.skip("Strands Agents is not installed: pip install 'signoff[strands]'",
                allow_module_level=True)  # fmt: skip

from tests.deadline import HANG
from tests.integrations import st_app
from tests.integrations.harness import EVERY, Harness, finished

RIG = st_app


async def test_a_session_paused_in_one_process_is_resumed_by_another(harness: Harness) -> None:
    await finished(harness.worker(st_app.THREAD, "start"))
    assert harness.executions() == ["read_file report.txt"]
    await harness.approve_all()

    await finished(harness.worker(st_app.THREAD, "resume"))

    assert sorted(harness.executions()) == sorted(EVERY)
    assert harness.turns() == [0, 1]


async def test_two_processes_resuming_the_session_at_once_continue_it_once(
    harness: Harness,
) -> None:
    await finished(harness.worker(st_app.THREAD, "start"))
    await harness.approve_all()

    workers = [harness.worker(st_app.THREAD, "resume") for _ in range(2)]
    said = await asyncio.gather(*(asyncio.to_thread(w.communicate, timeout=HANG) for w in workers))

    assert all(w.returncode == 0 for w in workers), said
    assert sorted(out.splitlines()[0] for out, _ in said) == ["nothing to resume", "resumed"]
    assert sorted(harness.executions()) == sorted(EVERY)
    assert harness.turns() == [0, 1]
