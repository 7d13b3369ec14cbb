"""Retention on both stores: the audit log pruned behind signed checkpoints (and still proving
itself, or its tampering, afterwards), delivered notifications, and finished runs' payloads."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from itertools import count
from typing import Any

import pytest

from signoff.errors import CheckpointError
from signoff.store import AuditRecord, Checkpoint, SQLStore
from signoff.store.blobs import LARGE
from signoff.store.outbox import NewDelivery, OutboxEvent
from signoff.store.retention import (
    PRUNED,
    prune_audit,
    prune_outbox,
    prune_payloads,
)
from signoff.store.runs import RunRecord, RunStatus

KEY = b"k3y-that-the-database-never-sees"
OLD = datetime(2025, 1, 1, tzinfo=UTC)
NOW = datetime(2026, 11, 27, tzinfo=UTC)
BOUND = NOW - timedelta(days=365)


@pytest.fixture(autouse=True)
def audit_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIGNOFF_AUDIT_KEY", KEY.decode())


async def add_entries(store: SQLStore, n: int, at: datetime) -> None:
    records = [
        AuditRecord(actor="alice", action="decided", subject=f"a{i}", data={"i": i}, at=at)
        for i in range(n)
    ]
    await store.append_audit(records)


async def checkpoint(store: SQLStore, *, signed: bool = True) -> Checkpoint:
    report = await store.verify_audit()
    assert report.ok, report.reason
    made = Checkpoint(seq=report.entries, hash=report.last_hash, at=NOW)
    return made.sign(KEY) if signed else made


async def raw(store: SQLStore, *statements: str) -> None:
    await store.run(lambda c: [c.exec_driver_sql(s) for s in statements])


async def test_pruned_entries_go_and_the_rest_of_the_chain_still_verifies(store: SQLStore):
    await add_entries(store, 10, OLD)
    at_ten = await checkpoint(store)
    await add_entries(store, 5, NOW)
    at_fifteen = await checkpoint(store)

    pruned = await prune_audit(store, before=BOUND, key=KEY, checkpoint=at_fifteen, now=NOW)

    assert (pruned.entries, pruned.through) == (10, 10)
    assert [e.seq for e in await store.audit_log()] == [11, 12, 13, 14, 15]
    report = await store.verify_audit()
    assert report.ok, report.reason
    assert (report.entries, report.pruned) == (15, 10)
    assert "entries 11 to 15; 1 to 10 pruned behind the checkpoint of 2026-11-27" in report.reason
    later = await store.verify_audit(since=at_fifteen)
    assert later.ok and "entries 11 to 15 are those of the checkpoint" in later.reason
    # The checkpoint of the last pruned entry matches what the anchor keeps.
    at_anchor = await store.verify_audit(since=at_ten)
    assert at_anchor.ok, at_anchor.reason
    # Appending and pruning again, behind the checkpoint kept from the last prune.
    await add_entries(store, 2, NOW + timedelta(days=400))
    again = await prune_audit(store, before=NOW + timedelta(days=1), key=KEY, now=NOW)
    assert (again.entries, again.through) == (5, 15)
    report = await store.verify_audit()
    assert report.ok and report.entries == 17, report.reason
    assert await store.audit_length() == 17


async def test_a_checkpoint_of_a_pruned_entry_says_it_was_pruned(store: SQLStore):
    await add_entries(store, 4, OLD)
    at_four = await checkpoint(store)
    await add_entries(store, 4, OLD)
    at_eight = await checkpoint(store)
    await prune_audit(store, before=BOUND, key=KEY, checkpoint=at_eight, now=NOW)

    report = await store.verify_audit(since=at_four)

    assert not report.ok
    assert "names entry 4, which was pruned (the log starts after entry 8 now)" in report.reason


async def test_only_entries_read_by_the_notifications_and_older_than_the_bound_go(
    store: SQLStore,
):
    await add_entries(store, 3, OLD)
    await store.outbox_events()  # the notifications start reading here: after entry 3
    await add_entries(store, 3, OLD)
    await add_entries(store, 2, NOW)
    cover = await checkpoint(store)

    pruned = await prune_audit(store, before=BOUND, key=KEY, checkpoint=cover, now=NOW)

    assert pruned.through == 3
    cursor, last, _ = await store.outbox_events()
    assert (cursor, last) == (3, 8)
    await store.outbox_add([], cursor=cursor, last=last, ids=iter(()).__next__, at=NOW)
    # Entries made after the bound stay, however far the checkpoint reaches.
    assert (await prune_audit(store, before=BOUND, key=KEY, now=NOW)).through == 6
    assert (await store.verify_audit()).ok


async def test_pruning_refuses_without_a_signed_checkpoint_that_matches_the_log(
    store: SQLStore, monkeypatch: pytest.MonkeyPatch
):
    await add_entries(store, 5, OLD)
    cover = await checkpoint(store)
    unsigned = await checkpoint(store, signed=False)
    other = Checkpoint(seq=5, hash="ab" * 32, at=NOW).sign(KEY)

    with pytest.raises(CheckpointError, match="needs SIGNOFF_AUDIT_KEY"):
        await prune_audit(store, before=BOUND, key=None, checkpoint=cover, now=NOW)
    with pytest.raises(CheckpointError, match="no checkpoint to prune the audit log behind"):
        await prune_audit(store, before=BOUND, key=KEY, now=NOW)
    with pytest.raises(CheckpointError, match="the checkpoint is unsigned"):
        await prune_audit(store, before=BOUND, key=KEY, checkpoint=unsigned, now=NOW)
    another = b"another key, long enough"
    with pytest.raises(CheckpointError, match="signature does not match"):
        await prune_audit(store, before=BOUND, key=another, checkpoint=cover, now=NOW)
    with pytest.raises(CheckpointError, match="does not verify, nothing pruned: entry 5 is not"):
        await prune_audit(store, before=BOUND, key=KEY, checkpoint=other, now=NOW)
    await raw(store, "UPDATE audit SET actor = 'mallory' WHERE seq = 2")
    with pytest.raises(CheckpointError, match="does not verify, nothing pruned: entry 2 was"):
        await prune_audit(store, before=BOUND, key=KEY, checkpoint=cover, now=NOW)
    assert [e.seq for e in await store.audit_log()] == [1, 2, 3, 4, 5]


async def test_a_dry_run_counts_what_would_go_and_removes_nothing(store: SQLStore):
    await add_entries(store, 5, OLD)
    cover = await checkpoint(store)

    dry = await prune_audit(store, before=BOUND, key=KEY, checkpoint=cover, now=NOW, dry_run=True)

    assert (dry.entries, dry.through) == (5, 5)
    assert len(await store.audit_log()) == 5
    assert (await store.verify_audit()).pruned == 0


async def test_entries_cut_off_the_start_are_found_with_or_without_a_prune(store: SQLStore):
    await add_entries(store, 8, OLD)
    await raw(store, "DELETE FROM audit WHERE seq <= 3")
    assert (await store.verify_audit()).reason == (
        "entry 1 is missing: the log starts at entry 4"
    )  # fmt: skip
    await raw(
        store, "DELETE FROM audit", "UPDATE audit_head SET seq = 0, hash = '" + "0" * 64 + "'"
    )
    await add_entries(store, 8, OLD)
    await prune_audit(store, before=BOUND, key=KEY, checkpoint=await checkpoint(store), now=NOW)
    await add_entries(store, 4, NOW)

    await raw(store, "DELETE FROM audit WHERE seq <= 10")

    report = await store.verify_audit()
    assert not report.ok and report.first_bad == 9
    assert report.reason == (
        "entry 9 is missing: the log was pruned up to entry 8, but starts at entry 11"
    )
    # The record of the prune removed with them: the log lacks its start.
    await raw(store, "DELETE FROM audit_anchor")
    assert (await store.verify_audit()).reason == "entry 1 is missing: the log starts at entry 11"


async def test_moving_or_forging_the_record_of_a_prune_is_found(
    store: SQLStore, monkeypatch: pytest.MonkeyPatch
):
    await add_entries(store, 8, OLD)
    await add_entries(store, 4, NOW)
    await prune_audit(store, before=BOUND, key=KEY, checkpoint=await checkpoint(store), now=NOW)
    [tenth] = [e for e in await store.audit_log() if e.seq == 10]

    # Two more entries cut off, and the anchor moved after them: its signature no longer holds.
    await raw(
        store,
        "DELETE FROM audit WHERE seq <= 10",
        f"UPDATE audit_anchor SET seq = 10, hash = '{tenth.hash}'",
    )
    report = await store.verify_audit()
    assert not report.ok
    assert "the record of the prune is not to be trusted" in report.reason
    assert "not signed with SIGNOFF_AUDIT_KEY" in report.reason

    # Without the key the record cannot be checked: the log is not said to be intact.
    monkeypatch.delenv("SIGNOFF_AUDIT_KEY")
    unchecked = await store.verify_audit()
    assert not unchecked.ok
    assert unchecked.reason.startswith(
        "cannot tell whether the log is intact: it starts after a prune up to entry 10, whose "
        "signed record only SIGNOFF_AUDIT_KEY can check, and it is not set here"
    )


async def test_a_forged_record_of_a_prune_is_a_fault(store: SQLStore):
    await add_entries(store, 6, OLD)
    [third] = [e for e in await store.audit_log() if e.seq == 3]
    forged = Checkpoint(seq=3, hash=third.hash, at=NOW).sign(b"not the key, but long enough")
    await raw(
        store,
        "DELETE FROM audit WHERE seq <= 3",
        "INSERT INTO audit_anchor (id, seq, hash, checkpoint, signature, at) VALUES "
        f"(1, 3, '{third.hash}', '{forged.text()}', '{'0' * 64}', 0)",
    )

    report = await store.verify_audit()

    assert not report.ok
    assert report.reason.startswith("the record of the prune is not to be trusted")


# -- the outbox and payloads -----------------------------------------------------------------


async def test_delivered_notifications_older_than_the_bound_go_and_undelivered_stay(
    store: SQLStore,
):
    ids = (f"d{n}" for n in count())
    events = [
        OutboxEvent(seq=n, at=OLD, kind="requested", subject=f"a{n}", actor="gate", data={})
        for n in range(1, 5)
    ]
    await store.outbox_add(
        [NewDelivery(sink="hook", event=e) for e in events],
        cursor=(await store.outbox_events())[0],
        last=0,
        ids=lambda: next(ids),
        at=OLD,
    )
    claimed = await store.outbox_claim(
        owner="w", now=OLD, lease=timedelta(minutes=1), sinks=["hook"]
    )
    done = {"d0": OLD, "d1": NOW}
    for delivery in claimed:
        if delivery.id in done:
            await store.outbox_done(delivery.id, owner="w", at=done[delivery.id])
    await store.outbox_done("d2", owner="w", at=OLD, error="boom", retry_at=NOW)

    assert await prune_outbox(store, before=BOUND, dry_run=True) == 1
    assert await prune_outbox(store, before=BOUND) == 1

    left = {d.id: d.status for d in await store.outbox()}
    assert left == {"d1": "sent", "d2": "pending", "d3": "pending"}


def big(text: str) -> str:
    return text * (LARGE // len(text) + 1)


async def add_run(
    store: SQLStore, run_id: str, status: RunStatus, *, result: str, at: datetime
) -> None:
    record = RunRecord(
        id=run_id, thread_id=f"t-{run_id}", agent="ops", status="running", started_by="alice",
        lease_owner="w", version=1,
    )  # fmt: skip
    messages = [
        {"role": "user", "content": "read the logs"},
        {"role": "tool", "tool_call_id": "c1", "content": result},
    ]
    events = [("tool_result", {"call_id": "c1", "tool": "read_logs", "result": result})]
    await store.create_run(record, at=at, lease_until=at, messages=messages, events=events)
    await store.append_to_run(run_id, at=at, status=status, owner="w")


async def blob_count(store: SQLStore) -> int:
    counted = await store.run(lambda c: c.exec_driver_sql("SELECT count(*) FROM blobs").scalar())
    return int(counted or 0)


async def test_finished_runs_lose_their_large_payloads_and_still_read(store: SQLStore):
    shared, own = big("shared line\n"), big("own line\n")
    await add_run(store, "r-done", "completed", result=shared, at=OLD)
    await add_run(store, "r-failed", "failed", result=own, at=OLD)
    await add_run(store, "r-paused", "paused", result=shared, at=OLD)
    await add_run(store, "r-recent", "completed", result=big("recent\n"), at=NOW)
    assert await blob_count(store) == 6  # a message and an event of each distinct result

    assert await prune_payloads(store, before=BOUND, dry_run=True) == (2, 2)
    assert await blob_count(store) == 6
    assert await prune_payloads(store, before=BOUND) == (2, 2)

    assert await blob_count(store) == 4  # the paused run's (shared) and the recent one's
    messages = await store.run_messages("r-done")
    assert messages == [
        {"role": "user", "content": "read the logs"},
        {"role": "tool", "tool_call_id": "c1", "content": PRUNED},
    ]
    [event] = await store.run_events("r-failed")
    assert event.data == {"call_id": "c1", "tool": "read_logs", "result": PRUNED}
    assert (await store.run_messages("r-paused"))[1]["content"] == shared
    assert (await store.run_events("r-recent"))[0].data["result"] == big("recent\n")
    assert await prune_payloads(store, before=BOUND) == (0, 0)


async def test_a_pruned_conversation_with_large_call_arguments_can_still_be_continued(
    store: SQLStore,
):
    from signoff.agent.model import message_from_dict

    record = RunRecord(
        id="r-calls", thread_id="t-calls", agent="ops", status="running", started_by="alice",
        lease_owner="w", version=1,
    )  # fmt: skip
    call = {"id": "c1", "name": "write_file", "args": {"path": "a.txt", "text": big("x")}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "write it"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "name": "write_file", "content": "ok"},
    ]
    await store.create_run(record, at=OLD, lease_until=OLD, messages=messages, events=[])
    await store.append_to_run("r-calls", at=OLD, status="completed", owner="w")

    assert await prune_payloads(store, before=BOUND) == (1, 1)

    kept = await store.run_messages("r-calls")
    assert kept[1] == {
        "role": "assistant", "content": PRUNED,
        "tool_calls": [{"id": "c1", "name": "write_file", "args": {"pruned": PRUNED}}],
    }  # fmt: skip
    # What a thread continued later reads back: every message still a message.
    [_, assistant, _] = [message_from_dict(m) for m in kept]
    assert assistant.tool_calls[0].name == "write_file"


async def test_a_signed_record_whose_hash_is_not_its_checkpoint_s_is_a_fault(store: SQLStore):
    from signoff.store.anchor import Anchor, write_anchor

    await add_entries(store, 4, OLD)
    cover = await checkpoint(store)
    wrong = Anchor.made(seq=4, hash="ab" * 32, checkpoint=cover, key=KEY, at=NOW)
    await store.run(lambda c: write_anchor(c, wrong))
    await raw(store, "DELETE FROM audit")

    report = await store.verify_audit()

    assert not report.ok
    assert report.reason == (
        "the record of the prune up to entry 4 keeps a hash that is not the one of the "
        "checkpoint it was pruned behind"
    )


async def test_a_prune_that_fails_before_it_commits_removes_nothing(
    store: SQLStore, monkeypatch: pytest.MonkeyPatch
):
    import signoff.store.retention

    await add_entries(store, 5, OLD)
    cover = await checkpoint(store)

    def crash(*_: object) -> None:
        raise OSError("the machine went down")

    monkeypatch.setattr(signoff.store.retention, "write_anchor", crash)
    with pytest.raises(OSError, match="the machine went down"):
        await prune_audit(store, before=BOUND, key=KEY, checkpoint=cover, now=NOW)

    assert [e.seq for e in await store.audit_log()] == [1, 2, 3, 4, 5]
    report = await store.verify_audit(since=cover)
    assert report.ok and report.pruned == 0, report.reason


async def test_entries_appended_while_the_log_is_pruned_are_kept_and_chained(store: SQLStore):
    await add_entries(store, 40, OLD)
    cover = await checkpoint(store)

    async def append() -> None:
        for _ in range(20):
            await add_entries(store, 1, NOW)

    pruned, _ = await asyncio.gather(
        prune_audit(store, before=BOUND, key=KEY, checkpoint=cover, now=NOW), append()
    )

    assert (pruned.entries, pruned.through) == (40, 40)
    report = await store.verify_audit(since=cover)
    assert report.ok and report.entries == 60, report.reason
    assert [e.seq for e in await store.audit_log()] == list(range(41, 61))
