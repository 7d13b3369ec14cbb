"""Other frameworks' runs (ARCHITECTURE §6, "External runs"): their calls judged once by
(origin, thread, call id), `Ledger.once`, their pauses and the `Resumer`, the synchronous
`Bridge` and `connect()` — on both store backends, in one process and across processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import threading
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest

from signoff import (
    Approve,
    Decision,
    Edit,
    InvalidDecisionError,
    Policy,
    Reject,
    Respond,
    Scope,
    ToolCall,
)
from signoff.errors import CallRefused, ExecutionFailed, OutcomeUnknown, SignoffError, StoreError
from signoff.gate import CheckContext, Gate
from signoff.gate.bridge import Bridge
from signoff.gate.external import ExternalRuns, Pause, Resumer, connect
from signoff.gate.ids import external_key
from signoff.gate.once import Ledger, Recorded
from signoff.store import SQLStore, Store
from signoff.store.external import LedgerClaim
from signoff.types import AuditEntry
from tests.deadline import HANG
from tests.gate.waiters import WatchedNotifier

WORKER = Path(__file__).with_name("external_worker.py")
ORIGIN = "langgraph"
POLICY = Policy.from_dict(
    {
        "rules": [
            {"allow": "*_list*"},
            {"deny": "*_delete*"},
            {"ask": "send_email"},
            {"ask": "wire_money", "approvers": ["finance"]},
            {"ask": "quick", "timeout": 60},
        ]
    }
)


def email(call_id: str = "c1", *, to: str = "a@example.com", agent: str | None = None) -> ToolCall:
    return ToolCall(id=call_id, name="send_email", args={"to": to}, agent=agent)


def on(thread: str = "t1", *, origin: str = ORIGIN) -> CheckContext:
    return CheckContext(origin=origin, thread_id=thread, requested_by="bob")


def approval_id(outcome: Any) -> str:
    assert outcome.approval is not None, outcome
    return str(outcome.approval.id)


async def verdicts(store: Store) -> list[AuditEntry]:
    return [e for e in await store.audit_log() if e.action == "verdict"]


@pytest.fixture
def watched() -> WatchedNotifier:
    return WatchedNotifier()


@pytest.fixture
def gate(store: SQLStore, watched: WatchedNotifier) -> Gate:
    return Gate(POLICY, store, notifier=watched, poll_interval=0.05)


@pytest.fixture
async def runs(gate: Gate) -> ExternalRuns:
    return ExternalRuns(gate, origin=ORIGIN)  # built in the test's loop: its bridge


@pytest.fixture
def ledger(store: SQLStore) -> Ledger:
    return Ledger(store, poll_interval=0.01)


# -- the same call judged again ------------------------------------------------------------


async def test_the_same_external_call_judged_again_gets_its_approval_and_no_second_verdict(
    gate: Gate,
):
    [first] = await gate.hold_external([email()], on())
    assert (first.kind, first.recorded) == ("hold", False)
    [again] = await gate.hold_external([email()], on())
    assert (again.kind, again.recorded, again.approval) == ("hold", True, first.approval)
    assert (again.verdict.kind, again.verdict.rule, again.verdict.reason) == (
        first.verdict.kind, first.verdict.rule, first.verdict.reason,
    )  # fmt: skip
    pending = await gate.store.list_approvals(status="pending")
    assert [a.id for a in pending] == [approval_id(first)]
    [verdict] = await verdicts(gate.store)
    assert (verdict.subject, verdict.data["call_id"]) == (approval_id(first), "c1")


@pytest.mark.parametrize(
    ("decision", "status"),
    [
        (Approve(), "approved"),
        (Reject(reason="not to customers"), "rejected"),
        (Respond(content="sent it by hand"), "responded"),
        (Edit(args={"to": "b@example.com"}), "edited"),
    ],
)
async def test_a_decided_external_call_judged_again_comes_back_decided(
    gate: Gate, decision: Decision, status: str
):
    [first] = await gate.hold_external([email()], on())
    await gate.decide(approval_id(first), decision, actor="alice")
    [again] = await gate.hold_external([email()], on())  # as the framework asked it, unedited
    assert (again.kind, again.recorded) == ("hold", True)
    assert again.approval is not None
    assert (again.approval.id, again.approval.status) == (approval_id(first), status)
    assert (again.approval.decision, again.approval.decided_by) == (decision, "alice")
    expected = decision.args if isinstance(decision, Edit) else {"to": "a@example.com"}
    assert again.approval.call.args == expected
    assert len(await verdicts(gate.store)) == 1


async def test_an_expired_external_call_judged_again_comes_back_expired(store: SQLStore):
    now = [datetime.now(UTC)]
    gate = Gate(POLICY, store, clock=lambda: now[0])
    quick = ToolCall(id="q1", name="quick", args={})
    [first] = await gate.hold_external([quick], on())
    now[0] += timedelta(seconds=61)
    assert [a.id for a in await gate.expire_due()] == [approval_id(first)]
    [again] = await gate.hold_external([quick], on())
    assert again.approval is not None and again.approval.status == "expired"
    assert again.recorded


async def test_a_call_id_judged_again_with_other_arguments_is_blocked(gate: Gate):
    listing = ToolCall(id="l1", name="pods_list", args={"namespace": "web"})
    [held, ran] = await gate.hold_external([email(to="a@example.com"), listing], on())
    assert (held.kind, ran.kind) == ("hold", "run")
    other_email = email(to="everyone@example.com")
    other_listing = ToolCall(id="l1", name="pods_list", args={"namespace": "kube-system"})
    for outcome in await gate.hold_external([other_email, other_listing], on()):
        assert (outcome.kind, outcome.recorded, outcome.approval) == ("block", True, None)
        assert "judged before with other arguments" in outcome.verdict.reason
    # The approval still stands for the call it was asked for, and only for it.
    [same] = await gate.hold_external([email(to="a@example.com")], on())
    assert (same.kind, same.approval) == ("hold", held.approval)
    assert len(await gate.store.list_approvals()) == 1


async def test_allowed_and_denied_external_calls_keep_their_verdicts_under_a_new_policy(
    gate: Gate,
):
    calls = [
        ToolCall(id="l1", name="pods_list", args={}),
        ToolCall(id="d1", name="pods_delete", args={"name": "web"}),
    ]
    first = await gate.hold_external(calls, on())
    assert [(o.kind, o.recorded) for o in first] == [("run", False), ("block", False)]
    # Another replica, already on a policy that asks for everything: the calls were judged.
    stricter = Gate(Policy.from_dict({"default": "ask"}), gate.store)
    again = await stricter.hold_external(calls, on())
    assert [(o.kind, o.verdict.rule, o.verdict.reason, o.recorded) for o in again] == [
        (o.kind, o.verdict.rule, o.verdict.reason, True) for o in first
    ]
    assert await gate.store.list_approvals() == []
    # The deny's verdict, once (an allowed call leaves no verdict entry).
    [verdict] = await verdicts(gate.store)
    assert (verdict.subject, verdict.data["verdict"]) == ("d1", "deny")
    records = await gate.store.external_calls([external_key(ORIGIN, "t1", c.id) for c in calls])
    assert sorted((r.call_id, r.kind, r.approval_id) for r in records.values()) == [
        ("d1", "block", None),
        ("l1", "run", None),
    ]


async def test_the_same_call_id_in_another_thread_or_origin_is_another_call(gate: Gate):
    judged = [
        await gate.hold_external([email()], on("t1")),
        await gate.hold_external([email()], on("t2")),
        await gate.hold_external([email()], on("t1", origin="google_adk")),
    ]
    assert [o.recorded for [o] in judged] == [False, False, False]
    assert len({approval_id(o) for [o] in judged}) == 3


async def test_an_external_call_is_judged_within_a_named_thread(gate: Gate):
    with pytest.raises(InvalidDecisionError, match="within a thread"):
        await gate.hold_external([email()], CheckContext(origin=ORIGIN))
    assert await gate.store.list_approvals() == []


async def test_a_call_id_twice_in_one_turn_is_judged_once(gate: Gate):
    [first, twice, other] = await gate.hold_external(
        [email("c1"), email("c1"), email("c1", to="everyone@example.com")], on()
    )
    assert (first.kind, first.recorded) == ("hold", False)
    assert (twice.kind, twice.recorded, twice.approval) == ("hold", True, first.approval)
    assert (other.kind, other.approval) == ("block", None)
    assert len(await gate.store.list_approvals()) == 1
    assert len(await verdicts(gate.store)) == 1


# -- grants ----------------------------------------------------------------------------------


async def test_approve_always_for_the_thread_lets_its_next_external_call_run_without_asking(
    gate: Gate,
):
    [first] = await gate.hold_external([email("c1")], on("t1"))
    any_args = Scope(kind="thread", with_args=False)  # on purpose: the next call's differ
    await gate.decide(approval_id(first), Approve(always=any_args), actor="alice")
    [after] = await gate.hold_external([email("c2", to="b@example.com")], on("t1"))
    assert (after.kind, after.recorded) == ("run", False)
    assert after.verdict.rule is not None and after.verdict.rule.startswith("grant:")
    [again] = await gate.hold_external([email("c2", to="b@example.com")], on("t1"))
    assert (again.kind, again.recorded, again.verdict.rule) == ("run", True, after.verdict.rule)
    [grant] = await gate.grants(tool="send_email")
    assert (grant.scope, grant.subject, grant.uses) == ("thread", "t1", 1)  # counted once
    [elsewhere] = await gate.hold_external([email("c3")], on("t2"))
    assert elsewhere.kind == "hold"


async def test_approve_always_for_the_agent_lets_its_calls_run_in_any_thread(gate: Gate):
    mailer = "coordinator/mailer"
    [first] = await gate.hold_external([email("c1", agent=mailer)], on("t1"))
    await gate.decide(approval_id(first), Approve(always=Scope(kind="agent")), actor="alice")
    [same_agent] = await gate.hold_external([email("c2", agent=mailer)], on("t2"))
    [other_agent] = await gate.hold_external([email("c3", agent="coordinator/other")], on("t1"))
    assert (same_agent.kind, other_agent.kind) == ("run", "hold")
    [grant] = await gate.grants(tool="send_email")
    assert (grant.scope, grant.subject, grant.uses) == ("agent", mailer, 1)


async def test_approve_always_for_the_run_is_refused_for_an_external_call(gate: Gate):
    [first] = await gate.hold_external([email()], on())
    with pytest.raises(InvalidDecisionError, match="belongs to no run"):
        await gate.decide(approval_id(first), Approve(always=Scope(kind="run")), actor="alice")
    assert (await gate.store.get_approval(approval_id(first))).status == "pending"
    assert await gate.grants() == []


# -- at once -------------------------------------------------------------------------------


async def test_eight_concurrent_judgings_of_one_call_make_one_approval(gate: Gate):
    judged = await asyncio.gather(*(gate.hold_external([email()], on()) for _ in range(8)))
    assert len({approval_id(o) for [o] in judged}) == 1
    assert sorted(o.recorded for [o] in judged) == [False] + [True] * 7
    assert len(await gate.store.list_approvals()) == 1
    assert len(await verdicts(gate.store)) == 1
    assert (await gate.store.verify_audit()).ok


@contextlib.asynccontextmanager
async def workers(*commands: Sequence[str]) -> AsyncIterator[list[asyncio.subprocess.Process]]:
    """Worker processes (tests/gate/external_worker.py), each ready; killed if left running."""
    started = []
    try:
        for command in commands:
            started.append(
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    str(WORKER),
                    *command,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                )
            )
        for process in started:
            assert await said(process) == "ready"
        yield started
    finally:
        for process in started:
            if process.returncode is None:
                process.kill()
                await process.wait()


async def said(process: asyncio.subprocess.Process) -> str:
    """The next line the worker prints."""
    assert process.stdout is not None and process.stderr is not None
    async with asyncio.timeout(HANG):
        line = await process.stdout.readline()
        if not line:
            problem = await process.stderr.read()
            raise AssertionError(f"the worker ended: {problem.decode()}")
    return line.decode().strip()


def tell(process: asyncio.subprocess.Process, line: str) -> None:
    assert process.stdin is not None
    process.stdin.write(f"{line}\n".encode())


async def test_two_processes_judging_the_same_calls_at_once_make_one_approval_each(
    store: SQLStore,
):
    async with workers(("hold", store.url, "t1", "20"), ("hold", store.url, "t1", "20")) as both:
        for process in both:
            tell(process, "go")
        reports = [json.loads(await said(process)) for process in both]
    first, second = ({call: (a, r) for call, a, r in report} for report in reports)
    assert first.keys() == second.keys() == {f"c{i}" for i in range(20)}
    for call_id in first:
        assert first[call_id][0] == second[call_id][0]  # one approval
        assert sorted([first[call_id][1], second[call_id][1]]) == [False, True], call_id
    assert len(await store.list_approvals(limit=100)) == 20
    assert len(await verdicts(store)) == 20
    assert (await store.verify_audit()).ok


# -- Ledger.once -----------------------------------------------------------------------------


class Counted:
    """A call that counts its executions and returns `value`."""

    def __init__(self, value: Any = None) -> None:
        self.value = value
        self.runs = 0

    async def __call__(self) -> Any:
        self.runs += 1
        return self.value


async def test_ledger_once_runs_a_key_once_and_every_later_caller_gets_its_result(
    store: SQLStore, ledger: Ledger
):
    send = Counted({"message_id": 42})
    assert await ledger.once("k", send) == {"message_id": 42}
    assert await ledger.once("k", send) == {"message_id": 42}
    assert await Ledger(store).once("k", send) == {"message_id": 42}  # another owner
    assert send.runs == 1
    nothing = Counted(None)  # a call that returns nothing is recorded too
    assert [await ledger.once("none", nothing) for _ in range(2)] == [None, None]
    assert nothing.runs == 1


class ClaimWatch:
    """The store, with an event set once a ledger claim finds its key started by another."""

    def __init__(self, store: SQLStore) -> None:
        self._store = store
        self.contended = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def ledger_claim(self, key: str, **options: Any) -> LedgerClaim:
        found = await self._store.ledger_claim(key, **options)
        if not found.claimed and found.status == "started":
            self.contended.set()
        return found


async def test_concurrent_callers_of_one_key_wait_for_the_one_execution(store: SQLStore):
    watch = ClaimWatch(store)
    ledger = Ledger(cast(Store, watch), poll_interval=0.01)
    started, release = asyncio.Event(), asyncio.Event()
    runs = 0

    async def slow() -> str:
        nonlocal runs
        runs += 1
        started.set()
        await release.wait()
        return "sent"

    first = asyncio.create_task(ledger.once("k", slow))
    async with asyncio.timeout(HANG):
        await started.wait()
        others = [asyncio.create_task(ledger.once("k", slow)) for _ in range(3)]
        others.append(asyncio.create_task(Ledger(cast(Store, watch)).once("k", slow)))
        await watch.contended.wait()  # they found it running: they wait for its result
        release.set()
        assert await asyncio.gather(first, *others) == ["sent"] * 5
    assert runs == 1


async def test_a_call_that_raises_fails_its_caller_and_every_later_one_with_execution_failed(
    ledger: Ledger,
):
    runs = 0

    async def broken() -> None:
        nonlocal runs
        runs += 1
        raise ValueError("the SMTP server said no")

    with pytest.raises(ValueError, match="the SMTP server said no"):
        await ledger.once("k", broken)
    for idempotent in (False, True):
        with pytest.raises(ExecutionFailed, match="ValueError: the SMTP server said no"):
            await ledger.once("k", broken, idempotent=idempotent)
    assert runs == 1


async def test_a_caller_cancelled_inside_the_call_leaves_its_outcome_unknown_at_once(
    store: SQLStore,
):
    # An hour's lease: a later caller learns of the cancelled one at once, or only after HANG.
    ledger = Ledger(store, lease=timedelta(hours=1), poll_interval=0.01)
    started = asyncio.Event()
    send = Counted("sent")

    async def hangs() -> None:
        started.set()
        await asyncio.Event().wait()

    cancelled = asyncio.create_task(ledger.once("k", hangs))
    async with asyncio.timeout(HANG):
        await started.wait()
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        with pytest.raises(OutcomeUnknown, match="whether it ran is unknown"):
            await ledger.once("k", send)
        assert await ledger.once("k", send, idempotent=True) == "sent"
    assert send.runs == 1


async def test_a_caller_that_will_not_wait_for_a_running_call_gets_a_timeout(ledger: Ledger):
    started, release = asyncio.Event(), asyncio.Event()

    async def slow() -> str:
        started.set()
        await release.wait()
        return "sent"

    first = asyncio.create_task(ledger.once("k", slow))
    async with asyncio.timeout(HANG):
        await started.wait()
        with pytest.raises(TimeoutError, match="still running elsewhere"):
            await ledger.once("k", slow, wait=0)
        release.set()
        assert await first == "sent"
    assert await ledger.once("k", slow, wait=0) == "sent"


async def test_a_key_the_runtime_left_started_without_an_owner_is_unknown(
    store: SQLStore, ledger: Ledger
):
    at = datetime.now(UTC)
    for key in ("started", "finished"):
        await store.ledger_start(key, run_id="r1", call_id=key, tool="t", digest="d", at=at)
    await store.ledger_finish("finished", result={"content": "as the runtime wrote it"}, at=at)
    send = Counted("sent")
    with pytest.raises(OutcomeUnknown, match="'started'"):
        await ledger.once("started", send)
    assert await ledger.once("finished", send) == {"content": "as the runtime wrote it"}
    assert send.runs == 0
    assert await ledger.once("started", send, idempotent=True) == "sent"
    assert send.runs == 1


def count(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


async def test_a_worker_killed_inside_the_call_leaves_it_unknown_and_never_run_again(
    store: SQLStore, tmp_path: Path
):
    ran = tmp_path / "ran"
    async with workers(("once", store.url, "k", str(ran), "hang")) as [worker]:
        tell(worker, "go")
        assert await said(worker) == "running"
        worker.send_signal(signal.SIGKILL)
        await worker.wait()  # reaped: its pid names no process now
    # Its claim's lease runs an hour: only the check of its process tells that it died.
    ledger = Ledger(store, lease=timedelta(hours=1))
    send = Counted("sent")
    async with asyncio.timeout(HANG):
        with pytest.raises(OutcomeUnknown, match="whether it ran is unknown"):
            await ledger.once("k", send)
    assert (send.runs, count(ran)) == (0, 1)


async def test_an_idempotent_call_whose_worker_was_killed_is_run_again_once(
    store: SQLStore, tmp_path: Path
):
    ran = tmp_path / "ran"
    async with workers(("once", store.url, "k", str(ran), "hang")) as [worker]:
        tell(worker, "go")
        assert await said(worker) == "running"
        worker.send_signal(signal.SIGKILL)
        await worker.wait()
    # Three callers at once, each of its own (the others of its process are live): one
    # takes the key over, the others wait for its result.
    ledgers = [Ledger(store, lease=timedelta(hours=1), poll_interval=0.01) for _ in range(3)]
    send = Counted("sent again")
    async with asyncio.timeout(HANG):
        results = await asyncio.gather(*(ledger.once("k", send, idempotent=True)
                                         for ledger in ledgers))  # fmt: skip
        assert results == ["sent again"] * 3
        assert await Ledger(store).once("k", send) == "sent again"
    assert (send.runs, count(ran)) == (1, 1)


async def test_two_processes_running_one_key_at_once_execute_it_once(
    store: SQLStore, tmp_path: Path
):
    ran = tmp_path / "ran"
    command = ("once", store.url, "k", str(ran), "finish")
    async with workers(command, command) as both:
        for process in both:
            tell(process, "go")
        first_words = await asyncio.gather(*(said(p) for p in both))
        assert sorted(first_words) == ["running", "waiting"]
        runner = both[first_words.index("running")]
        tell(runner, "finish")
        assert [json.loads(await said(p)) for p in both] == [{"sent": True}] * 2
        assert [await p.wait() for p in both] == [0, 0]
    assert count(ran) == 1
    assert await Ledger(store).once("k", Counted("again")) == {"sent": True}


# -- pauses and the Resumer ------------------------------------------------------------------


async def test_a_pause_recorded_again_in_any_order_is_the_same_pause(runs: ExternalRuns):
    judged = await runs.judge([email("c1"), email("c2", to="b@example.com")], thread="t1")
    ids = [approval_id(o) for o in judged]
    first = await runs.pause(thread="t1", approvals=ids, data={"step": 1})
    again = await runs.pause(thread="t1", approvals=ids[::-1], data={"step": 2})
    assert again == first
    assert (first.status, first.data, first.approvals) == (
        "waiting",
        {"step": 1},
        tuple(sorted(ids)),
    )
    held = await runs.held("t1", ["c1", "c2", "c9"])
    assert sorted(held) == ["c1", "c2"]
    assert [held[c].approval for c in ("c1", "c2")] == [o.approval for o in judged]
    assert held["c1"].record.key == runs.key("t1", "c1")


async def test_a_decision_wakes_the_resumer_which_resumes_the_pause_once(
    runs: ExternalRuns, watched: WatchedNotifier
):
    [held] = await runs.judge([email()], thread="t1")
    pause = await runs.pause(thread="t1", approvals=[approval_id(held)], data={"thread": "t1"})
    resumed: list[Pause] = []

    async def resume(claimed: Pause) -> None:
        resumed.append(claimed)

    resumer = Resumer(runs, resume, owner="replica-1")
    # Its poll is hourly: within HANG, only the decision can wake it.
    async with resumer.running(poll_interval=3600), asyncio.timeout(HANG):
        await watched.parked.wait()  # it found nothing ready, and waits
        assert resumed == []
        await runs.gate.decide(approval_id(held), Approve(), actor="alice")
        await watched.hears(pause.id)  # resumed, and marked done
    [claimed] = resumed
    assert (claimed.id, claimed.data, claimed.lease_owner) == (pause.id, {"thread": "t1"},
                                                               "replica-1")  # fmt: skip
    stored = await runs.store.get_pause(pause.id)
    assert stored is not None and (stored.status, stored.attempts) == ("done", 1)
    assert await runs.store.ready_pauses(ORIGIN, now=datetime.now(UTC)) == []


async def test_a_resume_that_raises_leaves_the_pause_waiting_for_a_later_round(
    runs: ExternalRuns, watched: WatchedNotifier
):
    [held] = await runs.judge([email()], thread="t1")
    pause = await runs.pause(thread="t1", approvals=[approval_id(held)], data={})
    await runs.gate.decide(approval_id(held), Reject(reason="no"), actor="alice")
    attempts = 0

    async def resume(_claimed: Pause) -> None:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise RuntimeError("the graph's checkpointer is away")

    resumer = Resumer(runs, resume)
    assert await resumer.resume_ready(pause.id) is False
    stored = await runs.store.get_pause(pause.id)
    assert stored is not None and (stored.status, stored.lease_owner) == ("waiting", None)
    async with resumer.running(poll_interval=0.01), asyncio.timeout(HANG):
        await watched.hears(pause.id)
    stored = await runs.store.get_pause(pause.id)
    assert stored is not None and (stored.status, stored.attempts) == ("done", 2)
    assert attempts == 2


async def test_two_resumers_resume_a_ready_pause_once(runs: ExternalRuns, watched: WatchedNotifier):
    judged = await runs.judge([email("c1"), email("c2", to="b@example.com")], thread="t1")
    one, two = [
        await runs.pause(thread="t1", approvals=[approval_id(o)], data={"n": n})
        for n, o in enumerate(judged)
    ]
    resumed: list[str] = []

    async def resume(claimed: Pause) -> None:
        resumed.append(claimed.id)

    replicas = [Resumer(runs, resume, owner="a"), Resumer(runs, resume, owner="b")]
    for o in judged:
        await runs.gate.decide(approval_id(o), Approve(), actor="alice")
    assert sorted(await asyncio.gather(*(r.resume_ready(one.id) for r in replicas))) == [
        False,
        True,
    ]
    assert resumed == [one.id]
    async with contextlib.AsyncExitStack() as both:
        for replica in replicas:
            await both.enter_async_context(replica.running(poll_interval=0.01))
        async with asyncio.timeout(HANG):
            await watched.hears(two.id)
    assert resumed == [one.id, two.id]


async def test_a_pause_whose_call_expired_is_resumed(store: SQLStore, watched: WatchedNotifier):
    now = [datetime.now(UTC)]
    gate = Gate(POLICY, store, notifier=watched, clock=lambda: now[0])
    runs = ExternalRuns(gate, origin=ORIGIN)
    [held] = await runs.judge([ToolCall(id="q1", name="quick", args={})], thread="t1")
    pause = await runs.pause(thread="t1", approvals=[approval_id(held)], data={})
    resumed: list[str] = []

    async def resume(claimed: Pause) -> None:
        resumed.append(claimed.id)

    now[0] += timedelta(seconds=61)  # past the rule's timeout: the resumer expires it
    async with Resumer(runs, resume).running(poll_interval=3600), asyncio.timeout(HANG):
        await watched.hears(pause.id)
    assert resumed == [pause.id]
    assert (await store.get_approval(approval_id(held))).status == "expired"


async def test_a_pause_with_a_call_still_undecided_is_not_resumed(runs: ExternalRuns):
    judged = await runs.judge([email("c1"), email("c2", to="b@example.com")], thread="t1")
    pause = await runs.pause(thread="t1", approvals=[approval_id(o) for o in judged], data={})
    await runs.gate.decide(approval_id(judged[0]), Approve(), actor="alice")
    resumed: list[str] = []

    async def resume(claimed: Pause) -> None:
        resumed.append(claimed.id)

    resumer = Resumer(runs, resume)
    assert await resumer.resume_ready(pause.id) is False
    await runs.gate.decide(approval_id(judged[1]), Approve(), actor="alice")
    assert await resumer.resume_ready(pause.id) is True
    assert resumed == [pause.id]


async def test_a_decision_taken_in_another_process_wakes_the_resumer(
    runs: ExternalRuns, watched: WatchedNotifier, backend: str
):
    [held] = await runs.judge([email()], thread="t1")
    pause = await runs.pause(thread="t1", approvals=[approval_id(held)], data={})
    resumed: list[str] = []

    async def resume(claimed: Pause) -> None:
        resumed.append(claimed.id)

    # PostgreSQL tells it (its poll is hourly: within HANG only NOTIFY can wake it); SQLite's
    # resumers find other processes' decisions by polling.
    poll = 3600 if backend == "postgres" else 0.05
    async with Resumer(runs, resume).running(poll_interval=poll), asyncio.timeout(HANG):
        await watched.parked.wait()
        decider = await asyncio.create_subprocess_exec(
            sys.executable, str(Path(__file__).with_name("worker.py")), "decide",
            runs.store.url, approval_id(held),
        )  # fmt: skip
        assert await decider.wait() == 0
        await watched.hears(pause.id)
    assert resumed == [pause.id]


async def test_a_run_that_went_on_past_its_pause_is_not_resumed(runs: ExternalRuns):
    [held] = await runs.judge([email()], thread="t1")
    pause = await runs.pause(thread="t1", approvals=[approval_id(held)], data={})
    await runs.gate.decide(approval_id(held), Approve(), actor="alice")
    await runs.went_on([approval_id(held)])

    async def resume(_claimed: Pause) -> None:
        raise AssertionError("a finished pause was resumed")

    assert await Resumer(runs, resume).resume_ready(pause.id) is False
    stored = await runs.store.get_pause(pause.id)
    assert stored is not None and stored.status == "done"


# -- decisions and runs the framework's way -------------------------------------------------


async def test_decisions_sent_through_the_framework_are_taken_as_its_principal(gate: Gate):
    runs = ExternalRuns(gate, origin=ORIGIN, principal="graph-user", roles=["support"])
    mail, wire = await runs.judge(
        [email(), ToolCall(id="w1", name="wire_money", args={"amount": 10})], thread="t1"
    )
    decided = await runs.decide({approval_id(mail): Approve(), approval_id(wire): Approve()})
    assert decided[approval_id(mail)].decided_by == "graph-user"
    assert decided[approval_id(wire)].status == "pending"  # only finance may approve it
    # A different decision sent later (a stale resume payload) leaves the first standing.
    again = await runs.decide({approval_id(mail): Reject(reason="stale")})
    assert again[approval_id(mail)].status == "approved"


async def test_a_claim_taken_through_external_runs_is_finished_or_failed_once(
    runs: ExternalRuns,
):
    listing = ToolCall(id="c1", name="mail_list", args={})
    failing_call = ToolCall(id="c2", name="mail_list", args={"page": 2})
    await runs.judge([listing, failing_call], thread="t1")
    claim = await runs.claim(runs.key("t1", "c1"), listing)
    assert not isinstance(claim, Recorded)
    await runs.finish(claim, {"sent": 1})
    assert await runs.claim(runs.key("t1", "c1"), listing) == Recorded(value={"sent": 1})
    failing = await runs.claim(runs.key("t1", "c2"), failing_call)
    assert not isinstance(failing, Recorded)
    await runs.fail(failing, ConnectionError("refused"))
    with pytest.raises(ExecutionFailed, match="ConnectionError: refused"):
        await runs.claim(runs.key("t1", "c2"), failing_call)


# -- what may run: the core's one check ------------------------------------------------------


async def refusals(runs: ExternalRuns) -> list[AuditEntry]:
    return [e for e in await runs.store.audit_log() if e.action == "refused"]


async def test_an_allowed_call_runs_only_as_it_was_judged(runs: ExternalRuns):
    listing = ToolCall(id="c1", name="mail_list", args={"folder": "inbox"})
    await runs.judge([listing], thread="t1")
    key = runs.key("t1", "c1")

    for other in (
        ToolCall(id="c1", name="mail_list", args={"folder": "sent"}),
        ToolCall(id="c1", name="mail_delete_all", args={"folder": "inbox"}),
    ):
        with pytest.raises(CallRefused, match="not the call signoff let through"):
            await runs.claim(key, other)
    assert [e.data["tool"] for e in await refusals(runs)] == ["mail_list", "mail_delete_all"]
    assert not isinstance(await runs.claim(key, listing), Recorded)


async def test_a_call_nobody_judged_or_the_policy_blocked_is_never_claimed(runs: ExternalRuns):
    denied = ToolCall(id="c2", name="mail_delete", args={})
    await runs.judge([denied], thread="t1")

    with pytest.raises(CallRefused, match="never judged"):
        await runs.claim(runs.key("t1", "c9"), ToolCall(id="c9", name="mail_list"))
    with pytest.raises(CallRefused, match="blocked"):
        await runs.claim(runs.key("t1", "c2"), denied)
    assert len(await refusals(runs)) == 2


async def test_a_held_call_runs_only_once_approved_and_only_as_approved(runs: ExternalRuns):
    [held] = await runs.judge([email()], thread="t1")
    key = runs.key("t1", "c1")
    with pytest.raises(CallRefused, match="its approval is pending"):
        await runs.claim(key, email())

    await runs.gate.decide(approval_id(held), Approve(), actor="alice")

    with pytest.raises(CallRefused, match="as it was approved"):
        await runs.claim(key, email(to="mallory@example.com"))
    with pytest.raises(CallRefused):
        await runs.claim(key, ToolCall(id="c1", name="mail_delete", args={"to": "a@example.com"}))
    assert not isinstance(await runs.claim(key, email()), Recorded)


async def test_an_edited_call_runs_only_with_the_edit_exactly(runs: ExternalRuns):
    [held] = await runs.judge([email()], thread="t1")
    await runs.gate.decide(approval_id(held), Edit(args={"to": "b@example.com"}), actor="alice")
    key = runs.key("t1", "c1")

    with pytest.raises(CallRefused, match="as it was edited"):
        await runs.claim(key, email())  # the call as asked is not the edit
    assert not isinstance(await runs.claim(key, email(to="b@example.com")), Recorded)


async def test_step_refuses_and_audits_a_call_changed_after_its_approval(runs: ExternalRuns):
    [held] = await runs.judge([email()], thread="t1")
    await runs.gate.decide(approval_id(held), Approve(), actor="alice")
    found = (await runs.held("t1", ["c1"]))["c1"]
    key = runs.key("t1", "c1")

    changed = await runs.step(found, email(to="mallory@example.com"), key=key)
    same = await runs.step(found, email(), key=key)

    assert (changed.kind, changed.ok) == ("answer", False)
    assert "not the call signoff let through" in changed.text
    assert (same.kind, same.call) == ("run", email())
    assert [e.data["call_id"] for e in await refusals(runs)] == ["c1"]


async def test_the_same_call_id_in_another_model_response_is_another_call(runs: ExternalRuns):
    first = ToolCall(id="call_0", name="mail_list", args={"page": 1})
    second = ToolCall(id="call_0", name="mail_list", args={"page": 2})

    [a] = await runs.judge([first], thread="t1", turn="response-1")
    [b] = await runs.judge([second], thread="t1", turn="response-2")
    [again] = await runs.judge([second], thread="t1", turn="response-1")

    assert (a.kind, b.kind) == ("run", "run")
    assert runs.key("t1", "call_0", "response-1") != runs.key("t1", "call_0", "response-2")
    # Within one response, an id names one call: other arguments under it are blocked.
    assert again.kind == "block" and again.recorded


async def test_decisions_sent_through_the_framework_from_nobody_named_are_not_taken(
    runs: ExternalRuns,
):
    [held] = await runs.judge([email()], thread="t1")

    decided = await runs.decide({approval_id(held): Approve()})

    assert decided[approval_id(held)].pending


async def test_a_decision_sent_through_the_framework_by_its_requester_is_held_to_self_approval(
    gate: Gate,
):
    gate = Gate(Policy.from_dict({"rules": [{"ask": "send_email", "forbid_self_approval": True}]}),
                gate.store)  # fmt: skip
    runs = ExternalRuns(gate, origin=ORIGIN, principal="studio")
    [held] = await runs.judge([email()], thread="t1", requested_by="olga")

    mine = await runs.decide({approval_id(held): Approve()}, actor="olga")
    assert mine[approval_id(held)].pending
    theirs = await runs.decide({approval_id(held): Approve()}, actor="bob")
    assert theirs[approval_id(held)].decided_by == "bob"


# -- the synchronous bridge and connect() -----------------------------------------------------


async def where() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def test_bridge_run_from_a_thread_without_a_loop_runs_on_the_bridges_loop():
    bridge = Bridge()
    try:
        assert bridge.run(where()) is bridge.loop
        assert bridge.loop.is_running()
    finally:
        bridge.close()
    assert bridge.loop.is_closed()


def test_bridge_run_from_inside_its_own_loop_is_refused_with_a_clear_message():
    bridge = Bridge()

    async def nested() -> asyncio.AbstractEventLoop:
        return bridge.run(where())

    try:
        with pytest.raises(RuntimeError, match="from inside the event loop it runs on; use the"):
            bridge.run(nested())
        assert bridge.run(where()) is bridge.loop  # and it still works
    finally:
        bridge.close()


async def test_bridge_arun_from_another_loop_awaits_on_the_bridges_loop():
    bridge = Bridge()
    try:
        assert await bridge.arun(where()) is bridge.loop is not asyncio.get_running_loop()
    finally:
        bridge.close()


async def test_a_bridge_over_the_running_loop_runs_there_and_leaves_it_open():
    loop = asyncio.get_running_loop()
    bridge = Bridge(loop)
    assert await bridge.arun(where()) is loop
    bridge.close()
    assert not loop.is_closed()


def test_connect_judges_and_decides_from_synchronous_code_and_close_cleans_up(tmp_path: Path):
    policy = tmp_path / "policy.yaml"
    policy.write_text("rules:\n  - ask: send_email\n")
    runs = connect(str(policy), origin="script", database=f"sqlite:///{tmp_path / 's.db'}")
    try:
        [held] = runs.run(runs.judge([email()], thread="t1"))
        [again] = runs.run(runs.judge([email()], thread="t1"))
        assert (held.kind, again.recorded, again.approval) == ("hold", True, held.approval)
        decided = runs.run(runs.decide({approval_id(held): Approve()}, actor="bob"))
        assert decided[approval_id(held)].decided_by == "bob"
    finally:
        runs.close()
    assert runs.bridge.loop.is_closed()
    assert "signoff-bridge" not in {t.name for t in threading.enumerate()}
    with pytest.raises(StoreError, match="is closed"):
        asyncio.run(runs.store.get_approval(approval_id(held)))
    assert (tmp_path / "s.db").exists()


def test_a_resumer_started_from_synchronous_code_resumes_on_the_bridges_loop(tmp_path: Path):
    runs = connect(POLICY, origin="script", database=f"sqlite:///{tmp_path / 's.db'}")
    resumed = threading.Event()
    loops: list[asyncio.AbstractEventLoop] = []

    async def resume(_claimed: Pause) -> None:
        loops.append(asyncio.get_running_loop())
        resumed.set()

    try:
        [held] = runs.run(runs.judge([email()], thread="t1"))
        runs.run(runs.pause(thread="t1", approvals=[approval_id(held)], data={}))
        stop = Resumer(runs, resume).start(poll_interval=0.01)
        try:
            runs.run(runs.decide({approval_id(held): Approve()}, actor="bob"))
            assert resumed.wait(HANG)
        finally:
            stop()
        assert loops == [runs.bridge.loop]
    finally:
        runs.close()


def test_stopping_a_resumer_started_from_synchronous_code_returns_once_it_stopped(
    tmp_path: Path,
):
    runs = connect(POLICY, origin="script", database=f"sqlite:///{tmp_path / 's.db'}")
    resuming, stopped = threading.Event(), threading.Event()

    async def resume(_claimed: Pause) -> None:
        resuming.set()
        try:
            await asyncio.Event().wait()  # a resume under way when the app stops
        finally:
            stopped.set()

    try:
        [held] = runs.run(runs.judge([email()], thread="t1"))
        runs.run(runs.pause(thread="t1", approvals=[approval_id(held)], data={}))
        runs.run(runs.decide({approval_id(held): Approve()}, actor="bob"))
        stop = Resumer(runs, resume).start(poll_interval=0.01)
        assert resuming.wait(HANG)
        stop()
        assert stopped.is_set()  # nothing of it runs on once stop() returned
    finally:
        runs.close()


def test_external_runs_outside_a_loop_need_a_bridge(tmp_path: Path):
    runs = connect(POLICY, origin="script", database=f"sqlite:///{tmp_path / 's.db'}")
    try:
        with pytest.raises(SignoffError, match="needs the event loop its store runs on"):
            ExternalRuns(runs.gate, origin="other")
        assert ExternalRuns(runs.gate, origin="other", bridge=runs.bridge).bridge is runs.bridge
    finally:
        runs.close()
