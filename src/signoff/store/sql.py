"""The `Store` on SQLAlchemy Core: one implementation for SQLite and PostgreSQL.

Every operation is one transaction written as plain synchronous Core code, and a `Runner` runs
it: for PostgreSQL on asyncpg (SQLAlchemy's greenlet bridge), for SQLite on one dedicated thread,
so a whole transaction costs one hop between threads instead of one per driver call. Every change
and the audit entries that record it are written in the same transaction. A decision is a
compare-and-set on the approval's `version`: of two concurrent deciders exactly one updates the
row, and the other sees that it lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, cast

from sqlalchemy import Row, and_, bindparam, func, insert, select, text
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import Connection, Engine

from signoff import telemetry
from signoff.errors import ConflictError, NotFoundError, StoreError
from signoff.names import assignee_key
from signoff.store import schema
from signoff.store.audit import (
    LOCK_AUDIT_HEAD,
    append_audit,
    read_changes,
    read_length,
    read_log,
)
from signoff.store.base import AuditRecord, DecisionPlan, HoldPlan, Moment
from signoff.store.catalog import CatalogStore
from signoff.store.checkpoint import Checkpoint
from signoff.store.decisions import CHANNEL, DecisionGroups, read_clock, write_decisions
from signoff.store.external import ExternalRecord, ExternalStore, find_external, insert_external
from signoff.store.gauges import GaugeStore
from signoff.store.grants import GrantStore, count_uses, in_force, known_ids
from signoff.store.insights import InsightStore
from signoff.store.lean import execute
from signoff.store.ledger import LedgerStore
from signoff.store.migrations import LATEST, migrate, schema_version
from signoff.store.notes import NoteStore
from signoff.store.outbox import OutboxStore
from signoff.store.rows import approval_from_row, approval_row
from signoff.store.runner import Runner, ThreadRunner
from signoff.store.runs import (
    ResumedTurn,
    RunStore,
    StoredEvent,
    claim,
    read_run,
    read_turn,
    write_run,
)
from signoff.store.sessions import SessionStore
from signoff.store.times import to_micros
from signoff.store.verification import AuditReport, verify_chain
from signoff.types import (
    Approval,
    AuditEntry,
    Grant,
    canonical_json,
)

__all__ = ["SQLStore"]

T = TypeVar("T")

CLOCK_READ = 10.0
"""How often, in seconds, a store reads PostgreSQL's clock again (`SQLStore.clock`)."""
CLOCK_TRUST = 0.05
"""The longest round trip, in seconds, whose reading of the clock replaces the last one: its
middle is the reading's time, within half of it."""


# Statements of the hot paths, built once: building a statement costs more than running it.
_approvals = schema.approvals
_INSERT_APPROVAL = insert(_approvals)
_CLOCK = text("SELECT clock_timestamp()")
_SELECT_APPROVALS = select(_approvals).where(_approvals.c.id.in_(bindparam("ids", expanding=True)))
# A turn's own approvals: ids begin with their millisecond, so `lowest` makes it an index range.
_TURN_APPROVALS = (
    select(_approvals)
    .where(
        and_(
            _approvals.c.run_id == bindparam("root"),
            _approvals.c.id >= bindparam("lowest"),
            _approvals.c.agent == bindparam("path"),
            _approvals.c.requested_at >= bindparam("since"),
        )
    )
    .order_by(_approvals.c.id)
)
_TURN_LEDGER = select(schema.ledger.c.key).where(
    and_(
        schema.ledger.c.run_id == bindparam("rid"),
        schema.ledger.c.started_at >= bindparam("since"),
    )
)
_SUBRUN = select(schema.subruns).where(schema.subruns.c.run_id == bindparam("rid"))


class SQLStore(
    RunStore,
    LedgerStore,
    NoteStore,
    GrantStore,
    ExternalStore,
    OutboxStore,
    InsightStore,
    GaugeStore,
    CatalogStore,
    SessionStore,
):
    """Approvals, grants, the audit log, and the runtime's runs, in one SQL database."""

    def __init__(self, runner: Runner, *, url: str) -> None:
        self.runner = runner
        self.url = url
        self._listener: Any = None
        self._connecting: asyncio.Future[None] | None = None
        self._callbacks: list[Callable[[str], None]] = []
        self._closed = False
        self._listening = asyncio.Lock()
        self._decisions = DecisionGroups(self.run)
        self._clock: tuple[datetime, float] | None = None
        """The database's time as last read, and this machine's steady clock then."""
        self._clock_due = 0.0
        """When (by the steady clock) to read the database's time again."""

    @property
    def engine(self) -> Engine:
        """The synchronous engine underneath (for events and diagnostics)."""
        return self.runner.engine

    @property
    def any_loop(self) -> bool:
        """Whether the store's work may be awaited from any event loop: SQLite's runs on threads
        of its own; asyncpg's connections belong to the loop that opened them."""
        return isinstance(self.runner, ThreadRunner)

    @property
    def unsynced_commits_last(self) -> bool:
        """Whether a commit that did not wait for the disk is lost only with the machine: SQLite
        writes it to its WAL file before it returns, so it outlives this process; PostgreSQL's
        server may crash alone and lose it while this process goes on."""
        return self.engine.dialect.name == "sqlite"

    @property
    def notifies_across_processes(self) -> bool:
        """PostgreSQL tells other processes of decisions; SQLite waiters poll."""
        return self.engine.dialect.name == "postgresql"

    async def run(
        self, work: Callable[[Connection], T], *, write: bool = True, durable: bool = True
    ) -> T:
        """Run `work` as one transaction: committed if it returns, rolled back if it raises.

        A write that need not survive a crash on its own (`durable=False`: a claim, which the
        next durable write of the same worker makes durable with it, and which is harmless to
        lose) skips the wait for the disk."""
        if self._closed:
            raise StoreError(f"the store at {self.engine.url.render_as_string()!r} is closed")
        started = time.perf_counter()
        try:
            return await self.runner.run(work, write=write, durable=durable)
        finally:
            kind = "write" if write else "read"
            telemetry.observer.transaction(kind, time.perf_counter() - started)

    async def listen(self, callback: Callable[[str], None]) -> None:
        """Call `callback(approval_id)` whenever any process decides an approval (PostgreSQL).

        A notification is a hint that something changed: the database stays the truth.
        """
        if not self.notifies_across_processes:
            return
        self._callbacks.append(callback)
        async with self._listening:  # several gates may start listening at once
            if self._listener is not None:
                return
            if self._connecting is None:
                self._connecting = asyncio.ensure_future(self._open_listener())
            # Shielded: a caller cancelled mid-connect leaves the connection to the store,
            # which closes it, instead of dropping it open.
            try:
                await asyncio.shield(self._connecting)
            except asyncio.CancelledError:
                raise
            except Exception:
                self._connecting = None  # the next caller tries again
                raise

    async def _open_listener(self) -> None:
        import asyncpg

        url = self.engine.url.set(drivername="postgresql")
        listener = await asyncpg.connect(url.render_as_string(hide_password=False))
        if self._closed:
            await listener.close()
            return
        self._listener = listener
        await listener.add_listener(CHANNEL, self._dispatch)

    def _dispatch(self, _connection: Any, _pid: int, _channel: str, payload: str) -> None:
        for callback in self._callbacks:
            callback(payload)

    async def migrate(self) -> int:
        """Bring the schema up to date; return the version it had."""

        def work(connection: Connection) -> int:
            if connection.dialect.name == "postgresql":
                # Serialize migrations of concurrent processes (SQLite's write lock already does).
                connection.exec_driver_sql("SELECT pg_advisory_xact_lock(5150001)")
            return migrate(connection)

        return await self.run(work)

    async def check_schema(self) -> None:
        """Raise `StoreError` unless the database holds this version's schema."""
        version = await self.run(schema_version, write=False)
        if version != LATEST:
            found = "no signoff schema" if version is None else f"schema version {version}"
            raise StoreError(
                f"the database at {self.engine.url.render_as_string()!r} holds {found}, "
                f"not version {LATEST}: "
                "open it once with signoff.open_store(url) to create or upgrade the schema"
            )

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._connecting is not None:
            with contextlib.suppress(Exception):
                await self._connecting
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
        await self.runner.close()

    # -- approvals -------------------------------------------------------------------------

    async def create_approvals(
        self, approvals: Sequence[Approval], *, audit: Sequence[AuditRecord] = ()
    ) -> None:
        rows = [approval_row(a) for a in approvals]

        def work(connection: Connection) -> None:
            if rows:
                execute(connection, _INSERT_APPROVAL, rows)
            append_audit(connection, audit)

        await self.run(work)

    async def get_approval(self, approval_id: str) -> Approval:
        [approval] = await self.get_approvals([approval_id])
        return approval

    async def get_approvals(self, approval_ids: Sequence[str]) -> list[Approval]:
        ids = known_ids(approval_ids, "approval")
        rows = await self.run(
            lambda c: execute(c, _SELECT_APPROVALS, {"ids": ids}).all(), write=False
        )
        return _in_order(rows, ids)

    async def list_approvals(
        self,
        *,
        status: str | None = None,
        run_id: str | None = None,
        batch_id: str | None = None,
        agent: str | None = None,
        tool: str | None = None,
        origin: str | None = None,
        thread_id: str | None = None,
        assigned_to: Collection[str] | None = None,
        before: str | None = None,
        limit: int = 100,
    ) -> list[Approval]:
        """Newest first; `before` is the id of the last item of the previous page;
        `assigned_to` keeps those assigned to any of the names given (a principal, however
        the name is spelt: `assignee_key`; a ``role:NAME``)."""
        table = schema.approvals
        query = select(table)
        for column, value in (
            (table.c.status, status),
            (table.c.run_id, run_id),
            (table.c.batch_id, batch_id),
            (table.c.agent, agent),
            (table.c.tool, tool),
            (table.c.origin, origin),
            (table.c.thread_id, thread_id),
        ):
            if value is not None:
                query = query.where(column == value)
        if assigned_to is not None:
            query = query.where(table.c.assigned_to.in_([assignee_key(n) for n in assigned_to]))
        if before is not None:
            query = query.where(table.c.id < before)
        query = query.order_by(table.c.id.desc()).limit(limit)
        rows = await self.run(lambda c: c.execute(query).all(), write=False)
        return [approval_from_row(row) for row in rows]

    async def find_approvals(self, short_id: str, *, limit: int = 10) -> list[Approval]:
        """The approvals whose id ends with `short_id`, newest first, at most `limit`: what a
        short id (as `signoff inbox` shows) names. It reads the whole table: for a person's
        lookup, not for a loop."""
        table = schema.approvals
        # An exact comparison of the id's tail, not LIKE: SQLite's LIKE ignores case, and the
        # short id has no wildcards to escape this way.
        tail = func.substr(table.c.id, func.length(table.c.id) - len(short_id) + 1)
        query = select(table).where(tail == short_id).order_by(table.c.id.desc()).limit(limit)
        rows = await self.run(lambda c: c.execute(query).all(), write=False)
        return [approval_from_row(row) for row in rows]

    async def append_audit(self, records: Sequence[AuditRecord]) -> None:
        """Append audit entries that go with no other write of the store."""
        await self.run(lambda c: append_audit(c, records))

    async def hold(
        self,
        tools: Collection[str],
        plan: Callable[
            [list[Grant], dict[str, tuple[ExternalRecord, Approval | None]], datetime], HoldPlan
        ],
        *,
        keys: Sequence[str] = (),
    ) -> tuple[HoldPlan, list[StoredEvent]]:
        """Read the grants in force for `tools` and what was judged before under `keys` (calls
        of other frameworks' runs, with their approvals), let `plan` judge the calls by them at
        the database's time, and write the approvals, records, audit entries and run write it
        returns — one transaction."""
        names = sorted(tools)

        def work(connection: Connection) -> tuple[HoldPlan, list[StoredEvent]]:
            at = read_clock(connection)
            found = _judged_before(connection, keys)
            revoked: set[str] = set()
            while True:
                grants = [g for g in in_force(connection, names) if g.id not in revoked]
                decided = plan(grants, found, at)
                lost = count_uses(connection, decided)
                if not lost:
                    break
                # Revoked while the calls were judged: judged again without it, so a revoke
                # that returned lets nothing more through.
                revoked |= lost
            if decided.approvals:
                execute(connection, _INSERT_APPROVAL, [approval_row(a) for a in decided.approvals])
            if not insert_external(connection, decided.external):
                raise _Lost  # judged meanwhile by another transaction: judge again with it
            append_audit(connection, decided.audit)
            stored = [] if decided.write is None else write_run(connection, decided.write)
            return decided, stored

        for _ in range(10):
            try:
                result: tuple[HoldPlan, list[StoredEvent]] = await self.run(work)
            except _Lost:
                continue
            return result
        raise ConflictError(f"the calls {list(keys)!r} kept being judged by others meanwhile")

    async def external_verdicts(
        self, keys: Sequence[str]
    ) -> dict[str, tuple[ExternalRecord, Approval | None]]:
        """What was judged before under `keys`, with the approvals as they stand (a read)."""
        if not keys:
            return {}
        found: dict[str, tuple[ExternalRecord, Approval | None]] = await self.run(
            lambda c: _judged_before(c, keys), write=False
        )
        return found

    async def resume_turn(
        self,
        run_id: str,
        *,
        agent: str,
        path: str,
        root_id: str,
        owner: str,
        now: datetime,
        lease: timedelta,
    ) -> ResumedTurn | None:
        """Claim the run for `owner` and read what resuming it needs, in one transaction: its
        open turn, the approvals it waits or waited on, the calls already started. None when
        the run is not paused and its lease has not run out.

        Raises `NotFoundError` for no such run, `ConflictError` when it is another agent's, or a
        sub-agent's run resumed as a root (`root_id` is not its own)."""

        def work(connection: Connection) -> ResumedTurn | None:
            as_root = root_id == run_id
            claimed = claim(
                connection, run_id, owner=owner, now=now, lease=lease, agent=agent, root=as_root
            )
            if claimed is None:  # say why, when it is not only "not now"
                record = read_run(connection, run_id)
                if record is None:
                    raise NotFoundError(f"no run with id {run_id!r}")
                if record.parent_id is not None and as_root:
                    raise ConflictError(
                        f"run {run_id!r} is a sub-agent's run; resume its root run, which "
                        "resumes it"
                    )
                if record.agent != agent:
                    raise ConflictError(
                        f"run {run_id!r} belongs to agent {record.agent!r}, not {agent!r}"
                    )
                return None
            if not as_root:
                link = execute(connection, _SUBRUN, {"rid": run_id}).one()
                claimed = replace(claimed, parent_id=link.parent_id, parent_key=link.parent_key)
            turn = read_turn(connection, run_id)
            own: list[Approval] = []
            begun: set[str] = set()
            if turn.started_at is not None:
                since = to_micros(turn.started_at)
                window = {"root": root_id, "lowest": f"{since // 1000:012x}", "path": path}
                own = [
                    approval_from_row(row)
                    for row in execute(connection, _TURN_APPROVALS, window | {"since": since})
                ]
                begun = set(
                    execute(connection, _TURN_LEDGER, {"rid": run_id, "since": since}).scalars()
                )
            # What the last pause waited on: mostly the run's own, read already.
            known = {a.id: a for a in own}
            missing = [i for i in turn.paused_on if i not in known]
            if missing:
                rows = execute(connection, _SELECT_APPROVALS, {"ids": missing}).all()
                known |= {a.id: a for a in _in_order(rows, missing)}
            listed = [known[i] for i in turn.paused_on]
            return ResumedTurn(record=claimed, turn=turn, listed=listed, own=own, begun=begun)

        # Losing the claim in a crash is harmless (the run is claimable again), and the worker's
        # next write — durable, before any tool runs — makes it durable anyway.
        result: ResumedTurn | None = await self.run(work, durable=False)
        return result

    async def decide(
        self,
        approval_ids: Sequence[str],
        plan: Callable[[list[Approval], Moment], DecisionPlan],
    ) -> DecisionPlan:
        """Read the approvals locked for one write transaction, let `plan` judge them, and write
        what it returns in that same transaction. If `plan` raises, nothing is written.

        Concurrent decisions share their transaction and commit (`signoff.store.decisions`):
        each sees the ones before it in the group, and fails or succeeds on its own."""
        return await self._decisions.decide(known_ids(approval_ids, "approval"), plan)

    async def save_decisions(
        self,
        changes: Sequence[tuple[Approval, int]],
        *,
        grants: Sequence[Grant] = (),
        audit: Sequence[AuditRecord] = (),
    ) -> bool:
        """Write each ``(approval, expected_version)`` if the stored one is still pending at that
        version, with the grants and audit entries, all in one transaction.

        Returns False, writing nothing at all, when any of them was changed by someone else first.
        """

        def work(connection: Connection) -> None:
            if not write_decisions(connection, changes, grants=grants, audit=audit):
                raise _Lost

        try:
            await self.run(work)
        except _Lost:
            return False
        return True

    async def due_for_expiry(self, now: datetime, *, limit: int = 500) -> list[Approval]:
        """The pending approvals whose time is up, longest due first."""
        return await self._due(schema.approvals.c.expires_at, now, limit)

    async def due_for_escalation(self, now: datetime, *, limit: int = 500) -> list[Approval]:
        """The pending approvals whose next escalation step has come, longest due first."""
        return await self._due(schema.approvals.c.next_escalation_at, now, limit)

    async def clock(self) -> datetime:
        """The database's time: what every time-based judgement goes by — due approvals,
        escalation, leases — whichever replica makes it, whatever its own clock says (SQLite's
        is this machine's). Read from the database at most every `CLOCK_READ` seconds, and
        carried forward meanwhile by this machine's steady clock (which a change of its wall
        clock does not move), taken at the middle of its read's round trip — a read slower
        than `CLOCK_TRUST` leaves the last one in use."""
        if not self.notifies_across_processes:
            return datetime.now(UTC)
        steady = _steady()
        if self._clock is not None and steady < self._clock_due:
            return self.now()
        moment = await self.run(lambda c: c.execute(_CLOCK).scalar_one(), write=False)
        after = _steady()
        if self._clock is None or after - steady <= CLOCK_TRUST:
            self._clock = (cast(datetime, moment).astimezone(UTC), (steady + after) / 2)
            self._clock_due = after + CLOCK_READ
        else:  # a slow read says little of when it was made: keep carrying the last one
            self._clock_due = after + 1.0
        return self.now()

    def now(self) -> datetime:
        """`clock` without asking the database: its time as last read, carried forward by the
        steady clock (before the first read, this machine's) — for a judgement made where
        nothing can be awaited. `open_store` reads it first."""
        if self._clock is None or not self.notifies_across_processes:
            return datetime.now(UTC)
        read, then = self._clock
        return read + timedelta(seconds=_steady() - then)

    async def lease(self, name: str, *, owner: str, now: datetime, until: datetime) -> bool:
        """Take or renew the lease on the job `name` for `owner` until `until`: True when
        `owner` holds it now (it was free, ran out by `now`, or was `owner`'s already)."""
        table = schema.leases
        values = {"name": name, "owner": owner, "until": to_micros(until)}

        def work(connection: Connection) -> bool:
            dialect = pg_dialect if connection.dialect.name == "postgresql" else sqlite_dialect
            statement = dialect.insert(table).values(values)
            statement = statement.on_conflict_do_update(
                index_elements=[table.c.name],
                set_={"owner": owner, "until": to_micros(until)},
                where=(table.c.until <= to_micros(now)) | (table.c.owner == owner),
            )
            return bool(connection.execute(statement).rowcount == 1)

        return await self.run(work, durable=False)

    async def _due(self, when: Any, now: datetime, limit: int) -> list[Approval]:
        table = schema.approvals
        query = (
            select(table)
            .where(and_(table.c.status == "pending", when <= to_micros(now)))
            .order_by(when)
            .limit(limit)
        )
        rows = await self.run(lambda c: c.execute(query).all(), write=False)
        return [approval_from_row(row) for row in rows]

    # -- policy versions -------------------------------------------------------------------

    async def save_policy(
        self,
        version: str,
        document: dict[str, Any],
        *,
        actor: str,
        at: datetime,
        audit: Sequence[AuditRecord] = (),
        replaces: str | None = None,
    ) -> None:
        """Make `document` (whose policy has `version`) the latest policy, with its audit
        entries, in one transaction; a version seen before becomes the latest again. With
        `replaces`, only if that is still the latest version (`ConflictError` otherwise): a
        change made from a copy of it loses nothing made meanwhile, on any replica. Policy
        writers take turns, and each is stamped with the database's time once it has its turn
        (`at` on SQLite, this machine's): the latest saved is the last to commit, whichever
        replica's clock runs ahead."""
        table = schema.policy_versions
        values = {
            "version": version,
            "created_at": to_micros(at),
            "created_by": actor,
            "document": canonical_json(document).decode(),
        }

        def work(connection: Connection) -> None:
            connection.execute(LOCK_AUDIT_HEAD).one()  # policy writers take turns
            if connection.dialect.name == "postgresql":
                values["created_at"] = to_micros(read_clock(connection))
            if replaces is not None:
                latest = connection.execute(_LATEST_POLICY).scalar()
                if latest is not None and latest != replaces:
                    raise ConflictError(
                        f"the policy changed (it is version {latest} now, not {replaces}): "
                        "reload it and make the change again"
                    )
            dialect = pg_dialect if connection.dialect.name == "postgresql" else sqlite_dialect
            statement = dialect.insert(table).values(values)
            connection.execute(
                statement.on_conflict_do_update(
                    index_elements=[table.c.version],
                    set_={"created_at": values["created_at"], "created_by": actor},
                )
            )
            append_audit(connection, audit)

        await self.run(work)

    async def known_policy(self, version: str) -> bool:
        """Whether a policy of this version was ever saved."""
        table = schema.policy_versions
        query = select(table.c.version).where(table.c.version == version)
        found = await self.run(lambda c: c.execute(query).first(), write=False)
        return found is not None

    async def saved_policies(self, versions: Collection[str]) -> frozenset[str]:
        """Which of `versions` are of a policy saved here (a server's lineage)."""
        if not versions:
            return frozenset()
        table = schema.policy_versions
        query = select(table.c.version).where(table.c.version.in_(sorted(versions)))
        found = await self.run(lambda c: c.execute(query).scalars().all(), write=False)
        return frozenset(found)

    async def latest_policy_version(self) -> str | None:
        """The version of the latest saved policy, if any: what a replica compares with its
        own before it reads the whole document."""
        found = await self.run(lambda c: c.execute(_LATEST_POLICY).scalar(), write=False)
        return cast(str | None, found)

    async def latest_policy(self) -> tuple[str, dict[str, Any]] | None:
        """The version and document of the latest saved policy, if any."""
        table = schema.policy_versions
        query = (
            select(table.c.version, table.c.document)
            .order_by(table.c.created_at.desc(), table.c.version)
            .limit(1)
        )
        row = await self.run(lambda c: c.execute(query).first(), write=False)
        return None if row is None else (row.version, json.loads(row.document))

    # -- audit -----------------------------------------------------------------------------

    async def audit_length(self) -> int:
        """How many entries the head says the log has (with the head row missing or damaged,
        the highest entry number)."""
        return await self.run(read_length, write=False)

    async def audit_log(self, *, after: int = 0, limit: int = 1000) -> list[AuditEntry]:
        """Entries after `after`, in order; a row that cannot be shown as written comes back
        with its `problem` named, never as an exception."""
        return await self.run(lambda c: read_log(c, after=after, limit=limit), write=False)

    async def audit_changes(
        self, *, after: int = 0, limit: int = 1000
    ) -> tuple[int, list[tuple[int, str]]]:
        """The approvals held or changed by the `limit` audit entries after `after`, as
        ``(seq, approval id)`` in order, and the number of the last entry read (`after` when
        none): what a channel that follows approvals reads, without the entries' data."""
        return await self.run(lambda c: read_changes(c, after=after, limit=limit), write=False)

    async def verify_audit(
        self, *, since: Checkpoint | None = None, batch: int = 5000
    ) -> AuditReport:
        """Check the hash chain, and with `since` that the log still holds the checkpoint's
        entries unchanged; the report names the first fault (see `signoff.store.verification`)."""
        return await verify_chain(self, since=since, batch=batch)


class _Lost(Exception):
    """A compare-and-set found the row changed: roll the transaction back."""


def _judged_before(
    connection: Connection, keys: Sequence[str]
) -> dict[str, tuple[ExternalRecord, Approval | None]]:
    records = find_external(connection, keys)
    ids = [r.approval_id for r in records.values() if r.approval_id is not None]
    rows = execute(connection, _SELECT_APPROVALS, {"ids": ids}).all() if ids else []
    approvals = {row.id: approval_from_row(row) for row in rows}
    return {
        key: (record, None if record.approval_id is None else approvals.get(record.approval_id))
        for key, record in records.items()
    }


def _in_order(rows: Sequence[Row[Any]], ids: list[str]) -> list[Approval]:
    found = {row.id: approval_from_row(row) for row in rows}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFoundError(f"no approval with id {', '.join(map(repr, missing))}")
    return [found[i] for i in ids]


_LATEST_POLICY = (
    select(schema.policy_versions.c.version)
    .order_by(schema.policy_versions.c.created_at.desc(), schema.policy_versions.c.version)
    .limit(1)
)


def _steady() -> float:
    """Seconds of a clock that only moves forward, counting time the machine slept (Linux's
    boot time clock; elsewhere the monotonic clock)."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    return time.clock_gettime(boottime) if boottime is not None else time.monotonic()
