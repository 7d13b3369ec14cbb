"""Beyond one person's yes or no, in the core, on both stores: several people's approvals,
escalation as time passes, signoff's own decision on timeout, and handing an approval on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from signoff import (
    Approve,
    ConflictError,
    Edit,
    ForbiddenError,
    InvalidDecisionError,
    Policy,
    PolicyError,
    Reject,
    Respond,
    Scope,
    ToolCall,
)
from signoff.gate import CheckContext, Gate
from signoff.gate.deciders import needed
from signoff.store import SQLStore
from signoff.types import Approval, Quorum, Vote

POLICY = Policy.from_dict(
    {
        "rules": [
            {"ask": "pay", "approvals": {"count": 2}},
            {"ask": "wire", "approvals": {"count": 2, "from": ["ops", "finance"]}},
            {
                "ask": "deploy",
                "approvers": ["dev"],
                "escalate": [{"after": "30m", "to": ["security"]}, {"after": "2h", "to": ["cto"]}],
            },
            {"ask": "restart", "on_timeout": {"after": "15m", "decide": "approve"}},
            {
                "ask": "drop",
                "on_timeout": {"after": "15m", "decide": "reject", "reason": "nobody looked"},
            },
            {"ask": "scale", "approvers": ["ops"]},
        ]
    }
)
START = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
OPS, FINANCE, DEV = frozenset({"ops"}), frozenset({"finance"}), frozenset({"dev"})


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now

    def wait(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def gate(store: SQLStore, clock: Clock) -> Gate:
    return Gate(POLICY, store, clock=clock)


async def held(gate: Gate, tool: str, by: str = "bob", **args: Any) -> Approval:
    context = CheckContext(run_id="r1", thread_id="t1", requested_by=by)
    [outcome] = await gate.check([ToolCall(id=f"c-{tool}", name=tool, args=args)], context)
    assert outcome.approval is not None
    return outcome.approval


# -- several people ----------------------------------------------------------------------------


async def test_a_call_that_needs_two_runs_only_with_two_distinct_approvals(gate: Gate):
    approval = await held(gate, "pay", amount=10)
    first = await gate.decide(approval.id, Approve(), actor="alice")
    assert first.pending and [v.by for v in first.votes] == ["alice"]
    again = await gate.decide(approval.id, Approve(), actor="alice")  # the same person: once
    assert again.pending and [v.by for v in again.votes] == ["alice"]
    done = await gate.decide(approval.id, Approve(), actor="carol")
    assert (done.status, done.decided_by) == ("approved", "carol")
    assert [v.by for v in done.votes] == ["alice", "carol"]
    stored = await gate.store.get_approval(approval.id)
    assert (stored.status, [v.by for v in stored.votes]) == ("approved", ["alice", "carol"])
    log = [(e.action, e.actor) for e in await gate.store.audit_log()]
    assert log == [("verdict", "bob"), ("vote", "alice"), ("decision", "carol")]
    assert (await gate.store.audit_log())[-1].data["votes"] == ["alice", "carol"]


async def test_the_requester_never_counts_among_the_people(gate: Gate):
    approval = await held(gate, "pay", by="alice")
    with pytest.raises(ForbiddenError, match="other than the one who asked"):
        await gate.decide(approval.id, Approve(), actor="alice")
    assert not (await gate.store.get_approval(approval.id)).votes


async def test_one_of_each_role_is_needed_and_a_vote_that_cannot_help_is_refused(gate: Gate):
    approval = await held(gate, "wire", amount=5)
    await gate.decide(approval.id, Approve(), actor="olga", roles=OPS)
    with pytest.raises(ForbiddenError, match="finance"):
        await gate.decide(approval.id, Approve(), actor="otto", roles=OPS)
    still = await gate.store.get_approval(approval.id)
    assert still.pending and [v.by for v in still.votes] == ["olga"]
    done = await gate.decide(approval.id, Approve(), actor="fay", roles=FINANCE)
    assert done.status == "approved"


def test_the_roles_are_matched_one_person_each():
    quorum = Quorum(count=2, roles=("ops", "finance"))
    both = Vote(by="a", roles=("finance", "ops"), at=START)
    ops = Vote(by="b", roles=("ops",), at=START)
    # One person with both roles stands for one of them: the other still needs someone.
    assert needed(quorum, [both]).people == 1
    # Whoever came first, the person with both roles stands for finance.
    assert needed(quorum, [both, ops]).people == 0
    assert needed(quorum, [ops, both]).people == 0
    assert needed(Quorum(count=3, roles=("ops", "ops")), [ops]).roles == ("ops",)


async def test_one_rejection_ends_it_and_an_edit_starts_the_count_again(gate: Gate):
    rejected = await held(gate, "pay", amount=10)
    await gate.decide(rejected.id, Approve(), actor="alice")
    done = await gate.decide(rejected.id, Reject(reason="no"), actor="carol")
    assert done.status == "rejected"

    context = CheckContext(run_id="r2", thread_id="t2", requested_by="bob")
    [outcome] = await gate.check([ToolCall(id="c2", name="pay", args={"amount": 90})], context)
    assert outcome.approval is not None
    edited_id = outcome.approval.id
    await gate.decide(edited_id, Approve(), actor="alice")
    edited = await gate.decide(edited_id, Edit(args={"amount": 50}), actor="carol")
    # The edit replaced the call: alice approved the other one, so only carol counts.
    assert edited.pending and [v.by for v in edited.votes] == ["carol"]
    assert (edited.call.args, edited.requested_args) == ({"amount": 50}, {"amount": 90})
    final = await gate.decide(edited_id, Approve(), actor="alice", version=edited.version)
    # An edited call is decided as an edit: every resumer runs its arguments.
    assert (final.status, final.call.args) == ("edited", {"amount": 50})
    assert isinstance(final.decision, Edit) and final.decision.args == {"amount": 50}


async def test_an_edit_that_changes_nothing_counts_as_an_approval(gate: Gate):
    approval = await held(gate, "pay", amount=10)
    await gate.decide(approval.id, Approve(), actor="alice")
    done = await gate.decide(approval.id, Edit(args={"amount": 10}), actor="carol")
    assert (done.status, [v.by for v in done.votes]) == ("approved", ["alice", "carol"])


async def test_an_edit_never_moves_a_call_under_a_rule_that_needs_more_people(store: SQLStore):
    policy = Policy.from_dict(
        {
            "rules": [
                {"ask": "pay"},
                {"ask": "pay", "when": {"amount": {"ge": 1000}}, "approvals": {"count": 2},
                 "priority": 1},
            ]
        }
    )  # fmt: skip
    gate = Gate(policy, store)
    small = await held(gate, "pay", amount=10)
    with pytest.raises(ForbiddenError, match="needs 2 people"):
        await gate.decide(small.id, Edit(args={"amount": 5000}), actor="alice")
    assert (await store.get_approval(small.id)).pending
    done = await gate.decide(small.id, Edit(args={"amount": 20}), actor="alice")
    assert done.status == "edited"


async def test_responding_instead_ends_it(gate: Gate):
    approval = await held(gate, "pay", amount=1)
    done = await gate.decide(approval.id, Respond(content="paid by hand"), actor="alice")
    assert done.status == "responded"


async def test_no_grant_satisfies_a_rule_that_needs_several_people(gate: Gate):
    approval = await held(gate, "pay", amount=3)
    with pytest.raises(InvalidDecisionError, match="a grant is one person's"):
        await gate.decide(approval.id, Approve(always=Scope(kind="global")), actor="alice")
    # A grant from elsewhere under the same rule (one approver, granted globally) lets nothing
    # through: the engine refuses it for a rule that needs two.
    single = Gate(Policy.from_dict({"rules": [{"ask": "pay"}]}), gate.store)
    one = await held(single, "pay", amount=3)
    await single.decide(one.id, Approve(always=Scope(kind="global")), actor="alice")
    again = await held(gate, "pay", amount=3)
    assert again.pending


async def test_a_batch_counts_each_approval_as_one_vote(gate: Gate):
    first, second = await held(gate, "pay", amount=1), await held(gate, "restart")
    decided = await gate.decide_batch({first.id: Approve(), second.id: Approve()}, actor="alice")
    assert [(a.status, len(a.votes)) for a in decided] == [("pending", 1), ("approved", 0)]


# -- time: escalation and decisions on timeout -------------------------------------------------


async def test_escalation_widens_who_may_decide_as_time_passes(gate: Gate, clock: Clock):
    approval = await held(gate, "deploy")
    assert not gate.may_decide(approval, actor="sam", roles={"security"})
    clock.wait(minutes=31)
    assert gate.may_decide(approval, actor="sam", roles={"security"})
    assert not gate.may_decide(approval, actor="cleo", roles={"cto"})
    clock.wait(hours=2)
    assert gate.may_decide(approval, actor="cleo", roles={"cto"})
    done = await gate.decide(approval.id, Approve(), actor="cleo", roles={"cto"})
    assert done.status == "approved"


async def test_each_escalation_step_is_announced_once_by_any_of_two_gates(
    store: SQLStore, clock: Clock
):
    one, two = Gate(POLICY, store, clock=clock), Gate(POLICY, store, clock=clock)
    approval = await held(one, "deploy")
    assert await one.escalate_due() == [] and await two.escalate_due() == []
    clock.wait(minutes=45)
    announced = [*await one.escalate_due(), *await two.escalate_due()]
    assert [a.escalated for a in announced] == [1]
    clock.wait(hours=3)
    announced = [*await two.escalate_due(), *await one.escalate_due()]
    assert [a.escalated for a in announced] == [2]
    assert await one.escalate_due() == []
    entries = [e for e in await store.audit_log() if e.action == "escalate"]
    assert [(e.subject, e.data["to"], e.data["approvers"]) for e in entries] == [
        (approval.id, ["security"], ["dev", "security"]),
        (approval.id, ["cto"], ["dev", "security", "cto"]),
    ]


async def test_two_steps_reached_at_once_are_announced_in_one_entry(gate: Gate, clock: Clock):
    await held(gate, "deploy")
    clock.wait(hours=5)
    [announced] = await gate.escalate_due()
    assert announced.escalated == 2
    [entry] = [e for e in await gate.store.audit_log() if e.action == "escalate"]
    assert entry.data["to"] == ["cto", "security"]


async def test_a_decided_call_escalates_no_more(gate: Gate, clock: Clock):
    approval = await held(gate, "deploy")
    await gate.decide(approval.id, Approve(), actor="dan", roles=DEV)
    clock.wait(hours=5)
    assert await gate.escalate_due() == []


async def test_on_timeout_signoff_approves_once_as_itself(store: SQLStore, clock: Clock):
    one, two = Gate(POLICY, store, clock=clock), Gate(POLICY, store, clock=clock)
    approval = await held(one, "restart")
    assert approval.expires_at == START + timedelta(minutes=15)
    assert await one.expire_due() == []
    clock.wait(minutes=16)
    decided = [*await one.expire_due(), *await two.expire_due()]
    assert [(a.status, a.decided_by, a.automatic) for a in decided] == [
        ("approved", "signoff", True)
    ]
    [entry] = [e for e in await store.audit_log() if e.action == "decision"]
    assert (entry.actor, entry.data["automatic"], entry.data["rule"]) == (
        "signoff",
        True,
        approval.rule,
    )


async def test_on_timeout_signoff_rejects_with_the_rules_reason(gate: Gate, clock: Clock):
    await held(gate, "drop")
    clock.wait(minutes=20)
    [rejected] = await gate.expire_due()
    assert rejected.status == "rejected"
    assert isinstance(rejected.decision, Reject) and rejected.decision.reason == "nobody looked"


async def test_a_person_deciding_after_the_timeout_is_told_what_signoff_decided(
    gate: Gate, clock: Clock
):
    approval = await held(gate, "restart")
    clock.wait(minutes=16)
    with pytest.raises(ConflictError, match="approved"):
        await gate.decide(approval.id, Reject(reason="too late"), actor="alice")
    stored = await gate.store.get_approval(approval.id)
    assert (stored.status, stored.automatic) == ("approved", True)


async def test_a_waiter_that_gives_up_early_expires_the_call_never_approves_it(
    gate: Gate, clock: Clock
):
    # An integration's own wait (AdalFlow's timeout) may run out before the rule's: the call
    # expires then; approving on timeout is for the rule's time only.
    approval = await held(gate, "restart")
    clock.wait(minutes=5)
    [expired] = await gate.expire([approval])
    assert (expired.status, expired.automatic) == ("expired", False)


async def test_without_on_timeout_a_call_still_expires(store: SQLStore, clock: Clock):
    gate = Gate(Policy.from_dict({"rules": [{"ask": "x", "timeout": "1m"}]}), store, clock=clock)
    approval = await held(gate, "x")
    clock.wait(minutes=2)
    [expired] = await gate.expire([approval])
    assert (expired.status, expired.automatic) == ("expired", False)


def test_approving_on_timeout_past_the_rules_approvers_must_be_said():
    rule = {"ask": "x", "approvers": ["ops"], "on_timeout": {"after": "5m", "decide": "approve"}}
    with pytest.raises(PolicyError, match="despite_approvers"):
        Policy.from_dict({"rules": [rule]})
    rule["on_timeout"]["despite_approvers"] = True  # type: ignore[index]
    policy = Policy.from_dict({"rules": [rule]})
    assert any("without the people" in w.message for w in policy.warnings)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"approvals": {"count": 0}}, "count must be 1 to 10"),
        ({"approvals": {"count": 2, "distinct": False}}, "distinct"),
        ({"approvals": {"count": 1, "from": ["a", "b"]}}, "raise count"),
        ({"escalate": [{"after": "1h", "to": "a"}, {"after": "5m", "to": "b"}]}, "after the one"),
        ({"escalate": []}, "non-empty list"),
        ({"on_timeout": {"after": "5m", "decide": "maybe"}}, "approve or reject"),
        ({"timeout": "1m", "on_timeout": {"after": "5m", "decide": "reject"}}, "give the time"),
        ({"on_timeout": {"after": "5m", "decide": "approve", "reason": "x"}}, "goes with"),
    ],
)
def test_bad_options_name_where_they_are(options: dict[str, Any], message: str):
    with pytest.raises(PolicyError, match=message):
        Policy.from_dict({"rules": [{"ask": "x", **options}]})


def test_the_options_survive_a_round_trip_through_the_unified_format():
    again = Policy.from_dict({"rules": [r.to_dict() for r in POLICY.rules]})
    assert [(r.quorum, r.escalate, r.on_timeout, r.timeout) for r in again.rules] == [
        (r.quorum, r.escalate, r.on_timeout, r.timeout) for r in POLICY.rules
    ]


# -- handing an approval on --------------------------------------------------------------------


async def test_an_approver_hands_an_approval_to_a_person_with_a_note(store: SQLStore):
    directory = {"olga": frozenset({"ops"}), "bob": frozenset({"dev"})}
    gate = Gate(POLICY, store, roles_of=directory.get)
    approval = await held(gate, "scale", replicas=3)
    with pytest.raises(ForbiddenError):  # only someone who may decide hands it on
        await gate.assign(approval.id, "olga", actor="bob", roles=DEV)
    with pytest.raises(InvalidDecisionError, match="needs one of the roles"):
        await gate.assign(approval.id, "bob", actor="oscar", roles=OPS)
    with pytest.raises(InvalidDecisionError, match="not a known principal"):
        await gate.assign(approval.id, "nobody", actor="oscar", roles=OPS)
    with pytest.raises(InvalidDecisionError, match="may not decide"):
        await gate.assign(approval.id, "role:dev", actor="oscar", roles=OPS)
    assigned = await gate.assign(approval.id, "olga", actor="oscar", roles=OPS, note="yours")
    assert assigned.assigned is not None
    assert (assigned.assigned.to, assigned.assigned.by, assigned.assigned.note) == (
        "olga",
        "oscar",
        "yours",
    )
    mine = await store.list_approvals(status="pending", assigned_to=["olga", "role:ops"])
    assert [a.id for a in mine] == [approval.id]
    assert await store.list_approvals(status="pending", assigned_to=["bob"]) == []
    to_role = await gate.assign(approval.id, "role:ops", actor="olga", roles=OPS)
    assert to_role.assigned is not None and to_role.assigned.role == "ops"
    entries = [e for e in await store.audit_log() if e.action == "assign"]
    assert [(e.actor, e.data["to"], e.data["from"]) for e in entries] == [
        ("oscar", "olga", None),
        ("olga", "role:ops", "olga"),
    ]
    # Handing it on widens nothing: someone without the role still may not decide it.
    with pytest.raises(ForbiddenError):
        await gate.decide(approval.id, Approve(), actor="bob", roles=DEV)


@pytest.mark.parametrize("to", ["", " olga", "role:", "x" * 201, "a\nb"])
async def test_a_bad_assignee_is_refused_and_nothing_is_written(gate: Gate, to: str):
    approval = await held(gate, "restart")
    with pytest.raises(InvalidDecisionError):
        await gate.assign(approval.id, to, actor="alice")
    assert (await gate.store.get_approval(approval.id)).assigned is None


async def test_a_decided_approval_is_not_handed_on(gate: Gate):
    approval = await held(gate, "restart")
    await gate.decide(approval.id, Approve(), actor="alice")
    with pytest.raises(ConflictError, match="already approved"):
        await gate.assign(approval.id, "carol", actor="alice")


# -- the sweeper: the store's clock, one replica at a time ---------------------------------------


async def test_the_sweeper_runs_on_one_replica_at_a_time_and_another_takes_over(
    store: SQLStore, clock: Clock
):
    one, two = Gate(POLICY, store, clock=clock), Gate(POLICY, store, clock=clock)
    approval = await held(one, "restart")
    assert await one.sweep("replica-1", lease=5) is True
    assert await two.sweep("replica-2", lease=5) is False  # replica-1 holds the lease
    clock.wait(minutes=16)  # the call is due, and replica-1's lease has run out: it is gone
    assert await two.sweep("replica-2", lease=5) is True
    assert (await store.get_approval(approval.id)).automatic
    assert await one.sweep("replica-1", lease=5) is False
    assert await two.sweep("replica-2", lease=5) is True  # renewed by its holder


async def test_what_falls_due_is_judged_by_the_stores_clock(
    store: SQLStore, monkeypatch: pytest.MonkeyPatch
):
    gate = Gate(POLICY, store)  # no clock of its own: the store's
    approval = await held(gate, "restart")
    assert approval.expires_at is not None
    assert await gate.sweep("replica-1") is True
    assert (await store.get_approval(approval.id)).pending
    later = approval.expires_at + timedelta(seconds=1)

    async def store_clock() -> datetime:
        return later

    # This process's clock says the call is not due; the store's (every replica's) says it is.
    monkeypatch.setattr(store, "clock", store_clock)
    assert await gate.time() == later
    [decided] = await gate.expire_due()
    assert (decided.id, decided.status, decided.decided_at) == (approval.id, "approved", later)


async def test_the_store_tells_its_own_time(store: SQLStore):
    first = await store.clock()
    second = await store.clock()
    assert first.tzinfo is not None and second >= first
