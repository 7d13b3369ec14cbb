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

__all__ = [
    "LedgerEntry",
    "OpenTurn",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "StoredEvent",
    "append_events",
]

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
    parent_id: str | None = None
    """For a sub-agent's run: the run whose call it answers."""
    parent_key: str | None = None
    """For a sub-agent's run: the ledger key of that call."""


@dataclass(frozen=True, kw_only=True)
class StoredEvent:
    run_id: str
    seq: int
    at: datetime
    type: str
    data: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class OpenTurn:
    """What resuming a run needs, read without its history."""

    turns: int
    """How many model turns the run has had."""
    messages: list[dict[str, Any]]
    """The run's last assistant message and the messages after it (none before its first turn)."""
    events: list[StoredEvent]
    """The run's events from its last `tool_call` event on."""


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
            if record.parent_id is not None:
                connection.execute(
                    insert(schema.subruns).values(
                        run_id=record.id, parent_id=record.parent_id, parent_key=record.parent_key
                    )
                )
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
        ancestors: Sequence[str] = (),
    ) -> list[StoredEvent]:
        """Append messages and events, renewing the owner's lease to `lease_until`; with a
        `status` other than running, also move the run there and release the lease. The
        `ancestors` (the runs a sub-agent's run works for) get their leases renewed too.

        Raises `ConflictError` when `owner` no longer holds the run or one of its ancestors (a
        lease ran out and another worker took it over): the late writer must stop.
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
            if ancestors:
                renewed = connection.execute(
                    update(table)
                    .where(and_(table.c.id.in_(ancestors), table.c.lease_owner == owner))
                    .values(lease_until=values.get("lease_until"), updated_at=values["updated_at"])
                )
                if renewed.rowcount != len(set(ancestors)):
                    raise ConflictError(
                        f"run {run_id!r} works for a run no longer held by this worker ({owner!r})"
                    )
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
        query = _runs_query().where(schema.runs.c.id == run_id)
        row = await self.run(lambda c: c.execute(query).first(), write=False)
        if row is None:
            raise NotFoundError(f"no run with id {run_id!r}")
        return _run_record(row)

    async def ready_runs(self, agent: str, *, now: datetime, limit: int = 100) -> list[str]:
        """Root runs of the agent that a worker may resume now, oldest first: paused with
        nothing left pending (approvals of a run's sub-agents are the run's), or left running
        under a lease that ran out."""
        runs, approvals, subruns = schema.runs, schema.approvals, schema.subruns
        decided = ~(
            select(approvals.c.id)
            .where(and_(approvals.c.run_id == runs.c.id, approvals.c.status == "pending"))
            .exists()
        )
        query = (
            select(runs.c.id)
            .where(
                and_(
                    runs.c.agent == agent,
                    or_(
                        and_(runs.c.status == "paused", decided),
                        and_(runs.c.status == "running", runs.c.lease_until < to_micros(now)),
                    ),
                    ~select(subruns.c.run_id).where(subruns.c.run_id == runs.c.id).exists(),
                )
            )
            .order_by(runs.c.updated_at)
            .limit(limit)
        )
        found: list[str] = await self.run(lambda c: list(c.execute(query).scalars()), write=False)
        return found

    async def child_run(self, parent_id: str, parent_key: str) -> RunRecord | None:
        """The sub-agent's run that answers the parent's call with this ledger key, if any."""
        subruns = schema.subruns
        query = _runs_query().where(
            and_(subruns.c.parent_id == parent_id, subruns.c.parent_key == parent_key)
        )
        row = await self.run(lambda c: c.execute(query).first(), write=False)
        return None if row is None else _run_record(row)

    async def open_turn(self, run_id: str) -> OpenTurn:
        """The run's last model turn: its assistant message, what followed it, and the events
        from its tool calls on. Found by index, so it costs the same at any history length."""
        messages, events = schema.messages, schema.events

        def work(connection: Connection) -> OpenTurn:
            assistant = and_(messages.c.run_id == run_id, messages.c.role == "assistant")
            turns, last = connection.execute(
                select(func.count(), func.max(messages.c.seq)).where(assistant)
            ).one()
            tail: Sequence[Any] = ()
            if last is not None:
                tail = connection.execute(
                    select(messages.c.data, schema.blobs.c.data.label("blob_data"))
                    .outerjoin(schema.blobs, schema.blobs.c.hash == messages.c.blob)
                    .where(and_(messages.c.run_id == run_id, messages.c.seq >= last))
                    .order_by(messages.c.seq)
                ).all()
            since = connection.execute(
                select(func.max(events.c.seq)).where(
                    and_(events.c.run_id == run_id, events.c.type == "tool_call")
                )
            ).scalar()
            return OpenTurn(
                turns=turns,
                messages=[_message(row) for row in tail],
                events=_events(connection, run_id, after=(since or 1) - 1),
            )

        result: OpenTurn = await self.run(work, write=False)
        return result

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
        result: list[StoredEvent] = await self.run(
            lambda c: _events(c, run_id, after=after), write=False
        )
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

    async def ledger_started(self, keys: Sequence[str]) -> set[str]:
        """Which of these idempotency keys have a ledger entry (started or finished)."""
        if not keys:
            return set()
        table = schema.ledger
        query = select(table.c.key).where(table.c.key.in_(keys))
        found: set[str] = await self.run(lambda c: set(c.execute(query).scalars()), write=False)
        return found

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


def append_events(
    connection: Connection, run_id: str, at: datetime, events: Sequence[tuple[str, dict[str, Any]]]
) -> list[StoredEvent]:
    """Append events to a run's log inside the caller's transaction."""
    return _append(connection, run_id, at, (), events)


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


def _events(connection: Connection, run_id: str, *, after: int) -> list[StoredEvent]:
    table = schema.events
    rows = connection.execute(
        select(table)
        .where(and_(table.c.run_id == run_id, table.c.seq > after))
        .order_by(table.c.seq)
    ).all()
    events = [_event(row) for row in rows]
    refs = {e.data[_BLOB] for e in events if set(e.data) == {_BLOB}}
    if not refs:
        return events
    blobs = schema.blobs
    found = dict(
        connection.execute(select(blobs.c.hash, blobs.c.data).where(blobs.c.hash.in_(refs))).all()
    )
    return [
        replace(e, data=json.loads(zlib.decompress(found[e.data[_BLOB]])))
        if set(e.data) == {_BLOB}
        else e
        for e in events
    ]


def _runs_query() -> Any:
    runs, subruns = schema.runs, schema.subruns
    return select(runs, subruns.c.parent_id, subruns.c.parent_key).outerjoin(
        subruns, subruns.c.run_id == runs.c.id
    )


def _run_record(row: Any) -> RunRecord:
    return RunRecord(
        id=row.id,
        thread_id=row.thread_id,
        agent=row.agent,
        status=row.status,
        started_by=row.started_by,
        lease_owner=row.lease_owner,
        version=row.version,
        parent_id=row.parent_id,
        parent_key=row.parent_key,
    )


def _event(row: Any) -> StoredEvent:
    return StoredEvent(
        run_id=row.run_id,
        seq=row.seq,
        at=from_micros(row.at),
        type=row.type,
        data=json.loads(row.data),
    )
