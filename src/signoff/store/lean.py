"""The hot paths' statements straight on SQLite's driver.

Executing a statement through SQLAlchemy costs about 0.06 to 0.09 ms of Python on this kind of
machine, against about 0.01 ms for the same statement on `sqlite3` itself: for a decision made
of five statements, more than its durable commit. `execute` runs a Core statement on the driver
of the connection's transaction — compiled once for each set of parameter names, with SQLite's
own named parameters, the statement cache of `sqlite3` keeping it prepared — and answers with
the little of SQLAlchemy's result that the hot paths use. The statements stay Core, written
once; the transaction stays SQLAlchemy's (begun and committed by the runner), and so do
`before_cursor_execute` listeners, which still see every statement. On PostgreSQL, `execute` is
`Connection.execute` (asyncpg prepares and caches statements itself).

Only for statements whose values need no conversion by SQLAlchemy's types: signoff's columns
hold text, integers (times are microseconds) and booleans, which `sqlite3` binds as they are.
"""

from __future__ import annotations

import sqlite3
from collections import namedtuple
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, MultipleResultsFound, NoResultFound
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

__all__ = ["execute"]

Params = Mapping[str, Any] | Sequence[Mapping[str, Any]] | None

_DIALECT = sqlite.dialect(paramstyle="named")
_cache: dict[tuple[int, tuple[str, ...]], _Compiled] = {}
_rows: dict[tuple[str, ...], Any] = {}


def execute(connection: Connection, statement: ClauseElement, params: Params = None) -> Any:
    """`connection.execute(statement, params)`, on SQLite straight on its driver: a result
    with ``rowcount``, ``all()``, ``one()``, ``first()``, ``scalar()``, ``scalars()`` and
    iteration over rows with attributes named by their columns."""
    if connection.dialect.name != "sqlite":
        return connection.execute(statement, params)  # type: ignore[call-overload]
    many = not isinstance(params, Mapping | None)
    rows: list[Mapping[str, Any]] = list(params) if many else [params or {}]  # type: ignore[arg-type,list-item]
    compiled = _compiled(statement, tuple(rows[0]) if rows else ())
    bound: Any
    if compiled.expands:
        # An IN of a list: its parameters are spelt out for each execution.
        if many:
            raise ValueError("a statement with an expanding IN runs once, not for many rows")
        state = compiled.compiled.construct_expanded_state(rows[0])
        sql, bound = state.statement, state.parameters
    else:
        sql = compiled.compiled.string
        if compiled.constants:
            rows = [{**compiled.constants, **row} for row in rows]
        bound = rows if many else rows[0]
    cursor: sqlite3.Cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
    if connection.dispatch.before_cursor_execute:  # a listener (a bench counting bytes)
        connection.dispatch.before_cursor_execute(connection, cursor, sql, bound, None, many)
    try:
        if many:
            cursor.executemany(sql, bound)
        else:
            cursor.execute(sql, bound)
    except sqlite3.Error as exc:  # as SQLAlchemy raises it: IntegrityError, OperationalError...
        raise DBAPIError.instance(sql, bound, exc, sqlite3.Error) from exc
    return _Result(cursor)


@dataclass(frozen=True)
class _Compiled:
    statement: ClauseElement
    """Kept: its id names it only while it lives."""
    compiled: SQLCompiler
    constants: dict[str, Any]
    """The values the statement itself binds (a literal in a WHERE)."""
    expands: bool


def _compiled(statement: ClauseElement, keys: tuple[str, ...]) -> _Compiled:
    key = (id(statement), keys)
    found = _cache.get(key)
    if found is None or found.statement is not statement:
        if len(_cache) > 1000:  # for module-level statements: a handful, kept for good
            _cache.clear()
        compiled = cast(SQLCompiler, statement.compile(dialect=_DIALECT, column_keys=list(keys)))
        found = _cache[key] = _Compiled(
            statement=statement,
            compiled=compiled,
            constants={k: v for k, v in compiled.params.items() if k not in keys},
            expands=bool(getattr(compiled, "post_compile_params", ())),
        )
    return found


class _Result:
    __slots__ = ("_cursor", "rowcount")

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor
        self.rowcount = cursor.rowcount

    def _shape(self) -> Any:
        names = tuple(column[0] for column in self._cursor.description)
        shape = _rows.get(names)
        if shape is None:
            shape = _rows[names] = namedtuple("Row", names, rename=True)
        return shape

    def __iter__(self) -> Iterator[Any]:
        if self._cursor.description is None:
            return iter(())
        shape = self._shape()
        return (shape._make(row) for row in self._cursor)

    def all(self) -> list[Any]:
        return list(self)

    def first(self) -> Any:
        # Every row fetched: a statement left unfinished would hold SQLite's statement open.
        rows = self.all()
        return rows[0] if rows else None

    def one(self) -> Any:
        rows = self.all()
        if not rows:
            raise NoResultFound("No row was found when one was required")
        if len(rows) > 1:
            raise MultipleResultsFound("Multiple rows were found when exactly one was required")
        return rows[0]

    def scalar(self) -> Any:
        rows = self._cursor.fetchall()
        return rows[0][0] if rows else None

    def scalars(self) -> list[Any]:
        return [row[0] for row in self._cursor]
