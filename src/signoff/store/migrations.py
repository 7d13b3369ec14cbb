"""Append-only migrations: ``MIGRATIONS[i]`` takes the schema from version ``i`` to ``i + 1``.

Never edit a migration that has shipped; add one. Migration 1 builds the tables of `schema` as
they stand at version 1: when a later migration changes one of them, freeze its version-1
definition here first, so that migrating from empty still replays history exactly.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, insert, inspect, select, text, update

from signoff.errors import StoreError
from signoff.store import schema

__all__ = ["LATEST", "MIGRATIONS", "migrate", "schema_version"]


_V1_TABLES = frozenset(
    {
        "approvals",
        "audit",
        "audit_head",
        "blobs",
        "events",
        "grants",
        "ledger",
        "messages",
        "policy_versions",
        "runs",
    }
)


def _v1(connection: Connection) -> None:
    tables = [t for t in schema.metadata.sorted_tables if t.name in _V1_TABLES]
    schema.metadata.create_all(connection, tables=tables)
    connection.execute(insert(schema.audit_head).values(id=1, seq=0, hash="0" * 64))


def _v2(connection: Connection) -> None:
    """Sub-agents' runs linked to their parent's call; a run's last turn found by index."""
    schema.subruns.create(connection)
    connection.execute(text("CREATE INDEX messages_by_role ON messages (run_id, role, seq)"))
    connection.execute(text("CREATE INDEX events_by_type ON events (run_id, type, seq)"))


MIGRATIONS: list[Callable[[Connection], None]] = [_v1, _v2]
LATEST = len(MIGRATIONS)


def schema_version(connection: Connection) -> int | None:
    """The schema version the database is at, or None when it has no signoff schema."""
    if not inspect(connection).has_table(schema.schema_version.name):
        return None
    return connection.execute(select(schema.schema_version.c.version)).scalar()


def migrate(connection: Connection, *, target: int = LATEST) -> int:
    """Bring the database to `target`, inside the caller's transaction; return the old version."""
    schema.schema_version.create(connection, checkfirst=True)
    current = connection.execute(select(schema.schema_version.c.version)).scalar()
    if current is None:
        connection.execute(insert(schema.schema_version).values(version=0))
        current = 0
    if current > LATEST:
        raise StoreError(
            f"the database is at schema version {current}, newer than this signoff ({LATEST}); "
            "upgrade signoff"
        )
    for version in range(current, target):
        MIGRATIONS[version](connection)
        connection.execute(update(schema.schema_version).values(version=version + 1))
    return current
