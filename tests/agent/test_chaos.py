"""Chaos: workers are SIGKILLed while runs pause, get decided and resume — at every point of
a run's life where a death could lose or repeat something (`POINTS`), each reached for sure
(the worker stops there and says so) rather than raced for with a timer, so a loaded machine
tests exactly what an idle one does.

Checked from the store and the tools' side file afterwards: no decided approval lost, the
at-most-once tool never ran twice for one call, the idempotent one repeated only under the same
key, and every run finished — with any call whose outcome a death left unknown reported as such.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from signoff.store import open_store
from signoff.types import Approval
from tests.agent.chaos_worker import POINTS

WORKER = Path(__file__).with_name("chaos_worker.py")
# How many times each kill point is hit, in rounds that visit every point in a shuffled order:
# every round costs about a run per point, in about a second (more under CI, which runs the suite
# on the same machine but without anyone waiting on it).
ROUNDS = 12 if os.environ.get("CI") else 4
HANG = 120  # seconds: a worker that takes this long to reach its point is stuck, not slow


async def torment(url: str, side: Path, rounds: int, *extra: str) -> Counter[str]:
    """Kill a worker at every kill point, `rounds` times each in shuffled order: each worker runs
    until it reaches the point it was given, and is SIGKILLed there. Then let one fresh worker
    finish everything. Returns how often each point was reached (all of them, every round,
    or the test fails here)."""
    rng = random.Random(20261122)
    errors = side.with_name("workers.log")
    with errors.open("wb") as log:
        zygote = await asyncio.create_subprocess_exec(
            sys.executable, str(WORKER), url, str(side), *extra,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
        )  # fmt: skip
    assert zygote.stdin is not None and zygote.stdout is not None
    reached: Counter[str] = Counter()

    async def command(line: str) -> list[str]:
        assert zygote.stdin is not None and zygote.stdout is not None
        zygote.stdin.write(f"{line}\n".encode())
        await zygote.stdin.drain()
        async with asyncio.timeout(HANG):
            said = (await zygote.stdout.readline()).decode().split()
        assert said[:1] != ["crashed"], errors.read_text()
        return said

    try:
        for _ in range(rounds):
            points = list(POINTS)
            rng.shuffle(points)
            for point in points:
                said = await command(point)
                assert said[:2] == ["at", point], f"sent to {point}, a worker said {said}"
                with contextlib.suppress(ProcessLookupError):  # it died there already
                    os.kill(int(said[2]), signal.SIGKILL)
                reached[point] += 1
        assert await command("finish") == ["all", "done"]
    finally:
        zygote.kill()
        await zygote.wait()
    return reached


async def violations(url: str, side: Path) -> list[str]:
    """What the store and the side file say went wrong."""
    found: list[str] = []
    executions = Counter(tuple(line.split()) for line in side.read_text().splitlines())
    probe_keys: dict[str, set[str]] = {}
    for (kind, key), count in executions.items():
        if kind == "charge" and count > 1:
            found.append(f"charge {key} ran {count} times")
        if kind == "probe":  # keys are run:turn:call; one call must keep one key
            run_id, _turn, call_id = key.split(":")
            probe_keys.setdefault(f"{run_id}:{call_id}", set()).add(key)
    found += [
        f"probe {call} ran under keys {sorted(keys)}"
        for call, keys in probe_keys.items()
        if len(keys) > 1
    ]
    for run_id, status, messages, approvals in await runs(url):
        if status != "completed":
            found.append(f"run {run_id} ended {status}")
        results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
        for approval in approvals:
            if approval.status != "approved":
                found.append(f"approval {approval.id} of run {run_id} ended {approval.status}")
            elif approval.call.id not in results:
                found.append(f"decided approval {approval.id} has no result in run {run_id}")
        charged = results.get("c")
        if charged != "charged" and json.loads(charged or "{}").get("status") != "unknown":
            found.append(f"run {run_id}: unexpected charge result {charged!r}")
    return found


async def runs(url: str) -> list[tuple[str, str, list[dict[str, Any]], list[Approval]]]:
    """Every run: its id, status, messages and approvals."""
    from sqlalchemy import select

    from signoff.store import schema

    async with open_store(url) as store:
        rows = await store.run(lambda c: c.execute(select(schema.runs)).all(), write=False)
        return [
            (
                row.id,
                row.status,
                await store.run_messages(row.id),
                await store.list_approvals(run_id=row.id),
            )
            for row in rows
        ]


async def test_killed_workers_never_lose_a_decision_or_run_a_call_twice(tmp_path: Path):
    url, side = f"sqlite:///{tmp_path / 'chaos.db'}", tmp_path / "executions.txt"
    side.touch()
    reached = await torment(url, side, ROUNDS)
    assert reached == dict.fromkeys(POINTS, ROUNDS)
    assert await violations(url, side) == []
    # A death between a charge's start and its finish leaves its ledger entry started: the
    # run reports that outcome unknown and never re-runs it. Deaths at the charge's own points
    # always do; others may too (a probe re-run alongside the charge).
    stored, entries = await runs(url), await ledger(url)
    unknown = [run_id for run_id, _, m, _ in stored if "unknown" in tool_result(m, "c")]
    left = [key for key, entry in entries.items() if entry == ("charge", "started")]
    assert len(unknown) == len(left) >= reached["charge-started"] + reached["charge-ran"]
    # Every other charge ran exactly once; the probes ran once each, and again (under the same
    # key, checked above) where a death left them unfinished.
    executed = Counter(tuple(line.split()) for line in side.read_text().splitlines())
    for key, (tool, status) in entries.items():
        if status == "finished":
            assert executed[tool, key] >= 1 and (tool == "probe" or executed[tool, key] == 1)
    probes = sum(count for (kind, _), count in executed.items() if kind == "probe")
    assert probes >= len(stored) + reached["probe-ran"]


async def ledger(url: str) -> dict[str, tuple[str, str]]:
    """The ledger: each key's tool and status."""
    from sqlalchemy import select

    from signoff.store import schema

    async with open_store(url) as store:
        query = select(schema.ledger.c.key, schema.ledger.c.tool, schema.ledger.c.status)
        rows = await store.run(lambda c: c.execute(query).all(), write=False)
        return {row.key: (row.tool, row.status) for row in rows}


async def test_the_harness_catches_a_runner_that_ignores_its_ledger(tmp_path: Path):
    url, side = f"sqlite:///{tmp_path / 'chaos.db'}", tmp_path / "executions.txt"
    side.touch()
    # Deaths after a charge ran (before its ledger entry finished, or after) make the buggy
    # runner charge again when the run is resumed.
    await torment(url, side, 1, "--plant-bug")
    found = await violations(url, side)
    assert any(p.startswith("charge") and "ran 2 times" in p for p in found), found


def tool_result(messages: list[dict[str, Any]], call_id: str) -> str:
    [content] = [m["content"] for m in messages if m.get("tool_call_id") == call_id]
    return str(content)
