"""A worker for the chaos test: starts, decides and resumes runs until every run is finished.

    python chaos_worker.py URL SIDE_FILE RUNS [--plant-bug] [--zygote]

With ``--zygote`` it imports everything once and then forks a fresh worker for every ``spawn``
line on its standard input, printing ``ready PID`` from the child: hundreds of workers can be
killed in a minute without paying Python's start-up each time.

It is killed with SIGKILL at random points and started again. Its tools write every execution to
SIDE_FILE (`charge KEY` and `probe KEY` lines), so the test can count them afterwards. With
`--plant-bug` the runner ignores the ledger, and the test must see the violations that causes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
import uuid
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from signoff import Approve, ConflictError, Policy, tool
from signoff.agent import Agent, Message, ModelTurn, Runner, ToolSpec
from signoff.agent.tools import idempotency_key
from signoff.gate import Gate
from signoff.store import open_store
from signoff.types import ToolCall

POLICY = Policy.from_dict({"rules": [{"allow": "probe"}, {"ask": "charge"}]})
LEASE = timedelta(milliseconds=300)


class Script:
    """A deterministic model: first a probe and a charge, then a final answer."""

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        if any(m.role == "tool" for m in messages[-3:]):
            return ModelTurn(text="done")
        return ModelTurn(
            tool_calls=(
                ToolCall(id="p", name="probe", args={}),
                ToolCall(id="c", name="charge", args={"amount": 5}),
            )
        )


def tools(side: Path) -> list[object]:
    def record(kind: str) -> None:
        with side.open("a") as file:
            file.write(f"{kind} {idempotency_key()}\n")
            file.flush()
            os.fsync(file.fileno())

    @tool(idempotent=True)
    def probe() -> str:
        """Read something (safe to repeat with the same key)."""
        record("probe")
        return "ok"

    @tool
    def charge(amount: int) -> str:
        """Charge a card: must never run twice. It takes a moment, as real charges do."""
        record("charge")
        time.sleep(float(os.environ.get("CHAOS_CHARGE_SECONDS", "0.005")))
        return "charged"

    return [probe, charge]


async def main(url: str, side: Path, runs: int, plant_bug: bool) -> None:
    async with open_store(url) as store:
        gate = Gate(POLICY, store)
        agent = Agent(name="pay", model=Script(), tools=tools(side))  # type: ignore[arg-type]
        runner = Runner(agent, gate, lease=LEASE)
        if plant_bug:
            # The bug the harness must catch: every attempt runs the tool, ledger or not (each
            # attempt gets a key of its own, so no earlier start is ever found).
            real_start = store.ledger_start

            async def ledgerless_start(key: str, **kwargs: Any) -> Any:
                return await real_start(f"{key}:{uuid.uuid4()}", **kwargs)

            store.ledger_start = ledgerless_start  # type: ignore[method-assign]
        print(f"ready {os.getpid()}", flush=True)
        from sqlalchemy import select

        from signoff.store import schema

        while True:
            rows = await store.run(
                lambda c: c.execute(select(schema.runs.c.id, schema.runs.c.status)).all(),
                write=False,
            )
            if len(rows) < runs:
                async for _ in runner.start(f"thread-{len(rows)}", "pay 5"):
                    pass
                continue
            for approval in await store.list_approvals(status="pending"):
                with contextlib.suppress(ConflictError):  # another worker decided it first
                    await gate.decide(approval.id, Approve(), actor="chaos")
            unfinished = [r.id for r in rows if r.status in ("running", "paused")]
            if not unfinished:
                print("all done", flush=True)
                return
            for run_id in unfinished:
                try:
                    async for _ in runner.resume(run_id):
                        pass
                except ConflictError:
                    await asyncio.sleep(0.05)  # held by a live worker, or still waiting


def zygote(url: str, side: Path, runs: int, plant_bug: bool) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped as they die
    for line in sys.stdin:
        if line.strip() != "spawn":
            continue
        if os.fork() == 0:
            try:
                asyncio.run(main(url, side, runs, plant_bug))
            finally:
                os._exit(0)


if __name__ == "__main__":
    url, side, runs = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    if "--zygote" in sys.argv:
        zygote(url, side, runs, "--plant-bug" in sys.argv)
    else:
        asyncio.run(main(url, side, runs, "--plant-bug" in sys.argv))
