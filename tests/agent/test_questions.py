"""An agent asks a person through `ask_person`: the question is held like a call, answered once,
and the run resumes with the answer (or the decline, or no answer) as the tool's result."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from signoff import Answer, Approve, ConflictError, InvalidDecisionError, Policy, Reject
from signoff.agent import Agent, Message, ModelTurn, Runner, ask_person
from signoff.gate import Gate
from signoff.gate.forms import ORDER, form_fields, with_order
from signoff.gate.questions import MAX_SCHEMA
from signoff.notify.slack_modal import modal
from signoff.store import SQLStore
from signoff.testing import ScriptedModel, call
from signoff.types import canonical_json
from tests.agent.test_runner import collect, of

FORM = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email"},
        "seats": {"type": "integer", "minimum": 1, "maximum": 10},
    },
    "required": ["email"],
}


def asking(
    store: SQLStore, question: dict[str, Any], policy: dict[str, Any] | None = None, **gate: Any
) -> tuple[Runner, ScriptedModel]:
    model = ScriptedModel(
        [ModelTurn(tool_calls=(call("ask_person", **question),)), ModelTurn(text="thanks")]
    )
    agent = Agent(name="helper", model=model, tools=[ask_person()])
    return Runner(agent, Gate(Policy.from_dict(policy or {}), store, **gate)), model


def result(model: ScriptedModel) -> dict[str, Any]:
    [message] = [m for m in model.requests[-1].messages if m.role == "tool"]
    assert isinstance(message, Message)
    told: dict[str, Any] = json.loads(message.content)
    return told


async def held(run: Runner) -> tuple[str, str]:
    """Start the run; the run's id and the held question's approval id."""
    events = await collect(run.start("t1", "book me in"))
    [request] = of(events, "approval_requested")
    assert events[-1].type == "paused"
    return events[0].run_id, str(request["approval_id"])


async def test_a_question_is_held_and_the_answer_becomes_the_tool_result_once(store: SQLStore):
    run, model = asking(store, {"question": "Which region?", "choices": ["eu", "us"]})
    run_id, approval_id = await held(run)
    approval = await store.get_approval(approval_id)
    assert (approval.call.kind, approval.call.name) == ("question", "ask_person")
    await run.gate.decide(approval_id, Answer(value="eu"), actor="bob")
    await collect(run.resume(run_id))
    assert result(model) == {"status": "answered", "answer": "eu", "answered_by": "bob"}
    assert (await store.get_approval(approval_id)).status == "answered"
    with pytest.raises(ConflictError, match="already answered by 'bob'"):
        await run.gate.decide(approval_id, Answer(value="us"), actor="carol")
    # The same answer from another person is not theirs taken: they are told who answered.
    with pytest.raises(ConflictError, match="already answered by 'bob'"):
        await run.gate.decide(approval_id, Answer(value="eu"), actor="carol")
    again = await run.gate.decide(approval_id, Answer(value="eu"), actor="bob")  # bob's retry
    assert (again.status, again.decided_by) == ("answered", "bob")


async def test_an_answer_that_does_not_fit_the_form_is_refused_with_its_path(store: SQLStore):
    run, _ = asking(store, {"question": "Who pays?", "schema": FORM})
    _, approval_id = await held(run)
    for value, refusal in [
        ({"email": "nope"}, "answer.email: not an email"),
        ({"email": "a@b.io", "seats": 11}, "answer.seats: more than 10"),
        ({"seats": 2}, "answer.email: required"),
        ({"email": "a@b.io", "pets": 1}, "answer.pets: not a field of the form"),
    ]:
        with pytest.raises(InvalidDecisionError, match=refusal):
            await run.gate.decide(approval_id, Answer(value=value), actor="bob")
    unchanged = await store.get_approval(approval_id)
    assert (unchanged.status, unchanged.version) == ("pending", 1)
    decided = await run.gate.decide(
        approval_id, Answer(value={"email": "a@b.io", "seats": 2}), actor="bob"
    )
    assert decided.status == "answered"


async def test_a_question_is_answered_not_approved_and_a_call_is_not_answered(store: SQLStore):
    run, _ = asking(store, {"question": "Ship it?"})
    _, approval_id = await held(run)
    with pytest.raises(InvalidDecisionError, match="a question is answered, not approved"):
        await run.gate.decide(approval_id, Approve(), actor="bob")
    [outcome] = await run.gate.check([call("delete_pod", name="x")])
    assert outcome.approval is not None
    with pytest.raises(InvalidDecisionError, match="holds a call, not a question"):
        await run.gate.decide(outcome.approval.id, Answer(value="yes"), actor="bob")


async def test_a_declined_question_tells_the_agent_why(store: SQLStore):
    run, model = asking(store, {"question": "Ship it?"})
    run_id, approval_id = await held(run)
    await run.gate.decide(approval_id, Reject(reason="not mine to say"), actor="bob")
    await collect(run.resume(run_id))
    assert result(model) == {"status": "declined", "reason": "not mine to say"}


@pytest.mark.parametrize(
    ("default", "told"),
    [
        ("eu", {"status": "no_answer", "answer": "eu", "default": True}),
        (None, {"status": "no_answer"}),
    ],
)
async def test_a_question_nobody_answers_in_its_time_gives_the_default_or_no_answer(
    store: SQLStore, default: str | None, told: dict[str, Any]
):
    question: dict[str, Any] = {"question": "Region?", "choices": ["eu", "us"], "timeout": "30m"}
    if default is not None:
        question["default"] = default
    now = [datetime.now(UTC)]
    run, model = asking(store, question, clock=lambda: now[0])
    run_id, approval_id = await held(run)
    approval = await store.get_approval(approval_id)
    assert approval.expires_at == approval.requested_at + timedelta(minutes=30)
    now[0] += timedelta(minutes=31)
    assert [a.status for a in await run.gate.expire_due()] == ["expired"]
    await collect(run.resume(run_id))
    assert result(model) == told


async def test_a_question_to_a_person_is_handed_to_them_when_it_is_asked(store: SQLStore):
    run, _ = asking(store, {"question": "Budget?", "to": "bob"})
    _, approval_id = await held(run)
    approval = await store.get_approval(approval_id)
    assert approval.assigned is not None
    assert (approval.assigned.to, approval.assigned.by) == ("bob", "helper")
    [entry] = [e for e in await store.audit_log() if e.action == "assign"]
    assert (entry.subject, entry.data["to"]) == (approval_id, "bob")


async def test_with_a_directory_a_question_to_someone_it_does_not_know_is_not_held(
    store: SQLStore,
):
    people = {"bob": frozenset({"ops"}), "carol": frozenset({"sales"})}
    policy = {"rules": [{"ask": {"question": "*"}, "approvers": ["ops"]}]}
    for to, problem in [
        ("zed", "question.to: 'zed' is not a known principal"),
        ("carol", "question.to: it cannot be assigned to 'carol': 'carol' may not decide"),
        ("role:sales", "question.to: role 'sales' may not decide this approval"),
    ]:
        run, model = asking(store, {"question": "Budget?", "to": to}, policy, roles_of=people.get)
        events = await collect(run.start(f"t-{to}", "go"))
        assert not of(events, "approval_requested")
        told = result(model)
        assert (told["status"], problem in told["message"]) == ("blocked", True), told
    run, _ = asking(store, {"question": "Budget?", "to": "bob"}, policy, roles_of=people.get)
    _, approval_id = await held(run)
    assigned = (await store.get_approval(approval_id)).assigned
    assert assigned is not None and assigned.to == "bob"
    # Without a directory, a person must qualify when answering; a role is checked all the same.
    run, _ = asking(store, {"question": "Budget?", "to": "zed"}, policy)
    [request] = of(await collect(run.start("t-none", "go")), "approval_requested")
    assigned = (await store.get_approval(str(request["approval_id"]))).assigned
    assert assigned is not None and assigned.to == "zed"
    run, model = asking(store, {"question": "Budget?", "to": "role:sales"}, policy)
    assert not of(await collect(run.start("t-none-role", "go")), "approval_requested")
    assert "question.to: role 'sales' may not decide this approval" in result(model)["message"]


async def test_a_rule_names_who_may_answer_and_the_policy_may_forbid_asking(store: SQLStore):
    policy = {"rules": [{"ask": {"question": "*"}, "approvers": ["ops"]}]}
    run, _ = asking(store, {"question": "Ship it?"}, policy)
    _, approval_id = await held(run)
    with pytest.raises(Exception, match="needs one of the roles"):
        await run.gate.decide(approval_id, Answer(value="yes"), actor="bob")
    await run.gate.decide(approval_id, Answer(value="yes"), actor="alice", roles=["ops"])

    denied, model = asking(
        store, {"question": "Ship it?"}, {"rules": [{"deny": {"question": "*"}}]}
    )
    events = await collect(denied.start("t2", "go"))
    assert not of(events, "approval_requested")
    told = result(model)
    assert told["status"] == "blocked"
    assert "the agent may not ask this" in told["message"]


async def test_a_question_the_policy_allows_still_waits_for_a_person(store: SQLStore):
    run, _ = asking(store, {"question": "Ship it?"}, {"default": "allow"})
    _, approval_id = await held(run)
    assert (await store.get_approval(approval_id)).reason == "a question waits for a person"


async def test_a_question_that_is_not_one_is_blocked_naming_the_field(store: SQLStore):
    run, model = asking(store, {"question": "Pick", "choices": ["a", "b"], "schema": FORM})
    events = await collect(run.start("t1", "go"))
    assert not of(events, "approval_requested")
    assert "question.schema: a question has choices or a form, not both" in result(model)["message"]


async def test_a_forms_fields_keep_the_order_the_agent_wrote_them_in_every_channel(
    store: SQLStore,
):
    written = {
        "type": "object",
        "properties": {
            "seats": {"type": "integer", "minimum": 1},
            "email": {"type": "string", "format": "email"},
            "plan": {"type": "string", "enum": ["team", "pro"]},
        },
        "required": ["seats", "email"],
    }
    run, model = asking(store, {"question": "Who is billed?", "schema": written})
    run_id, approval_id = await held(run)
    args = (await store.get_approval(approval_id)).call.args
    # Stored as canonical JSON, keys sorted: the order rides as a list, which keeps it.
    assert list(args["schema"]["properties"]) == ["email", "plan", "seats"]
    assert args["schema"][ORDER] == ["seats", "email", "plan"]
    assert [name for name, _ in form_fields(args["schema"])] == ["seats", "email", "plan"]
    blocks = modal(args, "target")["blocks"][1:]
    assert [b["block_id"] for b in blocks] == ["seats", "email", "plan"]

    # The answer is checked as it always was: the order is no field of it.
    with pytest.raises(InvalidDecisionError, match=r"^answer.seats: required$"):
        await run.gate.decide(approval_id, Answer(value={"email": "a@example.com"}), actor="bob")
    await run.gate.decide(approval_id, Answer(value={"seats": 2, "email": "a@b.co"}), actor="bob")
    await collect(run.resume(run_id))
    assert result(model)["answer"] == {"seats": 2, "email": "a@b.co"}


async def test_an_order_of_a_forms_own_must_name_each_field_once(store: SQLStore):
    odd = FORM | {ORDER: ["email", "email"]}
    run, model = asking(store, {"question": "Who is billed?", "schema": odd})
    events = await collect(run.start("t1", "go"))
    assert not of(events, "approval_requested")
    problem = "question.schema.x-order: the form's field names, each once"
    assert problem in result(model)["message"]


async def test_a_form_over_the_size_limit_once_its_order_is_written_is_not_held(
    store: SQLStore,
):
    # Two long field names: under the limit as written, over it with the order written down —
    # held, it would be a question no answer could be checked against, nor its timeout told.
    names = ["a" * 5000, "b" * 5000]
    form = {"type": "object", "properties": {n: {"type": "boolean"} for n in names}}
    assert len(canonical_json(form)) <= MAX_SCHEMA < len(canonical_json(with_order(form)))
    run, model = asking(store, {"question": "Which?", "schema": form})
    events = await collect(run.start("t1", "go"))
    assert not of(events, "approval_requested")
    problem = f"question.schema: at most {MAX_SCHEMA} bytes as JSON, its x-order too"
    assert problem in result(model)["message"]
