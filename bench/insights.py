"""Insights and suggestions over a long history of decisions, on SQLite and on PostgreSQL.

Run it with ``make bench``. A history of decided approvals (tests/history.py, the generator the
tests use: mail to one domain always approved, deletes nearly always rejected, charges edited
down, writes mixed; plus grant uses) is bulk-inserted straight through SQLAlchemy Core: 1,000,000
approvals into a SQLite file in a temporary folder, 100,000 into a new ``signoff_bench_<random>``
database on this machine's PostgreSQL (``SIGNOFF_BENCH_POSTGRES``, by default
``postgresql://postgres@127.0.0.1:5432/test``), ANALYZEd as autovacuum would soon do, and dropped
at the end. Then, `REPEATS` times each, through the public functions the API and the CLI call:

- insights: ``signoff.insights.gather`` over the 30-day window, every approval in it;
- suggestions: ``signoff.insights.suggestions`` for the policy that asked the history;
- the peer: the same counts, deciders and percentiles by reading every approval of the window
  into Python and aggregating there — what the SQL aggregation replaces.

Targets: insights and suggestions together under 5 s at a million decisions on SQLite, and under
2 s at 100,000 on PostgreSQL. A miss is printed as MISSED; the exit status is 0 all the same.
``bench/results/insights.json`` keeps every figure and the suggestions' texts.
"""

from __future__ import annotations

import asyncio
import json
import math
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final, Literal

from rich.console import Console
from rich.table import Table
from sqlalchemy import select

from _common import (
    PG_ADMIN,
    Target,
    asyncpg_url,
    environment,
    print_targets,
    scratch_postgres,
    wide_console,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' history generator

from tests.history import POLICY, write_history

from signoff import Policy, PolicyEngine, __version__
from signoff.insights import gather, suggest
from signoff.store import SQLStore, open_store, schema
from signoff.store.times import to_micros

BackendName = Literal["sqlite", "postgresql"]
Group = tuple[str | None, str, str | None]

SQLITE_ROWS: Final = 1_000_000
POSTGRES_ROWS: Final = 100_000
GRANT_USES: Final = 10_000
DAYS: Final = 30
REPEATS: Final = 3
SQLITE_GOAL_S: Final = 5.0
POSTGRES_GOAL_S: Final = 2.0
RESULTS: Final = Path(__file__).resolve().parent / "results" / "insights.json"


@dataclass(frozen=True, kw_only=True)
class BackendResult:
    backend: BackendName
    approvals: int
    grant_uses: int
    insert_s: float
    insights_s: list[float]
    suggestions_s: list[float]
    peer_s: list[float]
    groups: int
    suggestions: list[str]

    @property
    def both_s(self) -> float:
        """Insights and suggestions, the median of each."""
        return statistics.median(self.insights_s) + statistics.median(self.suggestions_s)


async def measure(backend: BackendName, url: str, rows: int, console: Console) -> BackendResult:
    now = datetime.now(UTC)
    async with open_store(url) as store:
        started = time.perf_counter()
        await write_history(store, rows, now=now, days=DAYS, grant_uses=GRANT_USES)
        if backend == "postgresql":
            await store.run(lambda c: c.exec_driver_sql("ANALYZE"))
        insert_s = time.perf_counter() - started
        console.print(f"{backend}: {rows:,} approvals written in {insert_s:.1f} s")
        engine = PolicyEngine(Policy.from_dict(POLICY))
        insights_s, suggestions_s, peer_s = [], [], []
        for _ in range(REPEATS):
            started = time.perf_counter()
            found = await gather(store, days=DAYS, now=now)
            insights_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            suggestions = await suggest(
                store, engine, POLICY, days=DAYS, now=now, groups=found.groups
            )
            suggestions_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            peer = await in_python(store, now - timedelta(days=DAYS))
            peer_s.append(time.perf_counter() - started)
        assert peer == {(g.rule, g.tool, g.agent): g.asked for g in found.groups if g.asked}
    return BackendResult(
        backend=backend,
        approvals=rows,
        grant_uses=GRANT_USES,
        insert_s=round(insert_s, 2),
        insights_s=[round(s, 3) for s in insights_s],
        suggestions_s=[round(s, 3) for s in suggestions_s],
        peer_s=[round(s, 3) for s in peer_s],
        groups=len(found.groups),
        suggestions=[s.text for s in suggestions],
    )


async def in_python(
    store: SQLStore, since: datetime
) -> dict[tuple[str | None, str, str | None], int]:
    """The peer: every approval of the window read into Python, counted by group and status and
    decider, its times sorted for the percentiles. Returns the calls asked per group (checked
    against the SQL figures); the rest is computed to be timed, as the SQL computes it."""
    a = schema.approvals
    query = select(
        a.c.rule, a.c.tool, a.c.agent, a.c.status, a.c.decided_by, a.c.requested_at, a.c.decided_at
    ).where(a.c.requested_at >= to_micros(since))
    rows = await store.run(lambda c: c.execute(query).all(), write=False)
    counts: Counter[tuple[str | None, str, str | None, str]] = Counter()
    deciders: Counter[tuple[str | None, str, str | None, str]] = Counter()
    took: dict[Group, list[int]] = {}
    for rule, tool, agent, status, decided_by, requested_at, decided_at in rows:
        counts[(rule, tool, agent, status)] += 1
        if decided_by is not None:
            deciders[(rule, tool, agent, decided_by)] += 1
            took.setdefault((rule, tool, agent), []).append(decided_at - requested_at)
    percentiles = {}
    for key, times in took.items():
        times.sort()
        percentiles[key] = [times[max(0, math.ceil(q * len(times)) - 1)] for q in (0.5, 0.9)]
    asked: Counter[Group] = Counter()
    for (rule, tool, agent, _), n in counts.items():
        asked[(rule, tool, agent)] += n
    return dict(asked)


async def bench_sqlite(console: Console) -> BackendResult:
    with tempfile.TemporaryDirectory(prefix="signoff-bench-") as folder:
        url = f"sqlite:///{Path(folder) / 'signoff.db'}"
        return await measure("sqlite", url, SQLITE_ROWS, console)


async def bench_postgres(console: Console) -> BackendResult | None:
    async with scratch_postgres(console) as url:
        if url is None:
            return None
        return await measure("postgresql", asyncpg_url(url), POSTGRES_ROWS, console)


def report(console: Console, results: list[BackendResult]) -> list[Target]:
    table = Table(title=f"Insights over {DAYS} days of decisions (median of {REPEATS}, seconds)")
    for column in ("backend", "approvals", "groups", "insights", "suggestions", "both",
                   "peer: every row in Python", "peer / insights"):  # fmt: skip
        table.add_column(column, justify="right")
    for result in results:
        insights = statistics.median(result.insights_s)
        peer = statistics.median(result.peer_s)
        table.add_row(
            result.backend,
            f"{result.approvals:,}",
            str(result.groups),
            f"{insights:.3f}",
            f"{statistics.median(result.suggestions_s):.3f}",
            f"{result.both_s:.3f}",
            f"{peer:.3f}",
            f"{peer / insights:.1f}x",
        )
    console.print(table)
    for result in results:
        console.print(f"[bold]{result.backend}[/], the suggestions:")
        for text in result.suggestions:
            console.print(f"  {text}", highlight=False)
    goals = {"sqlite": SQLITE_GOAL_S, "postgresql": POSTGRES_GOAL_S}
    return [
        Target(
            name=f"insights + suggestions, {r.approvals:,} decisions, {r.backend}",
            goal=f"< {goals[r.backend]:.0f} s",
            value=f"{r.both_s:.2f} s",
            status="met" if r.both_s < goals[r.backend] else "MISSED",
        )
        for r in results
    ]


async def run(console: Console) -> list[BackendResult]:
    results = [await bench_sqlite(console)]
    postgres = await bench_postgres(console)
    if postgres is not None:
        results.append(postgres)
    return results


def main() -> None:
    console = wide_console()
    started = time.perf_counter()
    console.print(
        f"signoff {__version__}, Python {platform.python_version()} on {platform.machine()}; "
        f"SQLite {sqlite3.sqlite_version}; PostgreSQL at {PG_ADMIN}"
    )
    results = asyncio.run(run(console))
    goals = report(console, results)
    print_targets(console, goals)
    wall_s = time.perf_counter() - started
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    document = {
        **environment("insights"),
        "sqlite_version": sqlite3.sqlite_version,
        "config": {
            "sqlite_rows": SQLITE_ROWS,
            "postgres_rows": POSTGRES_ROWS,
            "grant_uses": GRANT_USES,
            "days": DAYS,
            "repeats": REPEATS,
        },
        "backends": [asdict(r) for r in results],
        "targets": [asdict(goal) for goal in goals],
        "wall_time_s": round(wall_s, 1),
    }
    RESULTS.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    console.print(f"wall time {wall_s:.1f} s; results in {RESULTS}")


if __name__ == "__main__":
    main()
