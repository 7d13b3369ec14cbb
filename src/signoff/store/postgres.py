"""PostgreSQL through asyncpg."""

from __future__ import annotations

import importlib.util

from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from signoff.errors import MissingExtraError

__all__ = ["create_postgres_engine"]


def create_postgres_engine(url: str) -> AsyncEngine:
    if importlib.util.find_spec("asyncpg") is None:
        raise MissingExtraError("a PostgreSQL store", "postgres")
    if url.startswith("postgresql://"):
        url = "postgresql+asyncpg://" + url.removeprefix("postgresql://")
    return create_async_engine(url, pool_size=10, max_overflow=10)
