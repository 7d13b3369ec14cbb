"""Ways around an approval, closed: grants bound to their granter and their rule, arguments kept
as requested, and arguments too deep or too big never stored. On both store backends."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from signoff import (
    Approve,
    Context,
    Edit,
    ForbiddenError,
    InvalidDecisionError,
    Policy,
    PolicyEngine,
    Scope,
    ToolCall,
)
from signoff.gate import CheckContext, Gate
from signoff.limits import MAX_DEPTH, ArgumentLimits
from signoff.store import SQLStore

CHARGE = {"ask": "charge", "approvers": ["ops"], "forbid_self_approval": True}
# Widened to any arguments on purpose: these tests are about the rule and the granter.
ALWAYS = Approve(always=Scope(kind="global", with_args=False))


def charge(amount: int = 5) -> ToolCall:
    return ToolCall(id="c1", name="charge", args={"amount": amount})


def nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


@pytest.fixture
def gate(store: SQLStore) -> Gate:
    policy = Policy.from_dict({"rules": [{"allow": "list_*"}, CHARGE]})
    return Gate(policy, store, poll_interval=0.05)


async def held(gate: Gate, call: ToolCall, by: str) -> str:
    [outcome] = await gate.check([call], CheckContext(requested_by=by, thread_id="t"))
    assert outcome.kind == "hold" and outcome.approval is not None
    return outcome.approval.id


async def kind(gate: Gate, call: ToolCall, by: str) -> str:
    [outcome] = await gate.check([call], CheckContext(requested_by=by, thread_id="t"))
    return outcome.kind


async def test_a_grant_never_lets_through_its_granter_s_own_call_where_self_approval_is_forbidden(
    gate: Gate,
):
    own = await held(gate, charge(), by="bob")
    with pytest.raises(ForbiddenError, match="forbids self-approval"):
        await gate.decide(own, ALWAYS, actor="bob", roles=["ops"])
    # bob approves carol's charge "always, global" ...
    await gate.decide(await held(gate, charge(), by="carol"), ALWAYS, actor="bob", roles=["ops"])
    # ... which lets carol's next charge through, never his own.
    assert await kind(gate, charge(), by="carol") == "run"
    assert await kind(gate, charge(), by="bob") == "hold"
    [grant] = await gate.grants(tool="charge")
    assert (grant.created_by, grant.roles, grant.uses) == ("bob", ("ops",), 1)


async def test_a_grant_does_not_carry_over_onto_a_stricter_rule_put_at_its_rule_s_position(
    gate: Gate,
):
    # Granted under rules[1] (a generated id: the rule's position) ...
    await gate.decide(await held(gate, charge(), by="carol"), ALWAYS, actor="bob", roles=["ops"])
    assert await kind(gate, charge(500), by="carol") == "run"
    # ... then an admin puts a stricter rule in that position.
    stricter = {"ask": "charge", "when": {"amount": {"gt": 100}}, "approvers": ["security"]}
    gate.engine = PolicyEngine(Policy.from_dict({"rules": [{"allow": "list_*"}, stricter, CHARGE]}))
    [outcome] = await gate.check([charge(500)], CheckContext(requested_by="carol"))
    assert outcome.kind == "hold" and outcome.approval is not None
    assert (outcome.approval.rule, outcome.approval.approvers) == ("rules[1]", ("security",))
    # The rule it was given under, moved but unchanged, still honours it.
    assert await kind(gate, charge(5), by="carol") == "run"


async def test_a_grant_covers_nothing_once_its_rule_says_something_else(gate: Gate):
    await gate.decide(await held(gate, charge(), by="carol"), ALWAYS, actor="bob", roles=["ops"])
    edited = CHARGE | {"approvers": ["finance"]}
    gate.engine = PolicyEngine(Policy.from_dict({"rules": [{"allow": "list_*"}, edited]}))
    assert await kind(gate, charge(), by="carol") == "hold"
    [grant] = await gate.grants(tool="charge")
    assert not gate.engine.knows(grant.rule_digest)
    problem = gate.engine.grant_problem(grant, charge(), Context(requested_by="carol"))
    assert problem == "rule rules[1] changed since it was granted"


async def test_grants_count_their_uses_and_a_revoked_one_lets_nothing_more_through(gate: Gate):
    await gate.decide(await held(gate, charge(), by="carol"), ALWAYS, actor="bob", roles=["ops"])
    outcomes = await gate.check([charge(1), charge(2)], CheckContext(requested_by="dave"))
    assert [o.kind for o in outcomes] == ["run", "run"]
    [grant] = await gate.grants(tool="charge")
    assert grant.uses == 2 and grant.last_used_at is not None
    await gate.revoke_grant(grant.id, actor="olga")
    assert await kind(gate, charge(), by="carol") == "hold"
    [revoked] = await gate.store.list_grants(tool="charge", revoked=True)
    assert (revoked.revoked_by, revoked.uses) == ("olga", 2)


async def test_a_thread_grant_never_runs_a_call_someone_else_requests_in_that_thread(gate: Gate):
    # bob approves olga's charge "always, for this thread" ...
    approval_id = await held(gate, charge(), by="olga")
    await gate.decide(approval_id, Approve(always=Scope(kind="thread")), actor="bob", roles=["ops"])
    # ... and eve, who reads the thread's id in the inbox, starts a run on it: she is asked.
    assert await kind(gate, charge(), by="eve") == "hold"
    [nobody] = await gate.check([charge()], CheckContext(thread_id="t"))
    assert nobody.kind == "hold"  # a requester nobody knows is not olga either
    assert await kind(gate, charge(), by="olga") == "run"
    [grant] = await gate.grants(tool="charge")
    assert (grant.requested_by, grant.uses) == ("olga", 1)
    eve = Context(thread_id="t", requested_by="eve")
    assert gate.engine.grant_problem(grant, charge(), eve) == (
        "it covers only calls 'olga' requests in its thread, and 'eve' requested this one"
    )


async def test_a_run_or_thread_grant_is_refused_for_a_call_of_no_known_requester(gate: Gate):
    [outcome] = await gate.check([charge()], CheckContext(run_id="r", thread_id="t"))
    assert outcome.approval is not None
    for scope in ("run", "thread"):
        always = Approve(always=Scope(kind=scope))
        with pytest.raises(InvalidDecisionError, match="names no requester"):
            await gate.decide(outcome.approval.id, always, actor="bob", roles=["ops"])
    assert await gate.grants() == []
    assert (await gate.store.get_approval(outcome.approval.id)).pending


async def test_a_grant_covers_the_tool_of_the_agent_whose_call_was_approved_and_no_other(
    gate: Gate,
):
    billing = replace(charge(), agent="billing")
    shop = replace(charge(), id="c9", agent="shop")  # another agent's tool, also named charge
    context = CheckContext(requested_by="olga", thread_id="t")
    outcomes = await gate.check([billing, replace(billing, id="c2")], context)
    for outcome, scope in zip(outcomes, ("thread", "global"), strict=True):
        assert outcome.approval is not None
        always = Approve(always=Scope(kind=scope))  # type: ignore[arg-type]
        await gate.decide(outcome.approval.id, always, actor="bob", roles=["ops"])
    assert [o.kind for o in await gate.check([shop, billing], context)] == ["hold", "run"]
    grants = await gate.grants(tool="charge")
    assert [(g.scope, g.agent) for g in grants] == [("thread", "billing"), ("global", "billing")]
    assert gate.engine.grant_problem(grants[1], shop, Context(requested_by="olga")) == (
        "it is for the tool of agent 'billing', not of agent 'shop'"
    )


async def test_a_grant_is_judged_by_its_granter_s_roles_as_the_directory_has_them_now(
    store: SQLStore,
):
    people = {"bob": frozenset({"ops"}), "olga": frozenset[str]()}
    gate = Gate(Policy.from_dict({"rules": [CHARGE]}), store, roles_of=people.get)
    await gate.decide(await held(gate, charge(), by="olga"), ALWAYS, actor="bob", roles=["ops"])
    [grant] = await gate.grants(tool="charge")
    assert await kind(gate, charge(76), by="olga") == "run"
    assert gate.grant_inactive(grant) is None
    del people["bob"]  # his token taken out of the config
    assert await kind(gate, charge(77), by="olga") == "hold"
    assert gate.grant_inactive(grant) == "its granter 'bob' is no longer a known principal"
    people["bob"] = frozenset({"viewer"})  # back, demoted
    assert await kind(gate, charge(78), by="olga") == "hold"
    assert gate.grant_inactive(grant) == (
        "its granter 'bob' no longer has any of the roles ['ops'] its rule needs"
    )
    people["bob"] = frozenset({"ops", "viewer"})
    assert await kind(gate, charge(79), by="olga") == "run"
    [used] = await gate.grants(tool="charge")
    assert (used.uses, used.roles) == (2, ("ops",))  # the roles stored are those he granted with


async def test_every_call_a_grant_lets_through_is_an_audit_entry(gate: Gate):
    await gate.decide(await held(gate, charge(), by="carol"), ALWAYS, actor="bob", roles=["ops"])
    calls = [ToolCall(id=f"c{i}", name="charge", args={"amount": i}) for i in range(25)]
    context = CheckContext(requested_by="dave", run_id="r", thread_id="t")
    assert {o.kind for o in await gate.check(calls, context)} == {"run"}
    [grant] = await gate.grants(tool="charge")
    uses = [e for e in await gate.store.audit_log() if e.action == "grant_use"]
    assert grant.uses == len(uses) == 25
    assert {(e.subject, e.actor) for e in uses} == {(grant.id, "dave")}
    assert uses[3].data == {
        "tool": "charge", "server": None, "agent": None, "digest": calls[3].digest,
        "call_id": "c3", "run_id": "r", "thread_id": "t",
    }  # fmt: skip
    assert (await gate.store.verify_audit()).ok


async def test_approve_always_covers_only_the_approved_arguments_unless_widened_on_purpose(
    gate: Gate,
):
    assert Scope(kind="thread").with_args is True
    thread = Approve(always=Scope(kind="thread"))
    await gate.decide(await held(gate, charge(5), by="olga"), thread, actor="bob", roles=["ops"])
    assert await kind(gate, charge(5), by="olga") == "run"
    assert await kind(gate, charge(500), by="olga") == "hold"
    # Widened in so many words: now any amount runs.
    wide = Approve(always=Scope(kind="thread", with_args=False))
    await gate.decide(await held(gate, charge(500), by="olga"), wide, actor="bob", roles=["ops"])
    assert await kind(gate, charge(9000), by="olga") == "run"
    exact, any_args = await gate.grants(tool="charge")
    assert (exact.args_digest, any_args.args_digest) == (charge(5).digest, None)


async def test_an_edit_keeps_the_arguments_the_call_was_requested_with(gate: Gate):
    approval_id = await held(gate, charge(500), by="carol")
    decided = await gate.decide(approval_id, Edit(args={"amount": 50}), actor="bob", roles=["ops"])
    stored = await gate.store.get_approval(approval_id)
    for approval in (decided, stored):
        assert approval.call.args == {"amount": 50}
        assert approval.requested_args == {"amount": 500}
        assert approval.requested_call.args == {"amount": 500}
    [record] = [e for e in await gate.store.audit_log() if e.action == "decision"]
    assert record.data["args"] == {"amount": 500}
    assert record.data["decision"] == {"kind": "edit", "args": {"amount": 50}}
    assert record.data["digest"] == charge(500).digest != record.data["decided_digest"]


async def test_a_call_nested_past_the_limit_is_blocked_and_never_stored(gate: Gate):
    deep = ToolCall(id="c", name="charge", args=nested(MAX_DEPTH + 1))
    fine = ToolCall(id="d", name="charge", args=nested(MAX_DEPTH))
    blocked, kept = await gate.check([deep, fine], CheckContext(requested_by="carol"))
    assert (blocked.kind, blocked.approval) == ("block", None)
    assert blocked.verdict.reason == (
        f"the arguments are nested more than {MAX_DEPTH} levels deep; "
        f"signoff takes at most {MAX_DEPTH}"
    )
    assert kept.kind == "hold"
    assert [a.id for a in await gate.store.list_approvals()] == [kept.approval.id]  # type: ignore[union-attr]
    # Any depth is measured safely: far past what a recursive reader survives.
    [far] = await gate.check([ToolCall(id="e", name="charge", args=nested(100_000))])
    assert far.kind == "block"


async def test_a_call_bigger_than_the_limit_is_blocked(store: SQLStore):
    gate = Gate(Policy.from_dict({"rules": [CHARGE]}), store, limits=ArgumentLimits(max_bytes=1000))
    [outcome] = await gate.check([ToolCall(id="c", name="charge", args={"memo": "x" * 2000})])
    assert outcome.kind == "block"
    assert "signoff takes at most 1,000" in outcome.verdict.reason
    assert await store.list_approvals() == []


async def test_an_edit_nested_past_the_limit_is_refused_and_changes_nothing(gate: Gate):
    approval_id = await held(gate, charge(), by="carol")
    for levels in (MAX_DEPTH + 1, 800):
        with pytest.raises(InvalidDecisionError, match="nested more than 64 levels"):
            await gate.decide(approval_id, Edit(args=nested(levels)), actor="bob", roles=["ops"])
    assert (await gate.store.get_approval(approval_id)).pending
