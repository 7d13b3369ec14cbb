"""A worker for the chaos test, which kills it at chosen points of a run's life.

    python chaos_worker.py URL SIDE_FILE [--plant-bug]

It imports everything once, then reads commands on its standard input and forks a fresh worker
for each, so that hundreds of workers cost no Python start-up each:

- ``POINT`` (one of `POINTS`): the worker decides and resumes whatever is unfinished, starting
  new runs when nothing is, until it reaches POINT; there it prints ``at POINT PID`` and stops
  itself (SIGSTOP), frozen exactly there for the test to SIGKILL. It prints ``missed POINT`` if
  two fresh runs went by without reaching it, and ``crashed`` if it failed.
- ``finish``: the worker brings every run to its end and prints ``all done``.

Only one worker lives at a time. Its tools write every execution to SIDE_FILE (``charge KEY``
and ``probe KEY`` lines) for the test to count. With ``--plant-bug`` the runner ignores its
ledger, and the test must see the violations that causes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import traceback
import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from signoff import Approve, ConflictError, Policy, tool
from signoff.agent import Agent, Message, ModelTurn, Runner, ToolSpec
from signoff.agent.tools import idempotency_key
from signoff.gate import Gate
from signoff.store import SQLStore, open_store
from signoff.store.base import DecisionPlan, Moment
from signoff.types import Approval, ToolCall

POLICY = Policy.from_dict({"rules": [{"allow": "probe"}, {"ask": "charge"}]})
# One worker lives at a time, and a live worker's writes are checked by owner, not by the clock:
# a short lease only lets the next worker take over a dead one's run at once.
LEASE = timedelta(milliseconds=20)

POINTS = {
    "holding": "inside the transaction that holds the turn's calls, before it commits",
    "probe-started": "the probe's ledger entry is started; the probe has not run",
    "probe-ran": "the probe ran; its ledger entry is not finished",
    "probe-finished": "the probe's ledger entry is finished; the run is not paused yet",
    "deciding": "inside the transaction that approves the charge, before it commits",
    "decided": "the charge is approved; nobody has resumed the run",
    "resume-claimed": "the run is claimed for resuming; nothing of it has run",
    "charge-starting": "inside the transaction that starts the charge's ledger entry",
    "charge-started": "the charge's ledger entry is started; the charge has not run",
    "charge-ran": "the charge ran; its ledger entry is not finished",
    "charge-finished": "the charge's ledger entry is finished; its result is not in the run",
}
"""Where a worker can be made to die, in the order a run passes them, and what is true there."""


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


class Target:
    """The point this worker dies at: the first time it gets there, it says so and stops."""

    def __init__(self, point: str | None) -> None:
        self.point = point

    def reach(self, point: str) -> None:
        if point == self.point:
            print(f"at {point} {os.getpid()}", flush=True)
            # Frozen here, every thread with it, until the test's SIGKILL lands. A stop sent
            # from a thread other than the main one does not always hold on every kernel: the
            # thread that got here waits all the same, and never goes past the point.
            os.kill(os.getpid(), signal.SIGSTOP)
            threading.Event().wait()


def tools(side: Path, target: Target) -> list[object]:
    def record(kind: str) -> None:
        with side.open("a") as file:
            file.write(f"{kind} {idempotency_key()}\n")
            file.flush()
            os.fsync(file.fileno())

    @tool(idempotent=True)
    def probe() -> str:
        """Read something (safe to repeat with the same key)."""
        record("probe")
        target.reach("probe-ran")
        return "ok"

    @tool
    def charge(amount: int) -> str:
        """Charge a card: must never run twice."""
        record("charge")
        target.reach("charge-ran")
        return "charged"

    return [probe, charge]


def instrument(store: SQLStore, target: Target, *, plant_bug: bool) -> None:
    """Have the store tell `target` where the worker is: before, inside and after the
    transactions that matter."""
    hold, decide, resume_turn = store.hold, store.decide, store.resume_turn
    ledger_start, ledger_finish = store.ledger_start, store.ledger_finish

    def inside(point: str, plan: Callable[..., Any]) -> Callable[..., Any]:
        def planned(*args: Any) -> Any:  # on the store's thread, the transaction open
            made = plan(*args)
            target.reach(point)
            return made

        return planned

    async def held(tools: Any, plan: Callable[..., Any], **kwargs: Any) -> Any:
        return await hold(tools, inside("holding", plan), **kwargs)

    async def decided(
        approval_ids: Sequence[str], plan: Callable[[list[Approval], Moment], DecisionPlan]
    ) -> DecisionPlan:
        made = await decide(approval_ids, inside("deciding", plan))
        target.reach("decided")
        return made

    async def resumed(run_id: str, **kwargs: Any) -> Any:
        state = await resume_turn(run_id, **kwargs)
        if state is not None:
            target.reach("resume-claimed")
        return state

    async def started(key: str, *, tool: str, then: Any = None, **kwargs: Any) -> Any:
        if plant_bug:
            # The bug the harness must catch: every attempt runs the tool, ledger or not (each
            # attempt gets a key of its own, so no earlier start is ever found).
            key = f"{key}:{uuid.uuid4()}"
        if tool == "charge" and then is not None:
            then = inside("charge-starting", then)
        previous, stored = await ledger_start(key, tool=tool, then=then, **kwargs)
        if previous is None:
            target.reach(f"{tool}-started")
        return previous, stored

    async def finished(key: str, **kwargs: Any) -> Any:
        stored = await ledger_finish(key, **kwargs)
        # The probe runs unasked, keyed run:turn:call; the charge is keyed by its approval.
        target.reach("probe-finished" if key.endswith(":p") else "charge-finished")
        return stored

    store.hold = held  # type: ignore[method-assign]
    store.decide = decided  # type: ignore[method-assign]
    store.resume_turn = resumed  # type: ignore[method-assign]
    store.ledger_start = started  # type: ignore[method-assign]
    store.ledger_finish = finished  # type: ignore[method-assign]


async def work(url: str, side: Path, target: Target, *, plant_bug: bool, runs: int = 2) -> str:
    """Work until the target is reached (then never return), or until everything is finished
    when there is none; start at most `runs` new runs. Returns what to tell the test."""
    from sqlalchemy import select

    from signoff.store import schema

    point = target.point
    async with open_store(url) as store:
        instrument(store, target, plant_bug=plant_bug)
        gate = Gate(POLICY, store)
        agent = Agent(name="pay", model=Script(), tools=tools(side, target))  # type: ignore[arg-type]
        runner = Runner(agent, gate, lease=LEASE)
        fresh = 0
        while True:
            rows = await store.run(
                lambda c: c.execute(select(schema.runs.c.id, schema.runs.c.status)).all(),
                write=False,
            )
            unfinished = [r.id for r in rows if r.status in ("running", "paused")]
            if not unfinished:
                if fresh == runs:
                    return "all done" if point is None else f"missed {point}"
                fresh += 1
                async for _ in runner.start(f"thread-{len(rows)}", "pay 5"):
                    pass
                continue
            for approval in await store.list_approvals(status="pending"):
                await gate.decide(approval.id, Approve(), actor="chaos")
            for run_id in unfinished:
                try:
                    async for _ in runner.resume(run_id):
                        pass
                except ConflictError:
                    # The dead worker's lease has yet to run out (it is short).
                    await asyncio.sleep(0.005)


def serve(url: str, side: Path, plant_bug: bool) -> None:
    """Fork a worker for every command on standard input."""
    # One whole run on a scratch database first: what the first run imports and builds is
    # then every worker's from the start.
    scratch = side.with_name("warm-up")
    scratch.mkdir(exist_ok=True)
    asyncio.run(work(f"sqlite:///{scratch / 'warm.db'}", scratch / "side", Target(None),
                     plant_bug=False, runs=1))  # fmt: skip
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped as they die
    for line in sys.stdin:
        command = line.strip()
        if command not in (*POINTS, "finish") or os.fork() != 0:
            continue
        # A group of its own: were the zygote's group orphaned (as it may be without a
        # terminal), a stopped member would get SIGHUP when any other member exits.
        os.setpgid(0, 0)
        said = "crashed"
        try:
            if command == "finish":
                said = asyncio.run(work(url, side, Target(None), plant_bug=plant_bug, runs=0))
            else:
                said = asyncio.run(work(url, side, Target(command), plant_bug=plant_bug))
        except BaseException:
            traceback.print_exc()
        finally:
            with contextlib.suppress(BaseException):
                print(said, flush=True)
            os._exit(0)


if __name__ == "__main__":
    serve(sys.argv[1], Path(sys.argv[2]), "--plant-bug" in sys.argv)
