"""Runs, their messages and events, and the ledger that makes tool execution exactly-once.

Pausing appends: the new messages and events are inserted after the run's last ones, and the
conversation is never rewritten, so a pause costs the same at 10 messages and at 10,000.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal, TypeAlias

from sqlalchemy import and_, func, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from signoff.errors import ConflictError, NotFoundError
from signoff.store import schema
from signoff.store.times import from_micros, to_micros
from signoff.types import canonical_json

__all__ = ["LedgerEntry", "RunRecord", "RunStatus", "RunStore", "StoredEvent"]

RunStatus: TypeAlias = Literal["running", "paused", "completed", "failed"]


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    id: str
    thread_id: str
    agent: str
    status: RunStatus
    started_by: str | None
    lease_owner: str | None
    version: int


@dataclass(frozen=True, kw_only=True)
class StoredEvent:
    run_id: str
    seq: int
    at: datetime
    type: str
    data: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class LedgerEntry:
    key: str
    status: Literal["started", "finished"]
    result: dict[str, Any] | None


class RunStore:
    """The runtime's half of the store; `SQLStore` provides `run`."""

    run: Callable[..., Awaitable[Any]]

    async def create_run(
        self,
        record: RunRecord,
        *,
        at: datetime,
        lease_until: datetime,
        messages: Sequence[dict[str, Any]] = (),
        events: Sequence[tuple[str, dict[str, Any]]] = (),
    ) -> list[StoredEvent]:
        """Insert the run, owned by its creator, with its first messages and events."""
        row = {
            "id": record.id,
            "thread_id": record.thread_id,
            "agent": record.agent,
            "status": record.status,
            "started_by": record.started_by,
            "lease_owner": record.lease_owner,
            "lease_until": to_micros(lease_until),
            "created_at": to_micros(at),
            "updated_at": to_micros(at),
            "version": record.version,
        }

        runs = schema.runs

        def work(connection: Connection) -> list[StoredEvent]:
            # One unfinished run per thread: a second would read the first's open calls as its
            # own history, and the model would see calls with no results.
            busy = connection.execute(
                select(runs.c.id)
                .where(
                    and_(
                        runs.c.thread_id == record.thread_id,
                        runs.c.status.in_(("running", "paused")),
                    )
                )
                .with_for_update()
            ).first()
            if busy is not None:
                raise ConflictError(
                    f"thread {record.thread_id!r} has an unfinished run {busy.id!r}; "
                    "resume it first"
                )
            connection.execute(insert(runs).values(row))
            return _append(connection, record.id, at, messages, events)

        result: list[StoredEvent] = await self.run(work)
        return result

    async def append_to_run(
        self,
        run_id: str,
        *,
        at: datetime,
        messages: Sequence[dict[str, Any]] = (),
        events: Sequence[tuple[str, dict[str, Any]]] = (),
        status: RunStatus | None = None,
        owner: str | None = None,
        lease_until: datetime | None = None,
    ) -> list[StoredEvent]:
        """Append messages and events, renewing the owner's lease to `lease_until`; with a
        `status` other than running, also move the run there and release the lease.

        Raises `ConflictError` when `owner` no longer holds the run (its lease ran out and
        another worker took it over): the late writer must stop.
        """

        def work(connection: Connection) -> list[StoredEvent]:
            values: dict[str, Any] = {"updated_at": to_micros(at)}
            if lease_until is not None:
                values["lease_until"] = to_micros(lease_until)
            if status is not None:
                values["status"] = status
                if status != "running":
                    values |= {"lease_owner": None, "lease_until": None}
            table = schema.runs
            changed = connection.execute(
                update(table)
                .where(and_(table.c.id == run_id, table.c.lease_owner == owner))
                .values(**values, version=table.c.version + 1)
            )
            if changed.rowcount != 1:
                raise ConflictError(f"run {run_id!r} is no longer held by this worker ({owner!r})")
            return _append(connection, run_id, at, messages, events)

        result: list[StoredEvent] = await self.run(work)
        return result

    async def claim_run(self, run_id: str, *, owner: str, now: datetime, lease: timedelta) -> bool:
        """Take the run to resume it: paused, or running under a lease that ran out (its holder
        died). Compare-and-set: of several claimants, exactly one wins."""
        table = schema.runs
        claim = (
            update(table)
            .where(
                and_(
                    table.c.id == run_id,
                    or_(
                        table.c.status == "paused",
                        and_(table.c.status == "running", table.c.lease_until < to_micros(now)),
                    ),
                )
            )
            .values(
                status="running",
                lease_owner=owner,
                lease_until=to_micros(now + lease),
                version=table.c.version + 1,
            )
        )
        won: bool = await self.run(lambda c: c.execute(claim).rowcount == 1)
        return won

    async def get_run(self, run_id: str) -> RunRecord:
        table = schema.runs
        row = await self.run(
            lambda c: c.execute(select(table).where(table.c.id == run_id)).first(), write=False
        )
        if row is None:
            raise NotFoundError(f"no run with id {run_id!r}")
        return RunRecord(
            id=row.id,
            thread_id=row.thread_id,
            agent=row.agent,
            status=row.status,
            started_by=row.started_by,
            lease_owner=row.lease_owner,
            version=row.version,
        )

    async def run_messages(self, run_id: str) -> list[dict[str, Any]]:
        """The run's own messages, oldest first."""
        table = schema.messages
        query = (
            select(table.c.data, schema.blobs.c.data.label("blob_data"))
            .outerjoin(schema.blobs, schema.blobs.c.hash == table.c.blob)
            .where(table.c.run_id == run_id)
            .order_by(table.c.seq)
        )
        rows = await self.run(lambda c: c.execute(query).all(), write=False)
        return [_message(row) for row in rows]

    async def thread_messages(self, thread_id: str) -> list[dict[str, Any]]:
        """Every message of the thread's runs, oldest first."""
        runs, messages = schema.runs, schema.messages
        query = (
            select(messages.c.data, schema.blobs.c.data.label("blob_data"))
            .join(runs, runs.c.id == messages.c.run_id)
            .outerjoin(schema.blobs, schema.blobs.c.hash == messages.c.blob)
            .where(runs.c.thread_id == thread_id)
            .order_by(runs.c.created_at, runs.c.id, messages.c.seq)
        )
        rows = await self.run(lambda c: c.execute(query).all(), write=False)
        return [_message(row) for row in rows]

    async def run_events(self, run_id: str, *, after: int = 0) -> list[StoredEvent]:
        table = schema.events
        query = (
            select(table)
            .where(and_(table.c.run_id == run_id, table.c.seq > after))
            .order_by(table.c.seq)
        )

        def work(connection: Connection) -> list[StoredEvent]:
            rows = connection.execute(query).all()
            events = [_event(row) for row in rows]
            refs = {e.data[_BLOB] for e in events if set(e.data) == {_BLOB}}
            if not refs:
                return events
            blobs = schema.blobs
            found = dict(
                connection.execute(
                    select(blobs.c.hash, blobs.c.data).where(blobs.c.hash.in_(refs))
                ).all()
            )
            return [
                replace(e, data=json.loads(zlib.decompress(found[e.data[_BLOB]])))
                if set(e.data) == {_BLOB}
                else e
                for e in events
            ]

        result: list[StoredEvent] = await self.run(work, write=False)
        return result

    async def ledger_start(
        self, key: str, *, run_id: str, call_id: str, tool: str, digest: str, at: datetime
    ) -> LedgerEntry | None:
        """Record that the call with this idempotency key is starting. Returns None when it is new,
        or the existing entry when it was started (or finished) before."""
        table = schema.ledger

        values = {
            "key": key,
            "run_id": run_id,
            "call_id": call_id,
            "tool": tool,
            "digest": digest,
            "status": "started",
            "started_at": to_micros(at),
        }

        def work(connection: Connection) -> LedgerEntry | None:
            # Insert unless the key is there: of two racing starters exactly one inserts.
            dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
            started = connection.execute(
                dialect.insert(table).values(values).on_conflict_do_nothing()
            )
            if started.rowcount == 1:
                return None
            row = connection.execute(select(table).where(table.c.key == key)).one()
            result = None if row.result is None else json.loads(row.result)
            return LedgerEntry(key=key, status=row.status, result=result)

        entry: LedgerEntry | None = await self.run(work)
        return entry

    async def ledger_finish(self, key: str, *, result: dict[str, Any], at: datetime) -> None:
        table = schema.ledger
        finish = (
            update(table)
            .where(table.c.key == key)
            .values(
                status="finished", result=canonical_json(result).decode(), finished_at=to_micros(at)
            )
        )
        await self.run(lambda c: c.execute(finish))


LARGE = 64 * 1024
"""Messages bigger than this (as JSON) are stored once, compressed, and referenced by hash."""


_BLOB = "$blob"


def _blob(connection: Connection, text: bytes) -> str:
    """Keep `text` once, compressed; return its hash."""
    digest = hashlib.sha256(text).hexdigest()
    dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
    connection.execute(
        dialect.insert(schema.blobs)
        .values(hash=digest, codec="zlib", data=zlib.compress(text, 6))
        .on_conflict_do_nothing()
    )
    return digest


def _stored(connection: Connection, message: dict[str, Any]) -> dict[str, Any]:
    text = canonical_json(message)
    if len(text) <= LARGE:
        return {"data": text.decode(), "blob": None}
    return {"data": "null", "blob": _blob(connection, text)}


def _event_data(connection: Connection, data: dict[str, Any]) -> str:
    """An event's data, or a reference to it when large (tool results repeat messages)."""
    text = canonical_json(data)
    if len(text) <= LARGE:
        return text.decode()
    return canonical_json({_BLOB: _blob(connection, text)}).decode()


def _message(row: Any) -> dict[str, Any]:
    if row.blob_data is not None:
        return json.loads(zlib.decompress(row.blob_data))  # type: ignore[no-any-return]
    return json.loads(row.data)  # type: ignore[no-any-return]


def _append(
    connection: Connection,
    run_id: str,
    at: datetime,
    messages: Sequence[dict[str, Any]],
    events: Sequence[tuple[str, dict[str, Any]]],
) -> list[StoredEvent]:
    if messages:
        last = connection.execute(
            select(func.coalesce(func.max(schema.messages.c.seq), 0)).where(
                schema.messages.c.run_id == run_id
            )
        ).scalar_one()
        connection.execute(
            insert(schema.messages),
            [
                {"run_id": run_id, "seq": last + i, "role": m["role"], **_stored(connection, m)}
                for i, m in enumerate(messages, start=1)
            ],
        )
    stored: list[StoredEvent] = []
    if events:
        last = connection.execute(
            select(func.coalesce(func.max(schema.events.c.seq), 0)).where(
                schema.events.c.run_id == run_id
            )
        ).scalar_one()
        for i, (kind, data) in enumerate(events, start=1):
            stored.append(StoredEvent(run_id=run_id, seq=last + i, at=at, type=kind, data=data))
        connection.execute(
            insert(schema.events),
            [
                {
                    "run_id": e.run_id,
                    "seq": e.seq,
                    "at": to_micros(e.at),
                    "type": e.type,
                    "data": _event_data(connection, e.data),
                }
                for e in stored
            ],
        )
    return stored


def _event(row: Any) -> StoredEvent:
    return StoredEvent(
        run_id=row.run_id,
        seq=row.seq,
        at=from_micros(row.at),
        type=row.type,
        data=json.loads(row.data),
    )
