"""Shared fixtures: a fresh store on each backend (PostgreSQL is this machine's real server); and
a user data folder of the suite's own, so that no command a test runs finds the user's demo."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from signoff.store import SQLStore, open_store
from tests.deadline import HANG

USER_SETTINGS = ("SIGNOFF_SERVER", "SIGNOFF_TOKEN", "SIGNOFF_DATABASE_URL", "SIGNOFF_CONFIG")
"""What a user's shell may set to point the commands somewhere: no test inherits it."""


@pytest.fixture(autouse=True, scope="session")
def own_user_data_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The user data folder of every command the suite runs, in process or as a subprocess:
    a demo the user runs (``make demo``) announces itself in theirs, where ``signoff approve``,
    ``inbox``, ``grants`` … with no flags would find it, and a demo a test runs without
    ``--data-dir`` would announce itself there in turn."""
    folder = tmp_path_factory.mktemp("user-data")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_DATA_HOME", str(folder))
        for name in USER_SETTINGS:
            patch.delenv(name, raising=False)
        yield folder


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
