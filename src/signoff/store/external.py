"""Other frameworks' runs: the calls of theirs the gate judged (by key, so judging one again
returns the same verdict and approval), the pauses their integrations resume once every held call
is decided, and the ledger's claims for `Ledger.once` — each a compare-and-set, so any number of
processes on one database agree."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import and_, bindparam, exists, func, or_, select, true, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from signoff.store import schema
from signoff.store.lean import execute
from signoff.store.times import from_micros, to_micros
from signoff.types import canonical_json

__all__ = [
    "ExternalRecord",
    "ExternalStore",
    "JudgedOtherwise",
    "LedgerClaim",
    "NewPause",
    "Pause",
    "PauseStatus",
    "find_external",
    "insert_external",
]

PauseStatus = Literal["waiting", "resuming", "done"]

_calls = schema.external_calls
_pauses = schema.pauses
_links = schema.pause_approvals
_ledger = schema.ledger
_history = schema.external_history


def _insert_ignoring(table: Any) -> dict[str, Any]:
    return {
        name: dialect.insert(table).on_conflict_do_nothing()
        for name, dialect in (("postgresql", postgresql), ("sqlite", sqlite))
    }


_INSERT_CALL = _insert_ignoring(_calls)
_INSERT_PAUSE = _insert_ignoring(_pauses)
_INSERT_LINK = _insert_ignoring(_links)
_INSERT_LEDGER = _insert_ignoring(_ledger)
_INSERT_HISTORY = _insert_ignoring(_history)
_FIND_CALLS = select(_calls).where(_calls.c.key.in_(bindparam("keys", expanding=True)))
_FIND_CALL = select(_calls).where(_calls.c.key == bindparam("key"))
_THREAD = (_history.c.origin == bindparam("o"), _history.c.thread_id == bindparam("t"))
_HISTORY = select(_history.c.data).where(*_THREAD).order_by(_history.c.seq)
_LENGTH = select(func.count()).where(*_THREAD)
_LEDGER_ENTRY = select(_ledger).where(_ledger.c.key == bindparam("k"))
_LEDGER_FENCE = select(_ledger.c.fence).where(_ledger.c.key == bindparam("k"))
_LEDGER_TAKE = (
    update(_ledger)
    .where(
        _ledger.c.key == bindparam("k"),
        _ledger.c.status == "started",
        or_(_ledger.c.lease_until.is_(None), _ledger.c.lease_until < bindparam("now")),
    )
    .values(
        owner=bindparam("v_owner"),
        lease_until=bindparam("v_until"),
        started_at=bindparam("now"),
        fence=_ledger.c.fence + 1,
    )
)
"""A started key whose lease ran out, taken over (an idempotent call run again)."""
_PENDING = (
    select(_links.c.approval_id)
    .join(schema.approvals, schema.approvals.c.id == _links.c.approval_id)
    .where(_links.c.pause_id == _pauses.c.id, schema.approvals.c.status == "pending")
)
"""A pause's approvals still pending (correlated to the pause of the enclosing statement)."""


@dataclass(frozen=True, kw_only=True)
class ExternalRecord:
    """How the gate judged one call of another framework's run, kept under the call's key."""

    key: str
    origin: str
    thread_id: str
    call_id: str
    agent: str | None
    digest: str
    """The digest of the call as judged: the same call id with other arguments is not it."""
    kind: Literal["run", "block", "hold"]
    rule: str | None
    reason: str
    approval_id: str | None
    at: datetime


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
    """A pause to record: on its own (`ExternalStore.save_pause`), or with the entries the run
    appends to its thread as it pauses (`ExternalStore.append_paused`)."""

    id: str
    origin: str
    thread_id: str
    agent: str | None
    data: dict[str, Any]
    approvals: Sequence[str]
    at: datetime


@dataclass(frozen=True, kw_only=True)
class LedgerClaim:
    """What claiming a ledger key found: `claimed` (the caller runs the call now), or the entry
    another caller made — finished with its result, or started by `owner` until `lease_until`."""

    claimed: bool
    status: Literal["started", "finished"]
    result: dict[str, Any] | None
    owner: str | None
    lease_until: datetime | None
    fence: int = 0
    """Which claim of the key stands (1 for the first, one more at each takeover): the holder
    gives it back with each renewal and with its result, which count only while it stands."""


class JudgedOtherwise(Exception):
    """A verdict to write with a claim found its key judged otherwise (another process judged
    it first, under another policy or of other arguments): that `record` stands."""

    def __init__(self, record: ExternalRecord) -> None:
        super().__init__(f"the call under {record.key!r} was judged {record.kind!r} before")
        self.record = record


def find_external(connection: Connection, keys: Sequence[str]) -> dict[str, ExternalRecord]:
    """The records of the keys judged before, in the caller's transaction."""
    if not keys:
        return {}
    rows = (
        execute(connection, _FIND_CALL, {"key": keys[0]}).all()
        if len(keys) == 1
        else execute(connection, _FIND_CALLS, {"keys": list(keys)}).all()
    )
    return {row.key: _record(row) for row in rows}


def insert_external(connection: Connection, records: Sequence[ExternalRecord]) -> bool:
    """Insert the records, in the caller's transaction; False when another transaction judged
    one of these keys first (the caller rolls back and judges again)."""
    insert = _INSERT_CALL[connection.dialect.name]
    for record in records:
        row = {
            "key": record.key,
            "origin": record.origin,
            "thread_id": record.thread_id,
            "call_id": record.call_id,
            "agent": record.agent,
            "digest": record.digest,
            "kind": record.kind,
            "rule": record.rule,
            "reason": record.reason,
            "approval_id": record.approval_id,
            "at": to_micros(record.at),
        }
        if execute(connection, insert, row).rowcount != 1:
            return False
    return True


class ExternalStore:
    """The external runs' half of the store; `SQLStore` provides `run`."""

    run: Callable[..., Awaitable[Any]]

    async def external_calls(self, keys: Sequence[str]) -> dict[str, ExternalRecord]:
        """The calls judged under these keys."""
        found: dict[str, ExternalRecord] = await self.run(
            lambda c: find_external(c, keys), write=False
        )
        return found

    # -- pauses ----------------------------------------------------------------------------

    async def save_pause(self, pause: NewPause) -> Pause:
        """Record the pause unless it is recorded already (the same run paused on the same
        calls, by a re-run or another process); return it as stored."""
        saved: Pause = await self.run(lambda c: _save_pause(c, pause))
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
            .where(
                _pauses.c.origin == origin,
                or_(
                    and_(_pauses.c.status == "waiting", ~exists(_PENDING)),
                    and_(_pauses.c.status == "resuming", _pauses.c.lease_until < to_micros(now)),
                ),
            )
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
            .where(
                _pauses.c.id == pause_id,
                or_(
                    and_(_pauses.c.status == "waiting", ~exists(_PENDING)),
                    and_(_pauses.c.status == "resuming", _pauses.c.lease_until < to_micros(now)),
                ),
            )
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
        linked = select(_links.c.pause_id).where(_links.c.approval_id.in_(list(approval_ids)))
        query = (
            select(_pauses.c.id)
            .where(_pauses.c.id.in_(linked), true() if done else _pauses.c.status != "done")
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
        if not approval_ids:
            return
        linked = select(_links.c.pause_id).where(_links.c.approval_id.in_(list(approval_ids)))
        query = (
            update(_pauses)
            .where(_pauses.c.id.in_(linked), _pauses.c.status != "done")
            .values(status="done", lease_owner=None, lease_until=None, updated_at=to_micros(now))
        )
        await self.run(lambda c: c.execute(query))

    async def finish_pause(self, pause_id: str, *, now: datetime) -> None:
        """Mark the pause done whoever holds it: its run went on past it (resumed by its own
        code, or by the integration's re-entered hook)."""
        query = (
            update(_pauses)
            .where(_pauses.c.id == pause_id, _pauses.c.status != "done")
            .values(status="done", lease_owner=None, lease_until=None, updated_at=to_micros(now))
        )
        await self.run(lambda c: c.execute(query))

    # -- histories the framework leaves to the app -------------------------------------------

    async def history(self, origin: str, thread_id: str) -> list[str]:
        """The items appended to the thread's history, in order."""
        thread = {"o": origin, "t": thread_id}
        items: list[str] = await self.run(
            lambda c: list(execute(c, _HISTORY, thread).scalars()), write=False
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
            return _save_pause(connection, pause)

        saved: Pause | None = await self.run(work)
        return saved

    # -- the ledger's claims ---------------------------------------------------------------

    async def ledger_claim(
        self,
        key: str,
        *,
        owner: str,
        now: datetime,
        lease: timedelta,
        takeover: bool,
        tool: str = "",
        digest: str = "",
        run_id: str = "external",
        judged: ExternalRecord | None = None,
    ) -> LedgerClaim:
        """Claim the key for `owner`: a new key is theirs; a started one whose lease ran out is
        theirs when `takeover` (an idempotent call re-run); otherwise what stands is returned.
        `judged` is the key's verdict to run the call, not written yet (`Gate.hold`'s
        ``unwritten``): it is written first, in the same transaction; `JudgedOtherwise` (nothing
        written) when the key holds another verdict."""
        until = to_micros(now + lease)
        row = {
            "key": key,
            "run_id": run_id,
            "call_id": key,
            "tool": tool,
            "digest": digest,
            "status": "started",
            "started_at": to_micros(now),
            "owner": owner,
            "lease_until": until,
            "fence": 1,
        }
        take = {"k": key, "now": to_micros(now), "v_owner": owner, "v_until": until}

        def work(connection: Connection) -> LedgerClaim:
            if judged is not None and not insert_external(connection, [judged]):
                stored = find_external(connection, [key])[key]
                if stored.kind != "run" or stored.digest != judged.digest:
                    raise JudgedOtherwise(stored)
            if execute(connection, _INSERT_LEDGER[connection.dialect.name], row).rowcount == 1:
                return LedgerClaim(claimed=True, status="started", result=None, owner=owner,
                                   lease_until=from_micros(until), fence=1)  # fmt: skip
            found = execute(connection, _LEDGER_ENTRY, {"k": key}).one()
            if (
                found.status == "started"
                and takeover
                and execute(connection, _LEDGER_TAKE, take).rowcount == 1
            ):
                # Read again, not counted from `found`: another taker may have moved it since.
                taken = execute(connection, _LEDGER_FENCE, {"k": key}).scalar()
                return LedgerClaim(claimed=True, status="started", result=None, owner=owner,
                                   lease_until=from_micros(until), fence=taken)  # fmt: skip
            return LedgerClaim(
                claimed=False,
                status=found.status,
                result=None if found.result is None else json.loads(found.result),
                owner=found.owner,
                lease_until=None if found.lease_until is None else from_micros(found.lease_until),
                fence=found.fence,
            )

        claim: LedgerClaim = await self.run(work)
        return claim

    async def ledger_renew(self, key: str, *, owner: str, fence: int, until: datetime) -> bool:
        """Move the end of `owner`'s claim `fence` on a started key to `until`; False (nothing
        changed) when that claim no longer holds the key — it was taken over, or finished."""
        query = (
            update(_ledger)
            .where(
                _ledger.c.key == key,
                _ledger.c.owner == owner,
                _ledger.c.fence == fence,
                _ledger.c.status == "started",
            )
            .values(lease_until=to_micros(until))
        )
        renewed: bool = await self.run(lambda c: c.execute(query).rowcount == 1, durable=False)
        return renewed


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


def _save_pause(connection: Connection, pause: NewPause) -> Pause:
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


def _record(row: Any) -> ExternalRecord:
    return ExternalRecord(
        key=row.key,
        origin=row.origin,
        thread_id=row.thread_id,
        call_id=row.call_id,
        agent=row.agent,
        digest=row.digest,
        kind=row.kind,
        rule=row.rule,
        reason=row.reason,
        approval_id=row.approval_id,
        at=from_micros(row.at),
    )


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
        id=row.id,
        origin=row.origin,
        thread_id=row.thread_id,
        agent=row.agent,
        status=row.status,
        data=json.loads(row.data),
        approvals=tuple(linked),
        attempts=row.attempts,
        created_at=from_micros(row.created_at),
        updated_at=from_micros(row.updated_at),
        lease_owner=row.lease_owner,
        lease_until=None if row.lease_until is None else from_micros(row.lease_until),
    )
