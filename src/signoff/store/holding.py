"""Holding a batch of calls: the grants in force for their tools and what was judged before
under their keys are read, the caller's plan judges the calls by them at the database's time, and
what it returns — the approvals of the held calls, the records of other frameworks' calls, the
audit entries of every verdict, the run's step — is written in that same transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Protocol

from sqlalchemy.engine import Connection

from signoff.errors import ConflictError
from signoff.store.approvals import approvals_by_id, insert_approvals
from signoff.store.audit import append_audit
from signoff.store.decisions import read_clock
from signoff.store.external import ExternalRecord, find_external, insert_external
from signoff.store.grants import count_uses, in_force
from signoff.store.log import StoredEvent
from signoff.store.records import HoldPlan
from signoff.store.runner import Transactional
from signoff.store.runs import write_run
from signoff.types import Approval, Grant

__all__ = ["HoldStore"]

Judged = dict[str, tuple[ExternalRecord, Approval | None]]
"""What was judged before under each key: the record, and the approval it asked for if any."""


class HoldStore(Transactional, Protocol):
    """The hold's half of the store."""

    async def hold(
        self,
        tools: Collection[str],
        plan: Callable[[list[Grant], Judged, datetime], HoldPlan],
        *,
        keys: Sequence[str] = (),
        durable: bool = True,
    ) -> tuple[HoldPlan, list[StoredEvent]]:
        """Read the grants in force for `tools` and what was judged before under `keys` (calls
        of other frameworks' runs, with their approvals), let `plan` judge the calls by them at
        the database's time, and write the approvals, records, audit entries and run write it
        returns — one transaction. Not `durable`: the commit does not wait for the disk
        (`run`) if the plan says it may be lost (`HoldPlan.lossy`); when it says not, the calls
        are judged again in a transaction that waits."""
        names = sorted(tools)

        def work(connection: Connection) -> tuple[HoldPlan, list[StoredEvent]]:
            at = read_clock(connection)
            found = _judged_before(connection, keys)
            revoked: set[str] = set()
            while True:
                grants = [g for g in in_force(connection, names) if g.id not in revoked]
                decided = plan(grants, found, at)
                lost = count_uses(connection, decided)
                if not lost:
                    break
                # Revoked while the calls were judged: judged again without it, so a revoke
                # that returned lets nothing more through.
                revoked |= lost
            if not durable and not decided.lossy:
                raise _NeedsDisk
            insert_approvals(connection, decided.approvals)
            if not insert_external(connection, decided.external):
                raise _JudgedMeanwhile
            append_audit(connection, decided.audit)
            stored = [] if decided.write is None else write_run(connection, decided.write)
            return decided, stored

        for _ in range(10):
            try:
                result: tuple[HoldPlan, list[StoredEvent]] = await self.run(work, durable=durable)
            except _JudgedMeanwhile:
                continue
            except _NeedsDisk:
                durable = True
                continue
            return result
        raise ConflictError(f"the calls {list(keys)!r} kept being judged by others meanwhile")

    async def external_verdicts(self, keys: Sequence[str]) -> Judged:
        """What was judged before under `keys`, with the approvals as they stand (a read)."""
        if not keys:
            return {}
        # The approvals a record names were written with it: read after it, they are there.
        found: Judged = await self.run(
            lambda c: _judged_before(c, keys), write=False, snapshot=False
        )
        return found


class _JudgedMeanwhile(Exception):
    """A call of the batch was judged by another transaction meanwhile: roll back and judge the
    calls again, with its record."""


class _NeedsDisk(Exception):
    """A hold asked not to wait for the disk judged something that must: roll back and judge
    the calls again in a transaction that waits."""


def _judged_before(connection: Connection, keys: Sequence[str]) -> Judged:
    records = find_external(connection, keys)
    approvals = approvals_by_id(
        connection, [r.approval_id for r in records.values() if r.approval_id is not None]
    )
    return {
        key: (record, None if record.approval_id is None else approvals.get(record.approval_id))
        for key, record in records.items()
    }
