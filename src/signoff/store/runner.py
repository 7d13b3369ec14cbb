"""Running one synchronous transaction body from async code, per database.

SQLite's driver is synchronous and every call through an async adapter is a hop to another
thread: a decision made of six statements would cost a dozen hops. Here a whole transaction is
one hop to the store's own thread. PostgreSQL keeps asyncpg: the body runs on SQLAlchemy's
greenlet bridge, each statement awaiting the server without blocking the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar

from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from signoff.errors import StoreError, StoreUnavailableError

__all__ = ["AsyncRunner", "Runner", "ThreadRunner", "Transactional"]

T = TypeVar("T")


class Transactional(Protocol):
    """What each concern of the store is written over (`signoff.store.base`): `run` does its
    work as one transaction — committed if it returns, rolled back if it raises."""

    async def run(
        self,
        work: Callable[[Connection], T],
        *,
        write: bool = True,
        durable: bool = True,
        snapshot: bool = True,
    ) -> T: ...


class Runner(Protocol):
    @property
    def engine(self) -> Engine: ...

    async def run(
        self,
        work: Callable[[Connection], T],
        *,
        write: bool,
        durable: bool = True,
        snapshot: bool = True,
    ) -> T: ...

    async def reset(self) -> None:
        """Close the pooled connections; the next transaction opens a new one."""

    async def close(self) -> None: ...


def _transaction(engine: Engine, work: Callable[[Connection], T], write: bool, durable: bool) -> T:
    with engine.connect() as connection:
        if not write:
            connection = connection.execution_options(signoff_read=True)
        elif not durable:
            connection = connection.execution_options(signoff_relaxed=True)
        with connection.begin():
            return work(connection)


_UNAVAILABLE = frozenset({"57P01", "57P02", "57P03", "53300"})
"""What PostgreSQL says when it will not serve now: shut down by an administrator, or after a
crash; starting up; no connection free. Its class 08 (connection exceptions) too."""


def _store_error(exc: DBAPIError) -> StoreError:
    state = getattr(exc.orig, "sqlstate", None) or ""
    if exc.connection_invalidated or state.startswith("08") or state in _UNAVAILABLE:
        return StoreUnavailableError(f"the database cannot serve now: {exc.orig!r}")
    return StoreError(f"the database refused the operation: {exc.orig!r}")


def _unanswered(exc: BaseException) -> StoreUnavailableError:
    what = str(exc) or type(exc).__name__
    return StoreUnavailableError(f"the database did not answer: {what}")


class ThreadRunner:
    """Every write transaction on one thread of its own, in order (SQLite allows one writer
    anyway); with `readers`, reads on threads of their own, beside the writes (a WAL database
    lets readers and a writer go on at once), so a read never waits in line behind writes."""

    def __init__(self, engine: Engine, *, readers: int = 0) -> None:
        self._engine = engine
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="signoff-store")
        self._readers = (
            ThreadPoolExecutor(max_workers=readers, thread_name_prefix="signoff-read")
            if readers
            else self._thread
        )

    @property
    def engine(self) -> Engine:
        return self._engine

    async def run(
        self,
        work: Callable[[Connection], T],
        *,
        write: bool,
        durable: bool = True,
        snapshot: bool = True,
    ) -> T:
        loop = asyncio.get_running_loop()
        # The result comes back in a box the caller empties, not through the futures: they
        # would keep it alive until the loop drops them, and a large read (a long history)
        # would then be freed in the middle of whatever the caller does next.
        box: list[T] = []

        def job() -> None:
            box.append(_transaction(self._engine, work, write, durable))

        try:
            await loop.run_in_executor(self._thread if write else self._readers, job)
        except DBAPIError as exc:
            raise _store_error(exc) from exc
        return box.pop()

    async def reset(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._thread, self._engine.dispose)

    async def close(self) -> None:
        await self.reset()
        self._thread.shutdown(wait=True)
        self._readers.shutdown(wait=True)


class AsyncRunner:
    """Transactions on an async engine, the body bridged to its driver by greenlets."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._async_engine = engine

    @property
    def engine(self) -> Engine:
        return self._async_engine.sync_engine

    async def run(
        self,
        work: Callable[[Connection], T],
        *,
        write: bool,
        durable: bool = True,
        snapshot: bool = True,
    ) -> T:
        try:
            async with self._connection() as connection:
                if not snapshot:
                    # Each statement its own transaction: no BEGIN and COMMIT, two round trips.
                    connection = await connection.execution_options(isolation_level="AUTOCOMMIT")
                    return await connection.run_sync(work)
                if not write:
                    connection = await connection.execution_options(signoff_read=True)
                async with connection.begin():
                    if write and not durable:
                        # Safe: the WAL is one sequence, a later durable commit flushes this too.
                        await connection.exec_driver_sql("SET LOCAL synchronous_commit = off")
                    return await connection.run_sync(work)
        except DBAPIError as exc:
            raise _store_error(exc) from exc
        except TimeoutError as exc:  # a statement past the URL's command_timeout
            raise _unanswered(exc) from exc

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection]:
        """A pooled connection; a database that cannot be reached is `StoreUnavailableError`
        (an `OSError` raised by the transaction's own work is not that, and is left alone)."""
        connection = self._async_engine.connect()
        try:
            await connection.start()
        except (OSError, PoolTimeout) as exc:  # refused, unreachable, or no connection free
            raise _unanswered(exc) from exc
        try:
            yield connection
        finally:
            await connection.close()

    async def reset(self) -> None:
        await self._async_engine.dispose()

    async def close(self) -> None:
        await self.reset()
