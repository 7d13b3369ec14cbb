"""The ask tool of a framework's run, as `ExternalRuns` judges it whatever the adapter: a call of
a tool named among its ``questions`` is a question (held, answered, never run); a tool of
another name is a tool, whatever its arguments say (the store fixture: SQLite and
PostgreSQL)."""

from __future__ import annotations

import json

import pytest

from signoff import Answer, Policy, ToolCall
from signoff.errors import CallRefused, InvalidDecisionError
from signoff.gate import Gate
from signoff.gate.external import ExternalRuns
from signoff.store import SQLStore

POLICY = Policy.from_dict({"default": "allow"})  # a question waits all the same
ASK = {"question": "Which region?", "choices": ["eu", "us"]}


async def test_the_tool_the_app_names_the_ask_tool_is_held_as_a_question_never_run(
    store: SQLStore,
) -> None:
    runs = ExternalRuns(Gate(POLICY, store), origin="app", questions=["ask_user"])
    asked = ToolCall(id="c1", name="ask_user", args=ASK)

    waiting = await runs.step_of(asked, thread="t1", turn=None, requested_by="alice")
    assert waiting.kind == "wait" and waiting.approval is not None
    assert waiting.approval.call.kind == "question"
    with pytest.raises(CallRefused, match="not approved"):
        await runs.claim(waiting.key, asked)  # an adapter that tries to run it anyway

    await runs.gate.decide(waiting.approval.id, Answer(value="us"), actor="bob")
    answered = await runs.step_of(asked, thread="t1", turn=None, requested_by="alice", resumed=True)

    assert (answered.kind, answered.ok) == ("answer", True)
    assert json.loads(answered.text) == {"status": "answered", "answer": "us", "answered_by": "bob"}


async def test_a_tool_not_named_the_ask_tool_runs_as_the_policy_says(store: SQLStore) -> None:
    runs = ExternalRuns(Gate(POLICY, store), origin="app", questions=["ask_user"])

    step = await runs.step_of(ToolCall(id="c1", name="ask_person", args=ASK), thread="t1",
                              turn=None, requested_by="alice")  # fmt: skip

    assert step.kind == "run" and step.call is not None and step.call.kind == "tool"


async def test_a_field_the_model_writes_as_null_is_one_it_did_not_give(store: SQLStore) -> None:
    """A framework that sends the model a strict schema (CrewAI: every field required, and
    nullable) gets null for each field the model leaves out: still the question it asks."""
    runs = ExternalRuns(Gate(POLICY, store), origin="app")
    nulls = dict.fromkeys(["choices", "multiple", "schema", "to", "timeout", "default"])
    asked = ToolCall(id="c1", name="ask_person", args={**nulls, **ASK})

    waiting = await runs.step_of(asked, thread="t1", turn=None, requested_by="alice")
    assert waiting.kind == "wait" and waiting.approval is not None
    assert (waiting.approval.expires_at, waiting.approval.assigned) == (None, None)
    with pytest.raises(InvalidDecisionError, match="answer"):  # one choice, not several
        await runs.gate.decide(waiting.approval.id, Answer(value=["us"]), actor="bob")
    answered = await runs.gate.decide(waiting.approval.id, Answer(value="us"), actor="bob")

    assert answered.status == "answered"
