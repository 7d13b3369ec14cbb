"""Two `signoff serve` replicas and a PostgreSQL of their own, each on a host of its own
(`network`): partitioned from the database and healed, SIGKILLed and paused (`nemesis`) while
clients start runs, decide their calls (sometimes on both replicas at once), grant and revoke —
Jepsen's method on one machine: a workload, a nemesis, and a checker over the history.

Every request is in the history with when it began and ended and how it came out: ``ok``,
``fail`` (it did not happen: a 4xx) or ``info`` (nobody knows: a 5xx, or no answer in time).
Every real execution of a tool is a line of the side file (`tests.chaos.agents`). After the
nemesis heals everything, the remaining calls are approved and every run is let finish; then
`check` reads the history, the side file and the database:

- no tool ran twice for one call, none ran that nobody approved or a grant let through, and
  none ran before it was (the side file's clock against the audit's: one machine's);
- each recorded result names the process that really ran the call (a holder fenced out
  records nothing);
- no decision lost (one acknowledged is the one kept; a different one is never acknowledged
  too) or doubled (one per approval in the audit);
- no grant used after its revocation, in the order the database committed them (the audit
  chain's), and every acknowledged revocation recorded;
- the audit chain verifies, every run finished with each allowed call's result, and both
  replicas answer alike;
- no request got an answer other than its own, a 409 (another decision came first) or a 503
  (the database did not answer: try again).

`planted` puts a fault of each kind into copies of what happened, and the test asserts that
`check` reports each.

`python -m tests.chaos.partitions` runs the large size (`make chaos`); the test the small one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import signal
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from signoff.store import AuditReport, open_store
from signoff.store.runs import RunRecord
from signoff.types import Approval, AuditEntry
from tests.chaos.cluster import Postgres, Replica, postgres_programs
from tests.chaos.network import Host, Network, cannot_make_namespaces
from tests.deadline import HANG

__all__ = ["LARGE", "SMALL", "Size", "Trial", "check", "figures", "planted", "trial", "why_not"]

TOKEN = "chaos-t0ken"
CLIENT_SECONDS = 5.0
"""How long a client waits for an answer before it calls the request's outcome unknown."""
LEASE_SECONDS = 3
"""The replicas' run lease: how soon a run a dead or cut-off replica held is taken over."""
BOUNDS = (
    "connect_timeout=3&command_timeout=4&idle_in_transaction_session_timeout=2s&tcp_user_timeout=2s"
)
"""The replicas' waits on the database (`signoff.store.postgres`), shorter than by default: a
replica cut off mid-transaction is let go of in seconds, not half a minute."""


ANSWERS = {
    "start": {201, 503},
    "decide": {200, 409, 503},  # 409: another decision came first
    "grant": {200, 409, 503},
    "revoke": {200, 503},
}
"""The statuses each request may get, whatever the nemesis does: a database that does not
answer is a 503 to try again, never a 500, nor a 400 that blames the request."""


@dataclass(frozen=True)
class Size:
    clients: int
    steps: int
    """Nemesis steps (`nemesis`): partitions, kills and pauses, in turn."""
    gap: int
    """Operations the workload completes between two steps."""


SMALL = Size(clients=3, steps=4, gap=8)
LARGE = Size(clients=4, steps=24, gap=12)


@dataclass
class Op:
    """One request of the history."""

    client: int
    kind: str  # start | decide | grant | revoke
    replica: str
    target: str  # the thread started, the approval decided, the grant revoked
    began: float
    ended: float = 0.0
    outcome: str = ""  # ok | fail | info
    sent: dict[str, Any] = field(default_factory=dict)
    """The request's body."""
    status: int | None = None
    value: dict[str, Any] = field(default_factory=dict)
    """The answer's body."""


@dataclass
class Trial:
    """What happened: the history, and what the nemesis did."""

    history: list[Op] = field(default_factory=list)
    nemesis: list[tuple[float, str]] = field(default_factory=list)
    store_url: str = ""
    side: Path = Path()
    replicas: list[Replica] = field(default_factory=list)
    views: dict[str, dict[str, Any]] = field(default_factory=dict)
    """What each replica answers of every run, approval and the audit, after the heal."""
    anomalies: list[str] = field(default_factory=list)
    """What `check` found wrong, read while the database still runs."""
    grant_uses: int = 0
    """Calls a grant let through, as the audit has them."""
    planted: dict[str, list[str]] = field(default_factory=dict)
    """With `trial(plant=True)`: what `check` says of each fault `planted` puts in."""

    def count(self, kind: str, outcome: str | None = None) -> int:
        return sum(1 for op in self.history if op.kind == kind and outcome in (None, op.outcome))


def why_not() -> str | None:
    """Why the partition test cannot run here, or None."""
    reason = cannot_make_namespaces()
    if reason is None and postgres_programs() is None:
        reason = "no PostgreSQL server programs (Debian: apt-get install postgresql) or runuser"
    return reason


@contextlib.asynccontextmanager
async def cluster(folder: Path) -> AsyncIterator[tuple[Network, Host, list[Replica], str]]:
    """PostgreSQL on host ``pg``, replicas on hosts ``a`` and ``b``, and this machine's own
    namespace (the clients'), all linked to one router. Yields the network, the database's
    host, the replicas, and the database's URL."""
    programs = postgres_programs()
    assert programs is not None
    async with contextlib.AsyncExitStack() as stack:  # whatever was started is stopped
        network = Network()
        stack.callback(network.close)
        network.host(None)  # the clients', and the checker's
        pg = network.host("pg")
        a, b = network.host("a"), network.host("b")
        postgres = Postgres(pg, [pg.address], programs, folder / "postgres.log")
        stack.push_async_callback(postgres.stop)
        await postgres.start()
        side = folder / "executions.txt"
        side.touch()
        replicas = [_replica("a", a, pg, folder, side), _replica("b", b, pg, folder, side)]
        for replica in replicas:  # one at a time: the first creates the schema
            stack.push_async_callback(replica.stop)
            await replica.start()
        yield network, pg, replicas, f"postgresql://postgres@{pg.address}:5432/postgres"


def _replica(name: str, host: Host, pg: Host, folder: Path, side: Path) -> Replica:
    config = folder / f"{name}.yaml"
    config.write_text(
        f"database: postgresql://postgres@{pg.address}:5432/postgres?{BOUNDS}\n"
        "auth:\n  tokens:\n    - {principal: olga, roles: [ops], token_env: SIGNOFF_CHAOS_TOKEN}\n"
        f"runs: {{lease: {LEASE_SECONDS}s}}\n"
        "rules:\n  - ask: [delete_pod, restart_pod]\n"
    )
    env = os.environ | {
        "SIGNOFF_CHAOS_TOKEN": TOKEN,
        "SIGNOFF_TEST_SIDE_FILE": str(side),
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    return Replica(name, host, config, env, folder / f"{name}.log")


class Workload:
    """Clients that start runs and decide their calls on either replica, one of them also
    granting (approve, always, for the agent, any arguments) and revoking."""

    def __init__(self, trial: Trial, clients: dict[str, httpx.AsyncClient], seed: int) -> None:
        self.trial = trial
        self.clients = clients
        self.rng = random.Random(seed)
        self.numbers = itertools.count()
        self.pending: list[tuple[str, str]] = []  # (approval id, tool)
        self.grant: str | None = None  # the grant in force, as far as the clients know
        self.done = 0
        self.progress = asyncio.Condition()

    async def request(self, op: Op, method: str, path: str, **kwargs: Any) -> dict[str, Any] | None:
        """Send `op`'s request; record how it came out. Its body when ``ok``."""
        self.trial.history.append(op)
        try:
            response = await self.clients[op.replica].request(
                method, path, json=op.sent or None, **kwargs
            )
        except httpx.TransportError as exc:
            op.outcome, op.value = "info", {"error": type(exc).__name__}
        else:
            op.status = response.status_code
            op.outcome = "ok" if response.is_success else "info" if op.status >= 500 else "fail"
            with contextlib.suppress(ValueError):
                op.value = response.json()
        op.ended = time.time()
        if op.outcome == "ok":
            async with self.progress:
                self.done += 1
                self.progress.notify_all()
        return op.value if op.outcome == "ok" else None

    async def client(self, number: int, stop: asyncio.Event) -> None:
        """Operations until `stop`, mostly on one replica: on an unknown outcome the client
        turns to the other, as a load balancer would, and now and then tries the first again."""
        replicas = list(self.clients)
        home = replicas[number % len(replicas)]
        while not stop.is_set():
            away = [r for r in replicas if r != home]
            replica = home if self.rng.random() < 0.8 else self.rng.choice(away)
            before = len(self.trial.history)
            roll = self.rng.random()
            if number == 0 and roll < 0.3:
                await self.granting(number, replica)
            elif roll < 0.45 or not self.pending:
                await self.start(number, replica, "restart" if roll < 0.15 else "delete")
            else:
                await self.decide(number, replica)
            if any(op.outcome == "info" for op in self.trial.history[before:]):
                home = self.rng.choice(away) if replica == home else home

    async def start(self, number: int, replica: str, verb: str) -> None:
        n = next(self.numbers)
        thread = f"t{n}"
        sent = {"agent": "ops", "input": f"{verb} p{n}"}
        op = Op(number, "start", replica, thread, time.time(), sent=sent)
        body = await self.request(op, "POST", f"/v1/threads/{thread}/runs", params={"wait": 2})
        if body is not None:
            self.pending += [(i, f"{verb}_pod") for i in body["pending_approvals"]]

    async def decide(self, number: int, replica: str) -> None:
        approval, tool = self.pending.pop(self.rng.randrange(len(self.pending)))
        kind = "approve" if self.rng.random() < 0.75 else "reject"
        decision = {"kind": kind} | ({"reason": "chaos"} if kind == "reject" else {})
        sends = [(replica, decision)]
        if self.rng.random() < 0.25:  # the same call decided on both replicas at once
            other = next(r for r in self.clients if r != replica)
            rival = self.rng.choice(["approve", "reject"])
            sends.append((other, {"kind": rival} | ({"reason": "x"} if rival == "reject" else {})))
        ops = [Op(number, "decide", r, approval, time.time(), sent=d) for r, d in sends]
        await asyncio.gather(*(
            self.request(op, "POST", f"/v1/approvals/{approval}/decision") for op in ops
        ))  # fmt: skip
        if all(op.outcome == "info" for op in ops):
            self.pending.append((approval, tool))  # not known to be decided: decide again

    async def granting(self, number: int, replica: str) -> None:
        """Revoke the grant in force, and start a restart at once on the other replica (it must
        wait for a person); or, with none, approve a waiting restart always (for the agent, any
        arguments) and start two (the grant lets them through) — or start one, to approve next
        time. A grant whose answer was lost is found by listing those in force."""
        if self.grant is None:
            self.grant = await self.in_force(replica)
        if self.grant is not None:
            op = Op(number, "revoke", replica, self.grant, time.time())
            if await self.request(op, "DELETE", f"/v1/grants/{self.grant}") is not None:
                self.grant = None
                other = next(r for r in self.clients if r != replica)
                await self.start(number, other, "restart")
            return
        restarts = [p for p in self.pending if p[1] == "restart_pod"]
        if not restarts:
            await self.start(number, replica, "restart")
            return
        self.pending.remove(restarts[0])
        approval = restarts[0][0]
        decision = {"kind": "approve", "always": {"scope": "agent", "with_args": False}}
        op = Op(number, "grant", replica, approval, time.time(), sent=decision)
        if await self.request(op, "POST", f"/v1/approvals/{approval}/decision") is None:
            return
        self.grant = await self.in_force(replica)
        for _ in range(2):
            await self.start(number, replica, "restart")

    async def in_force(self, replica: str) -> str | None:
        """A grant for restarts in force, as `replica` lists them; None for none, or no answer."""
        with contextlib.suppress(httpx.TransportError):
            listed = await self.clients[replica].get("/v1/grants", params={"tool": "restart_pod"})
            if listed.is_success and listed.json()["items"]:
                return str(listed.json()["items"][0]["id"])
        return None

    async def after(self, count: int) -> None:
        """Wait until the workload has done `count` more operations, acknowledged: a replica
        cut off or dead does not count, so the workload goes on with the other meanwhile."""
        async with self.progress:
            target = self.done + count
            await self.progress.wait_for(lambda: self.done >= target)


async def nemesis(
    trial: Trial,
    network: Network,
    pg: Host,
    replicas: list[Replica],
    workload: Workload,
    size: Size,
    rng: random.Random,
) -> None:
    """Each step, after `size.gap` operations, one of these to a replica, in turn:

    - partitioned from the database, healed once the workload has done `size.gap` more
      operations on the other one;
    - SIGKILLed, and started again at once;
    - partitioned while it holds a write transaction open there (a lock the other replica
      needs, held by a session that will never hear from its client again), healed likewise;
    - paused (SIGSTOP) past its leases while the other works on, then let go on (SIGCONT),
      as a long garbage collection or a frozen VM would.
    """
    for step in range(size.steps):
        await _meanwhile(workload, size, "both replicas were up")
        replica = rng.choice(replicas)
        match step % 4:
            case 0 | 2:
                trial.nemesis.append((time.time(), f"cut {replica.name}"))
                if step % 4 == 2:
                    tries = await cut_mid_transaction(network, pg, replica, workload)
                    trial.nemesis.append((time.time(), f"open transaction cut off ({tries})"))
                else:
                    network.cut(replica.host, pg)
                await _meanwhile(workload, size, f"{replica.name} was cut off from the database")
                network.heal(replica.host, pg)
                trial.nemesis.append((time.time(), f"heal {replica.name}"))
            case 1:
                trial.nemesis.append((time.time(), f"kill {replica.name}"))
                await replica.kill()
                await replica.start()
                trial.nemesis.append((time.time(), f"restart {replica.name}"))
            case _:
                trial.nemesis.append((time.time(), f"pause {replica.name}"))
                replica.signal(signal.SIGSTOP)
                await asyncio.gather(
                    _meanwhile(workload, size, f"{replica.name} was paused"),
                    asyncio.sleep(2 * LEASE_SECONDS),  # the fault's length: past its leases
                )
                replica.signal(signal.SIGCONT)
                trial.nemesis.append((time.time(), f"resume {replica.name}"))


async def _meanwhile(workload: Workload, size: Size, what: str) -> None:
    """Wait for `size.gap` operations done (by the replica left alone, while one is cut off or
    paused); a workload that stalls fails the trial, saying when."""
    try:
        async with asyncio.timeout(HANG):
            await workload.after(size.gap)
    except TimeoutError:
        raise AssertionError(f"the workload did nothing for {HANG:g} s while {what}") from None


async def cut_mid_transaction(
    network: Network, pg: Host, replica: Replica, workload: Workload
) -> int:
    """Partition `replica` from the database at a moment one of its sessions there has a
    write transaction open: cut, and if none is left open, heal and try again after the next
    operation. How many tries it took.

    Meanwhile each audited write lingers in the database for `LINGER` after it has taken the
    audit chain's head (a trigger of the test's own), so a cut finds one open at any speed of
    the machine, not only when it happens to land in the gap between two statements."""
    connection = await asyncpg.connect(f"postgresql://postgres@{pg.address}:5432/postgres")
    await connection.execute(_LINGERING)
    query = (
        "SELECT count(*) FILTER (WHERE state = 'active' AND wait_event_type IS DISTINCT FROM"
        " 'Lock' AND wait_event IS DISTINCT FROM 'ClientWrite'),"
        " count(*) FILTER (WHERE state = 'idle in transaction' AND backend_xid IS NOT NULL)"
        " FROM pg_stat_activity WHERE client_addr = $1"
    )
    try:
        async with asyncio.timeout(HANG):  # many tries at most: the workload keeps it busy
            for tries in itertools.count(1):
                network.cut(replica.host, pg)
                while True:  # until whatever it had sent before the cut is done with
                    active, open_ = await connection.fetchrow(query, replica.host.address)
                    if not active:
                        break
                if open_:
                    return tries
                network.heal(replica.host, pg)
                await workload.after(1)
    except TimeoutError:
        raise AssertionError(
            f"{replica.name} was never cut off with a write transaction open in {HANG:g} s"
        ) from None
    finally:
        await connection.execute("DROP TRIGGER IF EXISTS chaos_linger ON audit_head")
        await connection.close()
    raise AssertionError("unreachable")


LINGER = 0.05
"""Seconds an audited write waits, holding the audit chain's head, while a cut is being made."""
_LINGERING = f"""
CREATE OR REPLACE FUNCTION chaos_linger() RETURNS trigger LANGUAGE plpgsql
    AS $$ BEGIN PERFORM pg_sleep({LINGER}); RETURN NULL; END $$;
CREATE OR REPLACE TRIGGER chaos_linger AFTER UPDATE ON audit_head
    FOR EACH ROW EXECUTE FUNCTION chaos_linger();
"""


async def trial(folder: Path, size: Size, seed: int = 20261127, *, plant: bool = False) -> Trial:
    """Run the workload under the nemesis, heal, let everything finish: what happened, and
    what `check` finds wrong with it."""
    result = Trial(side=folder / "executions.txt")
    try:
        await _trial(result, folder, size, seed, plant)
    finally:  # what happened, for whoever looks into a failure
        with (folder / "history.jsonl").open("w") as out:
            for op in sorted(result.history, key=lambda op: op.began):
                out.write(json.dumps(op.__dict__) + "\n")
            for at, what in result.nemesis:
                out.write(json.dumps({"nemesis": what, "at": at}) + "\n")
    return result


async def _trial(result: Trial, folder: Path, size: Size, seed: int, plant: bool) -> None:
    async with cluster(folder) as (network, pg, replicas, store_url):
        result.store_url, result.replicas = store_url, replicas
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with contextlib.AsyncExitStack() as stack:
            clients = {
                r.name: await stack.enter_async_context(
                    httpx.AsyncClient(base_url=r.url, headers=headers, timeout=CLIENT_SECONDS)
                )
                for r in replicas
            }
            workload = Workload(result, clients, seed)
            stop, rng = asyncio.Event(), random.Random(seed)
            async with asyncio.TaskGroup() as clients_running:  # a client that fails ends it
                for n in range(size.clients):
                    clients_running.create_task(workload.client(n, stop))
                try:
                    await nemesis(result, network, pg, replicas, workload, size, rng)
                finally:
                    stop.set()
            await settle(workload, clients)
            result.history.sort(key=lambda op: op.began)
            result.nemesis.append((time.time(), "settled"))
            result.views = {name: await view(client) for name, client in clients.items()}
        seen = await snapshot(store_url)
        result.grant_uses = sum(1 for e in seen.audit if e.action == "grant_use")
        result.anomalies = check(result, seen)
        if plant:
            result.planted = planted(result, seen)


async def settle(workload: Workload, clients: dict[str, httpx.AsyncClient]) -> None:
    """With every partition healed: approve whatever still waits (on either replica, again
    until acknowledged), until every run has finished."""
    names = itertools.cycle(clients)
    async with asyncio.timeout(HANG * 2):
        while True:
            client = clients[next(names)]
            with contextlib.suppress(httpx.TransportError):
                listed = await client.get("/v1/approvals", params={"status": "pending"})
                runs = await client.get("/v1/runs", params={"status": "running", "limit": 1})
                paused = await client.get("/v1/runs", params={"status": "paused", "limit": 1})
                if listed.is_success and runs.is_success and paused.is_success:
                    waiting = listed.json()["items"]
                    if not waiting and not runs.json()["items"] and not paused.json()["items"]:
                        return
                    for approval in waiting:
                        op = Op(-1, "decide", next(names), approval["id"], time.time(),
                                sent={"kind": "approve"})  # fmt: skip
                        path = f"/v1/approvals/{approval['id']}/decision"
                        await workload.request(op, "POST", path)
            await asyncio.sleep(0.2)  # a run a dead replica held waits for its lease to end


async def view(client: httpx.AsyncClient) -> dict[str, Any]:
    """What a replica says of every run and approval, and of the audit chain."""
    runs, approvals = await _every(client, "/v1/runs"), await _every(client, "/v1/approvals")
    verified = (await client.get("/v1/audit/verify")).json()
    return {
        "runs": sorted((r["id"], r["status"]) for r in runs),
        "approvals": sorted((a["id"], a["status"]) for a in approvals),
        "audit": (verified["ok"], verified["entries"]),
    }


async def _every(client: httpx.AsyncClient, path: str) -> list[dict[str, Any]]:
    """Every item of a listing, page after page."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        params = {"limit": 500} | ({} if cursor is None else {"cursor": cursor})
        page = (await client.get(path, params=params)).json()
        items += page["items"]
        if (cursor := page["next"]) is None:
            return items


@dataclass(frozen=True)
class Snapshot:
    """What the database holds after the trial, read once (`snapshot`)."""

    runs: list[RunRecord]
    inputs: dict[str, str]
    messages: dict[str, list[dict[str, Any]]]
    approvals: dict[str, Approval]
    audit: list[AuditEntry]
    verified: AuditReport


async def snapshot(store_url: str) -> Snapshot:
    async with open_store(store_url) as store:
        runs = await store.list_runs(limit=100_000)
        return Snapshot(
            runs=runs,
            inputs=await store.run_inputs([r.id for r in runs]),
            messages={r.id: await store.run_messages(r.id) for r in runs},
            approvals={a.id: a for a in await store.list_approvals(limit=100_000)},
            audit=await store.audit_log(limit=1_000_000),
            verified=await store.verify_audit(),
        )


def check(trial: Trial, seen: Snapshot) -> list[str]:
    """Every anomaly the history, the side file and the database show; none is the pass."""
    found: list[str] = []
    lines = [line.split() for line in trial.side.read_text().splitlines()]
    executions = Counter((tool, name) for _, tool, name, _ in lines)
    ran_by = {(tool, name): (pid, float(at)) for pid, tool, name, at in lines}
    found += [f"{t} {n} ran {count} times" for (t, n), count in executions.items() if count > 1]
    if not seen.verified.ok:
        found.append(
            f"the audit chain does not verify: {seen.verified.reason} at {seen.verified.first_bad}"
        )
    decided = {e.subject: e for e in seen.audit if e.action == "decision"}
    decisions = Counter(e.subject for e in seen.audit if e.action == "decision")
    found += [f"approval {a} decided {n} times" for a, n in decisions.items() if n > 1]
    used = {e.data["run_id"]: e for e in seen.audit if e.action == "grant_use"}
    by_call = {(a.run_id, a.call.id): a for a in seen.approvals.values()}
    for approval in seen.approvals.values():
        if approval.status == "pending":
            found.append(f"approval {approval.id} still waits after the heal")
        elif decisions[approval.id] != 1:
            found.append(f"approval {approval.id} is {approval.status} with "
                         f"{decisions[approval.id]} decision(s) in the audit")  # fmt: skip
    found += _acknowledged(trial.history, seen.approvals)
    found += [
        f"{op.kind} on {op.replica} answered {op.status}: {op.value}"
        for op in trial.history
        if op.status is not None and op.status not in ANSWERS[op.kind]
    ]
    found += _revocations(trial.history, seen.audit)
    for run in seen.runs:
        verb, name = seen.inputs[run.id].split()
        tool = f"{verb}_pod"
        if run.status != "completed":
            found.append(f"run {run.id} ({verb} {name}) ended {run.status}")
        asked = by_call.get((run.id, "c1"))
        approved = asked is not None and asked.status == "approved"
        allowed = run.id in used or approved
        if executions[tool, name] and not allowed:
            found.append(f"{tool} {name} ran, but nobody approved it and no grant let it through")
        elif executions[tool, name]:  # it ran once let through: not before
            let = used.get(run.id) or (decided.get(asked.id) if asked else None)
            if let is None or let.at is None:
                found.append(f"{tool} {name} ran, and no audit entry says when it was let through")
            elif ran_by[tool, name][1] < let.at.timestamp():
                found.append(f"{tool} {name} ran before it was let through ({let.action})")
        results = [str(m["content"]) for m in seen.messages[run.id] if m["role"] == "tool"]
        if allowed and not results:
            found.append(f"{tool} {name} was allowed, and the run records no result")
        for result in results:
            if result.startswith(f"{tool} {name} by "):
                holder, ran = result.rsplit(" ", 1)[1], ran_by.get((tool, name), ("nobody",))[0]
                if ran != holder:
                    found.append(f"{tool} {name}'s result says process {holder} ran it; "
                                 f"the side file says {ran}")  # fmt: skip
    views = list(trial.views.values())
    if any(v != views[0] for v in views):
        found.append(f"the replicas disagree after the heal: {views}")
    found += [f"replica {n} says the audit is {v['audit']}" for n, v in trial.views.items()
              if not v["audit"][0]]  # fmt: skip
    return found


def _acknowledged(history: list[Op], approvals: dict[str, Approval]) -> list[str]:
    """An acknowledged decision is the one kept (the same decision sent again is acknowledged
    again; a different one is refused)."""
    found = []
    status = {"approve": "approved", "reject": "rejected"}
    for op in history:
        if op.kind in ("decide", "grant") and op.outcome == "ok":
            kind = op.sent["kind"]
            kept = approvals[op.target].status
            if kept != status[kind]:
                found.append(f"{op.replica} acknowledged {kind} of {op.target}; it is {kept}")
    return found


def _revocations(history: list[Op], audit: list[AuditEntry]) -> list[str]:
    """A grant lets nothing through once revoked: no use of it comes after its revocation in
    the audit chain (the order the database committed them in), and every acknowledged
    revocation is there."""
    revoked = {e.subject: e.seq for e in audit if e.action == "revoke"}
    found = [
        f"revoking grant {op.target} was acknowledged by {op.replica}, and is not in the audit"
        for op in history
        if op.kind == "revoke" and op.outcome == "ok" and op.target not in revoked
    ]
    return found + [
        f"grant {e.subject} let run {e.data['run_id']} through after its revocation "
        f"(audit entry {e.seq}, revoked at {revoked[e.subject]})"
        for e in audit
        if e.action == "grant_use" and e.seq > revoked.get(e.subject, e.seq)
    ]


def planted(trial: Trial, seen: Snapshot) -> dict[str, list[str]]:
    """Faults put into copies of the side file, the history and the audit, one of each kind
    `check` is there to catch: what it reports of each (nothing: the checker is blind to it)."""
    lines = trial.side.read_text().splitlines()
    pid, tool, name, at = lines[0].split()
    decided = next(op for op in trial.history if op.kind == "decide" and op.outcome == "ok")
    opposite = {"approve": "reject", "reject": "approve"}[decided.sent["kind"]]
    lost = Op(0, "decide", "a", decided.target, decided.began, decided.ended, "ok",
              sent={"kind": opposite}, status=200)  # fmt: skip
    rejected = next(a for a in seen.approvals.values() if a.status == "rejected")
    verb, never_approved = seen.inputs[rejected.run_id or ""].split()
    use = next(e for e in seen.audit if e.action == "grant_use")
    early = replace(use, action="revoke", data={}, seq=use.seq - 1)
    twice = next(e for e in seen.audit if e.action == "decision")
    unrecorded = Op(0, "revoke", "a", "g-never-revoked", 0.0, 0.0, "ok", status=200)
    crashed = replace(decided, outcome="info", status=500, value={})
    unfinished = replace(seen, runs=[replace(seen.runs[0], status="running"), *seen.runs[1:]])
    name_a, view_a = next(iter(trial.views.items()))
    apart = {**trial.views, name_a: {**view_a, "runs": view_a["runs"][1:]}}
    # A call whose run recorded its result (one cut short by a kill records none).
    reported = {
        tuple(str(m["content"]).split(" ")[:2])
        for messages in seen.messages.values()
        for m in messages
        if m["role"] == "tool" and " by " in str(m["content"])
    }
    n, line = next(
        (n, line) for n, line in enumerate(lines) if tuple(line.split()[1:3]) in reported
    )
    runner, *rest = line.split()
    foreign = [*lines[:n], " ".join([str(int(runner) + 1), *rest]), *lines[n + 1 :]]
    faults = {
        "a call run twice": ([*lines, lines[0]], [], [], "ran 2 times"),
        "a result from a process that did not run the call": (
            foreign,
            [],
            [],
            "result says process",
        ),
        "a call run that was rejected": (
            [*lines, f"{pid} {verb}_pod {never_approved} {at}"],
            [],
            [],
            "nobody approved it",
        ),
        "a call run before it was let through": (
            [f"{pid} {tool} {name} 0.0", *lines[1:]],
            [],
            [],
            "ran before it was let through",
        ),
        "an acknowledged decision lost": (lines, [lost], [], "acknowledged"),
        "a grant used after its revocation": (lines, [], [early], "after its revocation"),
        "an approval decided twice": (lines, [], [twice], "decided 2 times"),
        "an acknowledged revocation not recorded": (lines, [unrecorded], [], "not in the audit"),
        "a 500": (lines, [crashed], [], "answered 500"),
    }
    found: dict[str, list[str]] = {}
    for n, (fault, (side, history, audit, says)) in enumerate(faults.items()):
        copy = trial.side.with_name(f"planted-{n}.txt")
        copy.write_text("".join(f"{line}\n" for line in side))
        changed = replace(trial, side=copy, history=trial.history + history)
        found[fault] = [
            a for a in check(changed, replace(seen, audit=seen.audit + audit)) if says in a
        ]
    found["a run left unfinished"] = [a for a in check(trial, unfinished) if "ended running" in a]
    broken = replace(seen, verified=replace(seen.verified, ok=False, first_bad=1, reason="x"))
    found["an audit chain broken"] = [a for a in check(trial, broken) if "does not verify" in a]
    found["the replicas apart"] = [
        a for a in check(replace(trial, views=apart), seen) if "replicas disagree" in a
    ]
    return found


def figures(trial: Trial) -> dict[str, Any]:
    """What the trial did, for the note and `make chaos`."""
    executed = len(trial.side.read_text().splitlines())
    nemesis = Counter(what.split()[0] for _, what in trial.nemesis)
    return {
        "partitions": nemesis["cut"],
        "kills": nemesis["kill"],
        "pauses": nemesis["pause"],
        "runs started": trial.count("start"),
        "decisions sent": trial.count("decide") + trial.count("grant"),
        "decisions acknowledged": trial.count("decide", "ok") + trial.count("grant", "ok"),
        "grants": trial.count("grant", "ok"),
        "grant uses": trial.grant_uses,
        "revocations": trial.count("revoke", "ok"),
        "requests unknown (5xx or no answer)": sum(op.outcome == "info" for op in trial.history),
        "of which 503": sum(op.status == 503 for op in trial.history),
        "tool executions": executed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="the size the tests run")
    parser.add_argument("--seed", type=int, default=20261127)
    parser.add_argument("--keep", type=Path, help="a folder to keep the history and logs in")
    arguments = parser.parse_args()
    reason = why_not()
    if reason is not None:
        raise SystemExit(f"the partition test cannot run here: {reason}")
    size = SMALL if arguments.small else LARGE
    # Stopped (Ctrl+C, or SIGTERM from a timeout), it still removes its namespaces and processes.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with contextlib.ExitStack() as stack:
        folder = arguments.keep or stack.enter_context(
            tempfile.TemporaryDirectory(prefix="signoff-chaos-")
        )
        done = asyncio.run(trial(Path(folder), size, arguments.seed))
        anomalies = done.anomalies
        for name, value in figures(done).items():
            print(f"{name:>38}: {value}")
        print(f"{'anomalies':>38}: {len(anomalies)}")
        for anomaly in anomalies:
            print(f"  {anomaly}")
    raise SystemExit(1 if anomalies else 0)


if __name__ == "__main__":
    main()
