"""Large messages and event data: kept once, compressed, and referenced by hash.

A tool result can be megabytes, and the same text comes back in the run's events and its next
turn's messages: above `LARGE` it goes to the `blobs` table once, under its hash.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from signoff.store import schema
from signoff.types import canonical_json

__all__ = [
    "LARGE",
    "PRUNED",
    "event_data",
    "inflate",
    "message_from_row",
    "read_large",
    "stored_message",
]

PRUNED = "(pruned by retention)"
"""What a pruned payload's large values read as (`signoff.store.retention`)."""
LARGE = 64 * 1024
"""Messages bigger than this (as JSON) are stored once, compressed, and referenced by hash."""


_BLOB = "$blob"


def _keep(connection: Connection, text: bytes) -> str:
    """Keep `text` once, compressed; return its hash. A blob kept already is locked until the
    transaction ends (a no-op update): a prune (`signoff.store.retention`) that would remove it
    waits, then sees the reference this transaction writes."""
    digest = hashlib.sha256(text).hexdigest()
    dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
    statement = dialect.insert(schema.blobs).values(
        hash=digest, codec="zlib", data=zlib.compress(text, 6)
    )
    connection.execute(
        statement.on_conflict_do_update(
            index_elements=[schema.blobs.c.hash], set_={"hash": statement.excluded.hash}
        )
    )
    return digest


def stored_message(connection: Connection, message: dict[str, Any]) -> dict[str, Any]:
    text = canonical_json(message)
    if len(text) <= LARGE:
        return {"data": text.decode(), "blob": None}
    return {"data": "null", "blob": _keep(connection, text)}


def event_data(connection: Connection, data: dict[str, Any]) -> str:
    """An event's data, or a reference to it when large (tool results repeat messages)."""
    text = canonical_json(data)
    if len(text) <= LARGE:
        return text.decode()
    return canonical_json({_BLOB: _keep(connection, text)}).decode()


def message_from_row(row: Any) -> dict[str, Any]:
    if row.blob_data is not None:
        return json.loads(zlib.decompress(row.blob_data))  # type: ignore[no-any-return]
    return json.loads(row.data)  # type: ignore[no-any-return]


def inflate(blob: bytes) -> str:
    return zlib.decompress(blob).decode()


def read_large(connection: Connection, data: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events' data with the large ones read back from their blobs; the rest as they are."""
    refs = {d[_BLOB] for d in data if set(d) == {_BLOB}}
    if not refs:
        return list(data)
    blobs = schema.blobs
    found = dict(
        connection.execute(select(blobs.c.hash, blobs.c.data).where(blobs.c.hash.in_(refs))).all()
    )
    return [_data(found.get(d[_BLOB])) if set(d) == {_BLOB} else d for d in data]


def _data(blob: bytes | None) -> dict[str, Any]:
    """A large event's data; a blob that is gone (pruned) reads as such, never as an error."""
    if blob is None:
        return {"pruned": PRUNED}
    return json.loads(zlib.decompress(blob))  # type: ignore[no-any-return]
