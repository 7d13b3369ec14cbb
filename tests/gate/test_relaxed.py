"""The relaxed claim (issue 49): a call the policy marks read-only or idempotent (a rule's
``idempotent: true``) is claimed, and its result recorded, without waiting for the disk — lost
with the machine or the database server, its key is free again and the call runs again, which
it may. Every other call's claim still waits for the disk before the call runs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete

from signoff import Approve, Policy, ToolCall
from signoff.gate import CheckContext, Gate, Outcome
from signoff.gate.external import ExternalRuns
from signoff.store import AuditRecord, SQLStore, schema
from signoff.types import Scope
from tests.gate.test_near import recording

POLICY = Policy.from_yaml(
    """
    rules:
      - allow: lookup
        idempotent: true
      - allow: send_email
    """
)


def lookup(call_id: str = "c1") -> ToolCall:
    return ToolCall(id=call_id, name="lookup", args={"key": "q3"})


def email(call_id: str = "c2") -> ToolCall:
    return ToolCall(id=call_id, name="send_email", args={"to": "ops@example.com"})


async def test_a_call_marked_idempotent_is_claimed_without_waiting_for_the_disk(store: SQLStore):
    runs = ExternalRuns(Gate(POLICY, store), origin="relaxed")
    writes = recording(store)
    for call, thread in ((lookup(), "t1"), (email(), "t2")):
        await runs.judged([call], thread=thread)
        assert await runs.once(runs.key(thread, call.id), call, _value) == "done"
    # The result after a call waits for the disk only where a commit that did not could be
    # lost while this process goes on (PostgreSQL's server crashing alone) — and not at all
    # for a call that may run again.
    relaxed = store.unsynced_commits_last
    assert writes == [
        ("ledger_claim", False), ("ledger_finish", False),
        ("ledger_claim", True), ("ledger_finish", not relaxed),
    ]  # fmt: skip


async def test_a_caller_may_say_a_call_is_idempotent_where_the_policy_does_not(store: SQLStore):
    runs = ExternalRuns(Gate(POLICY, store), origin="relaxed")
    writes = recording(store)
    await runs.judged([email()], thread="t1")
    assert await runs.once(runs.key("t1", "c2"), email(), _value, idempotent=True) == "done"
    assert writes == [("ledger_claim", False), ("ledger_finish", False)]


async def test_an_idempotent_claim_lost_before_it_reached_the_disk_records_the_result_anew(
    store: SQLStore,
):
    """The database server crashed while the call ran and lost its claim (it had not waited for
    the disk): the key is free. The call ran; its result is recorded now, and a later caller
    of the key gets it without running the call."""
    runs = ExternalRuns(Gate(POLICY, store), origin="relaxed")
    key = runs.key("t1", "c1")
    await runs.judged([lookup()], thread="t1")
    ran: list[str] = []

    async def lost_meanwhile() -> str:
        ran.append("lookup")
        gone = delete(schema.ledger).where(schema.ledger.c.key == key)
        await store.run(lambda c: c.execute(gone))
        return "value"

    assert await runs.once(key, lookup(), lost_meanwhile) == "value"
    assert await runs.once(key, lookup(), lost_meanwhile) == "value"
    assert ran == ["lookup"]
    entry = await store.ledger_entry(key)
    assert entry is not None and entry.status == "finished"


HOLDING = Policy.from_yaml(
    """
    rules:
      - allow: lookup
      - ask: send_email
      - deny: drop_table
    """
)


def forwarded(outcomes: list[Outcome]) -> list[AuditRecord]:
    """An entry for each call let through, as the MCP gateway audits its forwards."""
    at = datetime.now(UTC)
    return [
        AuditRecord(actor="carol", action="forward", subject=o.call.id, at=at, data={})
        for o in outcomes
        if o.kind == "run"
    ]


async def test_a_hold_asked_not_to_wait_for_the_disk_waits_unless_the_policy_lets_all_run(
    store: SQLStore,
):
    """What may be lost with the machine is only a call the policy itself lets run, with its
    forward: a held call, a refusal and a grant's use are written by a commit that waits."""
    gate = Gate(HOLDING, store)
    context = CheckContext(origin="gateway", requested_by="carol")
    drop = ToolCall(id="c3", name="drop_table", args={"table": "users"})
    writes = recording(store)
    kinds = []
    for call in (lookup(), email(), drop):
        [outcome], _ = await gate.hold([call], context, also_audit=forwarded, durable=False)
        kinds.append(outcome.kind)
    assert kinds == ["run", "hold", "block"]
    # Judged again, durable, after the plan said it holds or refuses: rolled back first.
    assert writes == [("hold", False), ("hold", False), ("hold", True), ("hold", False),
                      ("hold", True)]  # fmt: skip
    [held] = await store.list_approvals(status="pending")
    assert held.call.name == "send_email"
    entries = [(e.action, e.subject) for e in await store.audit_log()]
    assert ("forward", "c1") in entries and ("verdict", "c3") in entries
    assert len(entries) == 3  # the rolled-back tries wrote nothing

    await gate.decide(held.id, Approve(always=Scope(kind="global")), actor="alice")
    del writes[:]
    [outcome], _ = await gate.hold([email("c4")], context, also_audit=forwarded, durable=False)
    assert outcome.kind == "run"  # by the grant, whose use is on the record: on the disk
    assert writes == [("hold", False), ("hold", True)]


async def _value() -> Any:
    return "done"
