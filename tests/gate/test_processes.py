"""Several processes on one database: races, wake-ups and a SIGKILL in the middle of deciding."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from signoff import Policy, ToolCall
from signoff.gate import Gate
from signoff.store import SQLStore

WORKER = Path(__file__).with_name("worker.py")
POLICY = Policy.from_dict({"default": "ask"})


async def run_worker(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, str(WORKER), *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


async def held(gate: Gate, count: int = 1) -> list[str]:
    outcomes = await gate.check([ToolCall(id=f"c{i}", name="send_email") for i in range(count)])
    return [o.approval.id for o in outcomes if o.approval is not None]


async def test_concurrent_decisions_from_two_processes_let_exactly_one_win(store: SQLStore):
    gate = Gate(POLICY, store)
    [approval_id] = await held(gate)
    workers = [await run_worker("race", store.url, approval_id, tag, "10") for tag in ("a", "b")]
    outputs = [await w.communicate() for w in workers]
    assert [w.returncode for w in workers] == [0, 0], [err.decode() for _, err in outputs]
    reports = [json.loads(out) for out, _ in outputs]
    assert [r["errors"] for r in reports] == [[], []]
    stored = await store.get_approval(approval_id)
    decisions = [e for e in await store.audit_log() if e.action == "decision"]
    assert len(decisions) == 1
    assert decisions[0].actor == stored.decided_by
    # Every attempt either won, repeated the winning decision, or got a conflict.
    assert sum(r["ok"] + r["conflicts"] for r in reports) == 20
    assert (await store.verify_audit()).ok


async def test_a_decision_in_another_process_wakes_a_waiter_within_a_second(postgres_url: str):
    from signoff.store import open_store

    async with open_store(postgres_url) as store:
        gate = Gate(POLICY, store)
        [approval_id] = await held(gate)
        waiting = asyncio.create_task(gate.wait(approval_id, timeout=30))
        await asyncio.sleep(0.2)  # let the waiter subscribe and start listening
        worker = await run_worker("decide", postgres_url, approval_id)
        decided = await waiting
        woke_at = time.time()
        out, err = await worker.communicate()
        assert worker.returncode == 0, err.decode()
        committed_at = json.loads(out)["committed_at"]
        assert decided.status == "approved" and decided.decided_by == "process-b"
        assert woke_at - committed_at < 1.0


async def test_sigkill_while_deciding_leaves_each_approval_whole_and_the_chain_intact(
    store: SQLStore,
):
    gate = Gate(POLICY, store)
    ids = await held(gate, 300)
    worker = await run_worker("decide_all", store.url)
    assert worker.stdout is not None
    for _ in range(20):  # let it decide a few, then kill it mid-flight
        await asyncio.wait_for(worker.stdout.readline(), 30)
    worker.send_signal(signal.SIGKILL)
    await worker.wait()
    approvals = await store.get_approvals(ids)
    decided = {a.id for a in approvals if a.status == "approved"}
    pending = {a.id for a in approvals if a.status == "pending"}
    assert decided | pending == set(ids)
    assert 20 <= len(decided) < 300
    assert all(a.decision is not None and a.version == 2 for a in approvals if a.id in decided)
    logged = {e.subject for e in await store.audit_log(limit=10_000) if e.action == "decision"}
    assert logged == decided
    assert (await store.verify_audit()).ok


async def test_every_gate_on_a_postgresql_store_is_woken(postgres_url: str):
    from signoff.store import open_store

    async with open_store(postgres_url) as store:
        first, second = Gate(POLICY, store), Gate(POLICY, store)
        [one, two] = await held(first, 2)
        waiting = [asyncio.create_task(first.wait(one, timeout=30)),
                   asyncio.create_task(second.wait(two, timeout=30))]  # fmt: skip
        await asyncio.sleep(0.2)
        started = time.monotonic()
        for approval_id in (one, two):
            worker = await run_worker("decide", postgres_url, approval_id)
            assert await worker.wait() == 0
        await asyncio.gather(*waiting)
        assert time.monotonic() - started < 4  # not the 5 s safety poll


async def test_a_sqlite_waiter_finds_another_processes_decision_by_polling(tmp_path: Path):
    from signoff.store import open_store

    url = f"sqlite:///{tmp_path / 'shared.db'}"
    async with open_store(url) as store:
        gate = Gate(POLICY, store, poll_interval=0.1)
        [approval_id] = await held(gate)
        waiting = asyncio.create_task(gate.wait(approval_id, timeout=30))
        worker = await run_worker("decide", url, approval_id)
        _, err = await worker.communicate()
        assert worker.returncode == 0, err.decode()
        decided = await asyncio.wait_for(waiting, 5)
        assert decided.decided_by == "process-b"
