"""Shared fixtures: a fresh store on each backend. PostgreSQL is this machine's real server."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from signoff.store import SQLStore, open_store
from tests.deadline import HANG

PG_ADMIN = os.environ.get("SIGNOFF_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


async def _postgres_available() -> bool:
    import asyncpg

    try:
        connection = await asyncpg.connect(PG_ADMIN, timeout=HANG)  # refused at once if down
    except (OSError, asyncpg.PostgresError):
        return False
    await connection.close()
    return True


@contextlib.asynccontextmanager
async def fresh_postgres_database() -> AsyncIterator[str]:
    """A new, empty PostgreSQL database, dropped afterwards."""
    import asyncpg

    if not await _postgres_available():
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is not reachable at {PG_ADMIN} and CI must test it")
        pytest.skip(f"PostgreSQL is not reachable at {PG_ADMIN}")
    name = f"signoff_test_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(PG_ADMIN)
    await admin.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    try:
        yield f"{base}/{name}"
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    async with fresh_postgres_database() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def store_url(backend: str, tmp_path: Path) -> AsyncIterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'signoff.db'}"
        return
    async with fresh_postgres_database() as url:
        yield url


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[SQLStore]:
    async with open_store(store_url) as opened:
        yield opened
