"""A run's log: its messages and events, appended after the last ones and read back by index.

Pausing appends: the new messages and events are inserted after the run's last ones, and the
conversation is never rewritten, so a pause costs the same at 10 messages and at 10,000. Reading
what a step needs (the open turn, the thread's messages, the events since a point) goes by index
too. Who may write to a run, and when, is `signoff.store.runs`.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import and_, bindparam, func, insert, literal, select, text, tuple_, update
from sqlalchemy.engine import Connection

from signoff.store import schema
from signoff.store.blobs import event_data, inflate, message_from_row, read_large, stored_message
from signoff.store.lean import execute
from signoff.store.rows import same_named
from signoff.store.runner import Transactional
from signoff.store.times import from_micros, to_micros

__all__ = [
    "LogStore",
    "OpenTurn",
    "StoredEvent",
    "append_events",
    "append_events_to_runs",
    "insert_log",
    "read_turn",
]

# The statements of the pause and resume paths, built once with bound parameters: building a
# statement costs several times what running it does on SQLite.
_runs, _messages, _events_t = schema.runs, schema.messages, schema.events
_INSERT_MESSAGES = insert(_messages)
_INSERT_EVENTS = insert(_events_t)
_BUMP_EVENTS = (
    update(_runs)
    .where(_runs.c.id == bindparam("rid"))
    .values(event_seq=_runs.c.event_seq + bindparam("n"))
    .returning(_runs.c.event_seq)
)
# Several runs' event counters at once, one statement for any number of runs.
_EVENT_SEQS_PG = text(
    "SELECT id, event_seq FROM runs WHERE id = ANY(CAST(:ids AS text[])) ORDER BY id FOR UPDATE"
)
_EVENT_SEQS_SQLITE = text(
    "SELECT id, event_seq FROM runs WHERE id IN (SELECT value FROM json_each(:ids)) ORDER BY id"
)
_SET_EVENT_SEQ = (
    update(_runs).where(_runs.c.id == bindparam("rid")).values(event_seq=bindparam("last"))
)
_THREAD = (
    select(_messages.c.data, schema.blobs.c.data.label("blob_data"))
    .join(_runs, _runs.c.id == _messages.c.run_id)
    .outerjoin(schema.blobs, schema.blobs.c.hash == _messages.c.blob)
    .where(_runs.c.thread_id == bindparam("tid"))
    .order_by(_runs.c.created_at, _runs.c.id, _messages.c.seq)
)
_TURNS = select(func.count(), func.max(_messages.c.seq)).where(
    and_(_messages.c.run_id == bindparam("rid"), _messages.c.role == "assistant")
)
_TAIL = (
    select(_messages.c.data, schema.blobs.c.data.label("blob_data"))
    .outerjoin(schema.blobs, schema.blobs.c.hash == _messages.c.blob)
    .where(and_(_messages.c.run_id == bindparam("rid"), _messages.c.seq >= bindparam("seq")))
    .order_by(_messages.c.seq)
)
_INPUTS = (
    select(_messages.c.run_id, _messages.c.data, schema.blobs.c.data.label("blob_data"))
    .outerjoin(schema.blobs, schema.blobs.c.hash == _messages.c.blob)
    .where(
        and_(
            _messages.c.run_id.in_(bindparam("ids", expanding=True)),
            _messages.c.seq == 1,
            _messages.c.role == "user",
        )
    )
)
_LATEST = (
    select(_events_t)
    .where(
        and_(
            _events_t.c.run_id == bindparam("rid"),
            _events_t.c.type == bindparam("kind"),
            _events_t.c.seq > bindparam("after"),
        )
    )
    .order_by(_events_t.c.seq.desc())
    .limit(1)
)


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
    started_at: datetime | None
    """When the turn's calls were logged (its last `tool_call` event); None if it made none."""
    paused_on: list[str]
    """The approvals the turn's last pause waited on (none if it has not paused)."""


class LogStore(Transactional, Protocol):
    """The runs' logs' half of the store."""

    async def open_turn(self, run_id: str) -> OpenTurn:
        """The run's last model turn: its assistant message, what followed it, and the events
        from its tool calls on. Found by index, so it costs the same at any history length."""
        result: OpenTurn = await self.run(lambda c: read_turn(c, run_id), write=False)
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
        return [message_from_row(row) for row in rows]

    async def run_inputs(self, run_ids: Collection[str]) -> dict[str, str]:
        """What each run was started with (its first message: the user's), by run id, in one
        read for a page of approvals; a run not found is left out."""
        if not run_ids:
            return {}
        rows = await self.run(
            lambda c: c.execute(_INPUTS, {"ids": sorted(set(run_ids))}).all(), write=False
        )
        inputs: dict[str, str] = {}
        for row in rows:
            content = message_from_row(row).get("content")
            if isinstance(content, str):
                inputs[row.run_id] = content
        return inputs

    async def thread_messages(self, thread_id: str) -> list[dict[str, Any]]:
        """Every message of the thread's runs, oldest first."""
        return [json.loads(text) for text in await self.thread_texts(thread_id)]

    async def thread_texts(self, thread_id: str) -> list[str]:
        """Every message of the thread's runs as the JSON text it is kept as, oldest first:
        what a model is shown, decoded only when it looks (see `signoff.agent.model.History`)."""
        rows = await self.run(lambda c: execute(c, _THREAD, {"tid": thread_id}).all(), write=False)
        return [row.data if row.blob_data is None else inflate(row.blob_data) for row in rows]

    async def run_events(self, run_id: str, *, after: int = 0) -> list[StoredEvent]:
        result: list[StoredEvent] = await self.run(
            lambda c: _events(c, run_id, after=after), write=False
        )
        return result

    async def events_since(
        self,
        at: datetime,
        *,
        after: tuple[datetime, str, int] | None = None,
        limit: int = 1000,
    ) -> list[StoredEvent]:
        """Every run's events written at or after `at` (and, with `after`, past that event:
        a page's last), oldest first, ties by run and number: the feed of an inbox. Writers'
        clocks and commits do not keep strict time order, so a reader looks back a little and
        skips what it has seen (see `Service.follow_all`)."""
        table = schema.events
        query = select(table).where(table.c.at >= to_micros(at))
        if after is not None:
            moment, run_id, seq = after
            query = query.where(
                tuple_(table.c.at, table.c.run_id, table.c.seq)
                > tuple_(literal(to_micros(moment)), literal(run_id), literal(seq))
            )
        query = query.order_by(table.c.at, table.c.run_id, table.c.seq).limit(limit)
        result: list[StoredEvent] = await self.run(
            lambda c: _unblob(c, [_event(row) for row in c.execute(query)]), write=False
        )
        return result


def read_turn(connection: Connection, run_id: str) -> OpenTurn:
    """`LogStore.open_turn` inside the caller's transaction."""
    turns, last = execute(connection, _TURNS, {"rid": run_id}).one()
    tail: Sequence[Any] = ()
    if last is not None:
        tail = execute(connection, _TAIL, {"rid": run_id, "seq": last}).all()

    def latest(kind: str, after: int = 0) -> StoredEvent | None:
        row = execute(connection, _LATEST, {"rid": run_id, "kind": kind, "after": after}).first()
        return None if row is None else _unblob(connection, [_event(row)])[0]

    calls = latest("tool_call")
    paused = None if calls is None else latest("paused", after=calls.seq)
    return OpenTurn(
        turns=turns,
        messages=[message_from_row(row) for row in tail],
        started_at=None if calls is None else calls.at,
        paused_on=[] if paused is None else list(paused.data["approvals"]),
    )


def append_events(
    connection: Connection, run_id: str, at: datetime, events: Sequence[tuple[str, dict[str, Any]]]
) -> list[StoredEvent] | None:
    """Append events to a run's log inside the caller's transaction (None: no such run)."""
    last = execute(connection, _BUMP_EVENTS, {"rid": run_id, "n": len(events)}).scalar()
    if last is None:
        return None
    return insert_log(connection, run_id, at, (), events, first=(0, last - len(events) + 1))


def append_events_to_runs(
    connection: Connection,
    appends: dict[str, tuple[datetime, Sequence[tuple[str, dict[str, Any]]]]],
) -> None:
    """Append events to the logs of several runs, those that are the runtime's, inside the
    caller's transaction: for any number of runs, one read of their counters (locked in id
    order), one update and one insert."""
    if len(appends) == 1:
        [(run_id, (at, events))] = appends.items()
        append_events(connection, run_id, at, events)
        return
    postgres = connection.dialect.name == "postgresql"
    ids = sorted(appends)
    found = execute(
        connection,
        _EVENT_SEQS_PG if postgres else _EVENT_SEQS_SQLITE,
        {"ids": ids if postgres else json.dumps(ids)},
    ).all()
    if not found:
        return
    stored: list[StoredEvent] = []
    counters = []
    for run_id, last in found:
        at, events = appends[run_id]
        stored += [
            StoredEvent(run_id=run_id, seq=last + 1 + i, at=at, type=kind, data=data)
            for i, (kind, data) in enumerate(events)
        ]
        counters.append({"rid": run_id, "last": last + len(events)})
    execute(connection, _SET_EVENT_SEQ, counters)
    execute(connection, _INSERT_EVENTS, [_event_row(connection, e) for e in stored])


def insert_log(
    connection: Connection,
    run_id: str,
    at: datetime,
    messages: Sequence[dict[str, Any]],
    events: Sequence[tuple[str, dict[str, Any]]],
    *,
    first: tuple[int, int],
) -> list[StoredEvent]:
    """Insert the messages and events numbered from `first` (the run's counters were moved on
    by the caller, in the same transaction)."""
    first_message, first_event = first
    if messages:
        execute(
            connection,
            _INSERT_MESSAGES,
            [
                {"run_id": run_id, "seq": first_message + i, "role": m["role"]}
                | stored_message(connection, m)
                for i, m in enumerate(messages)
            ],
        )
    stored: list[StoredEvent] = []
    if events:
        for i, (kind, data) in enumerate(events):
            stored.append(
                StoredEvent(run_id=run_id, seq=first_event + i, at=at, type=kind, data=data)
            )
        execute(connection, _INSERT_EVENTS, [_event_row(connection, e) for e in stored])
    return stored


def _event_row(connection: Connection, event: StoredEvent) -> dict[str, Any]:
    return {
        "run_id": event.run_id,
        "seq": event.seq,
        "at": to_micros(event.at),
        "type": event.type,
        "data": event_data(connection, event.data),
    }


def _events(
    connection: Connection, run_id: str, *, after: int, limit: int | None = None
) -> list[StoredEvent]:
    table = schema.events
    rows = connection.execute(
        select(table)
        .where(and_(table.c.run_id == run_id, table.c.seq > after))
        .order_by(table.c.seq)
        .limit(limit)
    ).all()
    return _unblob(connection, [_event(row) for row in rows])


def _event(row: Any) -> StoredEvent:
    return StoredEvent(
        **same_named(row, ("run_id", "seq", "type")),
        at=from_micros(row.at),
        data=json.loads(row.data),
    )


def _unblob(connection: Connection, events: list[StoredEvent]) -> list[StoredEvent]:
    """The events with the data of large ones read back from their blobs."""
    data = read_large(connection, [e.data for e in events])
    return [
        e if new is e.data else replace(e, data=new) for e, new in zip(events, data, strict=True)
    ]
