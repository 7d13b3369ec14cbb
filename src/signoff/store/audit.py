"""The audit log's chain: each entry carries the hash of the one before it, and is appended
inside the transaction of the change it records."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Connection

from signoff.store import schema
from signoff.store.base import AuditRecord
from signoff.store.times import to_micros
from signoff.types import canonical_json

__all__ = ["LOCK_AUDIT_HEAD", "append_audit", "entry_hash"]

_head = schema.audit_head
_INSERT_AUDIT = insert(schema.audit)
LOCK_AUDIT_HEAD = select(_head.c.seq, _head.c.hash).where(_head.c.id == 1).with_for_update()
_UPDATE_AUDIT_HEAD = update(_head).where(_head.c.id == 1)


def entry_hash(prev_hash: str, seq: int, record: AuditRecord) -> str:
    body = [seq, to_micros(record.at), record.actor, record.action, record.subject, record.data]
    return hashlib.sha256(prev_hash.encode() + canonical_json(body)).hexdigest()


def append_audit(connection: Connection, records: Sequence[AuditRecord]) -> None:
    """Chain `records` after the last entry, inside the caller's transaction. Locking the head
    row serializes audit writers, so the chain never forks."""
    if not records:
        return
    head = connection.execute(LOCK_AUDIT_HEAD).one()
    seq, prev = head.seq, head.hash
    rows = []
    for record in records:
        seq += 1
        digest = entry_hash(prev, seq, record)
        rows.append(
            {
                "seq": seq,
                "at": to_micros(record.at),
                "actor": record.actor,
                "action": record.action,
                "subject": record.subject,
                "data": canonical_json(record.data).decode(),
                "prev_hash": prev,
                "hash": digest,
            }
        )
        prev = digest
    connection.execute(_INSERT_AUDIT, rows)
    connection.execute(_UPDATE_AUDIT_HEAD, {"seq": seq, "hash": prev})
