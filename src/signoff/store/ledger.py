"""The ledger that makes tool execution exactly-once: a call's idempotency key is inserted
before it runs (of two racing starters exactly one inserts), and its result recorded after —
each in the same transaction as the run's write that goes with it."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from sqlalchemy import bindparam, select, update
from sqlalchemy.engine import Connection

from signoff.errors import ClaimLost
from signoff.store import schema
from signoff.store.audit import append_audit
from signoff.store.lean import execute
from signoff.store.records import AuditRecord
from signoff.store.runner import Transactional
from signoff.store.runs import RunWrite, StoredEvent, write_run
from signoff.store.times import to_micros
from signoff.types import canonical_json

__all__ = ["LedgerEntry", "LedgerStore"]

_ledger = schema.ledger
_LEDGER_ENTRY = select(_ledger).where(_ledger.c.key == bindparam("k"))
_FINISH = (
    update(_ledger)
    .where(_ledger.c.key == bindparam("k"))
    .values(status="finished", result=bindparam("v_result"), finished_at=bindparam("v_finished_at"))
)
_FINISH_HELD = _FINISH.where(
    _ledger.c.owner == bindparam("o"),
    _ledger.c.fence == bindparam("f"),
    _ledger.c.status == "started",
)
_START = schema.inserts_if_new(_ledger)


@dataclass(frozen=True, kw_only=True)
class LedgerEntry:
    key: str
    status: Literal["started", "finished"]
    result: dict[str, Any] | None


class LedgerStore(Transactional, Protocol):
    """The ledger's half of the store."""

    async def ledger_start(
        self,
        key: str,
        *,
        run_id: str,
        call_id: str,
        tool: str,
        digest: str,
        at: datetime,
        then: Callable[[LedgerEntry | None], RunWrite | None] | None = None,
        audit: Sequence[AuditRecord] = (),
    ) -> tuple[LedgerEntry | None, list[StoredEvent]]:
        """Record that the call with this idempotency key is starting. Returns None when it is new,
        or the existing entry when it was started (or finished) before; and the events of the
        write `then` makes of that, in the same transaction — with `audit`, when it is new."""

        values = {
            "key": key,
            "run_id": run_id,
            "call_id": call_id,
            "tool": tool,
            "digest": digest,
            "status": "started",
            "started_at": to_micros(at),
        }

        def work(connection: Connection) -> tuple[LedgerEntry | None, list[StoredEvent]]:
            # Insert unless the key is there: of two racing starters exactly one inserts.
            started = execute(connection, _START[connection.dialect.name], values)
            entry = None
            if started.rowcount != 1:
                row = execute(connection, _LEDGER_ENTRY, {"k": key}).one()
                result = None if row.result is None else json.loads(row.result)
                entry = LedgerEntry(key=key, status=row.status, result=result)
            else:
                append_audit(connection, audit)
            write = None if then is None else then(entry)
            return entry, [] if write is None else write_run(connection, write)

        outcome: tuple[LedgerEntry | None, list[StoredEvent]] = await self.run(work)
        return outcome

    async def ledger_entry(self, key: str) -> LedgerEntry | None:
        """The entry with this idempotency key, if a call started under it."""

        def work(connection: Connection) -> LedgerEntry | None:
            row = execute(connection, _LEDGER_ENTRY, {"k": key}).first()
            if row is None:
                return None
            result = None if row.result is None else json.loads(row.result)
            return LedgerEntry(key=key, status=row.status, result=result)

        entry: LedgerEntry | None = await self.run(work, write=False)
        return entry

    async def ledger_finish(
        self,
        key: str,
        *,
        result: dict[str, Any],
        at: datetime,
        owner: str | None = None,
        fence: int | None = None,
        write: RunWrite | None = None,
        audit: Sequence[AuditRecord] = (),
        durable: bool = True,
    ) -> list[StoredEvent]:
        """Record the call's result, with `write` and `audit` in the same transaction —
        not waiting for the disk unless `durable` (`run`).

        With `fence`, the result is the holder's of a claim (`ledger_claim`): it is recorded
        only while `owner`'s claim `fence` still holds the started key; otherwise nothing is
        written and `ClaimLost` is raised — a holder whose claim was taken over never replaces
        the new holder's result. Without, the caller holds the key some other way (the
        runtime: its run's lease, which `write` checks)."""
        finish = {
            "k": key,
            "v_result": canonical_json(result).decode(),
            "v_finished_at": to_micros(at),
        }
        if fence is not None:
            finish |= {"o": owner, "f": fence}

        def work(connection: Connection) -> list[StoredEvent]:
            if fence is None:
                execute(connection, _FINISH, finish)
            elif execute(connection, _FINISH_HELD, finish).rowcount != 1:
                raise ClaimLost(
                    f"the ledger key {key!r} is no longer held by claim {fence} of {owner!r} "
                    "(its lease ran out and another worker took the key over, or it was "
                    "finished): this result is not recorded; the key keeps the new holder's"
                )
            append_audit(connection, audit)
            return [] if write is None else write_run(connection, write)

        # A claim's result alone is one statement: it needs no transaction around it — where
        # it waits for the disk anyway (one that need not is cheaper in one that says so).
        alone = durable and fence is not None and write is None and not audit
        stored: list[StoredEvent] = await self.run(work, durable=durable, snapshot=not alone)
        return stored
