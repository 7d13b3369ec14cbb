"""What is waiting now, counted in the database: the approvals pending by agent, tool and rule,
and the notifications not sent yet by sink — for the metrics every replica serves alike (a
replica's own memory knows only its own part). One grouped read each, in one transaction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Protocol

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from signoff.store import schema
from signoff.store.runner import Transactional

__all__ = ["OTHER", "GaugeStore", "Gauges"]

OTHER: Final = "other"
"""The label of the groups past the largest ones, summed."""

_approvals = schema.approvals
_outbox = schema.outbox
_COUNT = func.count().label("n")


@dataclass(frozen=True, kw_only=True)
class Gauges:
    """The store's counts now."""

    waiting: dict[tuple[str, str, str], int]
    """Pending approvals by (agent, tool, rule) — "" for none — the largest groups, and the
    rest summed under ("other", "other", "other")."""
    backlog: dict[str, int]
    """Notifications waiting to be sent (or tried again), by sink."""


class GaugeStore(Transactional, Protocol):
    """The gauges' half of the store."""

    async def gauges(self, *, groups: int = 200) -> Gauges:
        """The counts now, with at most `groups` (agent, tool, rule) groups of waiting
        approvals and one more for the rest."""
        by_group = (
            select(_approvals.c.agent, _approvals.c.tool, _approvals.c.rule, _COUNT)
            .where(_approvals.c.status == "pending")
            .group_by(_approvals.c.agent, _approvals.c.tool, _approvals.c.rule)
            .order_by(_COUNT.desc(), _approvals.c.tool)
        )
        by_sink = (
            select(_outbox.c.sink, _COUNT)
            .where(_outbox.c.status == "pending")
            .group_by(_outbox.c.sink)
        )

        def work(connection: Connection) -> Gauges:
            waiting: dict[tuple[str, str, str], int] = {}
            rest = 0
            for index, row in enumerate(connection.execute(by_group)):
                if index < groups:
                    waiting[(row.agent or "", row.tool, row.rule or "")] = row.n
                else:
                    rest += row.n
            if rest:
                waiting[(OTHER, OTHER, OTHER)] = rest
            backlog = {row.sink: row.n for row in connection.execute(by_sink)}
            return Gauges(waiting=waiting, backlog=backlog)

        found: Gauges = await self.run(work, write=False)
        return found
