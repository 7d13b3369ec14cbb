"""Migrations: version 1 is derived from the schema, and must keep building what it shipped."""

from __future__ import annotations

import hashlib

from sqlalchemy import create_mock_engine
from sqlalchemy.schema import CreateIndex, CreateTable

from signoff.store.migrations import version_1_tables

SHIPPED_VERSION_1 = "023f668067a49c7e89574a3528e861b56abd08fc0c7d11c30fc6c50e72a5b0b0"
"""The digest of the statements migration 1 ran when it shipped, on SQLite and on PostgreSQL."""


def test_migration_1_builds_the_tables_it_shipped_with():
    statements = []
    for url in ("sqlite://", "postgresql+asyncpg://"):
        dialect = create_mock_engine(url, executor=None).dialect
        for table in version_1_tables():
            statements.append(str(CreateTable(table).compile(dialect=dialect)))
            indexes = sorted(table.indexes, key=lambda index: str(index.name))
            statements += [str(CreateIndex(index).compile(dialect=dialect)) for index in indexes]
    digest = hashlib.sha256("\n".join(statements).encode()).hexdigest()
    assert digest == SHIPPED_VERSION_1, (
        "a column or index of version 1 changed in signoff.store.schema: a schema that shipped "
        "is never edited — add a migration that changes it instead"
    )
