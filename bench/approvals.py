"""Holding, deciding, waking and listing approvals on SQLite and on PostgreSQL.

Run it with ``make bench``. Each backend gets a fresh database: a SQLite file in a temporary
folder, and a new ``signoff_bench_<random>`` database on this machine's PostgreSQL server
(``SIGNOFF_BENCH_POSTGRES``, by default ``postgresql://postgres@127.0.0.1:5432/test``), dropped
at the end. Measured one call at a time, through the public API:

- hold: ``gate.check([one call the policy asks about])``;
- decide: ``gate.decide(id, Approve())`` on the approvals the holds created;
- in-process wake: a task parked in ``gate.wait(id)``; from just before ``decide`` is called in
  another task until ``wait`` returns (so it includes the decide, also reported alone);
- cross-process wake: ``gate.wait(id)`` here, ``decide`` in a child process (bench/_decider.py);
  from the child's ``time.time()`` just after its commit to ours when ``wait`` returns. SQLite
  waiters in other processes poll every ``poll_interval`` (the Gate's default, 0.5 s), so the
  child decides at a random phase of the poll and 8 waiters run at once to keep the run short;
  PostgreSQL's waiters are woken by LISTEN/NOTIFY, one at a time;
- listing: ``store.list_approvals(...)`` over 100,000 pending approvals of 20 tools. On
  PostgreSQL the table is ANALYZEd after the bulk insert, as autovacuum would soon do; SQLite
  keeps no statistics unless the application asks, and signoff does not.

A last section shows where a decision's time goes: one statement through the bare driver and
through SQLAlchemy, a bare ``BEGIN; UPDATE; COMMIT`` with durable and relaxed commits,
``decide`` itself as shipped and with relaxed commits (``synchronous=NORMAL``;
``synchronous_commit=off``, set on the bench's database only) on the same tables, the CPU time
this process spends per decide, and the statements a decide sends.

**The limit, in the same run** (issue 22; ``bench/_limits.py``), just before the holds and
decides: on SQLite, single-row INSERT + COMMIT back to back on one ``sqlite3`` connection to a
new file in the same temporary folder (WAL, ``synchronous=FULL``); on PostgreSQL, single-row
commits by one client for 5 s on the bench's database (``pgbench`` when installed, else
asyncpg). The decide targets are printed against one such commit (its p50 on SQLite, its mean
on PostgreSQL) with their ratio to it: ``gate.decide`` p50 at most 0.4 ms on SQLite (issue 22)
and 2 ms on PostgreSQL. Missed targets are printed as MISSED; the exit status is 0 all the same.
``bench/results/approvals.json`` keeps every figure, the limits with them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import platform
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, Literal

import asyncpg
from rich.console import Console
from rich.table import Table
from sqlalchemy import event

from _common import (
    PG_ADMIN,
    Latency,
    Target,
    asyncpg_url,
    environment,
    latency,
    ms,
    print_targets,
    scratch_postgres,
    side_by_side,
    wide_console,
)
from _limits import Commits, limit_target, limits_table, postgres_commits, sqlite_commits
from signoff import Approval, Approve, Policy, ToolCall, __version__
from signoff.gate import Gate
from signoff.gate.ids import new_id
from signoff.store import SQLStore, open_store

BackendName = Literal["sqlite", "postgresql"]

SEED: Final = 5
HOLDS: Final[dict[BackendName, int]] = {"sqlite": 2_000, "postgresql": 1_000}
"""Timed holds, then as many timed decides of the approvals they created."""
WARMUP: Final = 50
IN_PROCESS_WAKES: Final = 300
CROSS_PROCESS_WAKES: Final = 200
CROSS_PROCESS_WARMUP: Final = 5
CROSS_PROCESS_CONCURRENCY: Final[dict[BackendName, int]] = {"sqlite": 8, "postgresql": 1}
POLL_INTERVAL_S: Final = 0.5
"""The Gate's default ``poll_interval``, which the bench leaves as it is."""
PARK_S: Final = 0.005
"""How long a new waiter gets to subscribe and read before the decision is sent."""
LIST_ROWS: Final = 100_000
LIST_BATCH: Final = 5_000
LIST_RUNS: Final = 200
PENDING_LIST_RUNS: Final = 50
"""Runs of the page of all pending approvals (not a target; slow on SQLite, see its plan)."""
LIST_TOOLS: Final = (
    "delete_pod",
    "scale_deployment",
    "rollback_release",
    "drop_table",
    "run_migration",
    "transfer_funds",
    "refund_order",
    "issue_credit",
    "rotate_secret",
    "grant_access",
    "revoke_access",
    "create_user",
    "delete_user",
    "merge_pr",
    "deploy_service",
    "restart_node",
    "purge_cache",
    "publish_post",
    "post_message",
    "write_file",
)
LIST_TOOL: Final = "transfer_funds"
"""The tool of the filtered listing."""
DIAGNOSIS_SAMPLES: Final = 500
RELAXED_DECIDES: Final[dict[BackendName, int]] = {"sqlite": 500, "postgresql": 300}
ACTOR: Final = "bench"
CHILD_ACTOR: Final = "bench-decider"  # what bench/_decider.py decides as
DECIDER: Final = Path(__file__).resolve().with_name("_decider.py")
RESULTS: Final = Path(__file__).resolve().parent / "results" / "approvals.json"

POLICY: Final = Policy.from_dict(
    {
        "default": "ask",
        "rules": [
            {"deny": "*_terminate*"},
            {"allow": "*_list*"},
            {"ask": "send_email", "timeout": 3600},
        ],
    }
)


# -- measuring -------------------------------------------------------------------------------


async def timed(action: Callable[[], Awaitable[object]], count: int, warmup: int) -> Latency:
    """The time of each of `count` awaits of `action()`, after `warmup` untimed ones."""
    clock = time.perf_counter
    timings: list[float] = []
    for i in range(warmup + count):
        start = clock()
        await action()
        if i >= warmup:
            timings.append(clock() - start)
    return latency(timings)


def email(i: int) -> ToolCall:
    return ToolCall(
        id=f"call-{i}",
        name="send_email",
        args={"to": f"user{i}@example.com", "subject": "Quarterly report", "body": "Attached."},
        agent="assistant",
    )


async def hold_many(gate: Gate, count: int) -> list[str]:
    """`count` pending approvals, created 100 to a transaction, untimed."""
    ids: list[str] = []
    for start in range(0, count, 100):
        calls = [email(i) for i in range(start, min(count, start + 100))]
        ids += [o.approval.id for o in await gate.check(calls) if o.approval is not None]
    return ids


@dataclass(frozen=True, kw_only=True)
class Decisions:
    hold: Latency
    decide: Latency


async def bench_hold_and_decide(gate: Gate, count: int, rng: random.Random) -> Decisions:
    ids: list[str] = []

    async def hold() -> None:
        [outcome] = await gate.check([email(len(ids))])
        assert outcome.approval is not None, "the bench policy asks about send_email"
        ids.append(outcome.approval.id)

    hold_latency = await timed(hold, count, WARMUP)
    rng.shuffle(ids)
    pending = iter(ids)

    async def decide() -> None:
        await gate.decide(next(pending), Approve(), actor=ACTOR)

    return Decisions(hold=hold_latency, decide=await timed(decide, count, WARMUP))


@dataclass(frozen=True, kw_only=True)
class Wakes:
    in_process_decide: Latency
    """``decide`` alone, in the in-process wake samples."""
    in_process: Latency
    """From just before ``decide`` is called to ``wait`` returning in another task."""
    cross_process: Latency
    """From the child's commit to ``wait`` returning here."""
    cross_process_concurrency: int


async def bench_in_process_wakes(gate: Gate, count: int) -> tuple[Latency, Latency]:
    ids = await hold_many(gate, WARMUP + count)
    clock = time.perf_counter

    async def wait(approval_id: str) -> float:
        approval = await gate.wait(approval_id, timeout=30)
        woke = clock()
        assert approval.decided_by == ACTOR
        return woke

    wakes: list[float] = []
    decides: list[float] = []
    for i, approval_id in enumerate(ids):
        waiter = asyncio.create_task(wait(approval_id))
        await asyncio.sleep(PARK_S)
        t0 = clock()
        await gate.decide(approval_id, Approve(), actor=ACTOR)
        decided = clock()
        woke = await waiter
        if i >= WARMUP:
            wakes.append(woke - t0)
            decides.append(decided - t0)
    return latency(decides), latency(wakes)


async def bench_cross_process_wakes(
    gate: Gate, url: str, count: int, concurrency: int, phase_s: float, rng: random.Random
) -> Latency:
    """Wake latencies over `count` decisions taken by bench/_decider.py, `concurrency` at once.

    Each decision is sent `PARK_S` plus a random share of `phase_s` after its waiter started,
    so that it falls anywhere in a polling waiter's cycle.
    """
    ids = await hold_many(gate, CROSS_PROCESS_WARMUP + count)
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(DECIDER), url, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    stdin, stdout = child.stdin, child.stdout
    assert stdin is not None and stdout is not None
    ready = await asyncio.wait_for(stdout.readline(), 60)
    if ready.strip() != b"ready":
        raise RuntimeError(f"bench/_decider.py did not start: {ready!r}")
    loop = asyncio.get_running_loop()
    committed: dict[str, asyncio.Future[float]] = {i: loop.create_future() for i in ids}

    async def read_commits() -> None:
        while line := await stdout.readline():
            approval_id, at = line.decode().split()
            committed[approval_id].set_result(float(at))

    reader = asyncio.create_task(read_commits())
    gate_slots = asyncio.Semaphore(concurrency)

    async def sample(approval_id: str, delay: float) -> float:
        async with gate_slots:

            async def wait() -> tuple[float, Approval]:
                approval = await gate.wait(approval_id, timeout=30)
                return time.time(), approval

            waiter = asyncio.create_task(wait())
            await asyncio.sleep(delay)
            stdin.write(f"{approval_id}\n".encode())
            await stdin.drain()
            woke_at, approval = await waiter
            assert approval.decided_by == CHILD_ACTOR
            return woke_at - await asyncio.wait_for(committed[approval_id], 30)

    try:
        for approval_id in ids[:CROSS_PROCESS_WARMUP]:
            await sample(approval_id, PARK_S)
        samples = await asyncio.gather(
            *(sample(i, PARK_S + rng.uniform(0, phase_s)) for i in ids[CROSS_PROCESS_WARMUP:])
        )
    finally:
        stdin.close()
        if await child.wait() != 0:
            raise RuntimeError(f"bench/_decider.py exited with status {child.returncode}")
        await reader
    return latency(samples)


@dataclass(frozen=True, kw_only=True)
class Listing:
    rows: int
    tools: int
    insert_rows_per_s: float
    filtered: Latency
    """``status="pending", tool=LIST_TOOL, limit=100``."""
    pending: Latency
    """``status="pending", limit=100``."""
    unfiltered: Latency
    """``limit=100``, no filter: the first page of everything."""
    filtered_plan: list[str]
    pending_plan: list[str]


def listing_approvals(rng: random.Random, count: int, start: datetime) -> list[Approval]:
    approvals: list[Approval] = []
    batch_id = new_id()
    run_id = new_id()
    for i in range(count):
        if rng.random() < 0.4:
            batch_id = new_id()
        if rng.random() < 0.05:
            run_id = new_id()
        tool = rng.choice(LIST_TOOLS)
        approvals.append(
            Approval(
                id=new_id(),
                call=ToolCall(
                    id=f"call-{i}",
                    name=tool,
                    args={"target": f"obj-{rng.randrange(10_000)}", "n": rng.randrange(100)},
                    agent=rng.choice(("ops", "ops/researcher", "billing", "assistant")),
                ),
                batch_id=batch_id,
                run_id=run_id,
                thread_id=f"thread-{run_id[-6:]}",
                rule=f"rules[{LIST_TOOLS.index(tool)}]",
                reason=f"{tool} needs a person",
                requested_at=start + timedelta(milliseconds=i),
                requested_by="agent",
            )
        )
    return approvals


async def bench_listing(store: SQLStore, backend: BackendName, rng: random.Random) -> Listing:
    start = datetime.now(UTC)
    inserted = 0
    insert_s = 0.0
    while inserted < LIST_ROWS:
        batch = listing_approvals(rng, min(LIST_BATCH, LIST_ROWS - inserted), start)
        started = time.perf_counter()
        await store.create_approvals(batch)
        insert_s += time.perf_counter() - started
        inserted += len(batch)
        start += timedelta(milliseconds=len(batch))
    if backend == "postgresql":
        await store.run(lambda c: c.exec_driver_sql("ANALYZE approvals"))

    def lister(**filters: str) -> Callable[[], Awaitable[object]]:
        async def list_page() -> None:
            page = await store.list_approvals(limit=100, **filters)
            assert len(page) == 100
            if "tool" in filters:
                assert all(a.call.name == filters["tool"] for a in page)

        return list_page

    filtered = await timed(lister(status="pending", tool=LIST_TOOL), LIST_RUNS, 10)
    pending = await timed(lister(status="pending"), PENDING_LIST_RUNS, 5)
    unfiltered = await timed(lister(), LIST_RUNS, 10)
    return Listing(
        rows=LIST_ROWS,
        tools=len(LIST_TOOLS),
        insert_rows_per_s=round(LIST_ROWS / insert_s),
        filtered=filtered,
        pending=pending,
        unfiltered=unfiltered,
        filtered_plan=await query_plan(store, backend, tool=LIST_TOOL),
        pending_plan=await query_plan(store, backend),
    )


# -- where the time goes ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Diagnosis:
    statement_driver: Latency
    """``SELECT 1`` through the bare driver (sqlite3; asyncpg)."""
    statement_sqlalchemy: Latency
    """``SELECT 1`` through the store's engine, on one connection held open."""
    read: Latency
    """``store.get_approval(id)``: a whole read transaction."""
    commit_durable: Latency
    """A bare ``BEGIN; UPDATE one row; COMMIT`` through the driver, as the store commits."""
    commit_relaxed: Latency
    durable_setting: str
    relaxed_setting: str
    decide_durable: Latency
    """``gate.decide`` as shipped, measured again just before `decide_relaxed`, on the same
    tables (which by then hold the listing's 100,000 rows)."""
    decide_relaxed: Latency
    """``gate.decide`` with the relaxed setting."""
    decide_wall_ms: float
    """Mean wall time of the decides of `decide_durable`."""
    decide_cpu_ms: float
    """Mean CPU time of this process (all its threads) in those decides: what is left of
    `decide_wall_ms` is waiting for the database, the disk or the scheduler."""
    decide_transactions: int
    decide_statements: list[str]
    """What one ``gate.decide`` sends, besides BEGIN, COMMIT and ROLLBACK."""


@contextlib.asynccontextmanager
async def recording(store: SQLStore) -> AsyncIterator[list[tuple[str, Any]]]:
    """Every statement (and its parameters) the store's engine executes in the block; a
    transaction's start is recorded as ``(begin)``."""
    seen: list[tuple[str, Any]] = []
    engine = store.engine

    def on_execute(*args: Any) -> None:
        _conn, _cursor, statement, parameters, _context, _many = args
        if not statement.lstrip().upper().startswith("BEGIN"):
            seen.append((statement, parameters))

    def on_begin(*_args: Any) -> None:
        seen.append(("(begin)", None))

    event.listen(engine, "before_cursor_execute", on_execute)
    event.listen(engine, "begin", on_begin)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", on_execute)
        event.remove(engine, "begin", on_begin)


def short(statement: str) -> str:
    """``UPDATE approvals``, ``SELECT audit_head``, ``SELECT pg_notify``: verb and target."""
    words = statement.split()
    verb = words[0].upper()
    target = words[1]
    for marker in ("FROM", "INTO"):
        if marker in words:
            target = words[words.index(marker) + 1]
            break
    return f"{verb} {re.split(r'[(,]', target)[0].strip(chr(34))}"


async def query_plan(store: SQLStore, backend: BackendName, **filters: str) -> list[str]:
    """How the database runs the SELECT of a listing of pending approvals."""
    async with recording(store) as seen:
        await store.list_approvals(status="pending", limit=100, **filters)
    statement, parameters = next((s, p) for s, p in seen if s.lstrip().startswith("SELECT"))
    prefix = "EXPLAIN QUERY PLAN " if backend == "sqlite" else "EXPLAIN "
    rows = await store.run(
        lambda c: c.exec_driver_sql(prefix + statement, parameters).all(), write=False
    )
    return [str(row[-1]) for row in rows]


async def statement_through_sqlalchemy(store: SQLStore) -> Latency:
    """One ``SELECT 1`` transaction through the store's runner: the floor of any operation."""

    async def select_one() -> None:
        await store.run(lambda c: c.exec_driver_sql("SELECT 1"), write=False)

    return await timed(select_one, DIAGNOSIS_SAMPLES, WARMUP)


def sqlite_floors(path: Path) -> tuple[Latency, Latency, Latency]:
    """``SELECT 1``, then ``BEGIN IMMEDIATE; UPDATE; COMMIT`` with FULL and NORMAL, on the
    bench's own file (WAL), through the standard library's sqlite3."""
    connection = sqlite3.connect(path, isolation_level=None, timeout=30)
    clock = time.perf_counter
    try:
        connection.execute(
            "CREATE TABLE IF NOT EXISTS bench_floor (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)"
        )
        connection.execute("INSERT OR IGNORE INTO bench_floor VALUES (1, 0)")
        selects: list[float] = []
        for _ in range(DIAGNOSIS_SAMPLES):
            start = clock()
            connection.execute("SELECT 1").fetchall()
            selects.append(clock() - start)
        commits: dict[str, Latency] = {}
        for synchronous in ("FULL", "NORMAL"):
            connection.execute(f"PRAGMA synchronous={synchronous}")
            timings: list[float] = []
            for i in range(WARMUP + DIAGNOSIS_SAMPLES):
                start = clock()
                connection.execute("BEGIN IMMEDIATE")
                connection.execute("UPDATE bench_floor SET n = n + 1 WHERE id = 1")
                connection.execute("COMMIT")
                if i >= WARMUP:
                    timings.append(clock() - start)
            commits[synchronous] = latency(timings)
    finally:
        connection.close()
    return latency(selects), commits["FULL"], commits["NORMAL"]


async def postgres_floors(dsn: str) -> tuple[Latency, Latency, Latency]:
    """``SELECT 1``, then ``BEGIN; UPDATE; COMMIT`` with synchronous_commit on and off,
    through a bare asyncpg connection."""
    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute(
            "CREATE TABLE IF NOT EXISTS bench_floor (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);"
            "INSERT INTO bench_floor VALUES (1, 0) ON CONFLICT DO NOTHING"
        )

        async def select_one() -> None:
            await connection.fetchval("SELECT 1")

        async def commit_one() -> None:
            async with connection.transaction():
                await connection.execute("UPDATE bench_floor SET n = n + 1 WHERE id = 1")

        select = await timed(select_one, DIAGNOSIS_SAMPLES, WARMUP)
        await connection.execute("SET synchronous_commit = on")
        durable = await timed(commit_one, DIAGNOSIS_SAMPLES, WARMUP)
        await connection.execute("SET synchronous_commit = off")
        relaxed = await timed(commit_one, DIAGNOSIS_SAMPLES, WARMUP)
    finally:
        await connection.close()
    return select, durable, relaxed


async def relax_durability(store: SQLStore, backend: BackendName, database: str) -> None:
    """From now on the store's connections commit without waiting for the disk."""
    if backend == "sqlite":

        def relax(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        event.listen(store.engine, "connect", relax)
    else:
        await store.run(
            lambda c: c.exec_driver_sql(f'ALTER DATABASE "{database}" SET synchronous_commit = off')
        )
    await store.runner.reset()  # the pooled connections go; new ones take the setting


async def bench_diagnosis(
    store: SQLStore, gate: Gate, backend: BackendName, target: str
) -> Diagnosis:
    """`target` is the SQLite file or the PostgreSQL database name."""
    [approval_id] = await hold_many(gate, 1)
    async with recording(store) as seen:
        await gate.decide(approval_id, Approve(), actor=ACTOR)
    read = await timed(lambda: store.get_approval(approval_id), DIAGNOSIS_SAMPLES, WARMUP)
    through_sqlalchemy = await statement_through_sqlalchemy(store)
    if backend == "sqlite":
        select, durable, relaxed = sqlite_floors(Path(target))
        settings = ("synchronous=FULL", "synchronous=NORMAL")
    else:
        base = PG_ADMIN.rsplit("/", 1)[0]
        select, durable, relaxed = await postgres_floors(f"{base}/{target}")
        settings = ("synchronous_commit=on", "synchronous_commit=off")

    count = RELAXED_DECIDES[backend]
    pending = iter(await hold_many(gate, 2 * (WARMUP + count)))

    async def decide() -> None:
        await gate.decide(next(pending), Approve(), actor=ACTOR)

    wall, cpu = time.perf_counter(), time.process_time()
    decide_durable = await timed(decide, count, WARMUP)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await relax_durability(store, backend, target)
    decide_relaxed = await timed(decide, count, WARMUP)
    return Diagnosis(
        statement_driver=select,
        statement_sqlalchemy=through_sqlalchemy,
        read=read,
        commit_durable=durable,
        commit_relaxed=relaxed,
        durable_setting=settings[0],
        relaxed_setting=settings[1],
        decide_durable=decide_durable,
        decide_relaxed=decide_relaxed,
        decide_wall_ms=round(wall * 1_000 / (WARMUP + count), 4),
        decide_cpu_ms=round(cpu * 1_000 / (WARMUP + count), 4),
        decide_transactions=sum(s == "(begin)" for s, _ in seen),
        decide_statements=[short(s) for s, _ in seen if s != "(begin)"],
    )


# -- one backend -----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class BackendResult:
    backend: BackendName
    limit: Commits
    """Single-row durable commits on one connection, measured just before `decisions`."""
    decisions: Decisions
    wakes: Wakes
    listing: Listing
    diagnosis: Diagnosis
    seconds: float


async def bench_backend(
    backend: BackendName,
    url: str,
    target: str,
    console: Console,
    measure_limit: Callable[[], Awaitable[Commits]],
) -> BackendResult:
    started = time.perf_counter()
    rng = random.Random(f"{SEED}-{backend}")

    def progress(what: str) -> None:
        console.print(f"  {backend}: {what} ({time.perf_counter() - started:.0f} s)", style="dim")

    async with open_store(url) as store:
        gate = Gate(POLICY, store)  # the default poll_interval, 0.5 s
        limit = await measure_limit()
        progress(f"limit: {limit.commits_per_s:,.0f} commits/s ({limit.tool})")
        decisions = await bench_hold_and_decide(gate, HOLDS[backend], rng)
        progress("holds and decisions")
        in_process_decide, in_process = await bench_in_process_wakes(gate, IN_PROCESS_WAKES)
        concurrency = CROSS_PROCESS_CONCURRENCY[backend]
        phase = POLL_INTERVAL_S if backend == "sqlite" else 0.010
        cross_process = await bench_cross_process_wakes(
            gate, url, CROSS_PROCESS_WAKES, concurrency, phase, rng
        )
        progress("wake-ups")
        listing = await bench_listing(store, backend, rng)
        progress(f"listing {LIST_ROWS:,} approvals")
        diagnosis = await bench_diagnosis(store, gate, backend, target)
        progress("where the time goes")
    return BackendResult(
        backend=backend,
        limit=limit,
        decisions=decisions,
        wakes=Wakes(
            in_process_decide=in_process_decide,
            in_process=in_process,
            cross_process=cross_process,
            cross_process_concurrency=concurrency,
        ),
        listing=listing,
        diagnosis=diagnosis,
        seconds=round(time.perf_counter() - started, 1),
    )


async def bench_sqlite(console: Console) -> BackendResult:
    with tempfile.TemporaryDirectory(prefix="signoff-bench-") as folder:
        path = Path(folder) / "signoff.db"

        async def limit() -> Commits:
            return await asyncio.to_thread(sqlite_commits, Path(folder))

        return await bench_backend("sqlite", f"sqlite:///{path}", str(path), console, limit)


async def bench_postgres(console: Console) -> BackendResult | None:
    async with scratch_postgres(console) as url:
        if url is None:
            return None

        async def limit() -> Commits:
            return await postgres_commits(url, 1)

        return await bench_backend("postgresql", asyncpg_url(url), url.rsplit("/", 1)[1],
                                   console, limit)  # fmt: skip


# -- reporting -------------------------------------------------------------------------------


def target(
    name: str,
    goal_ms: float,
    result: BackendResult | None,
    pick: Callable[[BackendResult], float],
    limit: Callable[[BackendResult], tuple[float, str]] | None = None,
) -> Target:
    """At most `goal_ms`; against ``limit(result)`` (the limit in ms and what it is), if any."""
    bound = None if result is None or limit is None else limit(result)
    return limit_target(
        name,
        None if result is None else pick(result),
        goal=goal_ms,
        limit=None if bound is None else bound[0],
        limit_what="" if bound is None else bound[1],
        better="lower",
    )


def targets(sqlite: BackendResult, postgres: BackendResult | None) -> list[Target]:
    """The decide goals (SQLite's from issue 22) against one durable commit measured in the
    same run: its p50 on SQLite, its mean with one client on PostgreSQL (pgbench's figure)."""

    def sqlite_commit(r: BackendResult) -> tuple[float, str]:
        assert r.limit.latency is not None, "the SQLite loop times each commit"
        return r.limit.latency.p50_ms, "for one durable commit (p50)"

    def postgres_commit(r: BackendResult) -> tuple[float, str]:
        return r.limit.mean_ms, "for one commit by one client (mean)"

    decide = "gate.decide p50"
    return [
        target(
            f"{decide}, SQLite", 0.4, sqlite, lambda r: r.decisions.decide.p50_ms, sqlite_commit
        ),
        target(
            f"{decide}, PostgreSQL",
            2,
            postgres,
            lambda r: r.decisions.decide.p50_ms,
            postgres_commit,
        ),
        target(
            "cross-process wake p50, PostgreSQL",
            20,
            postgres,
            lambda r: r.wakes.cross_process.p50_ms,
        ),
        target("filtered listing p99, SQLite", 20, sqlite, lambda r: r.listing.filtered.p99_ms),
        target(
            "filtered listing p99, PostgreSQL",
            20,
            postgres,
            lambda r: r.listing.filtered.p99_ms,
        ),
    ]


def report(
    console: Console,
    sqlite: BackendResult,
    postgres: BackendResult | None,
    goals: Sequence[Target],
) -> None:
    both = (sqlite, postgres)
    console.print(
        side_by_side(
            "Holding and deciding, one call at a time (ms)",
            [
                ("hold: gate.check([1 asked call])", lambda r: r.decisions.hold),
                ("decide: gate.decide(id, Approve())", lambda r: r.decisions.decide),
            ],
            both,
        )
    )
    console.print(
        side_by_side(
            "Wake-ups (ms)",
            [
                ("in-process: decide alone", lambda r: r.wakes.in_process_decide),
                ("in-process: before decide → wait() returns", lambda r: r.wakes.in_process),
                ("cross-process: child commit → wait() returns", lambda r: r.wakes.cross_process),
            ],
            both,
        )
    )
    console.print(
        "  cross-process: SQLite waiters poll (Gate poll_interval default 0.5 s), decisions at a "
        f"random phase, {sqlite.wakes.cross_process_concurrency} waiters at once; PostgreSQL "
        "wakes through LISTEN/NOTIFY, one waiter at a time",
        style="dim",
    )
    console.print(
        side_by_side(
            f"Listing {LIST_ROWS:,} pending approvals of {len(LIST_TOOLS)} tools, 100 a page (ms)",
            [
                (f"status=pending, tool={LIST_TOOL}", lambda r: r.listing.filtered),
                ("status=pending", lambda r: r.listing.pending),
                ("no filter (first page)", lambda r: r.listing.unfiltered),
            ],
            both,
        )
    )
    for result in both:
        if result is not None:
            console.print(
                f"  {result.backend}: bulk insert {result.listing.insert_rows_per_s:,.0f} rows/s "
                f"({LIST_BATCH:,} a call)\n    plan, status and tool: "
                + " | ".join(result.listing.filtered_plan)
                + "\n    plan, status only: "
                + " | ".join(result.listing.pending_plan),
                style="dim",
            )

    diagnosis = Table(title="Where a decision's time goes (p50, ms)")
    diagnosis.add_column("")
    diagnosis.add_column("SQLite", justify="right", style="green")
    diagnosis.add_column("PostgreSQL", justify="right", style="cyan")
    rows: list[tuple[str, Callable[[BackendResult], str]]] = [
        ("SELECT 1, bare driver", lambda r: ms(r.diagnosis.statement_driver.p50_ms)),
        (
            "SELECT 1, one store transaction",
            lambda r: ms(r.diagnosis.statement_sqlalchemy.p50_ms),
        ),
        ("read: store.get_approval", lambda r: ms(r.diagnosis.read.p50_ms)),
        (
            "bare BEGIN; UPDATE; COMMIT, durable",
            lambda r: f"{ms(r.diagnosis.commit_durable.p50_ms)} ({r.diagnosis.durable_setting})",
        ),
        (
            "bare BEGIN; UPDATE; COMMIT, relaxed",
            lambda r: f"{ms(r.diagnosis.commit_relaxed.p50_ms)} ({r.diagnosis.relaxed_setting})",
        ),
        ("gate.decide, durable (as shipped)", lambda r: ms(r.diagnosis.decide_durable.p50_ms)),
        ("gate.decide, relaxed", lambda r: ms(r.diagnosis.decide_relaxed.p50_ms)),
        (
            "gate.decide: CPU of this process / wall (mean)",
            lambda r: f"{ms(r.diagnosis.decide_cpu_ms)} / {ms(r.diagnosis.decide_wall_ms)}",
        ),
        (
            "gate.decide: transactions / statements",
            lambda r: f"{r.diagnosis.decide_transactions} / {len(r.diagnosis.decide_statements)}",
        ),
    ]
    for label, show in rows:
        diagnosis.add_row(label, *(show(r) if r is not None else "—" for r in both))
    console.print(diagnosis)
    console.print(limits_table([r.limit for r in both if r is not None]))
    for result in both:
        if result is not None:
            console.print(
                f"  {result.backend} decide sends: "
                + ", ".join(result.diagnosis.decide_statements),
                style="dim",
            )

    print_targets(console, goals)


async def run(console: Console) -> tuple[BackendResult, BackendResult | None]:
    sqlite = await bench_sqlite(console)
    postgres = await bench_postgres(console)
    return sqlite, postgres


def main() -> None:
    console = wide_console()
    started = time.perf_counter()
    console.print(
        f"signoff {__version__}, Python {platform.python_version()} on {platform.machine()}; "
        f"SQLite {sqlite3.sqlite_version}; PostgreSQL at {PG_ADMIN}"
    )
    sqlite, postgres = asyncio.run(run(console))
    goals = targets(sqlite, postgres)
    report(console, sqlite, postgres, goals)
    wall_s = time.perf_counter() - started

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    results = {
        **environment("approvals"),
        "sqlite_version": sqlite3.sqlite_version,
        "config": {
            "seed": SEED,
            "holds": HOLDS,
            "warmup": WARMUP,
            "in_process_wakes": IN_PROCESS_WAKES,
            "cross_process_wakes": CROSS_PROCESS_WAKES,
            "cross_process_concurrency": CROSS_PROCESS_CONCURRENCY,
            "poll_interval_s": POLL_INTERVAL_S,
            "park_s": PARK_S,
            "list_rows": LIST_ROWS,
            "list_batch": LIST_BATCH,
            "list_tools": len(LIST_TOOLS),
            "list_tool": LIST_TOOL,
            "list_runs": LIST_RUNS,
            "pending_list_runs": PENDING_LIST_RUNS,
            "diagnosis_samples": DIAGNOSIS_SAMPLES,
            "relaxed_decides": RELAXED_DECIDES,
        },
        "backends": {
            "sqlite": asdict(sqlite),
            "postgresql": None if postgres is None else asdict(postgres),
        },
        "targets": [asdict(goal) for goal in goals],
        "wall_time_s": round(wall_s, 1),
    }
    RESULTS.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    console.print(f"wall time {wall_s:.1f} s; results in {RESULTS}")


if __name__ == "__main__":
    main()
