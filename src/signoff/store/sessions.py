"""Sign-in sessions that ended: a person signed out, and the cookie that carried the session must
not work again — on any replica, even copied. The cookie itself is sealed and says when it
expires; the database says only which sessions ended early. A record outlives its cookie by
`KEPT_PAST_EXPIRY`, then the next sign-out forgets it."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy import bindparam, delete, select
from sqlalchemy.engine import Connection

from signoff.store import schema
from signoff.store.lean import execute
from signoff.store.runner import Transactional
from signoff.store.times import to_micros

__all__ = ["KEPT_PAST_EXPIRY", "SessionStore"]

KEPT_PAST_EXPIRY = timedelta(days=1)
"""How long the record of an ended session is kept after its cookie expired: longer than any
two replicas' clocks disagree, so none takes the cookie for unexpired once the record is gone."""

_ended = schema.ended_sessions
_END = schema.inserts_if_new(_ended)
_FORGET = delete(_ended).where(_ended.c.until < bindparam("before"))
_ENDED = select(_ended.c.id).where(_ended.c.id == bindparam("id"))


class SessionStore(Transactional, Protocol):
    """The sessions' half of the store."""

    async def end_session(self, session_id: str, *, until: datetime, now: datetime) -> None:
        """Record that the session `session_id`, whose cookie expires at `until`, has ended;
        and forget the sessions whose cookies expired more than `KEPT_PAST_EXPIRY` before
        `now`. Ending a session twice is ending it once."""
        row = {"id": session_id, "until": to_micros(until)}
        before = to_micros(now - KEPT_PAST_EXPIRY)

        def work(connection: Connection) -> None:
            connection.execute(_END[connection.dialect.name], row)
            execute(connection, _FORGET, {"before": before})

        await self.run(work)

    async def session_ended(self, session_id: str) -> bool:
        """Whether the session `session_id` was ended (`end_session`)."""
        found = await self.run(
            lambda c: execute(c, _ENDED, {"id": session_id}).first(), write=False
        )
        return found is not None
