"""Several processes on one database: races, wake-ups and a SIGKILL in the middle of deciding."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

from signoff import Policy, ToolCall
from signoff.gate import Gate
from signoff.store import SQLStore
from tests.deadline import HANG
from tests.gate.waiters import WatchedNotifier

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


async def test_a_decision_in_another_process_wakes_a_parked_waiter(postgres_url: str):
    from signoff.store import open_store

    async with open_store(postgres_url) as store:
        watched = WatchedNotifier()
        # Its safety poll is hourly: within HANG, only the notification can wake the waiter.
        gate = Gate(POLICY, store, notifier=watched, poll_interval=3600)
        [approval_id] = await held(gate)
        waiting = asyncio.create_task(gate.wait(approval_id, timeout=HANG))
        async with asyncio.timeout(HANG):
            await watched.parked.wait()  # listening, it found the approval undecided
        worker = await run_worker("decide", postgres_url, approval_id)
        _, err = await worker.communicate()
        assert worker.returncode == 0, err.decode()
        decided = await waiting
        assert decided.status == "approved" and decided.decided_by == "process-b"


async def test_sigkill_while_deciding_leaves_each_approval_whole_and_the_chain_intact(
    store: SQLStore,
):
    gate = Gate(POLICY, store)
    ids = await held(gate, 30)
    # It decides 20, one transaction each, then stops inside the 21st's, before it commits.
    worker = await run_worker("decide_all", store.url, "20")
    assert worker.stdout is not None
    async with asyncio.timeout(HANG):
        said = [(await worker.stdout.readline()).decode().split() for _ in range(21)]
    *committed, [word, deciding] = said
    assert word == "deciding"
    worker.send_signal(signal.SIGKILL)
    await worker.wait()
    approvals = await store.get_approvals(ids)
    decided = {a.id for a in approvals if a.status == "approved"}
    pending = {a.id for a in approvals if a.status == "pending"}
    assert decided == {approval_id for [approval_id] in committed}
    assert pending == set(ids) - decided and deciding in pending
    assert all(a.decision is not None and a.version == 2 for a in approvals if a.id in decided)
    logged = {e.subject for e in await store.audit_log(limit=10_000) if e.action == "decision"}
    assert logged == decided
    assert (await store.verify_audit()).ok


async def test_every_gate_on_a_postgresql_store_is_woken(postgres_url: str):
    from signoff.store import open_store

    async with open_store(postgres_url) as store:
        watched = [WatchedNotifier(), WatchedNotifier()]
        # Their safety polls are hourly: within HANG, only notifications can wake the waiters.
        first, second = (Gate(POLICY, store, notifier=w, poll_interval=3600) for w in watched)
        [one, two] = await held(first, 2)
        waiting = [asyncio.create_task(first.wait(one, timeout=HANG)),
                   asyncio.create_task(second.wait(two, timeout=HANG))]  # fmt: skip
        async with asyncio.timeout(HANG):
            for each in watched:
                await each.parked.wait()
        for approval_id in (one, two):
            worker = await run_worker("decide", postgres_url, approval_id)
            assert await worker.wait() == 0
        decided = await asyncio.gather(*waiting)
        assert [a.status for a in decided] == ["approved", "approved"]
        async with asyncio.timeout(HANG):  # and each gate heard of both decisions
            for each in watched:
                await each.hears(one)
                await each.hears(two)


async def test_a_sqlite_waiter_finds_another_processes_decision_by_polling(tmp_path: Path):
    from signoff.store import open_store

    url = f"sqlite:///{tmp_path / 'shared.db'}"
    async with open_store(url) as store:
        gate = Gate(POLICY, store, poll_interval=0.1)
        [approval_id] = await held(gate)
        waiting = asyncio.create_task(gate.wait(approval_id, timeout=HANG))
        worker = await run_worker("decide", url, approval_id)
        _, err = await worker.communicate()
        assert worker.returncode == 0, err.decode()
        decided = await waiting
        assert decided.decided_by == "process-b"
