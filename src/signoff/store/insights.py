"""What the decisions of a window say, aggregated in SQL: each query groups or ranks in the
database and returns one row per group (rule, tool, agent), never one per approval, so a window
of a million approvals costs one scan of an index, not a million rows in Python.

Percentiles come from a bounded sample: each group's newest `TIMED` decisions by a person, read
newest first down the (tool, requested_at) index, ranked here (nearest rank). Ranking every
decision of the window with a window function costs a sort of the whole window (3 s at a
million on SQLite); the sample costs about a millisecond a group. Samples of one group's calls
(to find what their arguments share) are likewise the newest `limit` of one status; the calls
people refused that a suggestion is checked against are read only where their argument passes a
test run here (a superset of the suggested condition), at most `limit` of them.
"""

from __future__ import annotations

import json
import math
import re
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal, Protocol, TypeAlias, get_args

from sqlalchemy import (
    ColumnElement,
    Numeric,
    and_,
    case,
    cast,
    func,
    literal,
    or_,
    select,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Connection

from signoff.names import name_key
from signoff.store import schema
from signoff.store.rows import approval_from_row
from signoff.store.runner import Transactional
from signoff.store.times import to_micros
from signoff.types import AUTOMATIC, Approval, ApprovalStatus

__all__ = [
    "NAME_CHARACTERS",
    "REFUSED",
    "STATUSES",
    "TIMED",
    "ArgumentMatch",
    "ArgumentTest",
    "GroupKey",
    "GroupStats",
    "InsightStore",
    "Tally",
    "TimeToDecision",
    "Voices",
]

STATUSES: Final[tuple[ApprovalStatus, ...]] = get_args(ApprovalStatus)
"""Every status a call can have, each counted: an answered question is a decided call too."""
_BY_PERSON: Final = ("approved", "edited", "responded", "answered", "rejected")
"""The statuses a person's decision leaves: time to a decision is measured over these."""
REFUSED: Final[tuple[ApprovalStatus, ...]] = ("rejected", "edited", "responded")
"""The statuses of a call a person would not run as it was requested."""

TIMED: Final = 1000
"""The newest decisions of a group its time-to-decision percentiles are taken from."""

_KEY: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")

GroupKey: TypeAlias = tuple[str | None, str, str | None]
"""(rule, tool, agent): the rule that asked (None for the policy's default), the tool, and the
calling agent's path (None for a call of no agent)."""

NAME_CHARACTERS: Final = string.ascii_letters + string.digits + "._+-"
"""What one name is made of — a file's in its folder, an address's before its domain: no
separator (``/``, ``\\``), no second address (``,``, ``;``, ``@``, space, ``<``), no control
character."""

ArgumentTest: TypeAlias = Literal["eq", "suffix", "prefix", "in_folder", "at_domain", "at_most"]
"""How an argument is tested. A string: equal to the value, ending with it, or starting with it;
``in_folder``: the folder given (``/tmp/``) and then one name (`NAME_CHARACTERS`, not ``.`` or
``..``); ``at_domain``: one name and then the mail domain given (``@example.com``). A number:
``at_most`` the value."""

_a = schema.approvals


@dataclass(frozen=True, kw_only=True)
class ArgumentMatch:
    """A test of one argument of a call as it was requested, run in the database."""

    key: str
    """A plain name (letters, digits, ``_``, ``-``): the argument at the top of the call's."""
    test: ArgumentTest
    value: str | float
    """A string for the string tests, a number for ``at_most``."""

    def __post_init__(self) -> None:
        if not _KEY.fullmatch(self.key):
            raise ValueError(f"argument key {self.key!r} is not a plain name")
        number = isinstance(self.value, int | float) and not isinstance(self.value, bool)
        if (self.test == "at_most") != number:
            kind = "a number" if self.test == "at_most" else "a string"
            raise ValueError(f"{self.test!r} needs {kind}, not {self.value!r}")
        if self.test == "in_folder" and not str(self.value).endswith("/"):
            raise ValueError(f"'in_folder' needs a folder ending with '/', not {self.value!r}")
        if self.test == "at_domain" and not str(self.value).startswith("@"):
            raise ValueError(f"'at_domain' needs '@' and a domain, not {self.value!r}")


@dataclass(frozen=True, kw_only=True)
class Voices:
    """How many people stand behind some calls: a flood of calls from one counts once."""

    people: int
    """The distinct people who decided them (compared as `signoff.names` compares people)."""
    requesters: int
    """The distinct principals who requested them; calls of no known requester count as one."""

    @classmethod
    def count(cls, deciders: Iterable[str | None], requesters: Iterable[str | None]) -> Voices:
        """The voices of calls decided by `deciders` and requested by `requesters`."""
        people = {name_key(name) for name in deciders if name is not None}
        asking = {None if name is None else name_key(name) for name in requesters}
        return cls(people=len(people), requesters=len(asking))


@dataclass(frozen=True, kw_only=True)
class Tally:
    """Some calls of a group, counted by status, with the voices behind each status."""

    counts: dict[str, int]
    """How many calls have each status (every one of `STATUSES`)."""
    voices: dict[str, Voices]
    """Who decided and who requested the calls of each status (every one of `STATUSES`)."""

    @classmethod
    def of(cls, rows: Iterable[Sequence[Any]]) -> Tally:
        """From rows of (status, how many calls, its distinct deciders, its distinct
        requesters), the names a list or a JSON array of them."""
        counts: dict[str, int] = dict.fromkeys(STATUSES, 0)
        voices: dict[str, Voices] = dict.fromkeys(STATUSES, Voices(people=0, requesters=0))
        for status, count, deciders, requesters in rows:
            counts[status] = int(count)
            voices[status] = Voices.count(_listed(deciders), _listed(requesters))
        return cls(counts=counts, voices=voices)


@dataclass(frozen=True, kw_only=True)
class TimeToDecision:
    """The nearest-rank median and 90th percentile of a group's time to a person's decision."""

    median_seconds: float
    p90_seconds: float


@dataclass(frozen=True, kw_only=True)
class GroupStats:
    """What one (rule, tool, agent) group's calls came to in the window."""

    rule: str | None
    tool: str
    agent: str | None
    counts: dict[str, int]
    """How many calls asked in the window have each status (every one of `STATUSES`)."""
    time_to_decision: TimeToDecision | None
    """None when no call of the group was decided by a person."""
    deciders: tuple[tuple[str, int], ...]
    """Who decided how many of the group's calls, most first (ties by name)."""
    grant_uses: int
    """How many calls of the group's rule, tool and agent a grant let through in the window."""

    @property
    def asked(self) -> int:
        return sum(self.counts[s] for s in STATUSES)


_BY_PEOPLE = or_(_a.c.status == "expired", _a.c.decided_by.is_distinct_from(AUTOMATIC))
"""The calls people decided (and those nobody did): what signoff decided itself — on timeout,
by a new policy — is no one's evidence for a suggestion."""


class InsightStore(Transactional, Protocol):
    """The insights' half of the store."""

    async def decision_stats(self, *, since: datetime, top_deciders: int = 3) -> list[GroupStats]:
        """Every group with a call asked since `since` (or a grant use since then), ordered by
        how many calls it asked, most first."""
        after = to_micros(since)
        stats: list[GroupStats] = await self.run(
            lambda c: _stats(c, after, top_deciders), write=False
        )
        return stats

    async def group_sample(
        self,
        group: GroupKey,
        *,
        status: ApprovalStatus,
        since: datetime,
        limit: int,
    ) -> list[Approval]:
        """The newest `limit` approvals of the group asked since `since` with `status`."""
        rule, tool, agent = group
        query = (
            select(_a)
            .where(
                _a.c.status == status,
                _a.c.tool == tool,
                _a.c.rule.is_not_distinct_from(rule),
                _a.c.agent.is_not_distinct_from(agent),
                _a.c.requested_at >= to_micros(since),
                _BY_PEOPLE,
            )
            .order_by(_a.c.requested_at.desc())
            .limit(limit)
        )
        rows = await self.run(lambda c: c.execute(query).all(), write=False)
        return [approval_from_row(row) for row in rows]

    async def count_matching(
        self,
        group: GroupKey,
        *,
        since: datetime,
        key: str,
        test: ArgumentTest,
        value: str,
    ) -> dict[str, int]:
        """How many of the group's calls asked since `since` have each status, among those
        whose requested argument `key` passes `test` with `value`."""
        match = ArgumentMatch(key=key, test=test, value=value)
        return (await self.tally(group, since=since, match=match)).counts

    async def tally(
        self, group: GroupKey, *, since: datetime, match: ArgumentMatch | None = None
    ) -> Tally:
        """The group's calls asked since `since` (whose requested argument passes `match`),
        counted by status with the voices behind each, in one scan: a row per status, with its
        distinct deciders and requesters, leaves the database."""
        rule, tool, agent = group

        def work(connection: Connection) -> Tally:
            names = _distinct_names(connection)
            query = (
                select(_a.c.status, func.count(), names(_a.c.decided_by), names(_a.c.requested_by))
                .where(
                    _a.c.tool == tool,
                    _a.c.requested_at >= to_micros(since),
                    _a.c.rule.is_not_distinct_from(rule),
                    _a.c.agent.is_not_distinct_from(agent),
                    _BY_PEOPLE,
                    *(() if match is None else (_matches(connection, match),)),
                )
                .group_by(_a.c.status)
            )
            return Tally.of(connection.execute(query).all())

        found: Tally = await self.run(work, write=False)
        return found

    async def refused_like(
        self,
        tool: str,
        *,
        agent: str | None,
        since: datetime,
        match: ArgumentMatch,
        limit: int,
    ) -> list[Approval]:
        """The newest `limit` calls of `tool` asked since `since` that a person refused
        (`REFUSED`) and whose requested argument passes `match` — of `agent`, or of every agent
        when `agent` is None (a rule for a call of no agent names no agent), whatever rule
        asked."""

        def work(connection: Connection) -> list[Approval]:
            where = [
                _a.c.tool == tool,
                _a.c.status.in_(REFUSED),
                _a.c.requested_at >= to_micros(since),
                _matches(connection, match),
            ]
            if agent is not None:
                where.append(_a.c.agent == agent)
            query = select(_a).where(*where).order_by(_a.c.requested_at.desc()).limit(limit)
            return [approval_from_row(row) for row in connection.execute(query).all()]

        found: list[Approval] = await self.run(work, write=False)
        return found


def _stats(connection: Connection, after: int, top: int) -> list[GroupStats]:
    # One scan: the counts of each (group, decider), summed per group here; a group has a
    # handful of deciders, so the rows that leave the database are few.
    group = (_a.c.rule, _a.c.tool, _a.c.agent, _a.c.decided_by)
    counted = (
        select(*group, *(func.sum(case((_a.c.status == s, 1), else_=0)).label(s) for s in STATUSES))
        .where(_a.c.requested_at >= after)
        .group_by(*group)
    )
    counts: dict[GroupKey, dict[str, int]] = {}
    people: dict[GroupKey, list[tuple[str, int]]] = {}
    for row in connection.execute(counted):
        key = (row.rule, row.tool, row.agent)
        totals = counts.setdefault(key, dict.fromkeys(STATUSES, 0))
        for status in STATUSES:
            totals[status] += int(getattr(row, status))
        if row.decided_by is not None:
            decided = sum(int(getattr(row, status)) for status in STATUSES)
            people.setdefault(key, []).append((row.decided_by, decided))
    uses = _grant_uses(connection, after)
    keys = sorted(
        set(counts) | set(uses),
        key=lambda k: (-sum(counts.get(k, {}).values()), k[1], k[0] or "", k[2] or ""),
    )
    return [
        GroupStats(
            rule=key[0],
            tool=key[1],
            agent=key[2],
            counts=counts.get(key, dict.fromkeys(STATUSES, 0)),
            time_to_decision=_time_to_decision(connection, key, after)
            if any(counts.get(key, {}).get(s) for s in _BY_PERSON)
            else None,
            deciders=tuple(sorted(people.get(key, []), key=lambda p: (-p[1], p[0]))[:top]),
            grant_uses=uses.get(key, 0),
        )
        for key in keys
    ]


def _time_to_decision(connection: Connection, key: GroupKey, after: int) -> TimeToDecision:
    """From the group's newest `TIMED` decisions by a person, read newest first down the
    (tool, requested_at) index."""
    rule, tool, agent = key
    query = (
        select(_a.c.decided_at - _a.c.requested_at)
        .where(
            _a.c.tool == tool,
            _a.c.requested_at >= after,
            _a.c.rule.is_not_distinct_from(rule),
            _a.c.agent.is_not_distinct_from(agent),
            _a.c.status.in_(_BY_PERSON),
        )
        .order_by(_a.c.requested_at.desc())
        .limit(TIMED)
    )
    took = sorted(max(0, t) / 1_000_000 for t in connection.execute(query).scalars())
    return TimeToDecision(
        median_seconds=_nearest_rank(took, 0.5), p90_seconds=_nearest_rank(took, 0.9)
    )


def _nearest_rank(ordered: list[float], q: float) -> float:
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _grant_uses(connection: Connection, after: int) -> dict[GroupKey, int]:
    audit, grants = schema.audit, schema.grants
    query = (
        select(grants.c.rule, grants.c.tool, grants.c.agent, func.count().label("n"))
        .select_from(audit.join(grants, grants.c.id == audit.c.subject))
        .where(audit.c.action == "grant_use", audit.c.at >= after)
        .group_by(grants.c.rule, grants.c.tool, grants.c.agent)
    )
    return {(row.rule, row.tool, row.agent): row.n for row in connection.execute(query)}


def _distinct_names(connection: Connection) -> Callable[[ColumnElement[Any]], ColumnElement[Any]]:
    """An aggregate of a column's distinct values, NULL included: a list from PostgreSQL, a
    JSON array from SQLite. Each distinct value is kept once as the rows go by, so a window
    of a million calls by three people costs no sort."""
    if connection.dialect.name == "postgresql":
        return lambda column: func.array_agg(column.distinct())
    return lambda column: func.json_group_array(column.distinct())


def _listed(names: Any) -> list[str | None]:
    found: list[str | None] = json.loads(names) if isinstance(names, str) else list(names)
    return found


def _matches(connection: Connection, match: ArgumentMatch) -> ColumnElement[bool]:
    """Whether the requested argument passes `match`."""
    if isinstance(match.value, str):
        return _passes(_string_at(connection, match.key), match.test, match.value)
    return _number_at(connection, match.key) <= literal(match.value, Numeric())


def _requested(connection: Connection) -> tuple[ColumnElement[Any], str]:
    """The arguments as requested (a JSON document of the dialect's), and the dialect."""
    requested = func.coalesce(_a.c.requested_args, _a.c.args)
    if connection.dialect.name == "postgresql":
        return cast(requested, JSONB), "postgresql"
    return requested, "sqlite"


def _string_at(connection: Connection, key: str) -> ColumnElement[Any]:
    """The requested argument `key` where it is a JSON string, else NULL."""
    document, dialect = _requested(connection)
    if dialect == "postgresql":
        return case(
            (func.jsonb_typeof(document.op("->")(key)) == "string", document.op("->>")(key)),
            else_=None,
        )
    path = f'$."{key}"'
    return case(
        (func.json_type(document, path) == "text", func.json_extract(document, path)),
        else_=None,
    )


def _number_at(connection: Connection, key: str) -> ColumnElement[Any]:
    """The requested argument `key` where it is a JSON number, else NULL."""
    document, dialect = _requested(connection)
    if dialect == "postgresql":
        return case(
            (
                func.jsonb_typeof(document.op("->")(key)) == "number",
                cast(document.op("->>")(key), Numeric()),
            ),
            else_=None,
        )
    path = f'$."{key}"'
    return case(
        (
            func.json_type(document, path).in_(("integer", "real")),
            func.json_extract(document, path),
        ),
        else_=None,
    )


def _passes(found: ColumnElement[Any], test: ArgumentTest, value: str) -> ColumnElement[bool]:
    """Case-sensitive on both databases: plain comparisons of substrings and trims, not LIKE.
    One name is what trimming `NAME_CHARACTERS` off takes away: ``/tmp/<name>`` is what
    ``rtrim`` turns into ``/tmp/`` (which ends with ``/``, not a name's), ``<name>@example.com``
    what ``ltrim`` turns into ``@example.com`` — testing the value twice, not once per
    character."""
    size = len(value)
    match test:
        case "eq":
            return found == value
        case "prefix":
            return func.substr(found, 1, size) == value
        case "suffix":
            return and_(
                func.length(found) >= size,
                func.substr(found, func.length(found) - size + 1) == literal(value),
            )
        case "in_folder":
            return and_(
                func.rtrim(found, literal(NAME_CHARACTERS)) == value,
                found.not_in((value, f"{value}.", f"{value}..")),
            )
        case "at_domain":
            return and_(func.ltrim(found, literal(NAME_CHARACTERS)) == value, found != value)
    raise ValueError(f"{test!r} does not test a string")
