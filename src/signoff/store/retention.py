"""Retention: removing what is older than a bound — delivered notifications, the large payloads
of finished runs, and the oldest audit entries — each kind in transactions that leave the store
consistent whenever they stop.

Audit entries go only behind a checkpoint signed with ``SIGNOFF_AUDIT_KEY`` at or beyond the
last one removed, checked against the log first: the anchor (`signoff.store.anchor`) keeps the
last removed entry's hash with that checkpoint, so that the rest of the chain still proves
itself. Entries the notifications have not read yet are kept, whatever their age.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import delete, func, select, union, update
from sqlalchemy.engine import Connection

from signoff.errors import CheckpointError
from signoff.store import schema
from signoff.store.anchor import Anchor, read_anchor, write_anchor
from signoff.store.audit import LOCK_AUDIT_HEAD
from signoff.store.blobs import PRUNED
from signoff.store.checkpoint import KEY_VARIABLE, Checkpoint
from signoff.store.sql import SQLStore
from signoff.store.times import to_micros
from signoff.types import canonical_json

__all__ = [
    "FINISHED",
    "PRUNED",
    "AuditPruned",
    "prune_audit",
    "prune_outbox",
    "prune_payloads",
]

T = TypeVar("T")

FINISHED = ("completed", "failed")
"""The statuses of runs whose payloads may go: never a paused or running one."""
_SMALL = 1024
"""A pruned message or event keeps its values up to this size (as JSON): role, ids, names."""
_BLOB_PREFIX = '{"$blob":"'
_RUNS_PER_TRANSACTION = 200

_audit = schema.audit
_runs = schema.runs
_messages = schema.messages
_events = schema.events
_blobs = schema.blobs


@dataclass(frozen=True, kw_only=True)
class AuditPruned:
    """What pruning the audit log removed."""

    entries: int
    """How many entries were removed now."""
    through: int
    """The log's last removed entry, now or before (0: none ever was)."""
    checkpoint: Checkpoint | None
    """The checkpoint they were removed behind."""


class _DryRun(Exception):
    """Roll back what a dry run counted."""

    def __init__(self, result: object) -> None:
        self.result = result


async def _once(store: SQLStore, work: Callable[[Connection], T], *, dry_run: bool) -> T:
    """Run `work` as one transaction; rolled back when `dry_run`, its result kept."""
    if not dry_run:
        return await store.run(work)

    def rolled_back(connection: Connection) -> T:
        raise _DryRun(work(connection))

    try:
        await store.run(rolled_back)
    except _DryRun as dry:
        return dry.result  # type: ignore[return-value]
    raise AssertionError("unreachable: a dry run always rolls back")  # pragma: no cover


# -- the outbox ------------------------------------------------------------------------------


async def prune_outbox(store: SQLStore, *, before: datetime, dry_run: bool = False) -> int:
    """Remove the notifications sent before `before`; one not sent yet (pending, or failed for
    good) is never removed. How many went."""
    box = schema.outbox
    statement = delete(box).where(box.c.status == "sent", box.c.sent_at < to_micros(before))
    return await _once(store, lambda c: int(c.execute(statement).rowcount), dry_run=dry_run)


# -- the payloads of finished runs -----------------------------------------------------------


async def prune_payloads(
    store: SQLStore, *, before: datetime, dry_run: bool = False
) -> tuple[int, int]:
    """Replace the large messages and event data (those kept as blobs) of runs that finished
    before `before` with what is small in them and `PRUNED`, and remove the blobs no other run
    still refers to. How many runs were pruned, and how many blobs went."""
    limit = None if dry_run else _RUNS_PER_TRANSACTION
    runs = blobs = 0
    while True:
        done = await _once(
            store, lambda c: _prune_payloads(c, to_micros(before), limit), dry_run=dry_run
        )
        runs, blobs = runs + done[0], blobs + done[1]
        if dry_run or done[0] < _RUNS_PER_TRANSACTION:
            return runs, blobs


def _prune_payloads(connection: Connection, before: int, limit: int | None) -> tuple[int, int]:
    finished = select(_runs.c.id).where(_runs.c.status.in_(FINISHED), _runs.c.updated_at < before)
    with_blobs = union(
        select(_messages.c.run_id).where(
            _messages.c.run_id.in_(finished), _messages.c.blob.is_not(None)
        ),
        select(_events.c.run_id).where(
            _events.c.run_id.in_(finished), _events.c.data.startswith(_BLOB_PREFIX)
        ),
    ).subquery()
    query = select(with_blobs.c.run_id).order_by(with_blobs.c.run_id)
    ids = list(connection.execute(query if limit is None else query.limit(limit)).scalars())
    if not ids:
        return 0, 0
    hashes = _prune_messages(connection, ids) | _prune_events(connection, ids)
    return len(ids), _drop_unreferenced(connection, hashes)


def _prune_messages(connection: Connection, run_ids: list[str]) -> set[str]:
    rows = connection.execute(
        select(_messages.c.run_id, _messages.c.seq, _messages.c.role, _messages.c.blob)
        .add_columns(_blobs.c.data.label("blob_data"))
        .outerjoin(_blobs, _blobs.c.hash == _messages.c.blob)
        .where(_messages.c.run_id.in_(run_ids), _messages.c.blob.is_not(None))
    ).all()
    for row in rows:
        message = _inflated(row.blob_data) or {"role": row.role}
        connection.execute(
            update(_messages)
            .where(_messages.c.run_id == row.run_id, _messages.c.seq == row.seq)
            .values(data=canonical_json(_shrunk_message(message)).decode(), blob=None)
        )
    return {row.blob for row in rows}


def _prune_events(connection: Connection, run_ids: list[str]) -> set[str]:
    rows = connection.execute(
        select(_events.c.run_id, _events.c.seq, _events.c.data).where(
            _events.c.run_id.in_(run_ids), _events.c.data.startswith(_BLOB_PREFIX)
        )
    ).all()
    hashes = set()
    for row in rows:
        digest = json.loads(row.data).get("$blob")
        if not isinstance(digest, str):
            continue
        hashes.add(digest)
        stored = connection.execute(select(_blobs.c.data).where(_blobs.c.hash == digest)).scalar()
        data = _inflated(stored) or {}
        connection.execute(
            update(_events)
            .where(_events.c.run_id == row.run_id, _events.c.seq == row.seq)
            .values(data=canonical_json(_shrunk(data, None)).decode())
        )
    return hashes


def _drop_unreferenced(connection: Connection, hashes: set[str]) -> int:
    """Remove those of the blobs `hashes` that no message or event refers to any more."""
    if not hashes:
        return 0
    wanted = sorted(hashes)
    # Locked first (PostgreSQL): a writer that reuses one of these blobs locks it too
    # (`blobs._keep`), so either it waits for this prune or this prune sees its reference.
    connection.execute(
        select(_blobs.c.hash).where(_blobs.c.hash.in_(wanted)).with_for_update()
    ).all()
    used = set(
        connection.execute(
            select(_messages.c.blob).where(_messages.c.blob.in_(wanted)).distinct()
        ).scalars()
    )
    references = [canonical_json({"$blob": digest}).decode() for digest in wanted]
    for data in connection.execute(
        select(_events.c.data).where(_events.c.data.in_(references)).distinct()
    ).scalars():
        used.add(json.loads(data)["$blob"])
    unused = [digest for digest in wanted if digest not in used]
    if not unused:
        return 0
    return int(connection.execute(delete(_blobs).where(_blobs.c.hash.in_(unused))).rowcount)


def _inflated(blob: bytes | None) -> dict[str, Any] | None:
    if blob is None:
        return None
    value = json.loads(zlib.decompress(blob))
    return value if isinstance(value, dict) else None


_MESSAGE_KEYS = frozenset({"role", "tool_call_id", "name"})
"""What a message keeps whatever its size: a conversation continued later must still read."""


def _shrunk_message(message: dict[str, Any]) -> dict[str, Any]:
    """A message as a continued conversation can still read it: its content `PRUNED`, its
    calls kept (id, name, small fields) with large arguments replaced by a note saying so."""
    kept = _shrunk({k: v for k, v in message.items() if k != "tool_calls"}, "content")
    kept.update({k: message[k] for k in _MESSAGE_KEYS if k in message})
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        kept["tool_calls"] = [_shrunk_call(c) for c in calls if isinstance(c, dict)]
    return kept


def _shrunk_call(call: dict[str, Any]) -> dict[str, Any]:
    shrunk = {key: item for key, item in call.items() if len(canonical_json(item)) <= _SMALL}
    shrunk.update({k: call[k] for k in ("id", "name") if k in call})
    if "args" in call and "args" not in shrunk:
        shrunk["args"] = {"pruned": PRUNED}
    return shrunk


def _shrunk(value: dict[str, Any], always: str | None) -> dict[str, Any]:
    """`value` with each large value (and the one named `always`) read as `PRUNED`."""
    kept = {
        key: item if key != always and len(canonical_json(item)) <= _SMALL else PRUNED
        for key, item in value.items()
    }
    if always is not None:
        kept[always] = PRUNED
    return kept


# -- the audit log ---------------------------------------------------------------------------


async def prune_audit(
    store: SQLStore,
    *,
    before: datetime,
    key: bytes | None,
    checkpoint: Checkpoint | None = None,
    now: datetime,
    dry_run: bool = False,
) -> AuditPruned:
    """Remove the audit entries made before `before`, behind `checkpoint` (or the one the log
    was last pruned behind), which must be signed with `key` and match the log; only entries
    up to the checkpoint's, and read by the notifications, go. `CheckpointError` when no
    checkpoint can be trusted or the log does not verify against it: nothing is removed."""
    if key is None:
        raise CheckpointError(
            f"pruning the audit log needs {KEY_VARIABLE}: entries go only behind a checkpoint "
            "signed with it"
        )
    anchor = await store.run(read_anchor, write=False)
    cover = checkpoint or (None if anchor is None else anchor.covering(key))
    if cover is None:
        raise CheckpointError(
            "no checkpoint to prune the audit log behind: make one with `signoff audit "
            "checkpoint` and give it (--checkpoint)"
        )
    cover.check(key)
    if not cover.signed:
        raise CheckpointError("the audit log is pruned only behind a signed checkpoint")
    report = await store.verify_audit(since=cover)
    if not report.ok:
        raise CheckpointError(f"the audit log does not verify, nothing pruned: {report.reason}")

    def work(connection: Connection) -> AuditPruned:
        return _prune_audit(connection, to_micros(before), cover, key, now)

    return await _once(store, work, dry_run=dry_run)


def _prune_audit(
    connection: Connection, before: int, cover: Checkpoint, key: bytes, now: datetime
) -> AuditPruned:
    head = connection.execute(LOCK_AUDIT_HEAD).one()  # appenders wait: the head stays put
    anchor = read_anchor(connection)
    done = 0 if anchor is None else anchor.seq
    _check_against_log(connection, cover, anchor)
    through = min(cover.seq, head.seq, _read_by_notifications(connection, head.seq))
    young = connection.execute(
        select(func.min(_audit.c.seq)).where(_audit.c.seq > done, _audit.c.at >= before)
    ).scalar()
    if young is not None:
        through = min(through, young - 1)
    if through <= done:
        return AuditPruned(entries=0, through=done, checkpoint=cover)
    last = connection.execute(select(_audit.c.hash).where(_audit.c.seq == through)).scalar()
    if last is None:
        raise CheckpointError(f"entry {through} is not in the audit log: nothing pruned")
    removed = connection.execute(delete(_audit).where(_audit.c.seq <= through)).rowcount
    write_anchor(connection, Anchor.made(seq=through, hash=last, checkpoint=cover, key=key, at=now))
    return AuditPruned(entries=int(removed), through=through, checkpoint=cover)


def _check_against_log(connection: Connection, cover: Checkpoint, anchor: Anchor | None) -> None:
    """The checkpoint's entry must be the log's, as kept or as the anchor records it."""
    if cover.seq == 0:
        return  # of an empty log: it covers nothing
    if anchor is not None and cover.seq <= anchor.seq:
        if cover.seq == anchor.seq and cover.hash == anchor.hash:
            return
        raise CheckpointError(
            f"the checkpoint names entry {cover.seq}, which was pruned already (the log starts "
            f"after entry {anchor.seq}): give a later checkpoint"
        )
    stored = connection.execute(select(_audit.c.hash).where(_audit.c.seq == cover.seq)).scalar()
    if stored != cover.hash:
        raise CheckpointError(
            f"the checkpoint does not match the log: entry {cover.seq} is not the one it names"
        )


def _read_by_notifications(connection: Connection, head: int) -> int:
    """The last entry the notifications have read (the head, when they never started)."""
    cursor = connection.execute(
        select(schema.outbox_cursor.c.seq).where(schema.outbox_cursor.c.id == 1)
    ).scalar()
    return head if cursor is None else int(cursor)
