"""The hardware's limits, measured in the same run as the figures they bound (issue 22).

A goal's figure means little on a machine shared with others unless it is read beside what the
same disk and the same database server did in the same minute. Two limits:

- **durable commits on the disk**: single-row ``INSERT`` + ``COMMIT`` on one ``sqlite3``
  connection, back to back, in a fresh file in the bench's own temporary folder, with signoff's
  settings (WAL, ``synchronous=FULL``, ``BEGIN IMMEDIATE``). Each commit waits for the disk, so
  their rate is the most decisions per second a store that commits each decision on its own can
  durably take, and one commit's latency the least a durable decision can take. (Many rows in a
  commit go faster: that is what grouping decisions buys, not the limit it is measured against.)
- **single-row commits on the PostgreSQL server**, pgbench-style: `clients` connections each
  committing one-row INSERTs back to back for a few seconds (the server's group commit flushes
  many of them at once). ``pgbench`` (C, cheap on the client side) when it is on this
  machine, else the same loop on asyncpg connections (whose client-side CPU, on 2 cores, lowers
  the figure; the result says which tool measured it).

`limit_target` turns a goal into a `Target` that carries the limit and the ratio.
"""

from __future__ import annotations

import asyncio
import glob
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import asyncpg
from rich.table import Table

from _common import Latency, Limit, Target, latency, ms

__all__ = [
    "Commits",
    "limit_target",
    "limits_table",
    "postgres_commits",
    "sqlite_commits",
]

SQLITE_COMMITS: Final = 4_000
SQLITE_WARMUP: Final = 200
POSTGRES_SECONDS: Final = 5.0
ROW: Final = "x" * 200
"""About the size of a decision's row."""
SCRATCH: Final = "bench_limit_commits"


@dataclass(frozen=True, kw_only=True)
class Commits:
    """Single-row durable commits, back to back."""

    what: str
    tool: str
    clients: int
    commits_per_s: float
    mean_ms: float
    """One commit's mean latency, as each client sees it: ``clients / commits_per_s``."""
    latency: Latency | None
    """Each commit's latency, where the loop times them one by one (SQLite)."""
    commits: int


def sqlite_commits(folder: Path, count: int = SQLITE_COMMITS) -> Commits:
    """`count` durable single-row commits on a new file in `folder` (removed afterwards)."""
    path = folder / "limit-commits.db"
    connection = sqlite3.connect(path, isolation_level=None)
    clock = time.perf_counter
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        connection.execute(f"CREATE TABLE {SCRATCH} (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        insert = f"INSERT INTO {SCRATCH} (v) VALUES (?)"
        timings: list[float] = []
        started = 0.0
        for i in range(SQLITE_WARMUP + count):
            if i == SQLITE_WARMUP:
                started = clock()
            start = clock()
            connection.execute("BEGIN IMMEDIATE")
            connection.execute(insert, (ROW,))
            connection.execute("COMMIT")
            if i >= SQLITE_WARMUP:
                timings.append(clock() - start)
        wall = clock() - started
    finally:
        connection.close()
        for leftover in (path, *(Path(f"{path}{suffix}") for suffix in ("-wal", "-shm"))):
            leftover.unlink(missing_ok=True)
    return Commits(
        what="SQLite (WAL, synchronous=FULL), 1 connection",
        tool=f"sqlite3 {sqlite3.sqlite_version}",
        clients=1,
        commits_per_s=round(count / wall, 1),
        mean_ms=round(wall * 1_000 / count, 4),
        latency=latency(timings),
        commits=count,
    )


def pgbench() -> str | None:
    """The ``pgbench`` on this machine: on the PATH, or where Debian's server package puts it."""
    found = shutil.which("pgbench")
    if found:
        return found
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pgbench"))
    return candidates[-1] if candidates else None


async def postgres_commits(dsn: str, clients: int, seconds: float = POSTGRES_SECONDS) -> Commits:
    """`clients` connections to `dsn` (``postgresql://``) committing single-row INSERTs into a
    scratch table for `seconds`. The table is dropped afterwards."""
    admin = await asyncpg.connect(dsn)
    try:
        await admin.execute(
            f"DROP TABLE IF EXISTS {SCRATCH}; "
            f"CREATE TABLE {SCRATCH} (id bigserial PRIMARY KEY, client int NOT NULL, "
            "v text NOT NULL)"
        )
        binary = pgbench()
        if binary is None:
            count, wall = await _asyncpg_loop(dsn, clients, seconds)
            tool = f"asyncpg {asyncpg.__version__}"
        else:
            count, wall, tool = await asyncio.to_thread(_pgbench, binary, dsn, clients, seconds)
    finally:
        await admin.execute(f"DROP TABLE IF EXISTS {SCRATCH}")
        await admin.close()
    return Commits(
        what=f"PostgreSQL, {clients} client{'s' * (clients > 1)}",
        tool=tool,
        clients=clients,
        commits_per_s=round(count / wall, 1),
        mean_ms=round(clients * wall * 1_000 / count, 4),
        latency=None,
        commits=count,
    )


def _pgbench(binary: str, dsn: str, clients: int, seconds: float) -> tuple[int, float, str]:
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True)
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as script:
        script.write(f"INSERT INTO {SCRATCH} (client, v) VALUES (:client_id, '{ROW}');\n")
    try:
        done = subprocess.run(
            [
                binary,
                "--no-vacuum",
                f"--client={clients}",
                f"--jobs={min(clients, os.cpu_count() or 1)}",
                f"--time={max(1, round(seconds))}",
                f"--file={script.name}",
                dsn,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.unlink(script.name)
    processed = re.search(r"number of transactions actually processed: (\d+)", done.stdout)
    tps = re.search(r"tps = ([\d.]+) \(without initial connection time\)", done.stdout)
    if done.returncode != 0 or processed is None or tps is None:
        raise RuntimeError(f"pgbench failed ({done.returncode}): {done.stderr or done.stdout}")
    count = int(processed.group(1))
    release = re.search(r"\d+(\.\d+)+", version.stdout)
    return count, count / float(tps.group(1)), f"pgbench {release.group() if release else '?'}"


async def _asyncpg_loop(dsn: str, clients: int, seconds: float) -> tuple[int, float]:
    connections = [await asyncpg.connect(dsn) for _ in range(clients)]
    insert = f"INSERT INTO {SCRATCH} (client, v) VALUES ($1, $2)"
    clock = time.perf_counter
    count = 0
    try:
        started = clock()
        deadline = started + seconds

        async def client(connection: asyncpg.Connection, number: int) -> None:
            nonlocal count
            while clock() < deadline:
                await connection.execute(insert, number, ROW)  # autocommit: one commit each
                count += 1

        await asyncio.gather(*(client(c, i) for i, c in enumerate(connections)))
        wall = clock() - started
    finally:
        await asyncio.gather(*(c.close() for c in connections))
    return count, wall


def limits_table(limits: Sequence[Commits | None]) -> Table:
    """The limits measured in this run (None: not measured)."""
    table = Table(title="Single-row durable commits back to back: the limits, measured in this run")
    table.add_column("")
    for header in ("commits/s", "commit, mean (ms)", "commit, p50 (ms)", "commits", "by"):
        table.add_column(header, justify="right")
    for limit in limits:
        if limit is not None:
            table.add_row(
                limit.what,
                f"{limit.commits_per_s:,.0f}",
                ms(limit.mean_ms),
                "—" if limit.latency is None else ms(limit.latency.p50_ms),
                f"{limit.commits:,}",
                limit.tool,
            )
    return table


def limit_target(
    name: str,
    value: float | None,
    *,
    goal: float,
    limit: float | None,
    limit_what: str,
    better: Literal["higher", "lower"],
) -> Target:
    """`name`'s `value` against its `goal` (at least it when `better` is higher: a rate; at
    most it otherwise: milliseconds) and against the `limit` measured in this run, as a ratio
    (value / limit)."""
    rate = better == "higher"

    def shown(figure: float) -> str:
        return f"{figure:,.0f}" if rate else f"{ms(figure)} ms"

    goal_text = f"{'>=' if rate else '<='} {goal:,g}{'' if rate else ' ms'}"
    if value is None:
        return Target(name=name, goal=goal_text, value="—", status="not measured")
    return Target(
        name=name,
        goal=goal_text,
        value=shown(value),
        status="met" if (value >= goal if rate else value <= goal) else "MISSED",
        limit=None
        if limit is None or limit <= 0
        else Limit(
            value=limit,
            shown=shown(limit),
            what=limit_what,
            ratio=round(value / limit, 3),
            better=better,
        ),
    )
