"""Other frameworks' runs: the calls of theirs the gate judged (by key, so judging one again
returns the same verdict and approval) and the ledger's claims for `Ledger.once` that write a
verdict to run with the claim — each a compare-and-set, so any number of processes on one
database agree. `ExternalStore` is the whole of the store's part for them, with the pauses their
integrations resume (`signoff.store.pauses`) and the threads they keep
(`signoff.store.histories`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from sqlalchemy import bindparam, or_, select, update
from sqlalchemy.engine import Connection

from signoff.store import schema
from signoff.store.histories import HistoryStore
from signoff.store.lean import execute
from signoff.store.pauses import PauseStore
from signoff.store.times import from_micros, to_micros
from signoff.types.fields import same_named

__all__ = [
    "ExternalRecord",
    "ExternalStore",
    "JudgedOtherwise",
    "LedgerClaim",
    "find_external",
    "insert_external",
]

_calls = schema.external_calls
_ledger = schema.ledger
_INSERT_CALL, _INSERT_LEDGER = schema.inserts_if_new(_calls), schema.inserts_if_new(_ledger)
_FIND_CALLS = select(_calls).where(_calls.c.key.in_(bindparam("keys", expanding=True)))
_FIND_CALL = select(_calls).where(_calls.c.key == bindparam("key"))
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


class ExternalStore(PauseStore, HistoryStore, Protocol):
    """The external runs' half of the store."""

    async def external_calls(self, keys: Sequence[str]) -> dict[str, ExternalRecord]:
        """The calls judged under these keys."""
        found: dict[str, ExternalRecord] = await self.run(
            lambda c: find_external(c, keys), write=False, snapshot=False
        )
        return found

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
        durable: bool = True,
    ) -> LedgerClaim:
        """Claim the key for `owner`: a new key is theirs; a started one whose lease ran out is
        theirs when `takeover` (an idempotent call re-run); otherwise what stands is returned.
        `judged` is the key's verdict to run the call, not written yet (`Gate.hold`'s
        ``unwritten``): it is written first, in the same transaction; `JudgedOtherwise` (nothing
        written) when the key holds another verdict. Not `durable`: the commit does not wait
        for the disk (an idempotent call's claim, harmless to lose)."""
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

        claim: LedgerClaim = await self.run(work, durable=durable)
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


def _record(row: Any) -> ExternalRecord:
    return ExternalRecord(
        **same_named(row, ("key", "origin", "thread_id", "call_id", "agent", "digest", "kind")),
        **same_named(row, ("rule", "reason", "approval_id")),
        at=from_micros(row.at),
    )
