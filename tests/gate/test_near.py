"""The store's work near its caller (issue 36): where the store serves any loop (SQLite, on
threads of its own), `ExternalRuns` awaits it on the caller's loop — or, from synchronous code, on
a loop of the calling thread's own — with no hop to the bridge's thread and back; a claim made
there is still renewed on the bridge's loop, whatever the caller's loop is busy with. What never
changes is read once: a turn judged before is read, not judged again in a write; a decided
approval is not read again. A verdict to run is written with the call's claim, in one durable
transaction; on SQLite the result recorded after the call does not wait for the disk."""

from __future__ import annotations

import asyncio
import gc
import threading
import warnings
from collections.abc import Awaitable, Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from signoff import Approve, Policy, ToolCall
from signoff.errors import CallRefused
from signoff.gate import Gate
from signoff.gate.bridge import run_here
from signoff.gate.external import ExternalRuns, connect
from signoff.gate.once import Ledger
from signoff.limits import MAX_ARGS_BYTES
from signoff.store import SQLStore
from tests.deadline import HANG

POLICY = Policy.from_dict({"rules": [{"allow": "lookup"}, {"ask": "send_email"}]})


def lookup(call_id: str = "c1") -> ToolCall:
    return ToolCall(id=call_id, name="lookup", args={"key": "q3"})


def email(call_id: str = "c2") -> ToolCall:
    return ToolCall(id=call_id, name="send_email", args={"to": "ops@example.com"})


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[ExternalRuns]:
    """signoff opened as the integrations' docs open it: SQLite, on a bridge of its own."""
    opened = connect(POLICY, origin="near", database=f"sqlite:///{tmp_path / 's.db'}")
    try:
        yield opened
    finally:
        opened.close()


def spy(store: Any, name: str) -> list[tuple[asyncio.AbstractEventLoop, threading.Thread]]:
    """Where each call of the store's method `name` ran: its loop and its thread."""
    seen: list[tuple[asyncio.AbstractEventLoop, threading.Thread]] = []
    real: Callable[..., Awaitable[Any]] = getattr(store, name)

    async def wrapped(*args: Any, **kwargs: Any) -> Any:
        seen.append((asyncio.get_running_loop(), threading.current_thread()))
        return await real(*args, **kwargs)

    setattr(store, name, wrapped)
    return seen


def renewing(store: Any) -> tuple[list[tuple[asyncio.AbstractEventLoop, Any]], threading.Event]:
    """Where the store's claims are renewed (`spy`), and an event set once two renewals ran."""
    renewals = spy(store, "ledger_renew")
    renewed = threading.Event()
    real = store.ledger_renew

    async def counted(*args: Any, **kwargs: Any) -> Any:
        result = await real(*args, **kwargs)
        if len(renewals) >= 2:
            renewed.set()
        return result

    store.ledger_renew = counted
    return renewals, renewed


async def test_an_async_caller_awaits_the_stores_work_on_its_own_loop(runs: ExternalRuns):
    here = asyncio.get_running_loop()
    judged, claimed, finished = (
        spy(runs.store, name) for name in ("external_calls", "ledger_claim", "ledger_finish")
    )
    found = await runs.judged([lookup()], thread="t1")
    key = runs.key("t1", "c1")
    step = await runs.step(found["c1"], lookup(), key=key)
    assert step.kind == "run"
    ran: list[str] = []

    async def call() -> str:
        ran.append("lookup")
        return "value"

    assert await runs.once(key, lookup(), call) == "value"
    assert await runs.once(key, lookup(), call) == "value"  # recorded: not run again
    assert ran == ["lookup"]
    assert judged == []  # a verdict to run, known here: written with the claim
    assert [loop for loop, _ in claimed + finished] == [here] * 3
    assert runs.bridge.loop is not here


async def test_a_claim_is_renewed_on_the_bridges_loop_while_the_callers_loop_is_busy(
    runs: ExternalRuns,
):
    """A call that keeps its caller's loop busy (a synchronous tool inside an async one) does
    not stop its claim's renewals: they run on the bridge's loop, and the claim holds."""
    runs.ledger.lease = timedelta(seconds=0.3)  # renewed every 0.1 s
    renewals, renewed = renewing(runs.store)
    await runs.judge([lookup()], thread="t1")
    key = runs.key("t1", "c1")
    claim = await runs.claim(key, lookup())
    assert renewed.wait(HANG)  # this loop blocked all along: the renewals ran elsewhere
    assert {loop for loop, _ in renewals} == {runs.bridge.loop}
    assert await runs.finish(claim, "value") == "value"  # type: ignore[arg-type]
    assert not claim.lost.is_set()  # type: ignore[union-attr]
    recorded = await runs.claim(key, lookup())
    assert getattr(recorded, "value", None) == "value"


def test_synchronous_callers_run_the_stores_work_on_a_loop_of_their_own_thread(
    runs: ExternalRuns,
):
    judged = spy(runs.store, "hold")
    loops: list[asyncio.AbstractEventLoop] = []

    def caller() -> None:
        runs.run_near(runs.judged([email()], thread="t1"))
        runs.run_near(runs.judged([email("c3")], thread="t1"))
        loops.extend(loop for loop, _ in judged)

    thread = threading.Thread(target=caller)
    thread.start()
    thread.join(HANG)
    assert [t for _, t in judged] == [thread, thread]
    assert loops[0] is loops[1] is not runs.bridge.loop  # one loop, kept for the thread
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del judged[:]
        gc.collect()
    assert loops[0].is_closed()  # closed with its thread, not left to warn when collected
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


def test_run_here_refuses_a_thread_with_a_running_loop():
    async def inside() -> None:
        async def nothing() -> None:
            return None

        with pytest.raises(RuntimeError, match="for synchronous code"):
            run_here(nothing())

    asyncio.run(inside())


async def test_a_turn_judged_before_is_read_again_not_judged_in_a_write(store: SQLStore):
    runs = ExternalRuns(Gate(POLICY, store), origin="near")
    judged = spy(store, "hold")
    first = await runs.judged([lookup(), email()], thread="t1")
    again = await runs.judged([lookup(), email()], thread="t1")
    assert len(judged) == 1
    assert again == first
    approval = first["c2"].approval
    assert approval is not None and approval.pending
    await runs.gate.decide(approval.id, Approve(), actor="bob")
    decided = await runs.judged([lookup(), email()], thread="t1")  # the approval as it stands
    assert decided["c2"].approval is not None and decided["c2"].approval.status == "approved"
    assert len(judged) == 1
    # Another process, which saw nothing of it, judges in the store and finds the same.
    other = await ExternalRuns(Gate(POLICY, store), origin="near").judged(
        [lookup(), email()], thread="t1"
    )
    assert other == decided


async def test_a_decided_approval_is_read_once(store: SQLStore):
    runs = ExternalRuns(Gate(POLICY, store), origin="near")
    found = await runs.judged([email()], thread="t1")
    approval = found["c2"].approval
    assert approval is not None
    reads = spy(store, "get_approvals")
    assert (await runs.held("t1", ["c2"]))["c2"].approval == approval  # pending: read
    await runs.gate.decide(approval.id, Approve(), actor="bob")
    for _ in range(2):
        assert (await runs.held("t1", ["c2"]))["c2"].approval.status == "approved"  # type: ignore[union-attr]
    key = runs.key("t1", "c2")
    assert await runs.once(key, email(), _value) == "sent"
    assert len(reads) == 2  # pending, then decided: final, not read again


async def _value() -> str:
    return "sent"


def recording(store: SQLStore) -> list[tuple[str, bool]]:
    """Each write transaction of the store from now on: its work's name, and whether it
    waited for the disk."""
    writes: list[tuple[str, bool]] = []
    real = store.run

    async def recorded(work: Any, *, write: bool = True, durable: bool = True, **rest: Any) -> Any:
        if write:
            # "ExternalStore.ledger_claim.<locals>.work": the store's method
            writes.append((getattr(work, "__qualname__", "").split(".")[1], durable))
        return await real(work, write=write, durable=durable, **rest)

    store.run = recorded  # type: ignore[method-assign]
    return writes


async def test_a_verdict_to_run_is_written_with_the_claim_in_one_durable_transaction(
    store: SQLStore,
):
    runs = ExternalRuns(Gate(POLICY, store), origin="near")
    writes = recording(store)
    key = runs.key("t1", "c1")
    await runs.judged([lookup()], thread="t1")
    assert writes == []
    assert await store.external_calls([key]) == {}  # nothing ran: nothing to keep yet
    assert await runs.once(key, lookup(), _value) == "sent"
    record = (await store.external_calls([key]))[key]
    assert (record.kind, record.digest) == ("run", lookup().digest)
    # The result after the call waits for the disk only where a commit that did not could be
    # lost while this process goes on (PostgreSQL's server crashing alone).
    relaxed = store.unsynced_commits_last
    assert writes == [("ledger_claim", True), ("ledger_finish", not relaxed)]
    # An approval, a refusal (audited), a batch with an approval in it: one durable write each.
    del writes[:]
    await runs.judged([email()], thread="t2")
    await runs.judged([lookup("c3"), email("c4")], thread="t3")
    await runs.judged(
        [ToolCall(id="c5", name="lookup", args={"key": "x" * MAX_ARGS_BYTES})], thread="t4"
    )  # fmt: skip
    assert writes == [("hold", True)] * 3


async def test_a_verdict_written_first_by_another_process_stands(store: SQLStore):
    """Two processes judge the same call: one under a policy that asks about it (a person
    must approve it), this one under a policy that allows it, not written yet. The verdict in
    the store stands: the call is refused, audited, and does not run — and once approved, it
    runs, once."""
    asking = ExternalRuns(
        Gate(Policy.from_dict({"rules": [{"ask": "lookup"}]}), store), origin="near"
    )
    runs = ExternalRuns(Gate(POLICY, store), origin="near")
    key = runs.key("t1", "c1")
    assert (await runs.judged([lookup()], thread="t1"))["c1"].record.kind == "run"
    held = (await asking.judged([lookup()], thread="t1"))["c1"]
    assert held.record.kind == "hold" and held.approval is not None
    ran: list[str] = []

    async def call() -> str:
        ran.append("lookup")
        return "value"

    with pytest.raises(CallRefused, match="not approved"):
        await runs.once(key, lookup(), call)
    assert ran == [] and await store.ledger_entry(key) is None
    [refused] = [e for e in await store.audit_log() if e.action == "refused"]
    assert refused.subject == held.approval.id
    await runs.gate.decide(held.approval.id, Approve(), actor="bob")
    assert await runs.once(key, lookup(), call) == "value"
    assert await asking.once(key, lookup(), call) == "value"  # recorded
    assert ran == ["lookup"]


async def test_a_call_held_elsewhere_still_waits_where_the_policy_now_allows_it(
    store: SQLStore,
):
    """Judged again under a policy that now allows it (changed while a person decides), a
    call another process held is read as held: it waits for its decision, it is not judged
    afresh and then refused."""
    asking = ExternalRuns(
        Gate(Policy.from_dict({"rules": [{"ask": "lookup"}]}), store), origin="near"
    )
    held = (await asking.judged([lookup()], thread="t1"))["c1"]
    assert held.approval is not None
    runs = ExternalRuns(Gate(POLICY, store), origin="near")
    found = (await runs.judged([lookup()], thread="t1"))["c1"]
    assert found == held
    step = await runs.step(found, lookup(), key=runs.key("t1", "c1"))
    assert (step.kind, step.approval) == ("wait", held.approval)
    assert not [e for e in await store.audit_log() if e.action == "refused"]


async def test_the_same_verdict_written_by_another_process_lets_the_call_run_once(
    store: SQLStore,
):
    first = ExternalRuns(Gate(POLICY, store), origin="near")
    second = ExternalRuns(Gate(POLICY, store), origin="near")
    key = first.key("t1", "c1")
    await first.judged([lookup()], thread="t1")
    await second.judged([lookup()], thread="t1")
    ran: list[str] = []

    async def call() -> str:
        ran.append("lookup")
        return "value"

    assert await second.once(key, lookup(), call) == "value"
    assert await first.once(key, lookup(), call) == "value"  # its verdict is the one written
    assert ran == ["lookup"]


async def test_an_unwritten_verdict_lets_through_only_its_own_call(store: SQLStore):
    runs = ExternalRuns(Gate(POLICY, store), origin="near")
    key = runs.key("t1", "c1")
    await runs.judged([lookup()], thread="t1")
    other = ToolCall(id="c1", name="lookup", args={"key": "q4"})
    with pytest.raises(CallRefused, match="changed since"):
        await runs.once(key, other, _value)
    assert await store.ledger_entry(key) is None and await store.external_calls([key]) == {}


async def test_a_decided_approval_read_again_is_a_copy_of_its_own(store: SQLStore):
    """A tool may change the arguments it was handed: what the next caller reads, and what is
    let through, is still the call as decided."""
    runs = ExternalRuns(Gate(POLICY, store), origin="near")
    approval = (await runs.judged([email()], thread="t1"))["c2"].approval
    assert approval is not None
    await runs.gate.decide(approval.id, Approve(), actor="bob")
    read = (await runs.held("t1", ["c2"]))["c2"].approval
    assert read is not None
    read.call.args["to"] = "mallory@example.com"
    again = (await runs.held("t1", ["c2"]))["c2"].approval
    assert again is not None and again.call.args == {"to": "ops@example.com"}
    with pytest.raises(CallRefused, match="not the call as it was approved"):
        await runs.claim(runs.key("t1", "c2"), read.call)


def test_a_ledger_of_the_apps_own_renews_while_a_synchronous_tool_runs(runs: ExternalRuns):
    """From synchronous code the store's work runs on a loop of the calling thread's own, which
    stands still while the tool runs: the claims are renewed on the bridge's loop, the
    ledger given being the app's own too."""
    ours = ExternalRuns(runs.gate, origin="near", bridge=runs.bridge,
                        ledger=Ledger(runs.store, lease=timedelta(seconds=0.3)))  # fmt: skip
    renewals, renewed = renewing(runs.store)
    results: list[Any] = []

    def caller() -> None:
        ours.run_near(ours.judged([lookup()], thread="t1"))
        key = ours.key("t1", "c1")
        claim = ours.run_near(ours.claim(key, lookup()))
        results.append(renewed.wait(HANG))  # the tool: this thread busy, its loop still
        results.append(ours.run_near(ours.finish(claim, "value")))  # type: ignore[arg-type]

    thread = threading.Thread(target=caller)
    thread.start()
    thread.join(HANG)
    assert results == [True, "value"]
    assert {loop for loop, _ in renewals} == {runs.bridge.loop}


async def test_the_claims_renewed_on_the_bridges_loop_share_one_task_there(runs: ExternalRuns):
    """A claim joins the renewals on the bridge's loop without a task of its own there (no hop
    to that loop and back for each call): one task renews every claim, each in its turn."""
    runs.ledger.lease = timedelta(seconds=0.3)  # renewed every 0.1 s
    calls = [lookup(f"c{i}") for i in range(5)]
    keys = {runs.key("t1", c.id) for c in calls}
    renewed: set[str] = set()
    every = threading.Event()
    real = runs.store.ledger_renew

    async def counted(key: str, **kwargs: Any) -> bool:
        result: bool = await real(key, **kwargs)
        renewed.add(key)
        if renewed >= keys:
            every.set()
        return result

    runs.store.ledger_renew = counted  # type: ignore[method-assign]

    async def tasks() -> int:
        return len(asyncio.all_tasks())

    before = await runs.bridge.arun(tasks())
    await runs.judge(calls, thread="t1")
    claims = [await runs.claim(runs.key("t1", c.id), c) for c in calls]
    assert await runs.bridge.arun(tasks()) == before + 1
    assert every.wait(HANG)  # this loop blocked all along: each claim renewed elsewhere
    for claim in claims:
        assert await runs.finish(claim, "value") == "value"  # type: ignore[arg-type]
        assert not claim.lost.is_set()  # type: ignore[union-attr]
