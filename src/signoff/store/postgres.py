"""PostgreSQL through asyncpg."""

from __future__ import annotations

import importlib.util

from sqlalchemy import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from signoff.errors import MissingExtraError
from signoff.store.runner import AsyncRunner

__all__ = ["postgres_runner"]


def postgres_runner(url: str) -> AsyncRunner:
    if importlib.util.find_spec("asyncpg") is None:
        raise MissingExtraError("a PostgreSQL store", "postgres")
    engine_url = make_url(url).set(drivername="postgresql+asyncpg")
    return AsyncRunner(
        create_async_engine(
            engine_url,
            pool_size=10,
            max_overflow=10,
            hide_parameters=True,  # no arguments in logs
        )
    )
