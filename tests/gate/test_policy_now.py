"""The policy of now reaches waiting calls, in the core, on both stores: a new policy judges each
waiting call again, and nothing — a person's approval, a decision on timeout, a call approved
before the change — runs what the policy in force denies."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from signoff import Approve, Edit, ForbiddenError, InvalidDecisionError, Policy, Reject, ToolCall
from signoff.gate import CheckContext, Gate
from signoff.store import SQLStore
from signoff.types import Approval

START = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
BEFORE = {
    "rules": [
        {"ask": "restart_service", "on_timeout": {"after": "30m", "decide": "approve"}},
        {"ask": "pay", "approvals": {"count": 2}},
        {"ask": "drain", "approvers": ["ops"]},
        {"ask": "scale"},
    ]
}
DENY_RESTART = {"rules": [{"deny": "restart_service", "reason": "restarts are frozen"},
                          *BEFORE["rules"]]}  # fmt: skip


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def gate(store: SQLStore, clock: Clock) -> Gate:
    return Gate(Policy.from_dict(BEFORE), store, clock=clock)


async def held(gate: Gate, tool: str, **args: Any) -> Approval:
    context = CheckContext(run_id="r1", thread_id="t1", requested_by="bob")
    [outcome] = await gate.check([ToolCall(id=f"c-{tool}", name=tool, args=args)], context)
    assert outcome.approval is not None
    return outcome.approval


async def test_a_waiting_call_the_new_policy_denies_is_rejected_with_its_reason(
    gate: Gate, store: SQLStore
):
    restart = await held(gate, "restart_service", name="api")
    scale = await held(gate, "scale", replicas=3)
    changed = await gate.use_policy(Policy.from_dict(DENY_RESTART))
    assert [a.id for a in changed] == [restart.id]
    stored = await store.get_approval(restart.id)
    assert (stored.status, stored.decided_by, stored.automatic) == ("rejected", "signoff", True)
    assert isinstance(stored.decision, Reject)
    assert "restarts are frozen" in stored.decision.reason
    assert (await store.get_approval(scale.id)).pending  # still asked about: still waiting
    [entry] = [e for e in await store.audit_log() if e.action == "decision"]
    assert (entry.actor, entry.data["automatic"]) == ("signoff", True)
    assert entry.data["policy"] == gate.engine.version
    # Judged again (another replica reading the same policy): nothing changes twice.
    assert await gate.rejudge() == []


async def test_on_timeout_never_approves_a_call_the_policy_in_force_denies(
    gate: Gate, clock: Clock, store: SQLStore
):
    restart = await held(gate, "restart_service", name="api")
    # The policy changed here without judging the waiting calls again (a library's gate set
    # its engine): the rule's time comes, and signoff rejects rather than approve.
    gate.engine = Gate(Policy.from_dict(DENY_RESTART), store).engine
    clock.now += timedelta(minutes=31)
    [lapsed] = await gate.expire_due()
    assert (lapsed.id, lapsed.status, lapsed.automatic) == (restart.id, "rejected", True)
    assert isinstance(lapsed.decision, Reject) and "restarts are frozen" in lapsed.decision.reason


async def test_a_persons_approval_of_a_call_the_policy_now_denies_is_refused(
    gate: Gate, store: SQLStore
):
    restart = await held(gate, "restart_service", name="api")
    gate.engine = Gate(Policy.from_dict(DENY_RESTART), store).engine
    length = await store.audit_length()
    with pytest.raises(ForbiddenError, match="restarts are frozen"):
        await gate.decide(restart.id, Approve(), actor="alice")
    assert (await store.get_approval(restart.id)).pending
    assert await store.audit_length() == length
    rejected = await gate.decide(restart.id, Reject(reason="no"), actor="alice")
    assert rejected.status == "rejected"  # rejecting it runs nothing: still taken


async def test_a_waiting_call_follows_its_rules_new_approvers_and_quorum(
    gate: Gate, store: SQLStore
):
    pay = await held(gate, "pay", amount=10)
    voted = await gate.decide(pay.id, Approve(), actor="alice", version=pay.version)
    drain = await held(gate, "drain", node="n1")
    stricter = {
        "rules": [
            {"ask": "pay", "approvals": {"count": 3}},
            {"ask": "drain", "approvers": ["security"]},
            {"ask": ["restart_service", "scale"]},
        ]
    }
    await gate.use_policy(Policy.from_dict(stricter))
    pay_now = await store.get_approval(pay.id)
    assert pay_now.quorum is not None and pay_now.quorum.count == 3
    assert pay_now.votes == ()  # given under another rule: they no longer count
    assert pay_now.version == voted.version + 1
    [change] = pay_now.changes[-1:]
    assert (change.kind, change.by) == ("policy", "signoff")
    assert "3 people must approve" in change.note
    drain_now = await store.get_approval(drain.id)
    assert drain_now.approvers == ("security",)
    with pytest.raises(ForbiddenError, match="security"):
        await gate.decide(drain.id, Approve(), actor="olga", roles=["ops"])
    done = await gate.decide(drain.id, Approve(), actor="sam", roles=["security"])
    assert done.status == "approved"


async def test_a_call_the_new_policy_allows_keeps_waiting_for_its_person(
    gate: Gate, store: SQLStore
):
    scale = await held(gate, "scale", replicas=3)
    assert await gate.use_policy(Policy.from_dict({"rules": [{"allow": "scale"}]})) == []
    assert (await store.get_approval(scale.id)).pending


async def test_an_approved_call_the_policy_denies_by_the_time_it_runs_is_not_run(
    gate: Gate, store: SQLStore
):
    restart = await held(gate, "restart_service", name="api")
    approved = await gate.decide(restart.id, Approve(), actor="alice")
    assert gate.denied_now(approved) is None
    await gate.use_policy(Policy.from_dict(DENY_RESTART))
    assert (await store.get_approval(restart.id)).status == "approved"  # decided: it stands
    said = gate.denied_now(approved)
    assert said is not None and "restarts are frozen" in said


async def test_a_refused_request_lets_nothing_lapse(gate: Gate, clock: Clock, store: SQLStore):
    """Who may decide comes before any lapse: a request someone may not make triggers nothing,
    even past the approval's time (the sweeper, on the store's clock, does that)."""
    drain = await held(gate, "drain", node="n1")
    restart_gate = Gate(Policy.from_dict({"rules": [{"ask": "restart_service", "approvers":
        ["ops"], "on_timeout": {"after": "30m", "decide": "approve", "despite_approvers":
        True}}]}), store, clock=clock)  # fmt: skip
    restart = await held(restart_gate, "restart_service", name="api")
    clock.now += timedelta(hours=1)
    with pytest.raises(ForbiddenError):
        await restart_gate.decide(restart.id, Reject(reason="x"), actor="vic", roles=[])
    assert (await store.get_approval(restart.id)).pending
    assert (await store.get_approval(drain.id)).pending


async def test_a_framework_app_that_follows_the_saved_policy_never_runs_what_it_now_denies(
    store: SQLStore,
):
    from signoff.gate.core import saved_policy
    from signoff.gate.external import ExternalRuns

    gate = Gate(Policy.from_dict(BEFORE), store)
    gate.adopt_policy = saved_policy(gate)
    runs = ExternalRuns(gate, origin="langgraph")
    call = ToolCall(id="c1", name="restart_service", args={"name": "api"})
    [outcome] = await runs.judge([call], thread="t1", requested_by="bob")
    assert outcome.approval is not None
    await gate.decide(outcome.approval.id, Approve(), actor="alice")
    found = (await runs.held("t1", ["c1"]))["c1"]
    assert (await runs.step(found, call, key=runs.key("t1", "c1"))).kind == "run"
    # A server on the same database saves a policy that denies it (and judges its waiting
    # calls; this one is decided already). The app reads it before the call runs.
    frozen = Policy.from_dict(DENY_RESTART)
    await store.save_policy(frozen.version, DENY_RESTART, actor="admin", at=await store.clock())
    step = await runs.step(found, call, key=runs.key("t1", "c1"))
    assert step.kind == "answer" and "restarts are frozen" in (step.text or "")
    assert gate.engine.version == frozen.version
    runs.close()


async def test_a_new_rule_that_approves_on_timeout_gives_people_its_whole_time(
    gate: Gate, clock: Clock, store: SQLStore
):
    scale = await held(gate, "scale", replicas=3)  # asked with no time limit
    clock.now += timedelta(hours=1)
    timed = {"rules": [{"ask": "scale", "on_timeout": {"after": "30m", "decide": "approve"}}]}
    [ruled] = await gate.use_policy(Policy.from_dict(timed))
    assert ruled.id == scale.id and ruled.expires_at == clock.now + timedelta(minutes=30)
    assert await gate.expire_due() == []  # not approved at once for having waited an hour
    clock.now += timedelta(minutes=31)
    [lapsed] = await gate.expire_due()
    assert (lapsed.status, lapsed.automatic) == ("approved", True)


async def test_on_timeout_never_approves_an_edit_only_one_of_its_people_approved(
    store: SQLStore, clock: Clock
):
    on_timeout = {"after": "30m", "decide": "approve", "despite_approvers": True}
    rule = {"ask": "pay", "approvals": {"count": 2}, "on_timeout": on_timeout}
    gate = Gate(Policy.from_dict({"rules": [rule]}), store, clock=clock)
    pay = await held(gate, "pay", amount=100, to="bob")
    await gate.decide(pay.id, Edit(args={"amount": 999999, "to": "mallory"}), actor="olga")
    clock.now += timedelta(minutes=31)
    [lapsed] = await gate.expire_due()
    assert (lapsed.status, lapsed.automatic) == ("rejected", True)
    assert isinstance(lapsed.decision, Reject) and "edited" in lapsed.decision.reason


async def test_nobody_decides_as_signoff_nor_under_a_name_that_could_pass_for_another(
    gate: Gate, store: SQLStore
):
    scale = await held(gate, "scale", replicas=3)
    with pytest.raises(ForbiddenError, match="signoff decides by itself"):
        await gate.decide(scale.id, Reject(reason="x"), actor="Signoff")
    for name in ("mal\u200blory", " bob", "olga\n"):
        with pytest.raises(InvalidDecisionError, match="refused"):
            await gate.decide(scale.id, Approve(), actor=name)
    assert (await store.get_approval(scale.id)).pending


async def test_a_server_policy_rules_only_its_own_waiting_calls_and_denies_any(store: SQLStore):
    """A framework app that judges by a policy of its own holds a call under it; a server on the
    same database, under another policy, neither loosens nor tightens that call's rule — it is
    the app's — but a call the server's policy denies is rejected."""
    app_policy = {"rules": [{"ask": "pay", "approvals": {"count": 2}}, {"ask": "restart_service"}]}
    app = Gate(Policy.from_dict(app_policy), store)
    pay = await held(app, "pay", amount=5)
    restart = await held(app, "restart_service", name="api")
    loose = {"rules": [{"ask": ["pay", "restart_service"]}]}
    server = await Gate.following_saved(store, fallback=Policy.from_dict(loose))
    policy = Policy.from_dict(loose)
    await store.save_policy(policy.version, loose, actor="admin", at=await store.clock())
    await server.catch_up()
    assert await server.rejudge() == []  # not its lineage: nothing loosened
    voted = await server.decide(pay.id, Approve(), actor="alice")
    assert (voted.status, len(voted.votes)) == ("pending", 1)  # still two people
    frozen = {"rules": [{"deny": "restart_service", "reason": "frozen"}, *loose["rules"]]}
    policy = Policy.from_dict(frozen)
    await store.save_policy(policy.version, frozen, actor="admin", at=await store.clock())
    await server.catch_up()
    [rejected] = await server.rejudge()
    assert (rejected.id, rejected.status) == (restart.id, "rejected")
