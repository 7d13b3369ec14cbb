"""Durable state: one async `Store` protocol over SQLite (the default) or PostgreSQL."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator

from signoff.store.sql import AuditRecord, SQLStore

__all__ = ["DEFAULT_URL", "AuditRecord", "SQLStore", "Store", "open_store"]

DEFAULT_URL = "sqlite+aiosqlite:///signoff.db"

# The protocol is the SQL store's public surface; a second implementation would implement it.
Store = SQLStore


@contextlib.asynccontextmanager
async def open_store(url: str | None = None, *, migrate: bool = True) -> AsyncIterator[SQLStore]:
    """Open the store at `url`, or ``SIGNOFF_DATABASE_URL``, or ``signoff.db`` here; migrate it."""
    url = url or os.environ.get("SIGNOFF_DATABASE_URL") or DEFAULT_URL
    if url.startswith("sqlite"):
        from signoff.store.sqlite import create_sqlite_engine

        engine = create_sqlite_engine(url)
    elif url.startswith("postgresql"):
        from signoff.store.postgres import create_postgres_engine

        engine = create_postgres_engine(url)
    else:
        raise ValueError(
            f"unsupported database URL {url!r}: use sqlite+aiosqlite:///FILE "
            "or postgresql+asyncpg://USER@HOST/DB"
        )
    store = SQLStore(engine, url=url)
    try:
        if migrate:
            await store.migrate()
        yield store
    finally:
        await store.close()
