"""Durable state: one async `Store` protocol over SQLite (the default) or PostgreSQL."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from signoff._lazy import lazy_exports as _lazy_exports
from signoff.errors import StoreError, StoreUnavailableError

if TYPE_CHECKING:
    from signoff.store.base import Store
    from signoff.store.checkpoint import Checkpoint
    from signoff.store.records import AuditRecord, DecisionPlan
    from signoff.store.sql import SQLStore
    from signoff.store.verification import AuditReport

__all__ = [
    "DEFAULT_URL",
    "AuditRecord",
    "AuditReport",
    "Checkpoint",
    "DecisionPlan",
    "SQLStore",
    "Store",
    "open_store",
    "shown",
    "store_url",
]

DEFAULT_URL = "sqlite:///signoff.db"

# Loaded when first named: `signoff.store.checkpoint` (and the CLI that names its variable) must
# not pay for SQLAlchemy.
_LAZY = {
    "AuditRecord": "signoff.store.records",
    "DecisionPlan": "signoff.store.records",
    "Store": "signoff.store.base",
    "Checkpoint": "signoff.store.checkpoint",
    "SQLStore": "signoff.store.sql",
    "AuditReport": "signoff.store.verification",
}

__getattr__ = _lazy_exports(__name__, _LAZY)


def shown(url: str) -> str:
    """The URL with its password masked, for messages and logs."""
    from sqlalchemy import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def store_url(url: str | None = None) -> str:
    """The database `open_store(url)` opens: `url`, or ``SIGNOFF_DATABASE_URL``, or
    ``signoff.db`` here."""
    return url or os.environ.get("SIGNOFF_DATABASE_URL") or DEFAULT_URL


@contextlib.asynccontextmanager
async def open_store(url: str | None = None, *, migrate: bool = True) -> AsyncIterator[SQLStore]:
    """Open the store at `url`, or ``SIGNOFF_DATABASE_URL``, or ``signoff.db`` here.

    With `migrate` the schema is created or brought up to date; without it the database must
    already hold this version's schema (for tools that only read, like ``signoff audit``).
    """
    from sqlalchemy.exc import DBAPIError

    from signoff.store.runner import Runner
    from signoff.store.sql import SQLStore

    url = store_url(url)
    runner: Runner
    if url.startswith("sqlite"):
        from signoff.store.sqlite import database_file, sqlite_runner

        path = database_file(url)
        if not migrate and path is not None and not path.exists():
            raise StoreError(f"there is no signoff database at {url!r}: {path} does not exist")
        runner = sqlite_runner(url)
    elif url.startswith("postgresql"):
        from signoff.store.postgres import postgres_runner

        runner = postgres_runner(url)
    else:
        raise StoreError(
            f"unsupported database URL {shown(url)!r}: use sqlite:///FILE "
            "or postgresql+asyncpg://USER@HOST/DB"
        )
    store = SQLStore(runner, url=url)
    try:
        try:
            if migrate:
                await store.migrate()
            else:
                await store.check_schema()
            await store.clock()  # what `now` carries forward from
        except StoreUnavailableError as exc:
            raise StoreUnavailableError(f"cannot open the store at {shown(url)!r}: {exc}") from exc
        except (OSError, DBAPIError) as exc:
            raise StoreError(f"cannot open the store at {shown(url)!r}: {exc}") from exc
        yield store
    finally:
        await store.close()
