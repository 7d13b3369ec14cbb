"""The threads a framework leaves to the app to keep (``external_history``): entries appended
in order, each append a compare-and-set on the length its writer read — so of two writers that
read the same thread, one extends it — and, when the run pauses, with its pause in the same
transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from sqlalchemy import bindparam, func, select
from sqlalchemy.engine import Connection

from signoff.store import schema
from signoff.store.lean import execute
from signoff.store.pauses import NewPause, Pause, save_pause
from signoff.store.runner import Transactional
from signoff.store.times import to_micros

__all__ = ["HistoryStore"]

_history = schema.external_history
_INSERT_HISTORY = schema.inserts_if_new(_history)
_THREAD = (_history.c.origin == bindparam("o"), _history.c.thread_id == bindparam("t"))
_HISTORY = select(_history.c.data).where(*_THREAD).order_by(_history.c.seq)
_LENGTH = select(func.count()).where(*_THREAD)


class HistoryStore(Transactional, Protocol):
    """The kept threads' half of `ExternalStore`."""

    async def history(self, origin: str, thread_id: str) -> list[str]:
        """The items appended to the thread's history, in order."""
        thread = {"o": origin, "t": thread_id}
        items: list[str] = await self.run(
            lambda c: list(execute(c, _HISTORY, thread).scalars()), write=False, snapshot=False
        )
        return items

    async def append_history(
        self, origin: str, thread_id: str, items: Sequence[str], *, after: int, now: datetime
    ) -> bool:
        """Append `items` to a history its writer read `after` items long; False (nothing
        written) when it has grown since — another writer extended it first."""
        if not items:
            return True
        appended: bool = await self.run(
            lambda c: _append(c, origin, thread_id, items, after=after, now=now)
        )
        return appended

    async def append_paused(
        self,
        origin: str,
        thread_id: str,
        items: Sequence[str],
        *,
        after: int,
        now: datetime,
        pause: NewPause,
    ) -> Pause | None:
        """`append_history` and `save_pause` in one transaction — a thread never left waiting
        with no pause that points a resumer at it: the pause as stored, or None (nothing
        written) when the history has grown since."""

        def work(connection: Connection) -> Pause | None:
            if not _append(connection, origin, thread_id, items, after=after, now=now):
                return None
            return save_pause(connection, pause)

        saved: Pause | None = await self.run(work)
        return saved


def _append(
    connection: Connection,
    origin: str,
    thread_id: str,
    items: Sequence[str],
    *,
    after: int,
    now: datetime,
) -> bool:
    """Append `items` after the `after` entries read, in the caller's transaction; False when
    the history has grown since (the caller writes nothing)."""
    thread = {"o": origin, "t": thread_id}
    if execute(connection, _LENGTH, thread).scalar() != after:
        return False
    rows = [
        {"origin": origin, "thread_id": thread_id, "seq": after + i, "data": item,
         "at": to_micros(now)}
        for i, item in enumerate(items)
    ]  # fmt: skip
    if not rows:
        return True
    statement = _INSERT_HISTORY[connection.dialect.name]
    # A concurrent writer that read the same length inserts the same first key: one wins.
    if execute(connection, statement, rows[0]).rowcount != 1:
        return False
    if rows[1:]:
        execute(connection, statement, rows[1:])
    return True
