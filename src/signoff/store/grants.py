"""Grants: the standing approvals an "approve always" leaves. Read in force by the hold that
judges calls (each use counted there), written by the decision that leaves them, listed and
revoked by operators."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Row, and_, bindparam, func, insert, select, update
from sqlalchemy.engine import Connection

from signoff.errors import NotFoundError
from signoff.store import schema
from signoff.store.audit import append_audit
from signoff.store.lean import execute
from signoff.store.records import AuditRecord, HoldPlan
from signoff.store.rows import known_ids, same_named
from signoff.store.runner import Transactional
from signoff.store.times import from_micros, to_micros
from signoff.types import Grant, canonical_json

__all__ = ["GrantStore", "count_uses", "in_force", "insert_grants"]

_grants = schema.grants
_INSERT_GRANT = insert(_grants)
_USE_GRANT = (
    update(_grants)
    .where(_grants.c.id == bindparam("g_id"), _grants.c.revoked_at.is_(None))
    .values(
        uses=_grants.c.uses + bindparam("times"),
        last_used_at=func.coalesce(bindparam("at"), _grants.c.last_used_at),
    )
)
_IN_FORCE = (
    select(_grants)
    .where(
        and_(
            _grants.c.revoked_at.is_(None),
            _grants.c.tool.in_(bindparam("tools", expanding=True)),
        )
    )
    .order_by(_grants.c.created_at)
)
_IN_FORCE_ONE = (
    select(_grants)
    .where(_grants.c.revoked_at.is_(None), _grants.c.tool == bindparam("tool"))
    .order_by(_grants.c.created_at)
)
"""`_IN_FORCE` for one tool: a list spelt out at each execution costs more than the query."""


class GrantStore(Transactional, Protocol):
    """The grants' half of the store."""

    async def list_grants(
        self,
        *,
        tool: str | None = None,
        tools: Sequence[str] | None = None,
        revoked: bool = False,
    ) -> list[Grant]:
        """Grants in force, oldest first (with `revoked`, the revoked ones too); for one tool,
        or any of `tools`."""
        query = select(_grants)
        if not revoked:
            query = query.where(_grants.c.revoked_at.is_(None))
        if tool is not None:
            query = query.where(_grants.c.tool == tool)
        if tools is not None:
            query = query.where(_grants.c.tool.in_(list(tools)))
        query = query.order_by(_grants.c.created_at)
        rows = await self.run(lambda c: c.execute(query).all(), write=False)
        return [_grant(row) for row in rows]

    async def get_grant(self, grant_id: str) -> Grant:
        """The grant with this id, in force or revoked; `NotFoundError` if there is none."""
        known_ids([grant_id], "grant")
        query = select(_grants).where(_grants.c.id == grant_id)
        row = await self.run(lambda c: c.execute(query).first(), write=False)
        if row is None:
            raise NotFoundError(f"no grant with id {grant_id!r}")
        return _grant(row)

    async def revoke_grant(
        self, grant_id: str, *, actor: str, at: datetime, audit: Sequence[AuditRecord] = ()
    ) -> None:
        known_ids([grant_id], "grant")
        revoke = (
            update(_grants)
            .where(and_(_grants.c.id == grant_id, _grants.c.revoked_at.is_(None)))
            .values(revoked_by=actor, revoked_at=to_micros(at))
        )

        def work(connection: Connection) -> None:
            if connection.execute(revoke).rowcount != 1:
                raise NotFoundError(f"no grant in force with id {grant_id!r}")
            append_audit(connection, audit)

        await self.run(work)


def in_force(connection: Connection, tools: Sequence[str]) -> list[Grant]:
    """The grants in force for any of `tools`, oldest first, in the caller's transaction."""
    rows = (
        execute(connection, _IN_FORCE_ONE, {"tool": tools[0]})
        if len(tools) == 1
        else execute(connection, _IN_FORCE, {"tools": list(tools)})
    )
    return [_grant(row) for row in rows]


def count_uses(connection: Connection, plan: HoldPlan) -> set[str]:
    """Count each grant's use by the plan's calls; return those found revoked (or gone)."""
    lost = set()
    at = None if plan.at is None else to_micros(plan.at)
    for grant_id, times in Counter(plan.grants_used).items():
        params = {"g_id": grant_id, "times": times, "at": at}
        if execute(connection, _USE_GRANT, params).rowcount != 1:
            lost.add(grant_id)
    return lost


def insert_grants(connection: Connection, grants: Sequence[Grant]) -> None:
    if grants:
        execute(connection, _INSERT_GRANT, [_grant_row(g) for g in grants])


_AS_STORED = (
    "id",
    "tool",
    "kind",
    "server",
    "agent",
    "scope",
    "subject",
    "requested_by",
    "args_digest",
    "rule",
    "rule_digest",
    "approval_id",
    "created_by",
    "uses",
)
"""The columns that hold a grant's fields as they are."""


def _grant_row(grant: Grant) -> dict[str, Any]:
    return same_named(grant, _AS_STORED) | {
        "roles": canonical_json(list(grant.roles)).decode(),
        "created_at": to_micros(grant.created_at),
    }


def _grant(row: Row[Any]) -> Grant:
    return Grant(
        **same_named(row, _AS_STORED),
        roles=tuple(json.loads(row.roles)),
        created_at=from_micros(row.created_at),
        last_used_at=None if row.last_used_at is None else from_micros(row.last_used_at),
        revoked_by=row.revoked_by,
        revoked_at=None if row.revoked_at is None else from_micros(row.revoked_at),
    )
