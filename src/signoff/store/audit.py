"""The audit log's chain: each entry carries the hash of the one before it, and is appended
inside the transaction of the change it records.

Read back, a row is trusted for nothing: whoever can write to the database can put anything in
it — a time that is text, data that is not JSON or is nested a hundred thousand levels deep,
bytes that are not UTF-8 (SQLite keeps what it is given). Every read here takes the row as it
is and says what is wrong with it, so that listing and verifying the log never fail on it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import (
    ColumnElement,
    LargeBinary,
    and_,
    case,
    cast,
    func,
    insert,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.engine import Connection

from signoff.errors import InvalidArgumentsError
from signoff.store import schema
from signoff.store.lean import execute
from signoff.store.records import AuditRecord
from signoff.store.times import from_micros, to_micros
from signoff.types import AuditEntry, canonical_json

__all__ = [
    "GENESIS",
    "LOCK_AUDIT_HEAD",
    "MAX_SHOWN_DEPTH",
    "Bounds",
    "StoredEntry",
    "append_audit",
    "chain_hash",
    "entry_hash",
    "next_seq",
    "parse_data",
    "read_bounds",
    "read_entries",
    "read_length",
    "read_log",
]

GENESIS = "0" * 64
"""The `prev_hash` of entry 1, and the head's hash while the log is empty."""
MAX_SHOWN_DEPTH = 100
"""Data nested deeper than this is not shown: encoding it for a reply would exhaust the stack."""

_head = schema.audit_head
_audit = schema.audit
_INSERT_AUDIT = insert(_audit)
LOCK_AUDIT_HEAD = select(_head.c.seq, _head.c.hash).where(_head.c.id == 1).with_for_update()
_UPDATE_AUDIT_HEAD = update(_head).where(_head.c.id == 1)
_TEXTS = ("actor", "action", "subject", "data", "prev_hash", "hash")
_FIRST_MICROS = to_micros(datetime.min.replace(tzinfo=UTC))
_LAST_MICROS = to_micros(datetime.max.replace(tzinfo=UTC))


def chain_hash(
    prev_hash: str, seq: int, at: int, actor: str, action: str, subject: str, data: str
) -> str:
    """The hash of one entry as stored: `at` in microseconds, `data` the stored JSON text,
    hashed as it is — so checking a row never needs to parse it."""
    # canonical_json of [seq, at, actor, action, subject, data] is that of the first five with
    # the data's canonical text spliced in: the same bytes `entry_hash` has always hashed.
    fields = canonical_json([seq, at, actor, action, subject])[:-1]
    return hashlib.sha256(prev_hash.encode() + fields + b"," + data.encode() + b"]").hexdigest()


def entry_hash(prev_hash: str, seq: int, record: AuditRecord) -> str:
    data = canonical_json(record.data).decode()
    return chain_hash(
        prev_hash, seq, to_micros(record.at), record.actor, record.action, record.subject, data
    )


def append_audit(connection: Connection, records: Sequence[AuditRecord]) -> None:
    """Chain `records` after the last entry, inside the caller's transaction. Locking the head
    row serializes audit writers, so the chain never forks."""
    if not records:
        return
    head = execute(connection, LOCK_AUDIT_HEAD).one()
    seq, prev = head.seq, head.hash
    rows = []
    for record in records:
        seq += 1
        digest = entry_hash(prev, seq, record)
        rows.append(
            {
                "seq": seq,
                "at": to_micros(record.at),
                "actor": record.actor,
                "action": record.action,
                "subject": record.subject,
                "data": canonical_json(record.data).decode(),
                "prev_hash": prev,
                "hash": digest,
            }
        )
        prev = digest
    execute(connection, _INSERT_AUDIT, rows)
    execute(connection, _UPDATE_AUDIT_HEAD, {"seq": seq, "hash": prev})


# -- reading, trusting nothing ---------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class StoredEntry:
    """One row of the audit table as stored. Text columns that do not hold UTF-8 text are
    decoded with replacement characters and named in `not_text`."""

    seq: int
    at: int | None
    """Microseconds since the epoch; None when the stored value is not an integer."""
    at_stored: str
    """What the time column holds, for messages."""
    actor: str
    action: str
    subject: str
    data: str
    """The JSON text as stored: hashed as it is, parsed only to be shown."""
    prev_hash: str
    hash: str
    not_text: tuple[str, ...] = ()

    @property
    def flaw(self) -> str | None:
        """What signoff could never have written here, whatever the hashes say: a time that is
        not one, a column that is not text. None for a well-formed row."""
        if self.at is None:
            return f"its time is {self.at_stored}, not a whole number of microseconds"
        if not _FIRST_MICROS <= self.at <= _LAST_MICROS:
            return f"its time {self.at} is out of range (not in the years 1 to 9999)"
        if self.not_text:
            return f"its {self.not_text[0]} is not UTF-8 text"
        return None

    def content_hash(self) -> str | None:
        """The hash its content and `prev_hash` give; None for a row with a `flaw`."""
        if self.at is None or self.flaw is not None:
            return None
        return chain_hash(
            self.prev_hash, self.seq, self.at, self.actor, self.action, self.subject, self.data
        )

    def shown(self) -> AuditEntry:
        """The entry as listings show it: a problem instead of what cannot be shown."""
        data: dict[str, Any] = {}
        problem = self.flaw
        if "data" not in self.not_text:
            data, data_problem = parse_data(self.data)
            problem = problem or data_problem
        in_range = self.at is not None and _FIRST_MICROS <= self.at <= _LAST_MICROS
        return AuditEntry(
            seq=self.seq,
            at=from_micros(self.at) if in_range and self.at is not None else None,
            actor=self.actor,
            action=self.action,
            subject=self.subject,
            data=data,
            prev_hash=self.prev_hash,
            hash=self.hash,
            problem=problem,
        )


def parse_data(text: str) -> tuple[dict[str, Any], str | None]:
    """The stored data as an object that can be shown and sent as JSON, or ``{}`` and why not."""
    try:
        value = json.loads(text)
    except RecursionError:
        return {}, "its data is nested too deep to read"
    except ValueError:  # not JSON, or an integer of too many digits
        return {}, "its data is not JSON"
    if not isinstance(value, dict):
        return {}, f"its data is a JSON {type(value).__name__}, not an object"
    depth = _depth(value)
    if depth > MAX_SHOWN_DEPTH:
        return {}, f"its data is nested {depth} levels deep (more than {MAX_SHOWN_DEPTH})"
    try:
        canonical_json(value)
    except InvalidArgumentsError:
        return {}, "its data holds what JSON cannot carry (NaN, infinity, a lone surrogate)"
    return value, None


def _depth(value: Any) -> int:
    """How deeply lists and objects nest in `value`, without recursing."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in item)
    return deepest


@dataclass(frozen=True, kw_only=True)
class Bounds:
    """The head row(s) and the range of entry numbers, read in that order in one transaction:
    an append committing meanwhile can only make the head newer than `last`, never older."""

    head_rows: int
    """How many rows audit_head has (signoff keeps exactly one)."""
    head_id: int | None
    """The head row's id (1); None when it is not an integer."""
    head_seq: int | None
    """The head's entry count; None when it is not a whole number."""
    head_seq_stored: str
    head_hash: str | None
    """The head's hash; None when it is not text."""
    first: int | None
    last: int | None
    stray: str | None
    """A row whose number is not an integer (SQLite only), as stored; None without one."""


def read_bounds(connection: Connection) -> Bounds:
    sqlite = _sqlite(connection)
    stray = None
    if sqlite:
        stray = connection.execute(
            select(_raw(_audit.c.seq, True)).where(~_is_integer(_audit.c.seq, True)).limit(1)
        ).scalar()
    number = _is_integer(_audit.c.seq, sqlite)
    first, last = connection.execute(
        select(func.min(_audit.c.seq), func.max(_audit.c.seq)).where(number)
    ).one()
    count = connection.execute(select(func.count()).select_from(_head)).scalar_one()
    head = connection.execute(
        select(
            _integer(_head.c.id, sqlite),
            _integer(_head.c.seq, sqlite),
            _raw(_head.c.seq, sqlite),
            _raw(_head.c.hash, sqlite),
        ).limit(1)
    ).first()
    head_hash, hash_is_text = _text(None if head is None else head[3])
    return Bounds(
        head_rows=count,
        head_id=None if head is None or type(head[0]) is not int else head[0],
        head_seq=None if head is None or type(head[1]) is not int else head[1],
        head_seq_stored=_stored(None if head is None else head[2]),
        head_hash=head_hash if hash_is_text else None,
        first=first,
        last=last,
        stray=None if stray is None else _stored(stray),
    )


def read_entries(connection: Connection, lo: int, hi: int) -> list[StoredEntry]:
    """The rows numbered above `lo` up to `hi`, in order (twice, if a number is twice)."""
    sqlite = _sqlite(connection)
    seq = _audit.c.seq
    query = (
        select(*_columns(sqlite)).where(seq > lo, seq <= hi, _is_integer(seq, sqlite)).order_by(seq)
    )
    return [_entry(row) for row in connection.execute(query)]


def next_seq(connection: Connection, after: int) -> int | None:
    """The lowest entry number above `after`, if any."""
    seq = _audit.c.seq
    query = select(func.min(seq)).where(seq > after, _is_integer(seq, _sqlite(connection)))
    value = connection.execute(query).scalar()
    return value if type(value) is int else None


def read_log(connection: Connection, *, after: int, limit: int) -> list[AuditEntry]:
    """Entries after `after`, in order, each as it can be shown. Rows whose number is not an
    integer cannot be placed in the log and are left to `verify_audit` to name."""
    sqlite = _sqlite(connection)
    seq = _audit.c.seq
    query = (
        select(*_columns(sqlite))
        .where(seq > after, _is_integer(seq, sqlite))
        .order_by(seq)
        .limit(limit)
    )
    return [_entry(row).shown() for row in connection.execute(query)]


CHANGING: Final = ("vote", "assign", "escalate", "rejudge", "decision")
"""The audit actions that change an approval; a ``verdict`` that asks holds a new one."""
_HELD = '%"verdict":"ask"%'
"""A verdict entry's data (canonical JSON: no spaces, keys sorted) when it held a call."""


def read_changes(
    connection: Connection, *, after: int, limit: int
) -> tuple[int, list[tuple[int, str]]]:
    """The number of the last of the `limit` entries after `after`, and among them those that
    hold or change an approval, as ``(seq, subject)`` — read without the entries' data (a
    subject that cannot be read is passed over)."""
    sqlite = _sqlite(connection)
    seq = _audit.c.seq
    changing = or_(
        _audit.c.action.in_(CHANGING),
        and_(_audit.c.action == "verdict", _audit.c.data.like(_HELD)),
    )
    query = (
        select(seq, _raw(_audit.c.subject, sqlite).label("subject"), changing.label("changing"))
        .where(seq > after, _is_integer(seq, sqlite))
        .order_by(seq)
        .limit(limit)
    )
    rows = connection.execute(query).all()
    found = []
    for row in rows:
        subject = row.subject
        if isinstance(subject, bytes):
            try:
                subject = subject.decode()
            except UnicodeDecodeError:
                continue
        if row.changing and isinstance(subject, str):
            found.append((int(row.seq), subject))
    return (int(rows[-1].seq) if rows else after), found


def read_length(connection: Connection) -> int:
    """The head's entry count; with the head row missing, doubled or damaged, the highest
    entry number."""
    sqlite = _sqlite(connection)
    heads = connection.execute(
        select(_integer(_head.c.seq, sqlite)).where(_head.c.id == 1).limit(2)
    ).all()
    if len(heads) == 1 and type(heads[0][0]) is int and heads[0][0] >= 0:
        return int(heads[0][0])
    seq = _audit.c.seq
    last = connection.execute(select(func.max(seq)).where(_is_integer(seq, sqlite))).scalar()
    return last if type(last) is int and last > 0 else 0


# SQLite stores any value in any column, and fails reading text that is not UTF-8: there, text
# columns are read as bytes and numbers only where they are integers.


def _sqlite(connection: Connection) -> bool:
    return connection.dialect.name == "sqlite"


def _is_integer(column: Any, sqlite: bool) -> ColumnElement[bool]:
    return func.typeof(column) == "integer" if sqlite else true()


def _integer(column: Any, sqlite: bool) -> Any:
    return case((func.typeof(column) == "integer", column)) if sqlite else column


def _raw(column: Any, sqlite: bool) -> Any:
    return cast(column, LargeBinary) if sqlite else column


def _columns(sqlite: bool) -> list[Any]:
    return [
        _audit.c.seq,
        _integer(_audit.c.at, sqlite).label("at"),
        _raw(_audit.c.at, sqlite).label("at_stored"),
        *(_raw(_audit.c[name], sqlite).label(name) for name in _TEXTS),
    ]


def _entry(row: Any) -> StoredEntry:
    texts = {name: _text(getattr(row, name)) for name in _TEXTS}
    return StoredEntry(
        seq=row.seq,
        at=row.at if type(row.at) is int else None,
        at_stored=_stored(row.at_stored),
        not_text=tuple(name for name, (_, is_text) in texts.items() if not is_text),
        **{name: text for name, (text, _) in texts.items()},
    )


def _text(value: object) -> tuple[str, bool]:
    """A column's value as text, and whether it was UTF-8 text."""
    if isinstance(value, str):
        return value, True
    if isinstance(value, bytes | memoryview):
        raw = bytes(value)
        try:
            return raw.decode(), True
        except UnicodeDecodeError:
            return raw.decode(errors="replace"), False
    return "", False


def _stored(value: object) -> str:
    """A stored value, short, for a message."""
    if value is None:
        return "missing"
    text, _ = _text(value)
    shown = repr(text if isinstance(value, bytes | memoryview | str) else value)
    return shown if len(shown) <= 40 else shown[:37] + "..."
