"""The server over real HTTP: decisions per second under concurrent clients, and how soon a
decision reaches a run's event stream, on SQLite and on PostgreSQL.

Run it with ``make bench``. Each backend gets a fresh database: a SQLite file in a temporary
folder, and a new ``signoff_bench_<random>`` database on this machine's PostgreSQL server
(``SIGNOFF_BENCH_POSTGRES``, by default ``postgresql://postgres@127.0.0.1:5432/test``), dropped
at the end.

**The server** runs in a child process (this file with ``--serve``): it opens the store, makes
``Gate(policy, store)`` (``ask`` for ``send_email`` and ``delete_pod``, both for the ``ops``
role), holds the approvals of the first part through ``gate.check`` (100 calls a transaction,
untimed), then serves ``create_app(Service(...), Auth(tokens=...))`` with ``uvicorn.Server`` on
127.0.0.1, an ephemeral port, as ``signoff serve`` does (``run_app``'s configuration, on the loop
``run_server`` picks: uvloop and httptools, which the server extra and the lock install, else
asyncio's loop and h11; the first line says which). It prints its URL and the held ids, and
stops gracefully when its stdin closes. The load comes from this process.
A separate process rather than a thread, because this machine has 2 cores: in one process the
clients (httpx parses every response in Python) and the server would share one GIL and take
turns, and the client's CPU would show up as server latency; in two processes each can have a
core. PostgreSQL's backends share the same two cores. The server's CPU time (from
``/proc/PID/stat``) and this process's are reported per decision, to show which side was busy.

**Deciding over HTTP.** 50 clients, each its own keep-alive HTTP/1.1 connection (bearer
token; `Connection`, a few lines on asyncio's streams), each taking the next held id and sending
``POST /v1/approvals/{id}/decision`` ``{"kind": "approve"}`` and awaiting the answer before its
next, every id once. (An ``httpx.AsyncClient`` per client cost this process about 0.64 ms of CPU
per decision, as much as the server spent, and a shared one with a pool of 50 connections about
4 ms: on two cores either measured the client, not the server.) A round of `DECIDE_WARMUP` decisions
opens the connections and is not counted; then `DECIDES` decisions are timed, each from just
before the request to its parsed 200 (checked: ``decided_by`` is the token's principal).
Decisions per second are the timed decisions over the round's wall time. The same then runs
with one client (`SERIAL_DECIDES` decisions after `SERIAL_WARMUP`), so the latency under 50
clients can be told apart from waiting in line (by Little's law, 50 clients at R decisions/s
wait about 50/R s per request).

**Decision → SSE event.** An ``Agent`` named ``ops`` with a ``ScriptedModel`` (a call of
``delete_pod``, then text) and the ``delete_pod`` tool. For each sample, on a fresh conversation
thread: ``POST /v1/threads/{thread}/runs?wait=10`` answers once the run pauses on the held call;
a reader follows ``GET /v1/runs/{id}/events`` (on its own connection) until the ``paused`` event
has arrived, so it is live; after a random pause of up to one ``poll_interval`` (so the decision
falls anywhere in the reader's cycle), the decision is POSTed; the figure is from just before the
POST to the ``decision`` event arriving on the stream (checked: it names the held approval). The
reader goes on until the run's ``completed`` event (the worker resumed it and the tool ran), also
reported, then closes the stream. `SSE_WARMUP` samples are not counted.

A reader of ``/v1/runs/{id}/events`` (``Service.follow``) looks for new events every
``poll_interval`` (0.25 s by default) unless woken in-process: a decision taken through the
same ``Service``'s gate wakes it at once, which is the case here (one server process). Decisions
taken on another replica wake it only on PostgreSQL (LISTEN/NOTIFY), otherwise at its next poll.
The events of a run resumed in the same process (``resumed``, ``completed``) wake it too; those
of a run resumed on another replica arrive at its next poll.

**The limit, in the same run** (issue 22; ``bench/_limits.py``). Just before the 50-client round,
with the server up and idle: on SQLite, single-row INSERT + COMMIT back to back on one ``sqlite3``
connection to a new file in the same temporary folder, WAL and ``synchronous=FULL`` as the store
has them; on PostgreSQL, single-row commits by `CONCURRENCY` clients, then by one,
on the bench's database, for 5 s each (``pgbench`` when it is installed, else asyncpg). A
decision is at least one such commit, so its commits/s bound the decisions/s (until decisions
share commits), and `CONCURRENCY` clients over that rate bound their p50 (Little's law).

Targets. Issue 22's, each printed with the limit and its ratio to it: decisions/s with 50
clients at least 2,500 on SQLite and 2,000 on PostgreSQL; decision p50 under 50 clients at most
20 ms on both. A soft goal besides: decision → SSE event p50 at most 300 ms. Missed targets are
printed as MISSED; the exit status is 0 all the same. ``bench/results/server.json`` keeps every
figure, the limits with them.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import platform
import random
import secrets
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final, Literal
from urllib.parse import urlsplit

import httpx
import uvicorn
from rich.console import Console
from rich.table import Table

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
    serve_until_stdin_closes,
    side_by_side,
    wide_console,
)
from _limits import Commits, limit_target, limits_table, postgres_commits, sqlite_commits
from signoff import Policy, ToolCall, __version__, tool
from signoff.agent import Agent, Message, ModelTurn
from signoff.cli.listen import run_server
from signoff.gate import Gate
from signoff.server import Auth, Principal, Service, create_app
from signoff.store import open_store
from signoff.testing import ScriptedModel, call

BackendName = Literal["sqlite", "postgresql"]

SEED: Final = 7
CONCURRENCY: Final = 50
DECIDE_WARMUP: Final = 200
DECIDES: Final = 2_000
SERIAL_WARMUP: Final = 20
SERIAL_DECIDES: Final = 300
HOLDS: Final = DECIDE_WARMUP + DECIDES + SERIAL_WARMUP + SERIAL_DECIDES
DECISIONS_GOAL: Final[dict[BackendName, float]] = {"sqlite": 2_500, "postgresql": 2_000}
"""Issue 22: decisions/s with `CONCURRENCY` clients."""
DECIDE_P50_GOAL_MS: Final = 20.0
SSE_WARMUP: Final = 3
SSE_SAMPLES: Final = 50
POLL_INTERVAL_S: Final = 0.25
"""``Service.poll_interval``'s default, which the bench leaves as it is."""
STEP_TIMEOUT_S: Final = 10.0
ACTOR: Final = "bench"
ROLE: Final = "ops"
SERVE: Final = "--serve"
TOKEN_ENV: Final = "SIGNOFF_BENCH_TOKEN"
HOST: Final = "127.0.0.1"
RESULTS: Final = Path(__file__).resolve().parent / "results" / "server.json"

POLICY: Final = Policy.from_dict(
    {
        "default": "allow",
        "rules": [{"ask": ["send_email", "delete_pod"], "approvers": [ROLE]}],
    }
)
HTTP_IMPLEMENTATION: Final = "httptools" if importlib.util.find_spec("httptools") else "h11"
LOOP_IMPLEMENTATION: Final = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
"""What ``signoff serve`` takes, and so the server here: uvloop and httptools when installed."""


# -- the server (the child process) ----------------------------------------------------------


@tool
def delete_pod(name: str) -> str:
    """Delete a pod."""
    return f"deleted {name}"


def scripted_turn(messages: Sequence[Message]) -> ModelTurn:
    """Asked to delete a pod: call ``delete_pod`` with the last word; given its result: done."""
    last = messages[-1]
    if last.role == "tool":
        return ModelTurn(text=f"(scripted) {last.content}.")
    return ModelTurn(tool_calls=(call("delete_pod", name=last.content.rsplit(" ", 1)[-1]),))


def ops_agent() -> Agent:
    turns = 2 * (SSE_WARMUP + SSE_SAMPLES) + 10  # two turns a run; runs go one at a time
    return Agent(name="ops", model=ScriptedModel([scripted_turn] * turns), tools=[delete_pod])


def email(i: int) -> ToolCall:
    return ToolCall(
        id=f"call-{i}",
        name="send_email",
        args={"to": f"user{i}@example.com", "subject": "Quarterly report", "body": "Attached."},
        agent="assistant",
    )


async def hold_many(gate: Gate, count: int) -> list[str]:
    """`count` pending approvals, created 100 to a transaction."""
    ids: list[str] = []
    for start in range(0, count, 100):
        calls = [email(i) for i in range(start, min(count, start + 100))]
        ids += [o.approval.id for o in await gate.check(calls) if o.approval is not None]
    return ids


async def serve(url: str, holds: int) -> None:
    """Hold `holds` approvals, serve the API on an ephemeral loopback port, print the URL and
    the held ids as one JSON line, and stop when stdin closes."""
    token = os.environ[TOKEN_ENV]
    async with open_store(url) as store:
        gate = Gate(POLICY, store)
        ids = await hold_many(gate, holds)
        service = Service(store=store, gate=gate, agents=[ops_agent()])
        auth = Auth(tokens={token: Principal(name=ACTOR, roles=frozenset({ROLE}))})
        await serve_until_stdin_closes(
            create_app(service, auth),
            host=HOST,
            port=0,
            ready=lambda port: {"url": f"http://{HOST}:{port}", "ids": ids},
        )


# -- the client (this process) ---------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Served:
    url: str
    token: str
    pid: int
    ids: list[str]

    def client(self, connections: int) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.url,
            headers={"Authorization": f"Bearer {self.token}"},
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
            timeout=30,
            trust_env=False,  # loopback: no proxy from the environment
        )


@contextlib.asynccontextmanager
async def served(url: str) -> AsyncIterator[Served]:
    """The server on `url`'s database in a child process, for as long as the block lasts."""
    token = secrets.token_urlsafe(24)
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(Path(__file__).resolve()),
        SERVE,
        url,
        str(HOLDS),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, TOKEN_ENV: token},
        limit=2**22,  # the ready line carries every held id
    )
    stdin, stdout = child.stdin, child.stdout
    assert stdin is not None and stdout is not None
    try:
        line = await asyncio.wait_for(stdout.readline(), 120)
        if not line:
            raise RuntimeError("the server process did not start (see its errors above)")
        ready = json.loads(line)
        yield Served(url=ready["url"], token=token, pid=child.pid, ids=ready["ids"])
    finally:
        stdin.close()
        try:
            status = await asyncio.wait_for(child.wait(), 30)
        except TimeoutError:
            child.kill()
            await child.wait()
            raise
    if status != 0:
        raise RuntimeError(f"the server process exited with status {status}")


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU time of process `pid` so far (Linux), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, kw_only=True)
class Decides:
    clients: int
    decisions_per_s: float
    latency: Latency
    server_cpu_ms: float | None
    """The server process's CPU time per decision, mean."""
    client_cpu_ms: float
    """This process's CPU time per decision, mean."""


class Connection:
    """One keep-alive HTTP/1.1 connection that sends decisions and reads their answers, on
    asyncio's streams. httpx cost this process about 0.64 ms of CPU per decision, as much as the
    server spent deciding it: with two cores, the load measured the client. This costs a small
    fraction of that, and checks the same: a 200 whose ``decided_by`` is the token's principal."""

    def __init__(self, url: str, token: str) -> None:
        parts = urlsplit(url)
        self._host, self._port = parts.hostname or HOST, parts.port or 80
        self._head = (
            "POST /v1/approvals/{id}/decision HTTP/1.1\r\n"
            f"Host: {parts.netloc}\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(APPROVE)}\r\n\r\n"
        )
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def __aenter__(self) -> Connection:
        self._streams = await asyncio.open_connection(self._host, self._port)
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._streams is not None:
            self._streams[1].close()
            await self._streams[1].wait_closed()

    async def decide(self, approval_id: str) -> None:
        assert self._streams is not None
        reader, writer = self._streams
        writer.write(self._head.format(id=approval_id).encode() + APPROVE)
        head = await reader.readuntil(b"\r\n\r\n")
        status = head[9:12]
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        body = json.loads(await reader.readexactly(length))
        if status != b"200" or body.get("decided_by") != ACTOR:
            raise RuntimeError(f"deciding {approval_id}: {status.decode()} {body}")


APPROVE = b'{"kind":"approve"}'


async def decide_all(connections: Sequence[Connection], ids: Sequence[str]) -> list[float]:
    """Approve every id once, each connection sending one request at a time; each request's
    seconds."""
    clock = time.perf_counter
    pending = iter(ids)
    timings: list[float] = []

    async def one_client(connection: Connection) -> None:
        for approval_id in pending:
            start = clock()
            await connection.decide(approval_id)
            timings.append(clock() - start)

    await asyncio.gather(*(one_client(c) for c in connections))
    return timings


async def bench_decides(served: Served, ids: Sequence[str], clients: int, warmup: int) -> Decides:
    """Decide the first `warmup` ids untimed, then the rest timed, with `clients` clients."""
    async with contextlib.AsyncExitStack() as stack:
        each = [
            await stack.enter_async_context(Connection(served.url, served.token))
            for _ in range(clients)
        ]
        await decide_all(each, ids[:warmup])
        timed = ids[warmup:]
        server_cpu, cpu, wall = cpu_seconds(served.pid), time.process_time(), time.perf_counter()
        timings = await decide_all(each, timed)
        wall = time.perf_counter() - wall
        cpu = time.process_time() - cpu
        server_after = cpu_seconds(served.pid)
    return Decides(
        clients=clients,
        decisions_per_s=round(len(timed) / wall, 1),
        latency=latency(timings),
        server_cpu_ms=(
            None
            if server_cpu is None or server_after is None
            else round((server_after - server_cpu) * 1_000 / len(timed), 3)
        ),
        client_cpu_ms=round(cpu * 1_000 / len(timed), 3),
    )


@dataclass(frozen=True, kw_only=True)
class Streams:
    decision_to_event: Latency
    """From just before the decision's POST to its ``decision`` event on the run's stream."""
    post: Latency
    """The decision's POST alone."""
    decision_to_completed: Latency
    """From just before the decision's POST to the resumed run's ``completed`` event."""
    start_run: Latency
    """``POST /v1/threads/{thread}/runs?wait=10`` until it answers with the run paused."""


async def follow(
    client: httpx.AsyncClient, run_id: str, held: str, live: asyncio.Future[None]
) -> tuple[float, float]:
    """Read the run's SSE stream: resolve `live` at its ``paused`` event; return when the
    ``decision`` event of `held` and the ``completed`` event arrived."""
    clock = time.perf_counter
    decision_at: float | None = None
    kind, data = "", ""
    try:
        async with client.stream("GET", f"/v1/runs/{run_id}/events") as response:
            if response.status_code != 200:
                raise RuntimeError(f"following run {run_id}: {response.status_code}")
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    kind = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    data = line.removeprefix("data: ")
                elif not line and kind:
                    arrived = clock()
                    if kind == "paused" and not live.done():
                        live.set_result(None)
                    elif kind == "decision" and decision_at is None:
                        if json.loads(data)["data"]["approval_id"] != held:
                            raise RuntimeError(f"run {run_id}: a decision on another approval")
                        decision_at = arrived
                    elif kind == "completed":
                        if decision_at is None:
                            raise RuntimeError(f"run {run_id} completed without its decision event")
                        return decision_at, arrived
                    elif kind == "failed":
                        raise RuntimeError(f"run {run_id} failed: {data}")
                    kind, data = "", ""
        raise RuntimeError(f"the stream of run {run_id} ended before the run completed")
    except Exception as exc:
        if not live.done():
            live.set_exception(exc)
        raise


async def stream_sample(
    client: httpx.AsyncClient, reader: httpx.AsyncClient, name: str, rng: random.Random
) -> tuple[float, float, float, float]:
    """One run paused, followed, decided: (start run, decision → event, POST, → completed)."""
    clock = time.perf_counter
    started = clock()
    response = await client.post(
        f"/v1/threads/{name}/runs",
        params={"wait": STEP_TIMEOUT_S},
        json={"agent": "ops", "input": f"delete {name}"},
    )
    start_run = clock() - started
    run = response.json()
    if response.status_code != 201 or run["status"] != "paused":
        raise RuntimeError(f"starting a run: {response.status_code} {run}")
    [held] = run["pending_approvals"]
    live: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    following = asyncio.create_task(follow(reader, run["id"], held, live))
    try:
        await asyncio.wait_for(live, STEP_TIMEOUT_S)  # the reader's error, if it failed first
        await asyncio.sleep(rng.uniform(0, POLL_INTERVAL_S))
        t0 = clock()
        decided = await client.post(f"/v1/approvals/{held}/decision", json={"kind": "approve"})
        posted = clock() - t0
        if decided.status_code != 200:
            raise RuntimeError(f"deciding {held}: {decided.status_code} {decided.text}")
        decision_at, completed_at = await asyncio.wait_for(following, STEP_TIMEOUT_S)
    finally:
        following.cancel()
        await asyncio.gather(following, return_exceptions=True)
    return start_run, decision_at - t0, posted, completed_at - t0


async def bench_streams(served: Served, backend: BackendName, rng: random.Random) -> Streams:
    samples: list[tuple[float, float, float, float]] = []
    async with served.client(4) as client, served.client(4) as reader:
        for i in range(SSE_WARMUP + SSE_SAMPLES):
            name = f"bench-{backend}-{i}-{uuid.uuid4().hex[:8]}"
            sample = await stream_sample(client, reader, name, rng)
            if i >= SSE_WARMUP:
                samples.append(sample)
    start_run, to_event, post, to_completed = zip(*samples, strict=True)
    return Streams(
        decision_to_event=latency(to_event),
        post=latency(post),
        decision_to_completed=latency(to_completed),
        start_run=latency(start_run),
    )


# -- one backend -----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class BackendResult:
    backend: BackendName
    limit: Commits
    """The limit of `concurrent`: single-row durable commits (SQLite: one connection, back to
    back; PostgreSQL: `CONCURRENCY` clients), measured just before it."""
    serial_limit: Commits
    """The limit of `serial` (SQLite: the same as `limit`; PostgreSQL: one client)."""
    concurrent: Decides
    serial: Decides
    streams: Streams
    seconds: float


async def bench_backend(
    backend: BackendName,
    url: str,
    console: Console,
    limits: Callable[[], Awaitable[tuple[Commits, Commits]]],
) -> BackendResult:
    """`limits` measures the limits of the 50-client and of the one-client round."""
    started = time.perf_counter()
    rng = random.Random(f"{SEED}-{backend}")

    def progress(what: str) -> None:
        console.print(f"  {backend}: {what} ({time.perf_counter() - started:.0f} s)", style="dim")

    async with served(url) as server:
        if len(server.ids) != HOLDS:
            raise RuntimeError(f"the server held {len(server.ids)} approvals, not {HOLDS}")
        progress(f"serving at {server.url} with {HOLDS:,} pending approvals")
        rng.shuffle(server.ids)
        limit, serial_limit = await limits()
        progress(f"limit: {limit.commits_per_s:,.0f} commits/s ({limit.tool})")
        concurrent_ids = server.ids[: DECIDE_WARMUP + DECIDES]
        serial_ids = server.ids[DECIDE_WARMUP + DECIDES :]
        concurrent = await bench_decides(server, concurrent_ids, CONCURRENCY, DECIDE_WARMUP)
        progress(f"{DECIDES:,} decisions, {CONCURRENCY} clients")
        serial = await bench_decides(server, serial_ids, 1, SERIAL_WARMUP)
        progress(f"{SERIAL_DECIDES:,} decisions, 1 client")
        streams = await bench_streams(server, backend, rng)
        progress(f"{SSE_SAMPLES} decisions followed on a run's event stream")
    return BackendResult(
        backend=backend,
        limit=limit,
        serial_limit=serial_limit,
        concurrent=concurrent,
        serial=serial,
        streams=streams,
        seconds=round(time.perf_counter() - started, 1),
    )


async def bench_sqlite(console: Console) -> BackendResult:
    with tempfile.TemporaryDirectory(prefix="signoff-bench-") as folder:
        path = Path(folder) / "signoff.db"

        async def limits() -> tuple[Commits, Commits]:
            disk = await asyncio.to_thread(sqlite_commits, Path(folder))
            return disk, disk

        return await bench_backend("sqlite", f"sqlite:///{path}", console, limits)


async def bench_postgres(console: Console) -> BackendResult | None:
    async with scratch_postgres(console) as url:
        if url is None:
            return None

        async def limits() -> tuple[Commits, Commits]:
            return await postgres_commits(url, CONCURRENCY), await postgres_commits(url, 1)

        return await bench_backend("postgresql", asyncpg_url(url), console, limits)


# -- reporting -------------------------------------------------------------------------------


def targets(sqlite: BackendResult, postgres: BackendResult | None) -> list[Target]:
    """Issue 22's goals, each against the limit measured in the same run (the decision p50's:
    `CONCURRENCY` clients over the limit's commits/s, by Little's law), and the soft goal
    of the event stream."""
    both: list[tuple[str, BackendName, BackendResult | None]] = [
        ("SQLite", "sqlite", sqlite),
        ("PostgreSQL", "postgresql", postgres),
    ]
    rate = {
        "sqlite": "durable commits/s",
        "postgresql": f"single-row commits/s of {CONCURRENCY} clients",
    }
    goals = [
        limit_target(
            f"decisions/s, {CONCURRENCY} clients, {label}",
            None if result is None else result.concurrent.decisions_per_s,
            goal=DECISIONS_GOAL[backend],
            limit=None if result is None else result.limit.commits_per_s,
            limit_what=rate[backend],
            better="higher",
        )
        for label, backend, result in both
    ]
    goals += [
        limit_target(
            f"decision p50, {CONCURRENCY} clients, {label}",
            None if result is None else result.concurrent.latency.p50_ms,
            goal=DECIDE_P50_GOAL_MS,
            limit=None if result is None else CONCURRENCY * 1_000 / result.limit.commits_per_s,
            limit_what=f"= {CONCURRENCY} clients / the commits/s limit",
            better="lower",
        )
        for label, backend, result in both
    ]
    goals += [
        limit_target(
            f"decision → SSE event p50, {label}",
            None if result is None else result.streams.decision_to_event.p50_ms,
            goal=300,
            limit=None,
            limit_what="",
            better="lower",
        )
        for label, _, result in both
    ]
    return goals


def report(
    console: Console,
    sqlite: BackendResult,
    postgres: BackendResult | None,
    goals: Sequence[Target],
) -> None:
    both = (sqlite, postgres)
    console.print(
        side_by_side(
            "POST /v1/approvals/{id}/decision over loopback HTTP, per request (ms)",
            [
                (f"{CONCURRENCY} concurrent clients", lambda r: r.concurrent.latency),
                ("1 client", lambda r: r.serial.latency),
            ],
            both,
        )
    )
    throughput = Table(title="Decisions per second, and CPU per decision (ms, mean)")
    throughput.add_column("")
    throughput.add_column("SQLite", justify="right", style="green")
    throughput.add_column("PostgreSQL", justify="right", style="cyan")
    rounds: list[tuple[str, Callable[[BackendResult], Decides]]] = [
        (f"{CONCURRENCY} clients", lambda r: r.concurrent),
        ("1 client", lambda r: r.serial),
    ]
    for label, pick in rounds:
        shown: list[tuple[str, Callable[[Decides], str]]] = [
            ("decisions/s", lambda d: f"{d.decisions_per_s:,.0f}"),
            (
                "server process CPU",
                lambda d: "—" if d.server_cpu_ms is None else ms(d.server_cpu_ms),
            ),
            ("client process CPU", lambda d: ms(d.client_cpu_ms)),
        ]
        for what, show in shown:
            throughput.add_row(
                f"{label}: {what}", *(show(pick(r)) if r is not None else "—" for r in both)
            )
    limits: list[tuple[str, Callable[[BackendResult], Commits]]] = [
        (f"{CONCURRENCY} clients", lambda r: r.limit),
        ("1 client", lambda r: r.serial_limit),
    ]
    for (label, pick), (_, limit) in zip(rounds, limits, strict=True):
        throughput.add_row(
            f"{label}: share of the commits/s limit",
            *(
                f"{pick(r).decisions_per_s / limit(r).commits_per_s:.2f}" if r is not None else "—"
                for r in both
            ),
        )
    console.print(throughput)
    console.print(
        limits_table([sqlite.limit, *((postgres.limit, postgres.serial_limit) if postgres else ())])
    )
    console.print(
        side_by_side(
            "A paused run followed on GET /v1/runs/{id}/events (ms)",
            [
                ("decision POSTed → decision event", lambda r: r.streams.decision_to_event),
                ("decision POST alone", lambda r: r.streams.post),
                ("decision POSTed → completed event", lambda r: r.streams.decision_to_completed),
                ("POST runs?wait → paused run", lambda r: r.streams.start_run),
            ],
            both,
        )
    )
    console.print(
        f"  the reader polls every poll_interval ({POLL_INTERVAL_S} s) unless woken in-process; "
        "decisions and runs in the same server wake it; another replica's runs do not",
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
        f"signoff {__version__}, Python {platform.python_version()} on {platform.machine()} "
        f"({os.cpu_count()} CPUs); uvicorn {uvicorn.__version__} ({HTTP_IMPLEMENTATION}, "
        f"{LOOP_IMPLEMENTATION}), "
        f"httpx {httpx.__version__}; SQLite {sqlite3.sqlite_version}; PostgreSQL at {PG_ADMIN}"
    )
    sqlite, postgres = asyncio.run(run(console))
    goals = targets(sqlite, postgres)
    report(console, sqlite, postgres, goals)
    wall_s = time.perf_counter() - started

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    results = {
        **environment("server"),
        "cpu_count": os.cpu_count(),
        "sqlite_version": sqlite3.sqlite_version,
        "uvicorn_version": uvicorn.__version__,
        "http_implementation": HTTP_IMPLEMENTATION,
        "loop_implementation": LOOP_IMPLEMENTATION,
        "httpx_version": httpx.__version__,
        "config": {
            "seed": SEED,
            "server": f"child process, uvicorn on loopback, {LOOP_IMPLEMENTATION} loop",
            "concurrency": CONCURRENCY,
            "decide_warmup": DECIDE_WARMUP,
            "decides": DECIDES,
            "serial_decides": SERIAL_DECIDES,
            "sse_warmup": SSE_WARMUP,
            "sse_samples": SSE_SAMPLES,
            "poll_interval_s": POLL_INTERVAL_S,
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
    if sys.argv[1:2] == [SERVE]:
        run_server(serve(sys.argv[2], int(sys.argv[3])))
    else:
        main()
