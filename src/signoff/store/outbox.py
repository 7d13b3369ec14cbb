"""The notifications' outbox, fed by the audit log.

Every request for approval, every change to one while it waits (a vote, an edit, a handover,
an escalation, a new policy's rule), every decision and expiry, and every call whose outcome is
unknown is an audit entry, written in the transaction of the change it records: the log is already a
durable outbox. The notifier reads it from a cursor (`outbox_events`), and turns each entry into
one delivery per sink that wants it while moving the cursor on — a compare-and-set on the cursor,
so of two replicas reading the same entries exactly one writes their deliveries
(`outbox_add`). A sender claims a due delivery with a lease (`outbox_claim`), and records it
sent or to be tried again (`outbox_done`): each notification is sent by one replica at a time.

This relies on audit entries becoming visible in the order of their numbers, which the audit
head's lock gives (a writer holds it until it commits): a reader never sees entry n + 1 before
entry n.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from sqlalchemy import bindparam, func, or_, select, update
from sqlalchemy.engine import Connection

from signoff.errors import InvalidArgumentsError
from signoff.store import schema
from signoff.store.audit import append_audit
from signoff.store.notes import add_note
from signoff.store.records import AuditRecord, NoteRecord
from signoff.store.rows import same_named
from signoff.store.runner import Transactional
from signoff.store.times import from_micros, to_micros
from signoff.types import canonical_json

__all__ = ["Delivery", "NewDelivery", "OutboxEvent", "OutboxStore", "event_of"]

EventKind = Literal[
    "requested", "decided", "expired", "unknown", "assigned", "escalated",
    "voted", "edited", "rejudged",
]  # fmt: skip
DeliveryStatus = Literal["pending", "sent", "failed"]

_audit = schema.audit
_box = schema.outbox
_cursor = schema.outbox_cursor
_READ_CURSOR = select(_cursor.c.seq).where(_cursor.c.id == 1)
_START_CURSOR = schema.inserts_if_new(_cursor)
_MOVE_CURSOR = update(_cursor).where(_cursor.c.id == 1, _cursor.c.seq == bindparam("was"))
_ADD = schema.inserts_if_new(_box)
_READ_AFTER = (
    select(_audit.c.seq, _audit.c.at, _audit.c.actor, _audit.c.action, _audit.c.subject)
    .add_columns(_audit.c.data)
    .where(_audit.c.seq > bindparam("after"))
    .order_by(_audit.c.seq)
    .limit(bindparam("n"))
)
_DUE = (
    select(_box.c.id)
    .where(
        _box.c.status == "pending",
        _box.c.next_at <= bindparam("now"),
        or_(_box.c.lease_until.is_(None), _box.c.lease_until <= bindparam("now")),
        _box.c.sink.in_(bindparam("sinks", expanding=True)),
    )
    .order_by(_box.c.next_at, _box.c.seq, _box.c.sink)
    .limit(bindparam("n"))
)
_TAKE = update(_box).where(
    _box.c.id == bindparam("b_id"),
    _box.c.status == "pending",
    or_(_box.c.lease_until.is_(None), _box.c.lease_until <= bindparam("b_now")),
)
_SETTLE = update(_box).where(
    _box.c.id == bindparam("b_id"), _box.c.lease_owner == bindparam("b_owner")
)


@dataclass(frozen=True, kw_only=True)
class OutboxEvent:
    """An audit entry that someone may want to hear of."""

    seq: int
    at: datetime
    kind: EventKind
    subject: str
    """The approval's id; for an unknown outcome, the ledger key's hash."""
    actor: str
    data: dict[str, Any]
    """The audit entry's data: the verdict, the decision, the call's tool."""


@dataclass(frozen=True, kw_only=True)
class NewDelivery:
    sink: str
    event: OutboxEvent


@dataclass(frozen=True, kw_only=True)
class Delivery:
    """One notification for one sink, as the outbox holds it."""

    id: str
    sink: str
    seq: int
    kind: EventKind
    subject: str
    data: dict[str, Any]
    """The event: its time, actor and audit data."""
    status: DeliveryStatus
    attempts: int
    next_at: datetime
    error: str | None
    sent_at: datetime | None


_TOLD: dict[str, EventKind] = {
    "verdict": "requested",
    "decision": "decided",
    "unknown": "unknown",
    "assign": "assigned",
    "escalate": "escalated",
    "vote": "voted",
    "rejudge": "rejudged",
}
"""The audit actions people are told of, and the event each is (a verdict only when it asks,
a decision "expired" when it is an expiry, a vote "edited" when it edited the call)."""


def event_of(
    seq: int, at: int, actor: str, action: str, subject: str, text: str
) -> OutboxEvent | None:
    """The event an audit entry is, or None for one nobody is told of (a grant, a policy
    change, a verdict that did not ask) or one whose data is not what signoff writes."""
    if action not in _TOLD:
        return None
    try:
        data = json.loads(text)
        canonical_json(data)  # NaN, a lone surrogate: nothing signoff wrote, nothing to keep
        moment = from_micros(at)
    except (ValueError, RecursionError, OverflowError, InvalidArgumentsError):
        return None
    if not isinstance(data, dict):
        return None
    kind: EventKind
    if action == "verdict":
        if data.get("verdict") != "ask":
            return None
        kind = "requested"
    elif action == "decision":
        kind = "expired" if data.get("status") == "expired" else "decided"
    elif action == "vote":
        kind = "edited" if "edit" in data else "voted"
    else:
        kind = _TOLD[action]
    return OutboxEvent(seq=seq, at=moment, kind=kind, subject=subject, actor=actor, data=data)


class OutboxStore(Transactional, Protocol):
    """The outbox's half of the store."""

    async def outbox_events(self, *, limit: int = 500) -> tuple[int, int, list[OutboxEvent]]:
        """The cursor, the last audit entry read after it (the cursor itself when none was),
        and the events among those entries. The first call starts the cursor at the log's
        end: notifications begin when they are first read, not with the log's history."""

        def work(connection: Connection) -> tuple[int, int, list[OutboxEvent]]:
            cursor = connection.execute(_READ_CURSOR).scalar()
            if cursor is None:
                head = connection.execute(select(func.coalesce(func.max(_audit.c.seq), 0)))
                connection.execute(
                    _START_CURSOR[connection.dialect.name], {"id": 1, "seq": head.scalar_one()}
                )
                cursor = connection.execute(_READ_CURSOR).scalar_one()
            rows = connection.execute(_READ_AFTER, {"after": cursor, "n": limit}).all()
            events = []
            for row in rows:
                if not isinstance(row.at, int) or not isinstance(row.data, str):
                    continue  # not what signoff writes: nobody is told of it
                event = event_of(row.seq, row.at, row.actor, row.action, row.subject, row.data)
                if event is not None:
                    events.append(event)
            return cursor, (rows[-1].seq if rows else cursor), events

        result: tuple[int, int, list[OutboxEvent]] = await self.run(work)
        return result

    async def outbox_add(
        self,
        deliveries: Sequence[NewDelivery],
        *,
        cursor: int,
        last: int,
        ids: Callable[[], str],
        at: datetime,
    ) -> bool:
        """Move the cursor from `cursor` to `last` and add `deliveries`, all or nothing: False
        (nothing written) when the cursor was moved meanwhile — another replica added them."""

        def work(connection: Connection) -> bool:
            if connection.execute(_MOVE_CURSOR, {"was": cursor, "seq": last}).rowcount != 1:
                return False
            rows = [
                {
                    "id": ids(),
                    "sink": d.sink,
                    "seq": d.event.seq,
                    "event": d.event.kind,
                    "subject": d.event.subject,
                    "data": canonical_json(
                        {"at": to_micros(d.event.at), "actor": d.event.actor, "data": d.event.data}
                    ).decode(),
                    "status": "pending",
                    "attempts": 0,
                    "next_at": to_micros(at),
                    "created_at": to_micros(at),
                }
                for d in deliveries
            ]
            if rows:
                connection.execute(_ADD[connection.dialect.name], rows)
            return True

        moved: bool = await self.run(work)
        return moved

    async def outbox_claim(
        self,
        *,
        owner: str,
        now: datetime,
        lease: timedelta,
        sinks: Sequence[str],
        due: datetime | None = None,
        limit: int = 20,
    ) -> list[Delivery]:
        """Claim up to `limit` due deliveries for `lease`, in the order they are due and then
        of their events: none is claimed by two senders. Only deliveries of `sinks` (those
        this sender knows) due by `due` (default `now`) are claimed; the lease runs from `now`."""
        if not sinks:
            return []

        def work(connection: Connection) -> list[Delivery]:
            at = to_micros(now)
            params = {"now": to_micros(due or now), "n": limit, "sinks": list(sinks)}
            ids = connection.execute(_DUE, params).scalars().all()
            until = to_micros(now + lease)
            taken = [
                i
                for i in ids
                if connection.execute(
                    _TAKE.values(lease_owner=owner, lease_until=until), {"b_id": i, "b_now": at}
                ).rowcount
                == 1
            ]
            if not taken:
                return []
            rows = connection.execute(select(_box).where(_box.c.id.in_(taken))).all()
            return sorted((_delivery(r) for r in rows), key=lambda d: (d.next_at, d.seq, d.sink))

        return await self.run(work)

    async def outbox_done(
        self,
        delivery_id: str,
        *,
        owner: str,
        at: datetime,
        error: str | None = None,
        retry_at: datetime | None = None,
    ) -> bool:
        """Record a claimed delivery sent (no `error`), to be tried again at `retry_at`, or
        failed for good (an `error` and no `retry_at`). False when the claim was lost."""
        values: dict[str, Any] = {"lease_owner": None, "lease_until": None}
        if error is None:
            values |= {"status": "sent", "sent_at": to_micros(at), "error": None}
        else:
            values |= {
                "status": "pending" if retry_at is not None else "failed",
                "next_at": to_micros(retry_at or at),
                "error": error[:2000],
            }
        statement = _SETTLE.values(attempts=_box.c.attempts + 1, **values)

        def work(connection: Connection) -> bool:
            params = {"b_id": delivery_id, "b_owner": owner}
            return bool(connection.execute(statement, params).rowcount == 1)

        settled: bool = await self.run(work)
        return settled

    async def outbox(
        self, *, status: DeliveryStatus | None = None, limit: int = 100
    ) -> list[Delivery]:
        """Deliveries, oldest first."""
        query = select(_box).order_by(_box.c.seq, _box.c.sink).limit(limit)
        if status is not None:
            query = query.where(_box.c.status == status)
        rows = await self.run(lambda c: c.execute(query).all(), write=False)
        return [_delivery(r) for r in rows]

    async def record_unknown(self, record: AuditRecord) -> bool:
        """Audit `record` (a call whose outcome is unknown) once per subject — the ledger key's
        hash — however many callers find it so: False when it was recorded before."""
        note = NoteRecord(channel="unknown", subject=record.subject, key="", data={}, at=record.at)

        def work(connection: Connection) -> bool:
            if not add_note(connection, note):
                return False
            append_audit(connection, [record])
            return True

        added: bool = await self.run(work)
        return added


def _delivery(row: Any) -> Delivery:
    try:
        data = json.loads(row.data)
    except (ValueError, RecursionError):
        data = None
    return Delivery(
        **same_named(row, ("id", "sink", "seq", "subject", "status", "attempts", "error")),
        kind=row.event,
        data=data if isinstance(data, dict) else {},
        next_at=from_micros(row.next_at),
        sent_at=None if row.sent_at is None else from_micros(row.sent_at),
    )
