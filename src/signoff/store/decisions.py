"""Group commit of concurrent decisions: whatever is queued goes in one transaction.

A decision is short work — read an approval, judge it, write it back with its audit entry — and
what it costs is the commit: SQLite's durable commit, PostgreSQL's audit head held locked until
the commit is on disk. Decided one transaction each, fifty people deciding at once wait in line
for fifty commits. Here the decisions that arrive while one group commits wait together for the
next, and go as one transaction:

- one ``SELECT … FOR UPDATE`` of every approval they name, locked in id order (so two groups, on
  any replicas, never deadlock), and one read of the database's clock and of the policy saved
  last (`Moment`): what every decision of the group is judged by;
- each decision judged in turn, by its own `plan`, against what the decisions before it in the
  group left: of two people deciding the same approval, the second sees the first's decision,
  exactly as if they had committed one after the other;
- all their writes together: one ``UPDATE`` of many rows, the grants, the runs' ``decision``
  events, one append to the audit chain (its head locked once for the group, the entries chained
  in the group's order), one ``NOTIFY``;
- one commit.

Each decision keeps its own outcome. One whose plan raises — a conflict, a refused decision, an
unknown id — fails alone and writes nothing; the others commit. Should the database refuse the
group's writes (it should not: every row written is locked), each decision is taken again in a
transaction of its own, so that one bad write cannot fail its neighbours.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import bindparam, text, update
from sqlalchemy.engine import Connection

from signoff.errors import ConflictError, NotFoundError
from signoff.store import schema
from signoff.store.audit import append_audit
from signoff.store.grants import insert_grants
from signoff.store.lean import execute
from signoff.store.log import append_events_to_runs
from signoff.store.records import AuditRecord, DecisionPlan, Moment
from signoff.store.rows import approval_from_row, decision_values
from signoff.types import Approval, Grant, decision_to_dict

__all__ = [
    "CHANNEL",
    "MAX_GROUP",
    "DecisionGroups",
    "Plan",
    "read_clock",
    "read_moment",
    "write_decisions",
]

Plan = Callable[[list[Approval], Moment], DecisionPlan]

MAX_GROUP = 256
"""Decisions in one transaction at most: a longer queue is committed in several."""

CHANNEL = "signoff_decisions"

_approvals = schema.approvals
# One statement text whatever the number of ids (no expanding IN to render again for each
# count): an array on PostgreSQL, a JSON array on SQLite. Locked in id order.
# On PostgreSQL the database's clock and the policy saved last come with the rows locked: one
# round trip for all three.
_SAVED = (
    "EXISTS (SELECT 1 FROM policy_versions p WHERE p.version = approvals.policy) AS signoff_saved"
)
_LOCK_PG = text(
    f"SELECT *, {_SAVED}, clock_timestamp() AS signoff_at, (SELECT version FROM "
    "policy_versions ORDER BY created_at DESC, version LIMIT 1) AS signoff_policy "
    "FROM approvals WHERE id = ANY(CAST(:ids AS text[])) ORDER BY id FOR UPDATE"
)
_LOCK_SQLITE = text(
    f"SELECT *, {_SAVED} FROM approvals WHERE id IN (SELECT value FROM json_each(:ids)) ORDER BY id"
)
_UPDATE = update(_approvals).where(
    _approvals.c.id == bindparam("b_id"),
    _approvals.c.version == bindparam("b_version"),
    _approvals.c.status == "pending",
)
_CLOCK = text("SELECT clock_timestamp()")
# The database's clock and the policy saved last, in one round trip.
_MOMENT_PG = text(
    "SELECT clock_timestamp() AS at, (SELECT version FROM policy_versions "
    "ORDER BY created_at DESC, version LIMIT 1) AS policy"
)
_POLICY_SQLITE = text(
    "SELECT version FROM policy_versions ORDER BY created_at DESC, version LIMIT 1"
)
_NOTIFY = text(f"SELECT pg_notify('{CHANNEL}', id) FROM unnest(CAST(:ids AS text[])) AS id")


@dataclass(eq=False)
class _Waiting:
    ids: list[str]
    plan: Plan
    future: asyncio.Future[DecisionPlan]


@dataclass
class DecisionGroups:
    """The queue of one store's decisions, and the task that commits it group by group."""

    run: Callable[[Callable[[Connection], Any]], Awaitable[Any]]
    """The store's write transaction."""
    limit: int = MAX_GROUP
    _queue: list[_Waiting] = field(default_factory=list)
    _committer: asyncio.Task[None] | None = None

    async def decide(self, ids: list[str], plan: Plan) -> DecisionPlan:
        """Take the decision `plan` makes of the approvals `ids`, in the next group."""
        loop = asyncio.get_running_loop()
        if self._committer is not None and self._committer.get_loop() is not loop:
            # A store used from a second event loop meanwhile: its decisions go on their own.
            [outcome] = await self.run(lambda c: _take(c, [(ids, plan)]))
            return _result(outcome)
        waiting = _Waiting(ids, plan, loop.create_future())
        self._queue.append(waiting)
        if self._committer is None:
            self._committer = loop.create_task(self._commit_queue())
        return await waiting.future

    async def _commit_queue(self) -> None:
        try:
            while self._queue:
                group, self._queue = self._queue[: self.limit], self._queue[self.limit :]
                # A caller gone before its group began has nothing decided for it.
                group = [w for w in group if not w.future.done()]
                if group:
                    await self._commit(group)
        finally:
            self._committer = None
            for waiting in self._queue:  # only when cancelled, with the loop closing
                waiting.future.cancel()
            self._queue = []

    async def _commit(self, group: list[_Waiting]) -> None:
        try:
            outcomes = await self.run(lambda c: _take(c, [(w.ids, w.plan) for w in group]))
        except asyncio.CancelledError:
            for waiting in group:
                waiting.future.cancel()
            raise
        except Exception as exc:
            if len(group) == 1:
                _settle(group[0].future, exc)
                return
            for waiting in group:  # each alone: only what failed fails
                await self._commit([waiting])
            return
        for waiting, outcome in zip(group, outcomes, strict=True):
            _settle(waiting.future, outcome)


def _settle(future: asyncio.Future[DecisionPlan], outcome: DecisionPlan | BaseException) -> None:
    if future.done():  # the caller stopped waiting; what was committed stays committed
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


def _result(outcome: DecisionPlan | Exception) -> DecisionPlan:
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


def _take(
    connection: Connection, group: Sequence[tuple[list[str], Plan]]
) -> list[DecisionPlan | Exception]:
    """Judge and write a group of decisions in the caller's transaction: each plan's outcome,
    or what it raised (having written nothing)."""
    wanted = sorted({i for ids, _ in group for i in ids})
    postgres = connection.dialect.name == "postgresql"
    lock = _LOCK_PG if postgres else _LOCK_SQLITE
    rows = execute(connection, lock, {"ids": wanted if postgres else json.dumps(wanted)}).all()
    current = {row.id: approval_from_row(row) for row in rows}
    saved = frozenset(row.id for row in rows if row.signoff_saved)
    if postgres and rows:
        at, policy = rows[0].signoff_at.astimezone(UTC), rows[0].signoff_policy
    else:
        read = read_moment(connection)
        at, policy = read.at, read.policy
    moment = Moment(at=at, policy=policy, saved=saved)
    outcomes: list[DecisionPlan | Exception] = []
    taken: list[DecisionPlan] = []
    for ids, plan in group:
        try:
            decided = plan(_named(current, ids), moment)
        except Exception as exc:
            outcomes.append(exc)
            continue
        for approval, _ in decided.changes:
            current[approval.id] = approval  # what the next decision in the group sees
        outcomes.append(decided)
        taken.append(decided)
    changes = [change for decided in taken for change in decided.changes]
    if not write_decisions(
        connection,
        changes,
        grants=[g for decided in taken for g in decided.grants],
        audit=[r for decided in taken for r in decided.audit],
        locked=True,
    ):
        # Unreachable while the rows are locked; kept as the compare-and-set's guard.
        raise ConflictError("the approvals changed while being decided; try again")
    return outcomes


def read_clock(connection: Connection) -> datetime:
    """The database's time, in the caller's transaction (SQLite's clock is this machine's)."""
    if connection.dialect.name == "postgresql":
        return cast(datetime, execute(connection, _CLOCK).scalar_one()).astimezone(UTC)
    return datetime.now(UTC)


def read_moment(connection: Connection) -> Moment:
    """The database's time and the latest saved policy's version, in the caller's transaction
    (SQLite's clock is this machine's)."""
    if connection.dialect.name == "postgresql":
        row = execute(connection, _MOMENT_PG).one()
        return Moment(at=row.at.astimezone(UTC), policy=row.policy)
    return Moment(at=datetime.now(UTC), policy=execute(connection, _POLICY_SQLITE).scalar())


def write_decisions(
    connection: Connection,
    changes: Sequence[tuple[Approval, int]],
    *,
    grants: Sequence[Grant] = (),
    audit: Sequence[AuditRecord] = (),
    locked: bool = False,
) -> bool:
    """Write each ``(approval, expected_version)`` if it is still pending at that version, with
    the grants, the runs' ``decision`` events and the audit entries, in the caller's
    transaction. False when one was changed by someone else first (roll back: some were
    written). With `locked`, the caller holds the rows locked and read them in this
    transaction: the updates go as one statement of many rows."""
    params = [{**decision_values(a), "b_id": a.id, "b_version": v} for a, v in changes]
    if locked and len(params) > 1:
        # asyncpg's executemany reports no count (-1): under the lock none can be lost.
        if execute(connection, _UPDATE, params).rowcount not in (len(params), -1):
            return False
    else:
        for one in params:
            if execute(connection, _UPDATE, one).rowcount != 1:
                return False
    insert_grants(connection, grants)
    # The audit chain's head before any run's row, as every writer of both takes them (a tool's
    # start, a hold, a result): two transactions taking them in turn never wait on each other.
    append_audit(connection, audit)
    _log_decisions(connection, [approval for approval, _ in changes])
    if changes and connection.dialect.name == "postgresql":
        # Delivered on commit, to every listening process.
        connection.execute(_NOTIFY, {"ids": [approval.id for approval, _ in changes]})
    return True


def _named(current: dict[str, Approval], ids: list[str]) -> list[Approval]:
    missing = [i for i in ids if i not in current]
    if missing:
        raise NotFoundError(f"no approval with id {', '.join(map(repr, missing))}")
    return [current[i] for i in ids]


def _log_decisions(connection: Connection, approvals: Sequence[Approval]) -> None:
    """Append a ``decision`` event to the log of each decided approval's run (those of
    signoff's runtime), in the decision's transaction: every projection of the run sees it."""
    by_run: dict[str, list[Approval]] = {}
    for approval in approvals:
        # A change that leaves it pending (one vote of several, an assignment, an escalation)
        # decides nothing yet.
        if approval.run_id is not None and not approval.pending:
            by_run.setdefault(approval.run_id, []).append(approval)
    if by_run:
        append_events_to_runs(
            connection,
            {
                run_id: (
                    max(a.decided_at or a.requested_at for a in decided),
                    [("decision", _decision_event(a)) for a in decided],
                )
                for run_id, decided in by_run.items()
            },
        )


def _decision_event(approval: Approval) -> dict[str, Any]:
    decision = approval.decision
    return {
        "approval_id": approval.id,
        "call_id": approval.call.id,
        "tool": approval.call.name,
        "agent": approval.call.agent,
        "status": approval.status,
        "decision": None if decision is None else decision_to_dict(decision),
        "args": approval.call.args,
        "decided_by": approval.decided_by,
    }
