"""PostgreSQL through asyncpg, with every wait bounded: a replica cut off from the database, or
frozen, neither hangs its requests for ever nor holds the others up with its locks.

The bounds are the URL's to change (``postgresql://signoff@db/signoff?command_timeout=30``):

- ``connect_timeout`` (seconds, default 10): how long a new connection may take;
- ``command_timeout`` (seconds, default 60; 0: none): how long one statement may take, as this
  process waits for it; past it the request fails (503) instead of waiting on a silent network.
  Migrations and ``signoff prune`` are held to it too: give them a longer one if they need it;
- ``idle_in_transaction_session_timeout`` (default ``30s``): the server ends a session that holds a
  transaction open and hears nothing more from this process — its locks go with it, so the
  other replicas are not held up by one that lost the network (or stopped) mid-transaction;
- ``tcp_user_timeout`` (default ``30s``): the server drops a connection whose other end stops
  acknowledging what it sends.

A setting given as ``none`` (``?tcp_user_timeout=none``) is not asked for at all: a connection
pooler such as PgBouncer refuses startup parameters it was not told to ignore. The connection that
listens for other replicas' decisions keeps only what the URL gives asyncpg: it holds no
transaction, and a replica that loses it polls instead. Whatever else the URL's query names
goes to asyncpg as it did before, but for ``timeout`` and ``server_settings``, which signoff
sets itself (and refuses in the URL). The two server settings take PostgreSQL's units: a number
alone is milliseconds.
"""

from __future__ import annotations

import importlib.util
import math
from typing import Any

from sqlalchemy import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from signoff.errors import MissingExtraError, StoreError
from signoff.store.runner import AsyncRunner

__all__ = ["SERVER_SETTINGS", "TIMEOUTS", "postgres_runner"]

TIMEOUTS: dict[str, float | str] = {"connect_timeout": 10.0, "command_timeout": 60.0}
"""Seconds this process waits for a new connection, and for one statement."""
SERVER_SETTINGS = {"idle_in_transaction_session_timeout": "30s", "tcp_user_timeout": "30s"}
"""What each session of this process asks the server for (the URL's query may change each)."""


def postgres_runner(url: str) -> AsyncRunner:
    if importlib.util.find_spec("asyncpg") is None:
        raise MissingExtraError("a PostgreSQL store", "postgres")
    parsed = make_url(url)
    query = dict(parsed.query)
    for taken, instead in (("timeout", "connect_timeout"), ("server_settings", "each setting")):
        if taken in query:  # signoff sets it: the URL's would be dropped without a word
            raise StoreError(f"the database URL's {taken} is not read: give {instead} instead")
    given = {name: _one(name, query.pop(name)) for name in [*TIMEOUTS, *SERVER_SETTINGS]
             if name in query}  # fmt: skip
    settings = {
        name: given.get(name, default)
        for name, default in SERVER_SETTINGS.items()
        if given.get(name, default) != "none"  # not asked for: a pooler may refuse it
    }
    timeouts = TIMEOUTS | {name: given[name] for name in TIMEOUTS if name in given}
    connect: dict[str, Any] = {
        "timeout": _seconds("connect_timeout", timeouts["connect_timeout"]),
        "command_timeout": _seconds("command_timeout", timeouts["command_timeout"], none=True),
        "server_settings": settings,
    }
    engine_url = parsed.set(drivername="postgresql+asyncpg", query=query)
    return AsyncRunner(
        create_async_engine(
            engine_url,
            pool_size=10,
            max_overflow=10,
            hide_parameters=True,  # no arguments in logs
            connect_args=connect,
        )
    )


def _one(name: str, value: str | tuple[str, ...]) -> str:
    if isinstance(value, tuple):
        raise StoreError(f"the database URL gives {name} {len(value)} times: give it once")
    return value


def _seconds(name: str, value: object, *, none: bool = False) -> float | None:
    """A timeout in seconds; with `none`, 0 is no timeout at all."""
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = math.nan
    if none and seconds == 0:
        return None
    if not 0 < seconds < math.inf:
        least = "0 (none) or more" if none else "more than 0"
        raise StoreError(
            f"the database URL's {name} must be a number of seconds, {least}; not {value!r}"
        )
    return seconds
