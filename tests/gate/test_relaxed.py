"""The relaxed claim (issue 49): a call the policy marks read-only or idempotent (a rule's
``idempotent: true``) is claimed, and its result recorded, without waiting for the disk — lost
with the machine or the database server, its key is free again and the call runs again, which
it may. Every other call's claim still waits for the disk before the call runs."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete

from signoff import Policy, ToolCall
from signoff.gate import Gate
from signoff.gate.external import ExternalRuns
from signoff.store import SQLStore, schema
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


async def _value() -> Any:
    return "done"
