"""Runs: who holds each one and what it is (running, paused, finished), a sub-agent's run linked
to its parent's call. A run is created with its first messages, claimed by one worker at a time
under a lease, and written by its lease holder only; its messages and events are its log
(`signoff.store.log`), and the ledger that makes tool execution exactly-once is
`signoff.store.ledger`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol, TypeAlias, TypedDict, Unpack

from sqlalchemy import and_, bindparam, func, insert, literal, or_, select, tuple_, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from signoff.errors import ConflictError, NotFoundError
from signoff.store import schema
from signoff.store.lean import execute
from signoff.store.log import OpenTurn, StoredEvent, insert_log
from signoff.store.rows import same_named
from signoff.store.runner import Transactional
from signoff.store.times import from_micros, to_micros
from signoff.types import Approval

__all__ = [
    "OpenTurn",
    "ResumedTurn",
    "RunFilters",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "RunWrite",
    "StoredEvent",
    "claim",
    "read_run",
    "write_run",
]

RunStatus: TypeAlias = Literal["running", "paused", "completed", "failed"]


class RunFilters(TypedDict, total=False):
    """Which runs `RunStore.list_runs` and `RunStore.count_runs` take; each left out takes
    them all."""

    agent: str | None
    status: str | None
    thread_id: str | None
    roots: bool
    """Only runs of their own, not a sub-agent's (those have a `parent_id`)."""
    updated_after: datetime | None


# The statements of the run's writes, built once with bound parameters: building a statement
# costs several times what running it does on SQLite.
_runs = schema.runs
_BUSY_THREAD = (
    select(_runs.c.id)
    .where(
        and_(_runs.c.thread_id == bindparam("thread_id"), _runs.c.status.in_(("running", "paused")))
    )
    .with_for_update()
)
_INSERT_RUN = insert(_runs)
_INSERT_SUBRUN = insert(schema.subruns)
_LOCK_TREE = (
    select(_runs.c.id)
    .where(_runs.c.id.in_(bindparam("ids", expanding=True)))
    .order_by(_runs.c.id)
    .with_for_update()
)
_RENEW_ANCESTORS = (
    update(_runs)
    .where(
        and_(
            _runs.c.id.in_(bindparam("ids", expanding=True)), _runs.c.lease_owner == bindparam("o")
        )
    )
    .values(lease_until=bindparam("v_lease_until"), updated_at=bindparam("v_updated_at"))
)


@functools.cache
def _update_run(columns: frozenset[str]) -> Any:
    """The update of a run by its lease holder, setting `columns` from parameters named
    ``v_<column>`` and moving its counters on by ``m`` messages and ``e`` events."""
    return (
        update(_runs)
        .where(and_(_runs.c.id == bindparam("rid"), _runs.c.lease_owner == bindparam("o")))
        .values(
            {name: bindparam(f"v_{name}") for name in sorted(columns)}
            | {
                "version": _runs.c.version + 1,
                "message_seq": _runs.c.message_seq + bindparam("m"),
                "event_seq": _runs.c.event_seq + bindparam("e"),
            }
        )
        .returning(_runs.c.message_seq, _runs.c.event_seq)
    )


@functools.cache
def _claim(*, agent: bool, root: bool) -> Any:
    conditions = [
        _runs.c.id == bindparam("rid"),
        or_(
            _runs.c.status == "paused",
            and_(_runs.c.status == "running", _runs.c.lease_until < bindparam("now")),
        ),
    ]
    if agent:
        conditions.append(_runs.c.agent == bindparam("w_agent"))
    if root:
        subruns = schema.subruns
        conditions.append(~select(subruns.c.run_id).where(subruns.c.run_id == _runs.c.id).exists())
    return (
        update(_runs)
        .where(and_(*conditions))
        .values(
            status="running",
            lease_owner=bindparam("v_owner"),
            lease_until=bindparam("v_lease_until"),
            version=_runs.c.version + 1,
        )
        .returning(*_runs.c)
    )


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    id: str
    thread_id: str
    agent: str
    status: RunStatus
    started_by: str | None
    lease_owner: str | None
    version: int
    parent_id: str | None = None
    """For a sub-agent's run: the run whose call it answers."""
    parent_key: str | None = None
    """For a sub-agent's run: the ledger key of that call."""
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class RunWrite:
    """Messages and events for a run's log, written by the run's lease holder — on their own
    (`append_to_run`) or inside another write's transaction (a hold, a ledger entry), so that a
    step of the runtime costs one commit."""

    run_id: str
    owner: str | None
    at: datetime
    lease_until: datetime | None = None
    messages: Sequence[dict[str, Any]] = ()
    events: Sequence[tuple[str, dict[str, Any]]] = ()
    status: RunStatus | None = None
    """Move the run there too; any but running releases the lease."""
    ancestors: Sequence[str] = ()
    """The runs a sub-agent's run works for: their leases are renewed with its own."""


@dataclass(frozen=True, kw_only=True)
class ResumedTurn:
    """A run just claimed, and what resuming it needs: `SQLStore.resume_turn`."""

    record: RunRecord
    turn: OpenTurn
    listed: list[Approval]
    """The approvals the turn's last pause waited on."""
    own: list[Approval]
    """The approvals requested for the agent's calls since the turn began (also those a dead
    worker requested and never logged)."""
    begun: set[str]
    """The ledger keys of the calls started since the turn began."""


class RunStore(Transactional, Protocol):
    """The runtime's half of the store."""

    async def create_run(
        self,
        record: RunRecord,
        *,
        at: datetime,
        lease_until: datetime,
        messages: Sequence[dict[str, Any]] = (),
        events: Sequence[tuple[str, dict[str, Any]]] = (),
    ) -> list[StoredEvent]:
        """Insert the run, owned by its creator, with its first messages and events."""
        row = {
            "id": record.id,
            "thread_id": record.thread_id,
            "agent": record.agent,
            "status": record.status,
            "started_by": record.started_by,
            "lease_owner": record.lease_owner,
            "lease_until": to_micros(lease_until),
            "created_at": to_micros(at),
            "updated_at": to_micros(at),
            "version": record.version,
            "message_seq": len(messages),
            "event_seq": len(events),
        }

        def work(connection: Connection) -> list[StoredEvent]:
            # One unfinished run per thread: a second would read the first's open calls as its
            # own history, and the model would see calls with no results.
            busy = execute(connection, _BUSY_THREAD, {"thread_id": record.thread_id}).first()
            if busy is not None:
                raise ConflictError(
                    f"thread {record.thread_id!r} has an unfinished run {busy.id!r}; "
                    "resume it first"
                )
            try:
                execute(connection, _INSERT_RUN, row)
            except IntegrityError:
                raise ConflictError(f"a run {record.id!r} exists already") from None
            if record.parent_id is not None:
                connection.execute(
                    _INSERT_SUBRUN,
                    {
                        "run_id": record.id,
                        "parent_id": record.parent_id,
                        "parent_key": record.parent_key,
                    },
                )
            return insert_log(connection, record.id, at, messages, events, first=(1, 1))

        return await self.run(work)

    async def append_to_run(
        self,
        run_id: str,
        *,
        at: datetime,
        messages: Sequence[dict[str, Any]] = (),
        events: Sequence[tuple[str, dict[str, Any]]] = (),
        status: RunStatus | None = None,
        owner: str | None = None,
        lease_until: datetime | None = None,
        ancestors: Sequence[str] = (),
    ) -> list[StoredEvent]:
        """Append messages and events, renewing the owner's lease to `lease_until`; with a
        `status` other than running, also move the run there and release the lease. The
        `ancestors` (the runs a sub-agent's run works for) get their leases renewed too.

        Raises `ConflictError` when `owner` no longer holds the run or one of its ancestors (a
        lease ran out and another worker took it over): the late writer must stop.
        """

        write = RunWrite(
            run_id=run_id,
            owner=owner,
            at=at,
            lease_until=lease_until,
            messages=messages,
            events=events,
            status=status,
            ancestors=ancestors,
        )
        result: list[StoredEvent] = await self.run(lambda c: write_run(c, write))
        return result

    async def claim_run(self, run_id: str, *, owner: str, now: datetime, lease: timedelta) -> bool:
        """Take the run to resume it: paused, or running under a lease that ran out (its holder
        died). Compare-and-set: of several claimants, exactly one wins."""
        won: bool = await self.run(
            lambda c: claim(c, run_id, owner=owner, now=now, lease=lease) is not None
        )
        return won

    async def get_run(self, run_id: str) -> RunRecord:
        record: RunRecord | None = await self.run(lambda c: read_run(c, run_id), write=False)
        if record is None:
            raise NotFoundError(f"no run with id {run_id!r}")
        return record

    async def run_exists(self, run_id: str) -> bool:
        found: bool = await self.run(lambda c: read_run(c, run_id) is not None, write=False)
        return found

    async def list_runs(
        self, *, before: str | None = None, limit: int = 50, **filters: Unpack[RunFilters]
    ) -> list[RunRecord]:
        """Runs, newest first (by start, then id), after the run `before` when given;
        sub-agents' runs included (they have a `parent_id`) unless `roots`."""
        runs = schema.runs
        query = _filtered(_runs_query(), filters)
        if before is not None:
            anchor = select(runs.c.created_at).where(runs.c.id == before).scalar_subquery()
            query = query.where(
                tuple_(runs.c.created_at, runs.c.id) < tuple_(anchor, literal(before))
            )
        query = query.order_by(runs.c.created_at.desc(), runs.c.id.desc()).limit(limit)
        rows = await self.run(lambda c: c.execute(query).all(), write=False)
        return [_run_record(row) for row in rows]

    async def count_runs(self, **filters: Unpack[RunFilters]) -> int:
        """How many runs `list_runs` with the same filters lists, over all its pages."""
        runs, subruns = schema.runs, schema.subruns
        linked = runs.outerjoin(subruns, subruns.c.run_id == runs.c.id)
        query = _filtered(select(func.count()).select_from(linked), filters)
        count: int = await self.run(lambda c: c.execute(query).scalar_one(), write=False)
        return count

    async def ready_runs(self, agent: str, *, now: datetime, limit: int = 100) -> list[str]:
        """Root runs of the agent that a worker may resume now, oldest first: paused with
        nothing left pending (approvals of a run's sub-agents are the run's), or left running
        under a lease that ran out."""
        runs, approvals, subruns = schema.runs, schema.approvals, schema.subruns
        decided = ~(
            select(approvals.c.id)
            .where(and_(approvals.c.run_id == runs.c.id, approvals.c.status == "pending"))
            .exists()
        )
        query = (
            select(runs.c.id)
            .where(
                and_(
                    runs.c.agent == agent,
                    or_(
                        and_(runs.c.status == "paused", decided),
                        and_(runs.c.status == "running", runs.c.lease_until < to_micros(now)),
                    ),
                    ~select(subruns.c.run_id).where(subruns.c.run_id == runs.c.id).exists(),
                )
            )
            .order_by(runs.c.updated_at)
            .limit(limit)
        )
        found: list[str] = await self.run(lambda c: list(c.execute(query).scalars()), write=False)
        return found

    async def child_run(self, parent_id: str, parent_key: str) -> RunRecord | None:
        """The sub-agent's run that answers the parent's call with this ledger key, if any."""
        subruns = schema.subruns
        query = _runs_query().where(
            and_(subruns.c.parent_id == parent_id, subruns.c.parent_key == parent_key)
        )
        row = await self.run(lambda c: c.execute(query).first(), write=False)
        return None if row is None else _run_record(row)


def claim(
    connection: Connection,
    run_id: str,
    *,
    owner: str,
    now: datetime,
    lease: timedelta,
    agent: str | None = None,
    root: bool = False,
) -> RunRecord | None:
    """`RunStore.claim_run` inside the caller's transaction (of `agent`'s runs only, if given;
    only a root run, not a sub-agent's, with `root`): the run as claimed, or None. The record
    carries no parent."""
    row = execute(
        connection,
        _claim(agent=agent is not None, root=root),
        {
            "rid": run_id,
            "now": to_micros(now),
            "w_agent": agent,
            "v_owner": owner,
            "v_lease_until": to_micros(now + lease),
        },
    ).first()
    return None if row is None else _run_record(row, linked=False)


def read_run(connection: Connection, run_id: str) -> RunRecord | None:
    row = connection.execute(_runs_query().where(schema.runs.c.id == run_id)).first()
    return None if row is None else _run_record(row)


def write_run(connection: Connection, write: RunWrite) -> list[StoredEvent]:
    """Do `write` inside the caller's transaction. Raises `ConflictError` when its owner no
    longer holds the run or one of its ancestors (a lease ran out and another worker took it
    over): the late writer must stop."""
    values: dict[str, Any] = {"updated_at": to_micros(write.at)}
    lease_until = None if write.lease_until is None else to_micros(write.lease_until)
    if lease_until is not None:
        values["lease_until"] = lease_until
    if write.status is not None:
        values["status"] = write.status
        if write.status != "running":
            values |= {"lease_owner": None, "lease_until": None}
    run_id, owner = write.run_id, write.owner
    if write.ancestors:
        # Lock the tree's rows in id order, as every writer does: a sub-agent and the runs
        # above it, written at once, never wait on each other in a circle.
        connection.execute(_LOCK_TREE, {"ids": [run_id, *write.ancestors]}).all()
    added_messages, added_events = len(write.messages), len(write.events)
    changed = execute(
        connection,
        _update_run(frozenset(values)),
        {f"v_{name}": value for name, value in values.items()}
        | {"rid": run_id, "o": owner, "m": added_messages, "e": added_events},
    ).first()
    if changed is None:
        raise ConflictError(f"run {run_id!r} is no longer held by this worker ({owner!r})")
    first = (changed.message_seq - added_messages + 1, changed.event_seq - added_events + 1)
    if write.ancestors:
        # The runs above keep working (a sub-agent's pause does not pause them yet): their
        # leases are renewed whatever happens to this one.
        renewed = connection.execute(
            _RENEW_ANCESTORS,
            {
                "ids": list(write.ancestors),
                "o": owner,
                "v_lease_until": lease_until,
                "v_updated_at": values["updated_at"],
            },
        )
        if renewed.rowcount != len(set(write.ancestors)):
            raise ConflictError(
                f"run {run_id!r} works for a run no longer held by this worker ({owner!r})"
            )
    return insert_log(connection, run_id, write.at, write.messages, write.events, first=first)


def _filtered(query: Any, filters: RunFilters) -> Any:
    """`query` over runs (and their parent links), narrowed by the filters given."""
    runs, subruns = schema.runs, schema.subruns
    for name in ("agent", "thread_id", "status"):
        if (value := filters.get(name)) is not None:
            query = query.where(runs.c[name] == value)
    if filters.get("roots", False):
        query = query.where(subruns.c.run_id.is_(None))
    if (updated_after := filters.get("updated_after")) is not None:
        query = query.where(runs.c.updated_at > to_micros(updated_after))
    return query


def _runs_query() -> Any:
    runs, subruns = schema.runs, schema.subruns
    return select(runs, subruns.c.parent_id, subruns.c.parent_key).outerjoin(
        subruns, subruns.c.run_id == runs.c.id
    )


_AS_STORED = ("id", "thread_id", "agent", "status", "started_by", "lease_owner", "version")
"""The columns that hold a run's fields as they are."""


def _run_record(row: Any, *, linked: bool = True) -> RunRecord:
    """The record of a `runs` row; of a row read without its link (`linked=False`), with no
    parent and no times."""
    link: dict[str, Any] = {}
    if linked:
        link = same_named(row, ("parent_id", "parent_key")) | {
            "created_at": from_micros(row.created_at),
            "updated_at": from_micros(row.updated_at),
        }
    return RunRecord(**same_named(row, _AS_STORED), **link)
