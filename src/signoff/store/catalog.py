"""The agents and tools that approvals name — what waits and what has waited, whoever held it
(signoff's runs, another framework's app, the MCP gateway) — for the inbox's filters.

Read by a loose index scan: each distinct name is one seek of the ``(status, agent, id)`` or
``(status, tool, id)`` index, after the name before it, so the cost is the number of names and
never the number of approvals. SQLite and PostgreSQL both walk it with a recursive query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, get_args

from sqlalchemy import Integer, Select, Text, bindparam, literal, select, union_all
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from signoff.store import schema
from signoff.store.runner import Transactional
from signoff.types import ApprovalStatus

__all__ = ["Catalog", "CatalogStore"]

_approvals = schema.approvals


@dataclass(frozen=True, kw_only=True)
class Catalog:
    """The names approvals have, each once, in order."""

    agents: list[str]
    """The agents' paths (a call of no agent, as the MCP gateway's, names none)."""
    tools: list[str]
    """The tools' names (or resources' and prompts')."""


def _walk(column: ColumnElement[Any], status: str) -> Select[Any]:
    """The distinct values of `column` among the approvals of `status`, at most ``:limit``."""

    def first(after: ColumnElement[Any] | None) -> ColumnElement[Any]:
        where = [_approvals.c.status == status, column.is_not(None)]
        if after is not None:
            where.append(column > after)
        return select(column).where(*where).order_by(column).limit(1).scalar_subquery()

    name = f"{column.key}_{status}"
    start = select(first(None).label("name"), literal(1).label("n")).cte(name, recursive=True)
    limit = bindparam("limit", type_=Integer())
    step = select(first(start.c.name), start.c.n + 1).where(
        start.c.name.is_not(None), start.c.n < limit
    )
    walk = start.union_all(step)
    kind = literal(column.key, Text()).label("kind")
    return select(kind, walk.c.name).where(walk.c.name.is_not(None))


# Built once: building it costs more than running it.
_CATALOG = union_all(
    *(
        _walk(column, status)
        for column in (_approvals.c.agent, _approvals.c.tool)
        for status in get_args(ApprovalStatus)
    )
)


class CatalogStore(Transactional, Protocol):
    """The catalog's half of the store."""

    async def catalog(self, *, limit: int = 200) -> Catalog:
        """The agents and the tools of the approvals of every status, at most `limit` of each
        (the first in order)."""

        def work(connection: Connection) -> Catalog:
            found: dict[str, set[str]] = {"agent": set(), "tool": set()}
            for row in connection.execute(_CATALOG, {"limit": limit}):
                found[row.kind].add(row.name)
            return Catalog(
                agents=sorted(found["agent"])[:limit], tools=sorted(found["tool"])[:limit]
            )

        catalog: Catalog = await self.run(work, write=False)
        return catalog
