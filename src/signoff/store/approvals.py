"""Approvals as the store keeps them: created with their audit entries, read by id in the order
asked, listed newest first by the filters of the inbox, and found when they come due (to expire
or to escalate). Deciding them is `signoff.store.decisions`; holding new ones with the verdicts
that asked for them is `signoff.store.holding`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import and_, bindparam, func, insert, select
from sqlalchemy.engine import Connection

from signoff.errors import NotFoundError
from signoff.names import assignee_key
from signoff.store import schema
from signoff.store.audit import append_audit
from signoff.store.lean import execute
from signoff.store.records import AuditRecord
from signoff.store.rows import approval_from_row, approval_row, known_ids
from signoff.store.runner import Transactional
from signoff.store.times import to_micros
from signoff.types import Approval

__all__ = ["ApprovalStore", "approvals_by_id", "insert_approvals", "read_approvals"]

# Statements of the hot paths, built once: building a statement costs more than running it.
_approvals = schema.approvals
_INSERT_APPROVAL = insert(_approvals)
_SELECT_APPROVALS = select(_approvals).where(_approvals.c.id.in_(bindparam("ids", expanding=True)))


class ApprovalStore(Transactional, Protocol):
    """The approvals' half of the store."""

    async def create_approvals(
        self, approvals: Sequence[Approval], *, audit: Sequence[AuditRecord] = ()
    ) -> None:
        def work(connection: Connection) -> None:
            insert_approvals(connection, approvals)
            append_audit(connection, audit)

        await self.run(work)

    async def get_approval(self, approval_id: str) -> Approval:
        [approval] = await self.get_approvals([approval_id])
        return approval

    async def get_approvals(self, approval_ids: Sequence[str]) -> list[Approval]:
        ids = known_ids(approval_ids, "approval")
        found: list[Approval] = await self.run(lambda c: read_approvals(c, ids), write=False)
        return found

    async def list_approvals(
        self,
        *,
        status: str | None = None,
        run_id: str | None = None,
        batch_id: str | None = None,
        agent: str | None = None,
        tool: str | None = None,
        origin: str | None = None,
        thread_id: str | None = None,
        assigned_to: Collection[str] | None = None,
        before: str | None = None,
        limit: int = 100,
    ) -> list[Approval]:
        """Newest first; `before` is the id of the last item of the previous page;
        `assigned_to` keeps those assigned to any of the names given (a principal, however
        the name is spelt: `assignee_key`; a ``role:NAME``)."""
        table = schema.approvals
        query = select(table)
        for column, value in (
            (table.c.status, status),
            (table.c.run_id, run_id),
            (table.c.batch_id, batch_id),
            (table.c.agent, agent),
            (table.c.tool, tool),
            (table.c.origin, origin),
            (table.c.thread_id, thread_id),
        ):
            if value is not None:
                query = query.where(column == value)
        if assigned_to is not None:
            query = query.where(table.c.assigned_to.in_([assignee_key(n) for n in assigned_to]))
        if before is not None:
            query = query.where(table.c.id < before)
        query = query.order_by(table.c.id.desc()).limit(limit)
        rows = await self.run(lambda c: c.execute(query).all(), write=False)
        return [approval_from_row(row) for row in rows]

    async def find_approvals(self, short_id: str, *, limit: int = 10) -> list[Approval]:
        """The approvals whose id ends with `short_id`, newest first, at most `limit`: what a
        short id (as `signoff inbox` shows) names. It reads the whole table: for a person's
        lookup, not for a loop."""
        table = schema.approvals
        # An exact comparison of the id's tail, not LIKE: SQLite's LIKE ignores case, and the
        # short id has no wildcards to escape this way.
        tail = func.substr(table.c.id, func.length(table.c.id) - len(short_id) + 1)
        query = select(table).where(tail == short_id).order_by(table.c.id.desc()).limit(limit)
        rows = await self.run(lambda c: c.execute(query).all(), write=False)
        return [approval_from_row(row) for row in rows]

    async def due_for_expiry(self, now: datetime, *, limit: int = 500) -> list[Approval]:
        """The pending approvals whose time is up, longest due first."""
        return await self._due(schema.approvals.c.expires_at, now, limit)

    async def due_for_escalation(self, now: datetime, *, limit: int = 500) -> list[Approval]:
        """The pending approvals whose next escalation step has come, longest due first."""
        return await self._due(schema.approvals.c.next_escalation_at, now, limit)

    async def _due(self, when: Any, now: datetime, limit: int) -> list[Approval]:
        table = schema.approvals
        query = (
            select(table)
            .where(and_(table.c.status == "pending", when <= to_micros(now)))
            .order_by(when)
            .limit(limit)
        )
        rows = await self.run(lambda c: c.execute(query).all(), write=False)
        return [approval_from_row(row) for row in rows]


def insert_approvals(connection: Connection, approvals: Sequence[Approval]) -> None:
    """Insert new approvals inside the caller's transaction."""
    if approvals:
        execute(connection, _INSERT_APPROVAL, [approval_row(a) for a in approvals])


def approvals_by_id(connection: Connection, ids: Collection[str]) -> dict[str, Approval]:
    """Those of the approvals named that exist, by id, inside the caller's transaction."""
    if not ids:
        return {}
    rows = execute(connection, _SELECT_APPROVALS, {"ids": list(ids)}).all()
    return {row.id: approval_from_row(row) for row in rows}


def read_approvals(connection: Connection, ids: Sequence[str]) -> list[Approval]:
    """The approvals named, in the order named, inside the caller's transaction; raises
    `NotFoundError` naming every id not found."""
    found = approvals_by_id(connection, ids)
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFoundError(f"no approval with id {', '.join(map(repr, missing))}")
    return [found[i] for i in ids]
