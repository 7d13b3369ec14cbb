"""SQLite: one file, WAL, ``synchronous=FULL``, writers serialized up front on one store thread,
readers on threads of their own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, make_url
from sqlalchemy.engine import Connection

from signoff.store.runner import ThreadRunner

__all__ = ["READERS", "database_file", "sqlite_runner"]

READERS = 2
"""Threads for reads, each with its connection: a read need not wait behind the writes."""


def database_file(url: str) -> Path | None:
    """The file a SQLite URL names, or None for an in-memory database."""
    database = make_url(url).database
    return None if not database or database == ":memory:" else Path(database)


def sqlite_runner(url: str) -> ThreadRunner:
    """The store's transactions on Python's own sqlite3, on one thread of their own.

    ``sqlite:///FILE`` and ``sqlite+aiosqlite:///FILE`` name the same database: the async
    driver is not used, since every call through it costs a hop between threads.
    """
    engine = create_engine(
        make_url(url).set(drivername="sqlite+pysqlite"),
        connect_args={"timeout": 30, "check_same_thread": False},
        hide_parameters=True,  # a logged database error shows no call's arguments
    )

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event below open transactions, not the driver.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        # On the driver itself: these run at every transaction (see signoff.store.lean).
        driver = connection.connection.driver_connection
        assert driver is not None
        # A write transaction takes the write lock when it begins: two writers that both read
        # first would otherwise deadlock when both try to upgrade.
        options = connection.get_execution_options()
        if options.get("signoff_read"):
            driver.execute("BEGIN")
            return
        # A write that need not be durable on its own skips the fsync at its commit; in WAL mode
        # the next durable commit syncs it with its own frames. (Set between transactions only.)
        level = "NORMAL" if options.get("signoff_relaxed") else "FULL"
        info = connection.connection.info
        if info.get("signoff_synchronous", "FULL") != level:
            driver.execute(f"PRAGMA synchronous={level}")
            info["signoff_synchronous"] = level
        driver.execute("BEGIN IMMEDIATE")

    # Reads beside the writes need a file: each connection to ":memory:" is a database of its own.
    return ThreadRunner(engine, readers=0 if database_file(url) is None else READERS)
