"""One lock order everywhere (issue 37): every transaction that appends to the audit chain and
writes a run takes the chain's head before the run's row — a decision too, which appended its
`decision` event to the run before its audit entry. Two transactions taking them in opposite
orders deadlock on PostgreSQL, and the database aborts one of them."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Connection

from signoff.store import AuditRecord, DecisionPlan, SQLStore
from signoff.store import ledger as ledger_module
from signoff.store.base import Moment
from signoff.store.runs import RunRecord, RunWrite
from signoff.types import Approval, Approve, ToolCall
from tests.deadline import HANG

T0 = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)

# Within a transaction, PostgreSQL reads its statistics views from a snapshot: cleared first.
FRESH_VIEWS = text("SELECT pg_stat_clear_snapshot(), pg_sleep(0.01)")
WAITING_ON_A_LOCK = text(
    "SELECT count(*) FROM pg_stat_activity "
    "WHERE datname = current_database() AND wait_event_type = 'Lock'"
)


async def test_a_ledger_start_and_a_decision_on_the_same_run_both_commit(
    store: SQLStore, monkeypatch: pytest.MonkeyPatch
):
    """A tool's start (the audit head, then the run's row) and a decision of one of the run's
    approvals (its row, the run's row, the audit head): the start holds the head while the
    decision begins; both commit, neither aborted as a deadlock."""
    if store.engine.dialect.name != "postgresql":
        pytest.skip("SQLite has one writer at a time: its transactions never wait on each other")
    run = RunRecord(id="r1", thread_id="t1", agent="ops", status="running", started_by=None,
                    lease_owner="w1", version=1)  # fmt: skip
    await store.create_run(run, at=T0, lease_until=T0 + timedelta(hours=1))
    held = Approval(
        id="a1", call=ToolCall(id="c1", name="delete_pod", args={"name": "web"}, agent="ops"),
        batch_id="b1", run_id="r1", thread_id="t1", rule="rules[0]", reason="asked",
        requested_at=T0,
    )  # fmt: skip
    await store.create_approvals([held])

    holding_head = asyncio.Event()
    real = ledger_module.append_audit  # type: ignore[attr-defined]

    def append_then_wait(connection: Connection, records: Any) -> None:
        real(connection, records)  # the audit head is locked until this transaction ends
        holding_head.set()
        # Until the decision waits on a lock (its own order decides which): then this start
        # goes on to the run's row. A decision that never waits ends the test at its deadline.
        waiting: int | None = 0
        while not waiting:
            connection.execute(FRESH_VIEWS)
            waiting = connection.execute(WAITING_ON_A_LOCK).scalar()

    monkeypatch.setattr(ledger_module, "append_audit", append_then_wait)

    async def start() -> Any:
        return await store.ledger_start(
            "r1:c0", run_id="r1", call_id="c0", tool="lookup", digest="d", at=T0,
            then=lambda _: RunWrite(run_id="r1", owner="w1", at=T0,
                                    events=[("tool_started", {"call_id": "c0"})]),
            audit=[AuditRecord(actor="w1", action="tool", subject="c0", at=T0)],
        )  # fmt: skip

    def approve(current: list[Approval], _: Moment) -> DecisionPlan:
        [pending] = current
        decided = replace(pending, status="approved", decision=Approve(), decided_by="alice",
                          decided_at=T0, version=pending.version + 1)  # fmt: skip
        return DecisionPlan(
            changes=[(decided, pending.version)],
            audit=[AuditRecord(actor="alice", action="decision", subject="a1", at=T0)],
        )

    async def decide() -> Any:
        await holding_head.wait()
        return await store.decide(["a1"], approve)

    started, decided = await asyncio.wait_for(asyncio.gather(start(), decide()), HANG)
    assert started[0] is None  # the tool's start, new
    assert [a.status for a, _ in decided.changes] == ["approved"]
    events = [e.type for e in await store.run_events("r1")]
    assert sorted(events) == ["decision", "tool_started"]
    assert (await store.verify_audit()).ok
