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
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, cast

from sqlalchemy import text
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import Connection, Engine

from signoff import telemetry
from signoff.errors import StoreError
from signoff.store import schema
from signoff.store.audit import append_audit, read_changes, read_length, read_log
from signoff.store.base import Store
from signoff.store.checkpoint import Checkpoint
from signoff.store.decisions import CHANNEL, DecisionGroups, write_decisions
from signoff.store.migrations import LATEST, migrate, schema_version
from signoff.store.records import AuditRecord, DecisionPlan, Moment
from signoff.store.rows import known_ids
from signoff.store.runner import Runner, ThreadRunner
from signoff.store.times import to_micros
from signoff.store.verification import AuditReport, verify_chain
from signoff.types import Approval, AuditEntry, Grant

__all__ = ["SQLStore"]

T = TypeVar("T")

CLOCK_READ = 10.0
"""How often, in seconds, a store reads PostgreSQL's clock again (`SQLStore.clock`)."""
CLOCK_TRUST = 0.05
"""The longest round trip, in seconds, whose reading of the clock replaces the last one: its
middle is the reading's time, within half of it."""

_CLOCK = text("SELECT clock_timestamp()")


class SQLStore(Store):
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
        self,
        work: Callable[[Connection], T],
        *,
        write: bool = True,
        durable: bool = True,
        snapshot: bool = True,
    ) -> T:
        """Run `work` as one transaction: committed if it returns, rolled back if it raises.

        A write that need not survive a crash on its own (`durable=False`: a claim, which the
        next durable write of the same worker makes durable with it, and which is harmless to
        lose) skips the wait for the disk. Work whose statements need no one transaction
        (`snapshot=False`: one statement, or reads each of which finds what the one before
        implies is there) runs each statement on its own on PostgreSQL: no round trips to
        begin and end a transaction (a write is then durable whatever `durable` says)."""
        if self._closed:
            raise StoreError(f"the store at {self.engine.url.render_as_string()!r} is closed")
        started = time.perf_counter()
        try:
            return await self.runner.run(work, write=write, durable=durable, snapshot=snapshot)
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

    async def append_audit(self, records: Sequence[AuditRecord]) -> None:
        """Append audit entries that go with no other write of the store."""
        await self.run(lambda c: append_audit(c, records))

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


def _steady() -> float:
    """Seconds of a clock that only moves forward, counting time the machine slept (Linux's
    boot time clock; elsewhere the monotonic clock)."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    return time.clock_gettime(boottime) if boottime is not None else time.monotonic()
