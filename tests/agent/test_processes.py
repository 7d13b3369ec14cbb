"""A run paused in one process is resumed in another, sharing only the database."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from signoff import Approve
from signoff.gate import Gate
from signoff.store import open_store
from tests.agent.resume_worker import POLICY, agent, script

WORKER = Path(__file__).with_name("resume_worker.py")


async def test_a_run_paused_here_is_resumed_by_another_process_and_the_call_runs_once(
    store_url: str, tmp_path: Path
):
    counter = tmp_path / "deletions.txt"
    counter.touch()
    async with open_store(store_url) as store:
        from signoff.agent import Runner

        model = script()
        runner = Runner(agent(counter, model), Gate(POLICY, store))
        events = [e async for e in runner.start("t1", "delete nginx-123")]
        assert events[-1].type == "paused"
        [held] = [e.data for e in events if e.type == "approval_requested"]
        await runner.gate.decide(str(held["approval_id"]), Approve(), actor="alice")

        worker = await asyncio.create_subprocess_exec(
            sys.executable, str(WORKER), store_url, events[0].run_id, str(counter),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        out, err = await worker.communicate()
        assert worker.returncode == 0, err.decode()
        report = json.loads(out)
        assert report["events"][0] == "resumed" and report["events"][-1] == "completed"
        assert report["model_calls"] == 1  # only the turn after the pause
        assert counter.read_text().splitlines() == ["nginx-123"]
        assert (await store.get_run(events[0].run_id)).status == "completed"
        assert len(model.requests) == 1  # this process's model was not asked again
