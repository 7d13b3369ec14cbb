"""What every benchmark here shares: percentiles, targets, the console and the environment."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import platform
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal, TypeVar

import asyncpg
from rich.console import Console
from rich.table import Table

from signoff import __version__

__all__ = [
    "PG_ADMIN",
    "Latency",
    "Limit",
    "Target",
    "added_target",
    "asyncpg_url",
    "environment",
    "held_target",
    "latency",
    "ms",
    "percentile",
    "print_targets",
    "scratch_postgres",
    "serve_until_stdin_closes",
    "side_by_side",
    "wide_console",
]


def percentile(ordered: Sequence[float], q: float) -> float:
    """The nearest-rank `q` quantile of already sorted samples."""
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


@dataclass(frozen=True, kw_only=True)
class Latency:
    p50_ms: float
    p99_ms: float
    max_ms: float
    samples: int


def latency(seconds: Sequence[float]) -> Latency:
    """p50, p99 and the maximum of samples in seconds, in milliseconds."""
    ordered = sorted(seconds)

    def rank(q: float) -> float:
        return round(percentile(ordered, q) * 1_000, 4)

    return Latency(p50_ms=rank(0.50), p99_ms=rank(0.99), max_ms=rank(1.0), samples=len(ordered))


@dataclass(frozen=True, kw_only=True)
class Limit:
    """What the hardware allowed in the same run, and a figure's share of it."""

    value: float
    shown: str
    """`value` as the console shows it."""
    what: str
    """What the limit is: ``durable commits/s``, ``for one durable commit (p50)``."""
    ratio: float
    """The figure over `value`: a rate's share of the limit, or a latency's multiple of it."""
    better: Literal["higher", "lower"]

    def __str__(self) -> str:
        share = f"{self.ratio:.2f} of" if self.better == "higher" else f"{self.ratio:.1f}x"
        return f"limit {self.shown} {self.what}: {share} the limit"


@dataclass(frozen=True, kw_only=True)
class Target:
    name: str
    goal: str
    value: str
    status: Literal["met", "MISSED", "not measured"]
    limit: Limit | None = None
    """The limit measured in the same run, where the goal has one (issue 22)."""


def added_target(name: str, mine: float, theirs: float, limit: float, peer: str) -> Target:
    """Issue 36's goal for an allowed call: at most `limit` ms more than `peer` (p50s)."""
    return Target(
        name=name,
        goal=f"≤ +{ms(limit)} ms over {peer}",
        value=f"+{ms(mine - theirs)} ms ({mine / theirs:.2f}x)" if theirs > 0 else "—",
        status="met" if mine - theirs <= limit else "MISSED",
    )


def held_target(name: str, mine: float, theirs: float, size: int, peer: str) -> Target:
    """Issue 36's goal for a held call against `peer` in the same run: no slower at N = 10,
    faster from N = 100 up."""
    met = mine <= theirs if size <= 10 else mine < theirs
    return Target(
        name=name,
        goal=f"{'≤' if size <= 10 else '<'} 1.00x {peer}",
        value=f"{mine / theirs:.2f}x" if theirs > 0 else "—",
        status="met" if met else "MISSED",
    )


def print_targets(console: Console, goals: Sequence[Target]) -> None:
    """The targets and whether each was met; below the table, each target that has a limit
    measured in this run, in one line with its ratio. Benchmarks are not tests: a miss never
    fails."""
    table = Table(title="Targets")
    for header in ("target", "goal", "measured", ""):
        table.add_column(header)
    styles = {"met": "[green]met[/]", "MISSED": "[bold red]MISSED[/]"}
    for goal in goals:
        table.add_row(goal.name, goal.goal, goal.value, styles.get(goal.status, goal.status))
    console.print(table)
    limited = [goal for goal in goals if goal.limit is not None]
    if limited:
        console.print("Against the hardware limit measured in this run:", style="bold")
    for goal in limited:
        console.print(
            f"  {goal.name}: {goal.value} ({goal.limit}; goal {goal.goal}: "
            f"{styles.get(goal.status, goal.status)})",
            highlight=False,
        )


def wide_console() -> Console:
    console = Console()
    # Written to a file or a pipe, rich would squeeze the tables into 80 columns.
    return console if console.is_terminal else Console(width=120)


def environment(benchmark: str) -> dict[str, Any]:
    """What a result file says about where it was measured."""
    return {
        "benchmark": benchmark,
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "signoff_version": __version__,
        "python": sys.version,
        "python_implementation": platform.python_implementation(),
        "platform_machine": platform.machine(),
        "platform": platform.platform(),
    }


def ms(value: float) -> str:
    """Milliseconds with the digits that matter."""
    return f"{value:,.1f}" if value >= 100 else f"{value:.3f}" if value < 1 else f"{value:.2f}"


R = TypeVar("R")


def side_by_side(
    title: str,
    rows: Sequence[tuple[str, Callable[[R], Latency]]],
    results: Sequence[R | None],
) -> Table:
    """p50, p99 and n of each row, SQLite's results beside PostgreSQL's (None: not run)."""
    table = Table(title=title)
    table.add_column("")
    for name, style in (("SQLite", "green"), ("PostgreSQL", "cyan")):
        for stat in ("p50", "p99", "n"):
            table.add_column(f"{name}\n{stat}", justify="right", style=style)
    for label, pick in rows:
        cells: list[str] = []
        for result in results:
            if result is None:
                cells += ["—"] * 3
            else:
                figure = pick(result)
                cells += [ms(figure.p50_ms), ms(figure.p99_ms), f"{figure.samples:,}"]
        table.add_row(label, *cells)
    return table


async def serve_until_stdin_closes(
    app: Any, *, host: str, port: int, ready: Callable[[int], dict[str, Any]]
) -> None:
    """Serve `app` with uvicorn as ``signoff serve`` does (``run_app``'s configuration) until this
    process's stdin closes — a benchmark's server child stops when its parent lets go. Once it
    listens, print ``ready(port)`` as one JSON line (port 0 picks one)."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
    loop = asyncio.get_running_loop()

    def stop_at_eof() -> None:
        sys.stdin.buffer.read()
        loop.call_soon_threadsafe(setattr, server, "should_exit", True)

    threading.Thread(target=stop_at_eof, daemon=True).start()

    async def announce() -> None:
        while not server.started:
            if server.should_exit:
                return
            await asyncio.sleep(0.02)
        bound = server.servers[0].sockets[0].getsockname()[1]
        sys.stdout.write(json.dumps(ready(bound)) + "\n")
        sys.stdout.flush()

    watcher = asyncio.create_task(announce())
    try:
        await server.serve()
    finally:
        watcher.cancel()


PG_ADMIN: Final = os.environ.get(
    "SIGNOFF_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"
)
"""The PostgreSQL server the benchmarks make their databases on (``SIGNOFF_BENCH_POSTGRES``)."""


@contextlib.asynccontextmanager
async def scratch_postgres(console: Console) -> AsyncIterator[str | None]:
    """A new ``signoff_bench_<random>`` database on `PG_ADMIN`'s server, dropped afterwards:
    its URL (``postgresql://``), or None when the server cannot be reached (said on `console`)."""
    try:
        admin = await asyncpg.connect(PG_ADMIN, timeout=3)
    except (OSError, asyncpg.PostgresError) as exc:
        console.print(f"[bold red]PostgreSQL is not reachable at {PG_ADMIN}: {exc}[/]")
        yield None
        return
    name = f"signoff_bench_{uuid.uuid4().hex[:12]}"
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        yield f"{PG_ADMIN.rsplit('/', 1)[0]}/{name}"
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


def asyncpg_url(url: str) -> str:
    """`url` for SQLAlchemy's asyncpg driver."""
    return url.replace("postgresql://", "postgresql+asyncpg://", 1)
