"""Channels' notes: what a channel keeps about a subject of its own beside the run log — the
messages an A2A client sent to a task, as it sent them; the task a client's first message
started. One note per (channel, subject, key), never rewritten."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import and_, select
from sqlalchemy.engine import Connection

from signoff.store import schema
from signoff.store.records import NoteRecord
from signoff.store.runner import Transactional
from signoff.store.times import from_micros, to_micros
from signoff.types import canonical_json

__all__ = ["Note", "NoteStore", "add_note"]

_ADD_NOTE = schema.inserts_if_new(schema.notes)


@dataclass(frozen=True, kw_only=True)
class Note:
    """What a channel keeps about one of its subjects (see `NoteStore.add_note`)."""

    key: str
    at: datetime
    data: dict[str, Any]


class NoteStore(Transactional, Protocol):
    """The notes' half of the store."""

    async def add_note(
        self, channel: str, subject: str, key: str, data: dict[str, Any], *, at: datetime
    ) -> bool:
        """Keep `data` under (channel, subject, key) — a channel's own record of something,
        such as the message an A2A client sent to a task. False when that key is taken: the
        first note stays as it was."""
        note = NoteRecord(channel=channel, subject=subject, key=key, data=data, at=at)
        added: bool = await self.run(lambda connection: add_note(connection, note))
        return added

    async def notes(self, channel: str, subject: str, *, key: str | None = None) -> list[Note]:
        """The channel's notes about `subject`, oldest first; with `key`, that one (or none)."""
        table = schema.notes
        query = select(table).where(and_(table.c.channel == channel, table.c.subject == subject))
        if key is not None:
            query = query.where(table.c.key == key)
        query = query.order_by(table.c.at, table.c.key)
        rows = await self.run(lambda c: c.execute(query).all(), write=False)
        return [Note(key=r.key, at=from_micros(r.at), data=json.loads(r.data)) for r in rows]


def add_note(connection: Connection, note: NoteRecord) -> bool:
    """Insert `note` unless its key is taken, in the caller's transaction: whether it was."""
    row = {
        "channel": note.channel,
        "subject": note.subject,
        "key": note.key,
        "at": to_micros(note.at),
        "data": canonical_json(note.data).decode(),
    }
    return bool(connection.execute(_ADD_NOTE[connection.dialect.name], row).rowcount == 1)
