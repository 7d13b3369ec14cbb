"""The promise's cost (issue 49): what signoff adds to an allowed call of each framework — a
read-only one and any other — on SQLite and on PostgreSQL, against the same agent without
signoff in the same run; and what a held call's pause and resume cost against the framework's
own durable approval path, at N = 10 and 100 messages. One table, each figure marked goal met or
missed.

Run it with ``make bench`` (or ``python bench/overhead.py``). The frameworks are the cases of
`bench/cases` (one module each; adding a framework is one more). For each store, signoff is
opened three times on one database, as the integrations' docs open it (`connect`): under a policy
that allows ``lookup`` marked ``idempotent: true`` (a read: the relaxed claim), under one that
allows it unmarked (any other call: its claim waits for the disk), and under one that asks about
``send_report``. On PostgreSQL (``SIGNOFF_BENCH_POSTGRES``, by default
``postgresql://postgres@127.0.0.1:5432/test``: a fresh database, dropped afterwards; skipped,
and said so, when unreachable) only signoff's store moves: what each framework keeps of its own
(a checkpointer, a session service, a table of the app's) stays in one SQLite file on both
sides, so the difference is signoff's.

**An allowed call**: one run on a new thread — the model calls ``lookup``, it runs, the model
answers. Plain, through signoff as a read, through signoff as another call: the three take
turns, each cycle in another order. The overhead is the difference of the p50s.

**A held call** (SQLite): on a thread of N messages written before, ``send_report`` paused and
resumed the framework's own way (its own store, as `bench/frameworks.py` describes each) and
signoff's (the approval decided with ``gate.decide`` in between, not timed). The ratio is the
p50 of signoff's pause + resume over the p50 of the framework's. A framework with no durable
approval path of its own (AdalFlow) has no ratio: the table says why.

Goals: a read ≤ +1 ms on SQLite, ≤ +2 ms on PostgreSQL; any other allowed call ≤ +2 ms and ≤ +3
ms; a held call's pause and resume ≤ 1.5x the framework's own at N = 10, ≤ 1.0x from N = 100.
Every step checks what it measured (the tool ran once, the model's reply came back). Nothing
here is a test: the figures depend on the machine and its load. ``bench/results/overhead.json``
keeps them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import sqlite3
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from agents import set_tracing_disabled
from rich.table import Table

from _common import Latency, Target, environment, latency, ms, print_targets, scratch_postgres
from _common import wide_console as console_of
from cases import Case, cases
from frameworks import ASK, Kept, Sides, held_samples, timed
from signoff import Policy, __version__
from signoff.gate.external import ExternalRuns, connect

SEED: Final = 49
ALLOWED_CYCLES: Final = 100
HELD_CYCLES: Final = 20
SIZES: Final = (10, 100)
WARMUP: Final = 5
READ: Final = Policy.from_yaml("default: deny\nrules:\n  - allow: lookup\n    idempotent: true\n")
WRITE: Final = Policy.from_yaml("default: deny\nrules:\n  - allow: lookup\n")
GOALS_MS: Final = {("sqlite", "read"): 1.0, ("sqlite", "other"): 2.0,
                   ("postgresql", "read"): 2.0, ("postgresql", "other"): 3.0}  # fmt: skip
"""The most an allowed call may add, by store and kind of call (p50, ms)."""
HELD_GOALS: Final = {10: 1.5, 100: 1.0}
"""The most a held call's pause and resume may take, as a multiple of the framework's own."""
RESULTS: Final = Path(__file__).parent / "results" / "overhead.json"


@dataclass
class Measured:
    """One framework's figures."""

    allowed: dict[str, dict[str, Latency]] = field(default_factory=dict)
    """By store: the plain agent's, signoff's on a read, signoff's on another call."""
    held: dict[int, dict[str, Latency]] = field(default_factory=dict)
    """By N: the framework's own pause + resume and signoff's (SQLite)."""
    lacks: str | None = None
    unmeasured: str | None = None


@dataclass(frozen=True)
class Opened:
    """signoff on one store, three ways (a read allowed, another call allowed, asking)."""

    store: str
    read: ExternalRuns
    other: ExternalRuns
    ask: ExternalRuns


@contextlib.asynccontextmanager
async def opened(store: str, database: str) -> AsyncIterator[Opened]:
    ways = [await asyncio.to_thread(connect, policy, origin=f"bench-{name}", database=database)
            for name, policy in (("read", READ), ("other", WRITE), ("ask", ASK))]  # fmt: skip
    try:
        yield Opened(store, *ways)
    finally:
        for runs in ways:
            await asyncio.to_thread(runs.close)


async def allowed(read: Sides, other: Sides) -> dict[str, Latency]:
    """The plain agent, signoff on a read and on another call, in turns: the time each takes,
    and the processor time the process spends on it (``<name> cpu``: every thread's, the
    store's included; what a busy machine does not inflate, unlike the time)."""
    steps = [("plain", read.plain_allowed), ("read", read.signoff_allowed),
             ("other", other.signoff_allowed)]  # fmt: skip
    samples: dict[str, list[float]] = {}
    for cycle in range(WARMUP + ALLOWED_CYCLES):
        shift = cycle % len(steps)
        for name, step in steps[shift:] + steps[:shift]:
            cpu = time.process_time()
            took = await timed(step, f"allowed-{name}-{uuid.uuid4().hex}")
            cpu = time.process_time() - cpu
            if cycle >= WARMUP:
                samples.setdefault(name, []).append(took)
                samples.setdefault(f"{name} cpu", []).append(cpu)
    return {name: latency(values) for name, values in samples.items()}


async def held(sides: Sides, rng: random.Random) -> dict[int, dict[str, Latency]]:
    """Pause + resume, the framework's own way and signoff's, at each N."""
    out: dict[int, dict[str, Latency]] = {}
    for size in SIZES:
        found = await held_samples(sides, size, HELD_CYCLES, rng)
        own = [p + r for p, r in zip(found["own pause"], found["own resume"], strict=True)]
        ours = [p + r for p, r in zip(found["signoff pause"], found["signoff resume"],
                                      strict=True)]  # fmt: skip
        out[size] = {"own": latency(own), "signoff": latency(ours)}
    return out


async def measure(case: Case, on: Opened, kept: Kept, rng: random.Random,
                  into: Measured, console: Any) -> None:  # fmt: skip
    read = case.build(kept, on.read, on.ask)
    other = case.build(kept, on.other, on.ask)
    into.allowed[on.store] = await allowed(read, other)
    console.print(
        f"  {case.name}, {on.store}: an allowed call, {ALLOWED_CYCLES} cycles", style="dim"
    )
    into.lacks, into.unmeasured = case.lacks, case.unmeasured
    if on.store == "sqlite" and read.fill is not None:
        into.held = await held(read, rng)
        console.print(f"  {case.name}: a held call at N = {SIZES}", style="dim")


async def main_async(console: Any) -> dict[str, Measured]:
    set_tracing_disabled(True)
    logging.getLogger("google_adk").setLevel(logging.ERROR)
    rng = random.Random(SEED)
    found = {case.name: Measured() for case in cases()}
    with tempfile.TemporaryDirectory(prefix="signoff-bench-") as folder:
        kept = Kept(Path(folder) / "app.db")
        try:
            async with contextlib.AsyncExitStack() as stack:
                stores = [await stack.enter_async_context(
                    opened("sqlite", f"sqlite:///{Path(folder) / 'signoff.db'}"))]  # fmt: skip
                url = await stack.enter_async_context(scratch_postgres(console))
                if url is not None:
                    stores.append(await stack.enter_async_context(opened("postgresql", url)))
                # A case that changes the process (`Case.last`) runs after all the others.
                for case in cases():
                    for on in stores:
                        await measure(case, on, kept, rng, found[case.name], console)
        finally:
            kept.db.close()
    return found


def added(mine: float, theirs: float) -> str:
    """`mine` over `theirs`, signed (a figure under its peer's is noise, or a real gain)."""
    return f"{'+' if mine >= theirs else '-'}{ms(abs(mine - theirs))}"


def cell(mine: float, theirs: float, goal: float) -> str:
    mark = "[green]met[/]" if mine - theirs <= goal else "[bold red]MISSED[/]"
    return f"{added(mine, theirs)} {mark}"


def ratio_cell(figures: dict[str, Latency], goal: float) -> str:
    ratio = figures["signoff"].p50_ms / figures["own"].p50_ms
    mark = "[green]met[/]" if ratio <= goal else "[bold red]MISSED[/]"
    return f"{ratio:.2f}x {mark}"


def table(found: dict[str, Measured]) -> Table:
    out = Table(title="The promise's cost: p50 added to an allowed call (ms), and a held call's "
                      "pause + resume as a multiple of the framework's own (SQLite)")  # fmt: skip
    out.add_column("framework")
    for (store, kind), goal in GOALS_MS.items():
        out.add_column(f"{kind}, {store} (≤ +{goal:g})", justify="right")
    for size, goal in HELD_GOALS.items():
        out.add_column(f"held, N={size} (≤ {goal:g}x)", justify="right")
    for name, measured in found.items():
        row = [name]
        for (store, kind), goal in GOALS_MS.items():
            figures = measured.allowed.get(store)
            row.append("not measured" if figures is None else
                       cell(figures[kind].p50_ms, figures["plain"].p50_ms, goal))  # fmt: skip
        for size, goal in HELD_GOALS.items():
            if size in measured.held:
                row.append(ratio_cell(measured.held[size], goal))
            else:
                row.append("none of its own" if measured.lacks else "not measured")
        out.add_row(*row)
    return out


def cpu_table(found: dict[str, Measured]) -> Table:
    """The processor time signoff adds to an allowed call (p50s, every thread of the process):
    what the time would add on a machine with nothing else running, but for the waits on the
    disk and on PostgreSQL's server."""
    out = Table(title="Processor time added to an allowed call, p50 (ms): what a busy machine "
                      "does not inflate (no waits on the disk or the database server)")  # fmt: skip
    out.add_column("framework")
    for store, kind in GOALS_MS:
        out.add_column(f"{kind}, {store}", justify="right")
    for name, measured in found.items():
        row = [name]
        for store, kind in GOALS_MS:
            figures = measured.allowed.get(store)
            if figures is None:
                row.append("—")
            else:
                row.append(added(figures[f"{kind} cpu"].p50_ms, figures["plain cpu"].p50_ms))
        out.add_row(*row)
    return out


def targets(found: dict[str, Measured]) -> list[Target]:
    goals: list[Target] = []
    for name, measured in found.items():
        for (store, kind), goal in GOALS_MS.items():
            figures = measured.allowed.get(store)
            if figures is None:
                goals.append(Target(name=f"{name}: {kind}, {store}", goal=f"≤ +{goal:g} ms",
                                    value="—", status="not measured"))  # fmt: skip
                continue
            mine, theirs = figures[kind].p50_ms, figures["plain"].p50_ms
            goals.append(Target(name=f"{name}: allowed {kind}, {store}", goal=f"≤ +{goal:g} ms",
                                value=f"{added(mine, theirs)} ms ({ms(mine)} vs {ms(theirs)})",
                                status="met" if mine - theirs <= goal else "MISSED"))  # fmt: skip
        for size, goal in HELD_GOALS.items():
            if size not in measured.held:
                continue
            own, ours = measured.held[size]["own"].p50_ms, measured.held[size]["signoff"].p50_ms
            goals.append(Target(name=f"{name}: held, N={size}", goal=f"≤ {goal:g}x its own",
                                value=f"{ours / own:.2f}x ({ms(ours)} vs {ms(own)})",
                                status="met" if ours / own <= goal else "MISSED"))  # fmt: skip
    return goals


def main() -> None:
    console = console_of()
    started = time.perf_counter()
    load_before = os.getloadavg()
    console.print(f"signoff {__version__}; SQLite {sqlite3.sqlite_version}; "
                  f"load average {load_before[0]:.2f}")  # fmt: skip
    found = asyncio.run(main_async(console))
    console.print(table(found))
    console.print(cpu_table(found))
    goals = targets(found)
    print_targets(console, goals)
    for name, measured in found.items():
        if measured.lacks or measured.unmeasured:
            console.print(
                f"{name} has no held-call figure: {measured.lacks or measured.unmeasured}."
            )
    wall_s = time.perf_counter() - started
    document = {
        **environment("overhead"),
        "sqlite_version": sqlite3.sqlite_version,
        "config": {
            "seed": SEED,
            "allowed_cycles": ALLOWED_CYCLES,
            "held_cycles": HELD_CYCLES,
            "sizes": SIZES,
            "warmup": WARMUP,
        },
        "frameworks": {name: asdict(measured) for name, measured in found.items()},
        "targets": [asdict(goal) for goal in goals],
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "wall_time_s": round(wall_s, 1),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    console.print(f"wall time {wall_s:.1f} s; results in {RESULTS}")


if __name__ == "__main__":
    main()
