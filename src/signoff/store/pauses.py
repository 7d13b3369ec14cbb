"""Other frameworks' paused runs: a pause waits on its held calls' approvals and tells a resumer
what resuming the run needs. Recorded once however often the same run pauses on the same calls,
claimed by one worker at a time under a lease, and ended when the run goes on — each a
compare-and-set, so any number of processes on one database agree."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from sqlalchemy import ColumnElement, and_, exists, or_, select, true, update
from sqlalchemy.engine import Connection

from signoff.store import schema
from signoff.store.runner import Transactional
from signoff.store.times import from_micros, to_micros
from signoff.types import canonical_json
from signoff.types.fields import same_named

__all__ = ["NewPause", "Pause", "PauseStatus", "PauseStore", "save_pause"]

PauseStatus = Literal["waiting", "resuming", "done"]

_pauses = schema.pauses
_links = schema.pause_approvals
_INSERT_PAUSE, _INSERT_LINK = schema.inserts_if_new(_pauses), schema.inserts_if_new(_links)
_PENDING = (
    select(_links.c.approval_id)
    .join(schema.approvals, schema.approvals.c.id == _links.c.approval_id)
    .where(_links.c.pause_id == _pauses.c.id, schema.approvals.c.status == "pending")
)
"""A pause's approvals still pending (correlated to the pause of the enclosing statement)."""


@dataclass(frozen=True, kw_only=True)
class Pause:
    """A run of another framework paused on held calls (see `signoff.gate.external`)."""

    id: str
    origin: str
    thread_id: str
    agent: str | None
    status: PauseStatus
    data: dict[str, Any]
    """What the integration needs to resume the run (its thread's config, its interrupt)."""
    approvals: tuple[str, ...]
    attempts: int
    created_at: datetime
    updated_at: datetime
    lease_owner: str | None = None
    lease_until: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class NewPause:
    """A pause to record: on its own (`PauseStore.save_pause`), or with the entries the run
    appends to its thread as it pauses (`HistoryStore.append_paused`)."""

    id: str
    origin: str
    thread_id: str
    agent: str | None
    data: dict[str, Any]
    approvals: Sequence[str]
    at: datetime


class PauseStore(Transactional, Protocol):
    """The pauses' half of `ExternalStore`."""

    async def save_pause(self, pause: NewPause) -> Pause:
        """Record the pause unless it is recorded already (the same run paused on the same
        calls, by a re-run or another process); return it as stored."""
        saved: Pause = await self.run(lambda c: save_pause(c, pause))
        return saved

    async def get_pause(self, pause_id: str) -> Pause | None:
        pause: Pause | None = await self.run(
            lambda c: _read_pause(c, pause_id, missing_ok=True), write=False
        )
        return pause

    async def ready_pauses(self, origin: str, *, now: datetime, limit: int = 100) -> list[str]:
        """Pauses of `origin` a resumer may claim: waiting with none of their approvals pending,
        or left resuming by a worker whose lease ran out. Oldest first."""
        query = (
            select(_pauses.c.id)
            .where(_pauses.c.origin == origin, _claimable(now))
            .order_by(_pauses.c.updated_at)
            .limit(limit)
        )
        ids: list[str] = await self.run(lambda c: list(c.execute(query).scalars()), write=False)
        return ids

    async def claim_pause(
        self, pause_id: str, *, owner: str, now: datetime, lease: timedelta
    ) -> Pause | None:
        """Take the pause for `owner` until `now + lease` if it is still claimable (waiting with
        none of its approvals pending, or its last claim ran out); None when it is not ready,
        another worker has it, or it is done."""
        claim = (
            update(_pauses)
            .where(_pauses.c.id == pause_id, _claimable(now))
            .values(
                status="resuming",
                lease_owner=owner,
                lease_until=to_micros(now + lease),
                attempts=_pauses.c.attempts + 1,
                updated_at=to_micros(now),
            )
        )

        def work(connection: Connection) -> Pause | None:
            if connection.execute(claim).rowcount != 1:
                return None
            return _read_pause(connection, pause_id, missing_ok=True)

        pause: Pause | None = await self.run(work)
        return pause

    async def release_pause(
        self, pause_id: str, *, owner: str, status: PauseStatus, now: datetime
    ) -> bool:
        """End `owner`'s claim: `done` (resumed), or `waiting` (to be tried again later)."""
        query = (
            update(_pauses)
            .where(_pauses.c.id == pause_id, _pauses.c.lease_owner == owner)
            .values(status=status, lease_owner=None, lease_until=None, updated_at=to_micros(now))
        )
        released: bool = await self.run(lambda c: c.execute(query).rowcount == 1)
        return released

    async def open_pause(self, approval_ids: Sequence[str]) -> Pause | None:
        """The newest pause not done that waits on any of these approvals."""
        return await self._newest_pause(approval_ids, done=False)

    async def last_pause(self, approval_ids: Sequence[str]) -> Pause | None:
        """The newest pause that waits, or waited, on any of these approvals."""
        return await self._newest_pause(approval_ids, done=True)

    async def _newest_pause(self, approval_ids: Sequence[str], *, done: bool) -> Pause | None:
        if not approval_ids:
            return None
        query = (
            select(_pauses.c.id)
            .where(_waiting_on(approval_ids), true() if done else _pauses.c.status != "done")
            .order_by(_pauses.c.created_at.desc(), _pauses.c.id)
            .limit(1)
        )

        def work(connection: Connection) -> Pause | None:
            found = connection.execute(query).scalar()
            return None if found is None else _read_pause(connection, found)

        pause: Pause | None = await self.run(work, write=False)
        return pause

    async def take_pause(
        self,
        pause_id: str,
        *,
        seen: Pause,
        status: PauseStatus,
        owner: str | None,
        until: datetime | None,
        now: datetime,
    ) -> bool:
        """Set the pause's status and claim (`owner` until `until`) if they still stand as in
        `seen` — a compare-and-set for callers that judge from what they read whether they may
        take the pause, renew their claim or end it; False (nothing changed) when another
        writer moved it since."""
        seen_until = None if seen.lease_until is None else to_micros(seen.lease_until)
        query = (
            update(_pauses)
            .where(
                _pauses.c.id == pause_id,
                _pauses.c.status == seen.status,
                _pauses.c.lease_owner.is_(None)
                if seen.lease_owner is None
                else _pauses.c.lease_owner == seen.lease_owner,
                _pauses.c.lease_until.is_(None)
                if seen_until is None
                else _pauses.c.lease_until == seen_until,
            )
            .values(
                status=status,
                lease_owner=owner,
                lease_until=None if until is None else to_micros(until),
                updated_at=to_micros(now),
            )
        )
        taken: bool = await self.run(lambda c: c.execute(query).rowcount == 1)
        return taken

    async def finish_pauses(self, approval_ids: Sequence[str], *, now: datetime) -> None:
        """Mark done every pause that waits on any of these approvals: the run went on."""
        if approval_ids:
            await self._finish(_waiting_on(approval_ids), now)

    async def finish_pause(self, pause_id: str, *, now: datetime) -> None:
        """Mark the pause done whoever holds it: its run went on past it (resumed by its own
        code, or by the integration's re-entered hook)."""
        await self._finish(_pauses.c.id == pause_id, now)

    async def _finish(self, which: ColumnElement[bool], now: datetime) -> None:
        query = (
            update(_pauses)
            .where(which, _pauses.c.status != "done")
            .values(status="done", lease_owner=None, lease_until=None, updated_at=to_micros(now))
        )
        await self.run(lambda c: c.execute(query))


def _claimable(now: datetime) -> ColumnElement[bool]:
    """A pause a resumer may claim at `now`: waiting with none of its approvals pending, or
    left resuming by a worker whose lease ran out."""
    return or_(
        and_(_pauses.c.status == "waiting", ~exists(_PENDING)),
        and_(_pauses.c.status == "resuming", _pauses.c.lease_until < to_micros(now)),
    )


def _waiting_on(approval_ids: Sequence[str]) -> ColumnElement[bool]:
    """The pauses that wait, or waited, on any of these approvals."""
    linked = select(_links.c.pause_id).where(_links.c.approval_id.in_(list(approval_ids)))
    return _pauses.c.id.in_(linked)


def save_pause(connection: Connection, pause: NewPause) -> Pause:
    """Record `pause` unless recorded already, in the caller's transaction; it as stored."""
    row = {
        "id": pause.id,
        "origin": pause.origin,
        "thread_id": pause.thread_id,
        "agent": pause.agent,
        "status": "waiting",
        "data": canonical_json(pause.data).decode(),
        "attempts": 0,
        "created_at": to_micros(pause.at),
        "updated_at": to_micros(pause.at),
    }
    name = connection.dialect.name
    if connection.execute(_INSERT_PAUSE[name], row).rowcount == 1 and pause.approvals:
        links = [{"pause_id": pause.id, "approval_id": a} for a in pause.approvals]
        connection.execute(_INSERT_LINK[name], links)
    stored = _read_pause(connection, pause.id)
    assert stored is not None  # read in the transaction that wrote it
    return stored


def _read_pause(connection: Connection, pause_id: str, *, missing_ok: bool = False) -> Pause | None:
    row = connection.execute(select(_pauses).where(_pauses.c.id == pause_id)).first()
    if row is None:
        if missing_ok:
            return None
        raise LookupError(f"no pause {pause_id!r}")  # pragma: no cover - read after its write
    linked = connection.execute(
        select(_links.c.approval_id)
        .where(_links.c.pause_id == pause_id)
        .order_by(_links.c.approval_id)
    ).scalars()
    return Pause(
        **same_named(row, ("id", "origin", "thread_id", "agent", "status", "attempts")),
        data=json.loads(row.data),
        approvals=tuple(linked),
        created_at=from_micros(row.created_at),
        updated_at=from_micros(row.updated_at),
        lease_owner=row.lease_owner,
        lease_until=None if row.lease_until is None else from_micros(row.lease_until),
    )
