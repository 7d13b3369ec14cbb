"""SQLite through aiosqlite: one file, WAL, ``synchronous=FULL``, writers serialized up front."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event, make_url
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

__all__ = ["create_sqlite_engine", "database_file"]


def database_file(url: str) -> Path | None:
    """The file a SQLite URL names, or None for an in-memory database."""
    database = make_url(url).database
    return None if not database or database == ":memory:" else Path(database)


def create_sqlite_engine(url: str) -> AsyncEngine:
    engine = create_async_engine(url, connect_args={"timeout": 30})

    @event.listens_for(engine.sync_engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event below open transactions, not the driver.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _begin(connection: Connection) -> None:
        # A write transaction takes the write lock when it begins: two writers that both read
        # first would otherwise deadlock when both try to upgrade.
        if connection.get_execution_options().get("signoff_read"):
            connection.exec_driver_sql("BEGIN")
        else:
            connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine
