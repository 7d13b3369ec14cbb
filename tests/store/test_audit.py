"""The audit log tampered with by raw SQL on the real databases: verify names the first bad
entry (or the head row) in words, a checkpoint catches what the chain alone cannot, and
reading the log never raises on anything stored."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.engine import Connection

from signoff.store import AuditRecord, Checkpoint, SQLStore, open_store
from signoff.store.audit import entry_hash
from signoff.store.times import to_micros
from signoff.types import canonical_json

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
T1 = datetime(2026, 11, 23, 9, 30, tzinfo=UTC)
NO_CHECKPOINT = (
    "without a checkpoint, removal of the newest entries cannot be detected"
    " — see `signoff audit checkpoint`"
)


def record(n: int, actor: str = "alice") -> AuditRecord:
    return AuditRecord(
        actor=actor, action="decision", subject=f"a{n}", data={"n": n, "args": ["é"]}, at=T0
    )


@pytest.fixture
async def log(store: SQLStore) -> SQLStore:
    """A log of five entries."""
    await store.append_audit([record(n) for n in range(1, 6)])
    return store


async def sql(store: SQLStore, *statements: str) -> None:
    def work(connection: Connection) -> None:
        for statement in statements:  # as written: no bind parameters
            connection.exec_driver_sql(statement)

    await store.run(work)


async def checkpoint(store: SQLStore, at: datetime = T1) -> Checkpoint:
    report = await store.verify_audit()
    assert report.ok
    return Checkpoint(seq=report.entries, hash=report.last_hash, at=at)


async def hash_of(store: SQLStore, seq: int) -> str:
    [entry] = await store.audit_log(after=seq - 1, limit=1)
    return entry.hash


def test_the_chain_hashes_exactly_what_it_always_has():
    unusual = AuditRecord(
        actor="é\u2028", action="x", subject="s", data={"b": [1, "é", {"z": None}], "a": 1.5}, at=T0
    )
    body = [7, to_micros(T0), unusual.actor, "x", "s", unusual.data]
    before = hashlib.sha256(b"f" * 64 + canonical_json(body)).hexdigest()
    assert entry_hash("f" * 64, 7, unusual) == before


async def test_an_intact_log_verifies_and_says_what_it_cannot_prove(log: SQLStore):
    report = await log.verify_audit()
    assert (report.ok, report.entries, report.first_bad) == (True, 5, None)
    assert report.reason == f"chain intact (5 entries); {NO_CHECKPOINT}"
    assert report.last_hash == await hash_of(log, 5)


COLUMNS = "at, actor, action, subject, data, prev_hash, hash"


@dataclass(frozen=True)
class Tampering:
    statements: tuple[str, ...]
    first_bad: int | None
    reason: str
    sqlite_only: bool = False


TAMPERINGS = {
    "an entry's actor edited": Tampering(
        ("UPDATE audit SET actor = 'mallory' WHERE seq = 3",),
        3,
        "entry 3 was altered or moved: its content does not match its hash",
    ),
    "an entry's data edited to other JSON": Tampering(
        ("""UPDATE audit SET data = '{"n":30}' WHERE seq = 3""",),
        3,
        "entry 3 was altered or moved: its content does not match its hash",
    ),
    "an entry's data edited to text that is not JSON": Tampering(
        ("UPDATE audit SET data = 'not json' WHERE seq = 3",),
        3,
        "entry 3 was altered or moved: its content does not match its hash; its data is not JSON",
    ),
    "an entry's data nested 100,000 levels deep": Tampering(
        (f"UPDATE audit SET data = '{'[' * 100_000}' WHERE seq = 3",),
        3,
        "entry 3 was altered or moved: its content does not match its hash; "
        "its data is nested too deep to read",
    ),
    "an entry's data a JSON list": Tampering(
        ("UPDATE audit SET data = '[]' WHERE seq = 3",),
        3,
        "entry 3 was altered or moved: its content does not match its hash; "
        "its data is a JSON list, not an object",
    ),
    "an entry's time far in the future": Tampering(
        (f"UPDATE audit SET at = {2**62} WHERE seq = 3",),
        3,
        f"entry 3 is corrupt: its time {2**62} is out of range (not in the years 1 to 9999)",
    ),
    "an entry's time far in the past": Tampering(
        (f"UPDATE audit SET at = {-(2**62)} WHERE seq = 3",),
        3,
        f"entry 3 is corrupt: its time {-(2**62)} is out of range (not in the years 1 to 9999)",
    ),
    "an entry's time made text": Tampering(
        ("UPDATE audit SET at = 'yesterday' WHERE seq = 3",),
        3,
        "entry 3 is corrupt: its time is 'yesterday', not a whole number of microseconds",
        sqlite_only=True,
    ),
    "an entry's time made a fraction": Tampering(
        ("UPDATE audit SET at = 1.5 WHERE seq = 3",),
        3,
        "entry 3 is corrupt: its time is '1.5', not a whole number of microseconds",
        sqlite_only=True,
    ),
    "an entry's actor made bytes that are not UTF-8": Tampering(
        ("UPDATE audit SET actor = CAST(X'FF' AS TEXT) WHERE seq = 3",),
        3,
        "entry 3 is corrupt: its actor is not UTF-8 text",
        sqlite_only=True,
    ),
    "a middle entry deleted": Tampering(
        ("DELETE FROM audit WHERE seq = 3",),
        3,
        "entry 3 is missing: the entries jump from 2 to 4",
    ),
    "the first entry deleted": Tampering(
        ("DELETE FROM audit WHERE seq = 1",),
        1,
        "entry 1 is missing: the log starts at entry 2",
    ),
    "a middle entry deleted and the later ones renumbered": Tampering(
        ("DELETE FROM audit WHERE seq = 3", "UPDATE audit SET seq = seq - 1 WHERE seq > 3"),
        3,
        "entry 3 was altered or moved: its content does not match its hash",
    ),
    "two entries swapped": Tampering(
        (
            "UPDATE audit SET seq = -2 WHERE seq = 2",
            "UPDATE audit SET seq = 2 WHERE seq = 3",
            "UPDATE audit SET seq = 3 WHERE seq = -2",
        ),
        2,
        "entry 2 was altered or moved: its content does not match its hash",
    ),
    "the newest entry deleted, the head left": Tampering(
        ("DELETE FROM audit WHERE seq = 5",),
        5,
        "entry 5 is missing: the head says the log has 5 entries, but it ends at entry 4",
    ),
    "the head moved back, the entries left": Tampering(
        ("UPDATE audit_head SET seq = 3, hash = (SELECT hash FROM audit WHERE seq = 3)",),
        4,
        "entry 4 is past the head: the head says the log has 3 entries, "
        "so it was moved back (or entries were added after it)",
    ),
    "the head's hash edited": Tampering(
        (f"UPDATE audit_head SET hash = '{'a' * 64}'",),
        5,
        "entry 5 was rewritten, or the head row was: the head's hash is not entry 5's hash",
    ),
    "the head row deleted": Tampering(
        ("DELETE FROM audit_head",),
        None,
        "the head row is missing: audit_head is empty",
    ),
    "the head's count made text": Tampering(
        ("UPDATE audit_head SET seq = 'five'",),
        None,
        "the head row is corrupt: its entry count is 'five'",
        sqlite_only=True,
    ),
    "a row numbered 0 added": Tampering(
        (f"INSERT INTO audit SELECT 0, {COLUMNS} FROM audit WHERE seq = 1",),
        None,
        "the audit table has a row numbered 0; entries are numbered from 1",
    ),
    "a row numbered with text added": Tampering(
        (f"INSERT INTO audit SELECT 'x', {COLUMNS} FROM audit WHERE seq = 1",),
        None,
        "the audit table has a row numbered 'x', which is no entry number",
        sqlite_only=True,
    ),
}


@pytest.mark.parametrize("kind", list(TAMPERINGS))
async def test_verify_names_the_first_bad_entry_of_each_tampering(
    log: SQLStore, backend: str, kind: str
):
    tampering = TAMPERINGS[kind]
    if tampering.sqlite_only and backend != "sqlite":
        pytest.skip("PostgreSQL keeps each column's type: this cannot be stored there")
    await sql(log, *tampering.statements)
    report = await log.verify_audit(batch=2)  # small batches: faults at their edges too
    assert (report.ok, report.first_bad, report.reason) == (
        False,
        tampering.first_bad,
        tampering.reason,
    )
    # Reading the log never raises either: every entry still numbered is listed.
    entries = await log.audit_log()
    assert {e.seq for e in entries} <= set(range(6))
    assert await log.audit_length() >= 0


async def test_a_corrupt_entry_is_listed_with_what_is_wrong(log: SQLStore, backend: str):
    deep_object = '{"a":' * 150 + "1" + "}" * 150
    await sql(
        log,
        "UPDATE audit SET data = 'not json' WHERE seq = 1",
        f"UPDATE audit SET data = '{'[' * 100_000}' WHERE seq = 2",
        f"UPDATE audit SET data = '{deep_object}' WHERE seq = 3",
        f"UPDATE audit SET at = {2**62}, data = '{{\"x\":1e999}}' WHERE seq = 4",
    )
    entries = await log.audit_log()
    assert [(e.seq, e.problem, e.data, e.at is None) for e in entries] == [
        (1, "its data is not JSON", {}, False),
        (2, "its data is nested too deep to read", {}, False),
        (3, "its data is nested 150 levels deep (more than 100)", {}, False),
        (4, f"its time {2**62} is out of range (not in the years 1 to 9999)", {}, True),
        (5, None, {"n": 5, "args": ["é"]}, False),
    ]
    if backend == "sqlite":
        await sql(log, "UPDATE audit SET data = CAST(X'FF' AS TEXT), at = 'x' WHERE seq = 5")
        [fifth] = await log.audit_log(after=4)
        assert (fifth.problem, fifth.data, fifth.at) == (
            "its time is 'x', not a whole number of microseconds",
            {},
            None,
        )


async def test_truncating_the_tail_and_rewinding_the_head_is_caught_only_with_a_checkpoint(
    log: SQLStore,
):
    kept = await checkpoint(log)
    third = await hash_of(log, 3)
    await sql(
        log, "DELETE FROM audit WHERE seq > 3", f"UPDATE audit_head SET seq = 3, hash = '{third}'"
    )
    plain = await log.verify_audit()
    assert (plain.ok, plain.reason) == (True, f"chain intact (3 entries); {NO_CHECKPOINT}")
    anchored = await log.verify_audit(since=kept)
    assert (anchored.ok, anchored.first_bad, anchored.reason) == (
        False,
        4,
        "entry 4 is gone: the checkpoint of 2026-11-23T09:30:00Z says the log had 5 entries; "
        "it now has 3",
    )


async def test_emptying_the_log_and_resetting_the_head_is_caught_with_a_checkpoint(
    log: SQLStore,
):
    kept = await checkpoint(log)
    await sql(log, "DELETE FROM audit", f"UPDATE audit_head SET seq = 0, hash = '{'0' * 64}'")
    plain = await log.verify_audit()
    assert (plain.ok, plain.reason) == (True, f"chain intact (0 entries); {NO_CHECKPOINT}")
    anchored = await log.verify_audit(since=kept)
    assert (anchored.ok, anchored.first_bad, anchored.reason) == (
        False,
        1,
        "entry 1 is gone: the checkpoint of 2026-11-23T09:30:00Z says the log had 5 entries; "
        "it now has none",
    )


async def rewrite(store: SQLStore, *, actor: str, start: int = 1) -> None:
    """Rewrite entries from `start` on with another actor, recomputing every hash after."""
    entries = await store.audit_log()
    prev = entries[start - 2].hash if start > 1 else "0" * 64
    statements = []
    for entry in entries[start - 1 :]:
        assert entry.at is not None
        new = AuditRecord(
            actor=actor, action=entry.action, subject=entry.subject, data=entry.data, at=entry.at
        )
        digest = entry_hash(prev, entry.seq, new)
        statements.append(
            f"UPDATE audit SET actor = '{actor}', prev_hash = '{prev}', hash = '{digest}' "
            f"WHERE seq = {entry.seq}"
        )
        prev = digest
    await sql(store, *statements, f"UPDATE audit_head SET hash = '{prev}'")


async def test_a_chain_rewritten_wholesale_is_caught_only_with_a_checkpoint(log: SQLStore):
    kept = await checkpoint(log)
    await log.append_audit([record(6)])  # entries after the checkpoint are fine
    await rewrite(log, actor="mallory")
    assert (await log.verify_audit()).ok
    assert [e.actor for e in await log.audit_log()] == ["mallory"] * 6
    report = await log.verify_audit(since=kept)
    assert (report.ok, report.first_bad, report.reason) == (
        False,
        5,
        "entry 5 is not the one in the checkpoint of 2026-11-23T09:30:00Z: the log was "
        "rewritten at or before it, or the checkpoint is of another database",
    )


async def test_one_entry_rewritten_with_its_own_hash_recomputed_breaks_the_next_link(
    log: SQLStore,
):
    entries = await log.audit_log()
    third = entries[2]
    assert third.at is not None
    forged = AuditRecord(
        actor="mallory", action=third.action, subject=third.subject, data=third.data, at=third.at
    )
    digest = entry_hash(third.prev_hash, 3, forged)
    await sql(log, f"UPDATE audit SET actor = 'mallory', hash = '{digest}' WHERE seq = 3")
    report = await log.verify_audit()
    assert (report.ok, report.first_bad, report.reason) == (
        False,
        3,
        "entry 3 was rewritten, or entry 4 was put after it: "
        "entry 4's prev_hash is not entry 3's hash",
    )


async def test_a_log_intact_since_its_checkpoint_says_so(log: SQLStore):
    kept = await checkpoint(log)
    await log.append_audit([record(6), record(7)])
    report = await log.verify_audit(since=kept)
    assert (report.ok, report.entries, report.checkpoint) == (True, 7, kept)
    assert report.reason == (
        "chain intact (7 entries), and entries 1 to 5 are those of the checkpoint of "
        "2026-11-23T09:30:00Z"
    )


async def test_a_checkpoint_of_another_database_is_caught(log: SQLStore, tmp_path: Path):
    async with open_store(f"sqlite:///{tmp_path / 'other.db'}") as other:
        await other.append_audit([record(n, actor="bob") for n in range(1, 6)])
        theirs = await checkpoint(other)
        await other.append_audit([record(6)])
        longer = await checkpoint(other)
    report = await log.verify_audit(since=theirs)
    assert (report.ok, report.first_bad, report.reason) == (
        False,
        5,
        "entry 5 is not the one in the checkpoint of 2026-11-23T09:30:00Z: the log was "
        "rewritten at or before it, or the checkpoint is of another database",
    )
    assert (await log.verify_audit(since=longer)).first_bad == 6


async def test_a_duplicated_head_row_is_named(log: SQLStore, backend: str):
    if backend == "sqlite":  # SQLite cannot drop a primary key: copy the table without one
        await sql(
            log,
            "CREATE TABLE audit_head_copy AS SELECT * FROM audit_head",
            "DROP TABLE audit_head",
            "ALTER TABLE audit_head_copy RENAME TO audit_head",
        )
    else:
        await sql(log, "ALTER TABLE audit_head DROP CONSTRAINT audit_head_pkey")
    await sql(log, "INSERT INTO audit_head SELECT * FROM audit_head")
    report = await log.verify_audit()
    assert (report.ok, report.first_bad, report.reason) == (
        False,
        None,
        "the head row is duplicated: audit_head has 2 rows, where signoff keeps one",
    )
    assert await log.audit_length() == 5
    assert len(await log.audit_log()) == 5


async def test_a_duplicated_entry_is_named(log: SQLStore, backend: str):
    if backend == "sqlite":
        await sql(
            log,
            "CREATE TABLE audit_copy AS SELECT * FROM audit",
            "DROP TABLE audit",
            "ALTER TABLE audit_copy RENAME TO audit",
        )
    else:
        await sql(log, "ALTER TABLE audit DROP CONSTRAINT audit_pkey")
    await sql(log, "INSERT INTO audit SELECT * FROM audit WHERE seq = 3")
    for batch in (2, 3, 5000):  # the copy inside a batch, or at the end of one
        report = await log.verify_audit(batch=batch)
        assert (report.ok, report.first_bad, report.reason) == (
            False,
            3,
            "entry 3 appears twice",
        )


async def test_the_head_row_deleted_still_leaves_the_log_readable(log: SQLStore):
    await sql(log, "DELETE FROM audit_head")
    assert await log.audit_length() == 5
    assert [e.seq for e in await log.audit_log()] == [1, 2, 3, 4, 5]
    # With the head gone, a checkpoint still catches the entries cut off after it.
    kept = Checkpoint(seq=5, hash=await hash_of(log, 5), at=T1)
    await sql(log, "DELETE FROM audit WHERE seq > 3")
    report = await log.verify_audit(since=kept)
    assert (report.first_bad, report.reason.split(":")[0]) == (4, "entry 4 is gone")
