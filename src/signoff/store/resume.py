"""Resuming a run: the claim and everything the next step needs, read in one transaction — the
open turn, the approvals its last pause waited on, the approvals its calls asked for and the
calls already started since the turn began — so a worker resumes with one round trip.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy import and_, bindparam, select
from sqlalchemy.engine import Connection

from signoff.errors import ConflictError, NotFoundError
from signoff.store import schema
from signoff.store.approvals import read_approvals
from signoff.store.lean import execute
from signoff.store.log import OpenTurn, read_turn
from signoff.store.rows import approval_from_row
from signoff.store.runner import Transactional
from signoff.store.runs import ResumedTurn, claim, read_run
from signoff.store.times import to_micros
from signoff.types import Approval

__all__ = ["ResumeStore"]

_approvals = schema.approvals
# A turn's own approvals: ids begin with their millisecond, so `lowest` makes it an index range.
_TURN_APPROVALS = (
    select(_approvals)
    .where(
        and_(
            _approvals.c.run_id == bindparam("root"),
            _approvals.c.id >= bindparam("lowest"),
            _approvals.c.agent == bindparam("path"),
            _approvals.c.requested_at >= bindparam("since"),
        )
    )
    .order_by(_approvals.c.id)
)
_TURN_LEDGER = select(schema.ledger.c.key).where(
    and_(
        schema.ledger.c.run_id == bindparam("rid"),
        schema.ledger.c.started_at >= bindparam("since"),
    )
)
_SUBRUN = select(schema.subruns).where(schema.subruns.c.run_id == bindparam("rid"))


class ResumeStore(Transactional, Protocol):
    """The resume's half of the store."""

    async def resume_turn(
        self,
        run_id: str,
        *,
        agent: str,
        path: str,
        root_id: str,
        owner: str,
        now: datetime,
        lease: timedelta,
    ) -> ResumedTurn | None:
        """Claim the run for `owner` and read what resuming it needs, in one transaction: its
        open turn, the approvals it waits or waited on, the calls already started. None when
        the run is not paused and its lease has not run out.

        Raises `NotFoundError` for no such run, `ConflictError` when it is another agent's, or a
        sub-agent's run resumed as a root (`root_id` is not its own)."""

        def work(connection: Connection) -> ResumedTurn | None:
            as_root = root_id == run_id
            claimed = claim(
                connection, run_id, owner=owner, now=now, lease=lease, agent=agent, root=as_root
            )
            if claimed is None:
                _say_why(connection, run_id, agent=agent, as_root=as_root)
                return None
            if not as_root:
                link = execute(connection, _SUBRUN, {"rid": run_id}).one()
                claimed = replace(claimed, parent_id=link.parent_id, parent_key=link.parent_key)
            turn = read_turn(connection, run_id)
            own, begun = _since_turn_began(connection, turn, run_id, root_id=root_id, path=path)
            # What the last pause waited on: mostly the run's own, read already.
            known = {a.id: a for a in own}
            missing = [i for i in turn.paused_on if i not in known]
            known |= {a.id: a for a in read_approvals(connection, missing)}
            listed = [known[i] for i in turn.paused_on]
            return ResumedTurn(record=claimed, turn=turn, listed=listed, own=own, begun=begun)

        # Losing the claim in a crash is harmless (the run is claimable again), and the worker's
        # next write — durable, before any tool runs — makes it durable anyway.
        result: ResumedTurn | None = await self.run(work, durable=False)
        return result


def _say_why(connection: Connection, run_id: str, *, agent: str, as_root: bool) -> None:
    """Raise why the run could not be claimed, when it is not only "not now"."""
    record = read_run(connection, run_id)
    if record is None:
        raise NotFoundError(f"no run with id {run_id!r}")
    if record.parent_id is not None and as_root:
        raise ConflictError(
            f"run {run_id!r} is a sub-agent's run; resume its root run, which resumes it"
        )
    if record.agent != agent:
        raise ConflictError(f"run {run_id!r} belongs to agent {record.agent!r}, not {agent!r}")


def _since_turn_began(
    connection: Connection, turn: OpenTurn, run_id: str, *, root_id: str, path: str
) -> tuple[list[Approval], set[str]]:
    """The approvals requested for the agent's calls since the turn began, and the ledger keys
    of the calls started since (none when the turn has made no calls)."""
    if turn.started_at is None:
        return [], set()
    since = to_micros(turn.started_at)
    window = {"root": root_id, "lowest": f"{since // 1000:012x}", "path": path}
    own = [
        approval_from_row(row)
        for row in execute(connection, _TURN_APPROVALS, window | {"since": since})
    ]
    begun = set(execute(connection, _TURN_LEDGER, {"rid": run_id, "since": since}).scalars())
    return own, begun
