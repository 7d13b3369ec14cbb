"""The Gate through its public API, on both store backends."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event

from signoff import (
    ApprovalTimeout,
    Approve,
    ConflictError,
    Decision,
    Edit,
    Expired,
    ForbiddenError,
    InvalidDecisionError,
    InvalidEditError,
    NotFoundError,
    Policy,
    Reject,
    Respond,
    Scope,
    ToolCall,
)
from signoff.gate import CheckContext, Gate
from signoff.store import SQLStore
from tests.deadline import HANG
from tests.gate.waiters import WatchedNotifier

POLICY = Policy.from_dict(
    {
        "rules": [
            {"deny": "*_terminate*"},
            {"allow": "*_list*"},
            {"ask": "delete_pod", "approvers": ["ops"]},
            {"ask": "scale", "forbid_self_approval": True},
            {"deny": "scale", "when": {"replicas": {"gt": 100}}},
            {"ask": "quick", "timeout": 0.2},
        ]
    }
)
SCHEMAS = {
    "scale": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "replicas": {"type": "integer", "minimum": 0}},
        "required": ["name", "replicas"],
        "additionalProperties": False,
    }
}


def call(tool: str, /, **args: object) -> ToolCall:
    return ToolCall(id=f"c-{tool}", name=tool, args=dict(args))


@pytest.fixture
def gate(store: SQLStore) -> Gate:
    return Gate(POLICY, store, schemas=SCHEMAS, poll_interval=0.05)


async def test_check_runs_allowed_blocks_denied_and_holds_asked_calls_in_one_batch(gate: Gate):
    outcomes = await gate.check(
        [call("pods_list"), call("vm_terminate"), call("delete_pod", name="a"), call("send_email")],
        CheckContext(run_id="r1", thread_id="t1", requested_by="bob"),
    )
    assert [o.kind for o in outcomes] == ["run", "block", "hold", "hold"]
    held = [o.approval for o in outcomes if o.approval is not None]
    assert len({a.batch_id for a in held}) == 1
    assert [(a.status, a.run_id, a.requested_by) for a in held] == [("pending", "r1", "bob")] * 2
    assert [a.id for a in await gate.store.list_approvals(status="pending")] == [
        held[1].id,
        held[0].id,
    ]
    assert [e.data["verdict"] for e in await gate.store.audit_log()] == ["deny", "ask", "ask"]


async def test_deciding_records_who_and_what_and_a_repeat_returns_the_stored_approval(gate: Gate):
    [outcome] = await gate.check([call("send_email", to="x")])
    assert outcome.approval is not None
    decided = await gate.decide(outcome.approval.id, Approve(), actor="alice")
    assert (decided.status, decided.decided_by, decided.decision, decided.version) == (
        "approved",
        "alice",
        Approve(),
        2,
    )
    assert await gate.decide(outcome.approval.id, Approve(), actor="alice") == decided
    with pytest.raises(ConflictError, match="already approved by 'alice'"):
        await gate.decide(outcome.approval.id, Reject(reason="no"), actor="carol")
    assert (await gate.store.verify_audit()).ok


async def test_twenty_concurrent_different_decisions_one_wins_the_rest_conflict(gate: Gate):
    [outcome] = await gate.check([call("send_email")])
    assert outcome.approval is not None
    decisions = [Approve() if i % 2 else Reject(reason=f"no {i}") for i in range(20)]
    results = await asyncio.gather(
        *(gate.decide(outcome.approval.id, d, actor=f"user{i}") for i, d in enumerate(decisions)),
        return_exceptions=True,
    )
    winners = [r for r in results if not isinstance(r, BaseException)]
    losers = [r for r in results if isinstance(r, BaseException)]
    stored = await gate.store.get_approval(outcome.approval.id)
    # Exactly one decision was written; repeats of that same decision return it, others conflict.
    assert all(isinstance(e, ConflictError) for e in losers)
    assert all(w == stored for w in winners)
    assert [e.action for e in await gate.store.audit_log()].count("decision") == 1


async def test_concurrent_decisions_commit_as_one_group_and_each_fails_or_succeeds_alone(
    gate: Gate,
):
    held = await gate.check(
        [call("send_email", to=f"x{i}") for i in range(4)] + [call("delete_pod", name="a")],
        CheckContext(run_id="r1", requested_by="bob"),
    )
    ids = [o.approval.id for o in held if o.approval is not None]
    commits: list[object] = []
    engine = gate.store.engine  # type: ignore[attr-defined]
    count = commits.append
    event.listen(engine, "commit", count)
    try:
        results = await asyncio.gather(
            gate.decide(ids[0], Approve(), actor="alice"),
            gate.decide(ids[1], Reject(reason="not now"), actor="alice"),
            gate.decide(ids[0], Reject(reason="too late"), actor="carol"),  # conflicts
            gate.decide(ids[2], Edit(args={"to": "y"}), actor="alice"),
            gate.decide("no-such-approval", Approve(), actor="alice"),
            gate.decide(ids[4], Approve(), actor="eve", roles=["dev"]),  # not an approver
            gate.decide(ids[3], Approve(), actor="alice"),
            return_exceptions=True,
        )
    finally:
        event.remove(engine, "commit", count)
    assert len(commits) == 1  # one transaction, one commit for all seven
    kinds = [type(r).__name__ if isinstance(r, BaseException) else r.status for r in results]
    assert kinds == [
        "approved", "rejected", "ConflictError", "edited", "NotFoundError", "ForbiddenError",
        "approved",
    ]  # fmt: skip
    assert "already approved by 'alice'" in str(results[2])
    stored = await gate.store.get_approvals(ids)
    assert [a.status for a in stored] == ["approved", "rejected", "edited", "approved", "pending"]
    assert stored[2].call.args == {"to": "y"}
    # The four taken decisions, chained in the order they were asked for; nothing of the others.
    decisions = [e for e in await gate.store.audit_log() if e.action == "decision"]
    assert [e.subject for e in decisions] == [ids[0], ids[1], ids[2], ids[3]]
    assert (await gate.store.verify_audit()).ok
    events = await gate.store.run_events("r1") if await gate.store.run_exists("r1") else []
    assert events == []  # r1 is not a run of signoff's runtime: no run log to append to


async def test_an_unknown_approval_is_not_found(gate: Gate):
    with pytest.raises(NotFoundError):
        await gate.decide("nope", Approve(), actor="alice")


async def test_only_the_rules_roles_may_decide(gate: Gate):
    [outcome] = await gate.check([call("delete_pod", name="a")])
    assert outcome.approval is not None
    with pytest.raises(ForbiddenError, match=r"needs one of the roles \['ops'\]"):
        await gate.decide(outcome.approval.id, Approve(), actor="eve", roles=["dev"])
    decided = await gate.decide(outcome.approval.id, Approve(), actor="olga", roles=["ops"])
    assert decided.status == "approved"


async def test_self_approval_is_refused_where_the_rule_forbids_it(gate: Gate):
    [outcome] = await gate.check(
        [call("scale", name="web", replicas=3)], CheckContext(requested_by="bob")
    )
    assert outcome.approval is not None
    with pytest.raises(ForbiddenError, match="forbids self-approval"):
        await gate.decide(outcome.approval.id, Approve(), actor="bob")
    assert (await gate.decide(outcome.approval.id, Approve(), actor="alice")).status == "approved"


async def test_an_edit_is_validated_against_the_schema_with_its_path(gate: Gate):
    [outcome] = await gate.check([call("scale", name="web", replicas=3)])
    assert outcome.approval is not None
    with pytest.raises(InvalidEditError) as caught:
        await gate.decide(
            outcome.approval.id, Edit(args={"name": "web", "replicas": -1}), actor="alice"
        )
    assert caught.value.path == "/replicas"
    assert caught.value.schema_path == "properties/replicas/minimum"
    with pytest.raises(InvalidEditError, match="Additional properties"):
        await gate.decide(
            outcome.approval.id, Edit(args={"name": "web", "replicas": 1, "x": 1}), actor="alice"
        )
    edited = await gate.decide(
        outcome.approval.id, Edit(args={"name": "web", "replicas": 5}), actor="alice"
    )
    assert (edited.status, edited.call.args) == ("edited", {"name": "web", "replicas": 5})
    assert edited.call.digest != outcome.approval.call.digest


async def test_an_edit_decided_in_another_process_is_checked_against_the_schema_kept_with_it(
    gate: Gate, store: SQLStore
):
    [outcome] = await gate.check([call("scale", name="web", replicas=3)])
    assert outcome.approval is not None and outcome.approval.args_schema == SCHEMAS["scale"]
    inbox = Gate(POLICY, store)  # the server's gate: it knows no tool's schema

    with pytest.raises(InvalidEditError) as caught:
        await inbox.decide(
            outcome.approval.id, Edit(args={"name": "web", "replicas": -1}), actor="alice"
        )

    assert caught.value.schema_path == "properties/replicas/minimum"
    kept = await store.get_approval(outcome.approval.id)
    assert kept.pending and kept.args_schema == SCHEMAS["scale"]


@pytest.mark.parametrize(
    "broken",
    [{"type": "foo"}, {"type": "string", "pattern": "("}, {"$ref": "#/nowhere"}],
    ids=["unknown-type", "bad-pattern", "dangling-ref"],
)
async def test_a_tool_schema_that_cannot_check_an_edit_is_not_kept_and_refuses_edits_clearly(
    store: SQLStore, broken: dict[str, object]
):
    gate = Gate(POLICY, store, schemas={"scale": broken})
    [outcome] = await gate.check([call("scale", name="web", replicas=3)])
    assert outcome.approval is not None

    with pytest.raises(InvalidEditError):
        await gate.decide(outcome.approval.id, Edit(args={"name": "x"}), actor="alice")

    assert (await store.get_approval(outcome.approval.id)).pending
    if broken != {"$ref": "#/nowhere"}:  # a dangling $ref is a valid schema until applied
        assert outcome.approval.args_schema is None


async def test_a_tool_schema_too_large_to_keep_is_not_kept_with_the_approval(store: SQLStore):
    huge = {"type": "object", "description": "x" * 70_000}
    gate = Gate(POLICY, store, schemas={"scale": huge})

    [outcome] = await gate.check([call("scale", name="web", replicas=3)])

    assert outcome.approval is not None and outcome.approval.args_schema is None


async def test_an_edit_the_policy_would_deny_is_refused(gate: Gate):
    [outcome] = await gate.check([call("scale", name="web", replicas=3)])
    assert outcome.approval is not None
    with pytest.raises(ForbiddenError, match="the policy denies the edited call"):
        await gate.decide(
            outcome.approval.id, Edit(args={"name": "web", "replicas": 500}), actor="alice"
        )
    assert (await gate.store.get_approval(outcome.approval.id)).status == "pending"


async def test_approve_all_is_all_or_nothing(gate: Gate):
    outcomes = await gate.check([call("send_email"), call("delete_pod", name="a"), call("post")])
    ids = [o.approval.id for o in outcomes if o.approval is not None]
    with pytest.raises(ForbiddenError):
        await gate.decide_batch({i: Approve() for i in ids}, actor="alice", roles=["dev"])
    assert {a.status for a in await gate.store.get_approvals(ids)} == {"pending"}
    decided = await gate.decide_batch(
        {ids[0]: Approve(), ids[1]: Reject(reason="not today"), ids[2]: Respond(content="done")},
        actor="olga",
        roles=["ops"],
    )
    assert [a.status for a in decided] == ["approved", "rejected", "responded"]


async def test_approve_always_leaves_a_grant_that_lets_the_same_call_through_in_scope(gate: Gate):
    context = CheckContext(run_id="r1", thread_id="t1", requested_by="olga")
    [first] = await gate.check([call("send_email", to="a")], context)
    assert first.approval is not None
    # Widened to any arguments on purpose: the next call writes to someone else.
    any_args = Scope(kind="thread", with_args=False)
    await gate.decide(first.approval.id, Approve(always=any_args), actor="alice")
    [again] = await gate.check(
        [call("send_email", to="b")], CheckContext(run_id="r2", thread_id="t1", requested_by="olga")
    )
    assert again.kind == "run"
    assert again.verdict.rule is not None and again.verdict.rule.startswith("grant:")
    [elsewhere] = await gate.check(
        [call("send_email", to="b")], CheckContext(thread_id="t2", requested_by="olga")
    )
    assert elsewhere.kind == "hold"
    [grant] = await gate.grants(tool="send_email")
    await gate.revoke_grant(grant.id, actor="alice")
    [revoked] = await gate.check(
        [call("send_email", to="b")], CheckContext(thread_id="t1", requested_by="olga")
    )
    assert revoked.kind == "hold"
    assert [e.action for e in await gate.store.audit_log()][-2:] == ["revoke", "verdict"]


async def test_a_grant_never_lets_a_denied_call_through(gate: Gate):
    [first] = await gate.check([call("scale", name="web", replicas=3)])
    assert first.approval is not None
    any_args = Scope(kind="global", with_args=False)  # wide on purpose: a deny still stops it
    await gate.decide(first.approval.id, Approve(always=any_args), actor="alice")
    assert [o.kind for o in await gate.check([call("scale", name="web", replicas=4)])] == ["run"]
    assert [o.kind for o in await gate.check([call("scale", name="web", replicas=400)])] == [
        "block"
    ]


async def test_approve_always_for_a_run_needs_a_run(gate: Gate):
    [outcome] = await gate.check([call("send_email")])
    assert outcome.approval is not None
    with pytest.raises(InvalidDecisionError, match="belongs to no run"):
        await gate.decide(outcome.approval.id, Approve(always=Scope(kind="run")), actor="alice")


async def test_wait_returns_when_someone_decides(gate: Gate):
    [outcome] = await gate.check([call("send_email")])
    assert outcome.approval is not None
    waiter = asyncio.create_task(gate.wait(outcome.approval.id, timeout=HANG))
    await asyncio.sleep(0)
    await gate.decide(outcome.approval.id, Reject(reason="spam"), actor="alice")
    decided = await waiter
    assert decided.decision == Reject(reason="spam")


async def test_ask_maps_proceed_once_cancel_and_modify_to_decisions(gate: Gate):
    async def answer(decision: Approve | Reject | Edit) -> None:
        while not (pending := await gate.store.list_approvals(status="pending")):
            await asyncio.sleep(0.01)
        await gate.decide(pending[0].id, decision, actor="alice")

    for decision in (Approve(), Reject(reason="no"), Edit(args={"name": "x", "replicas": 2})):
        asking = asyncio.create_task(gate.ask(call("scale", name="web", replicas=3), timeout=HANG))
        await answer(decision)
        assert await asking == decision
    assert await gate.ask(call("pods_list")) == Approve()
    refused = await gate.ask(call("vm_terminate"))
    assert isinstance(refused, Reject) and "denied" in refused.reason


async def test_ask_times_out_and_a_rule_timeout_expires_the_approval(gate: Gate):
    with pytest.raises(ApprovalTimeout, match=r"not decided within 0\.1"):
        await gate.ask(call("send_email"), timeout=0.1)
    [left] = await gate.store.list_approvals(status="pending")
    assert left.call.name == "send_email"  # the caller gave up; the approval still waits
    with pytest.raises(ApprovalTimeout, match="expired"):
        await gate.ask(call("quick"), timeout=HANG)  # the rule's 0.2 s comes first
    [expired] = await gate.store.list_approvals(status="expired")
    assert expired.call.name == "quick"
    with pytest.raises(ConflictError, match="already expired"):
        await gate.decide(expired.id, Approve(), actor="alice")


async def test_the_sweeper_expires_due_approvals(store: SQLStore):
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    gate = Gate(POLICY, store, clock=lambda: now[0])
    [outcome] = await gate.check([call("quick")])
    assert outcome.approval is not None
    assert await gate.expire_due() == []
    now[0] += timedelta(seconds=1)
    [expired] = await gate.expire_due()
    assert (expired.id, expired.status, expired.decided_by) == (
        outcome.approval.id,
        "expired",
        "signoff",
    )
    assert await gate.expire_due() == []


async def test_a_call_whose_arguments_are_not_json_is_blocked_not_stored(gate: Gate):
    [outcome] = await gate.check([ToolCall(id="c", name="send_email", args={"n": float("nan")})])
    assert outcome.kind == "block"
    assert outcome.verdict.reason.startswith("the arguments are not JSON")
    assert await gate.store.list_approvals() == []
    [entry] = await gate.store.audit_log()
    assert (entry.data["verdict"], entry.data["digest"]) == ("deny", None)


async def test_a_decision_after_the_deadline_expires_the_approval_instead(store: SQLStore):
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    gate = Gate(POLICY, store, clock=lambda: now[0])
    [outcome] = await gate.check([call("quick")])
    assert outcome.approval is not None
    now[0] += timedelta(seconds=1)  # past the rule's 0.2 s, and no sweeper ran
    with pytest.raises(ConflictError, match=r"\(expired\) ran out of time before this decision"):
        await gate.decide(outcome.approval.id, Approve(), actor="alice")
    stored = await store.get_approval(outcome.approval.id)
    assert (stored.status, stored.decided_by) == ("expired", "signoff")


async def test_an_edit_must_satisfy_the_stricter_rule_it_moves_the_call_under(store: SQLStore):
    policy = Policy.from_dict(
        {
            "rules": [
                {"ask": "delete_pod", "when": {"ns": "prod"}, "approvers": ["ops"]},
                {"ask": "delete_pod", "approvers": ["dev"]},
            ]
        }
    )
    gate = Gate(policy, store)
    [outcome] = await gate.check([call("delete_pod", ns="dev")])
    assert outcome.approval is not None
    with pytest.raises(ForbiddenError, match=r"needs one of the roles \['ops'\]"):
        await gate.decide(
            outcome.approval.id, Edit(args={"ns": "prod"}), actor="dan", roles=["dev"]
        )
    await gate.decide(
        outcome.approval.id, Approve(always=Scope(kind="global")), actor="dan", roles=["dev"]
    )
    [prod] = await gate.check([call("delete_pod", ns="prod")])
    assert prod.kind == "hold"  # the dev's grant does not reach the ops-only rule


@pytest.mark.parametrize(
    ("decision", "message"),
    [
        (Approve(always=Scope(kind="Thread")), "unknown scope 'Thread'"),  # type: ignore[arg-type]
        (Respond(content="  "), "a response needs text"),
        (Expired(), "a decision is Approve, Edit, Respond, Reject or Answer"),
        (Approve(always=Scope(kind="agent")), "belongs to no agent"),
    ],
)
async def test_decisions_that_cannot_apply_are_refused(
    gate: Gate, decision: Decision, message: str
):
    [outcome] = await gate.check([call("send_email")])
    assert outcome.approval is not None
    with pytest.raises(InvalidDecisionError, match=message):
        await gate.decide(outcome.approval.id, decision, actor="alice")
    assert (await gate.store.get_approval(outcome.approval.id)).status == "pending"


async def test_repeating_a_decision_still_needs_the_role_and_compares_as_json(gate: Gate):
    [outcome] = await gate.check([call("delete_pod", flag=True)])
    assert outcome.approval is not None
    await gate.decide(outcome.approval.id, Edit(args={"flag": True}), actor="olga", roles=["ops"])
    with pytest.raises(ForbiddenError):
        await gate.decide(outcome.approval.id, Edit(args={"flag": True}), actor="eve")
    with pytest.raises(ConflictError):
        await gate.decide(outcome.approval.id, Edit(args={"flag": 1}), actor="olga", roles=["ops"])


async def test_a_waiter_is_woken_by_a_decision_in_this_process_not_by_polling(store: SQLStore):
    watched = WatchedNotifier()
    gate = Gate(POLICY, store, notifier=watched, poll_interval=3600)
    [outcome] = await gate.check([call("send_email")])
    assert outcome.approval is not None
    waiter = asyncio.create_task(gate.wait(outcome.approval.id, timeout=HANG))
    async with asyncio.timeout(HANG):
        await watched.parked.wait()  # it found the approval undecided
    await gate.decide(outcome.approval.id, Approve(), actor="alice")
    decided = await waiter  # within HANG: the hourly poll never came
    assert decided.status == "approved"


async def test_overlapping_batches_decided_at_once_never_deadlock(gate: Gate):
    outcomes = await gate.check([call("send_email") for _ in range(30)])
    ids = [o.approval.id for o in outcomes if o.approval is not None]
    batches = [{i: Approve() for i in ids[k : k + 10] + ids[::7]} for k in range(0, 30, 3)]
    results = await asyncio.gather(
        *(gate.decide_batch(batch, actor="alice") for batch in batches), return_exceptions=True
    )
    assert [r for r in results if isinstance(r, BaseException)] == []
    assert {a.status for a in await gate.store.get_approvals(ids)} == {"approved"}


async def test_verifying_while_others_write_never_reports_a_false_break(gate: Gate):
    async def write() -> None:
        for _ in range(20):
            await gate.check([call("send_email")])

    writer = asyncio.create_task(write())
    results = []
    while not writer.done():
        results.append((await gate.store.verify_audit()).reason)
    await writer
    assert all(reason.startswith("chain intact") for reason in results), results


async def test_a_closed_store_says_so(store_url: str):
    from signoff.errors import StoreError
    from signoff.store import open_store

    async with open_store(store_url) as store:
        pass
    with pytest.raises(StoreError):
        await store.get_approvals(["x"])
