"""The shared scenarios of an agent asking a person (docs/questions.md), run against every
integration's adapter whose agent has signoff's ask tool, on SQLite and PostgreSQL (the adapters
and fixtures of test_scenarios.py): the framework's call of ``ask_person`` is held as a question,
never run; a person answers it once, from the server on the same database — or, heavy, with
``signoff answer`` run as a process of its own — and the answer (or the question's default when
nobody answered in time) is the tool's result."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from signoff import Approval
from tests.integrations.inbox import inbox_api
from tests.integrations.scenarios import POLICY, Adapter, Call, executions, told
from tests.integrations.test_scenarios import adapter, audit_actions, database, pending
from tests.processes import signoff_says

__all__ = ["adapter", "database"]  # the fixtures, shared

REGION = {"question": "Which region?", "choices": ["eu-west", "us-east"]}
EMAIL = {
    "question": "Where do invoices go?",
    "schema": {
        "type": "object",
        "properties": {"email": {"type": "string", "format": "email"}},
        "required": ["email"],
    },
}


def asked(args: dict[str, Any]) -> list[Any]:
    """A script whose model asks `args`, then ends reading what it was told."""
    return [[Call("call_0", "ask_person", args)], "asked"]


async def question_of(adapter: Adapter, thread: str, args: dict[str, Any]) -> Approval:
    """Start a run whose agent asks `args`: the one call it waits on, a question."""
    if adapter.no_ask:
        pytest.skip(adapter.no_ask)
    outcome = await adapter.start(thread, asked(args))
    assert outcome.paused
    [question] = await pending(adapter)
    return question


async def test_the_ask_tool_s_call_is_held_as_a_question_and_never_runs(
    adapter: Adapter,
) -> None:
    question = await question_of(adapter, "t-held", REGION)

    assert (question.call.kind, question.call.name, question.call.args) == (
        "question", "ask_person", REGION)  # fmt: skip
    assert question.origin == adapter.runs.origin
    if not adapter.no_thread:
        assert adapter.thread_id("t-held") in (question.thread_id or "")
    assert question.expires_at is None  # no time of its own: as long as the rule says
    assert executions(adapter.side_effects) == []
    assert (await adapter.resume("t-held")).paused  # it waits for a person, not for a resume


async def test_an_answer_from_the_server_is_the_tool_s_result_once(
    adapter: Adapter, database: str
) -> None:
    question = await question_of(adapter, "t-answer", REGION)

    async with inbox_api(database, POLICY) as api:  # another store, as `signoff serve`'s
        url = f"/v1/approvals/{question.id}/decision"
        answered = await api.post(url, json={"kind": "answer", "value": "us-east"})
        again = await api.post(url, json={"kind": "answer", "value": "eu-west"})
    done = await adapter.resume("t-answer")
    twice = await adapter.resume("t-answer")

    assert answered.status_code == 200, answered.text
    assert answered.json()["status"] == "answered"
    assert again.status_code == 409, again.text
    assert "already answered by 'bob'" in again.text
    [(call_id, result)] = told(done)
    assert call_id == "call_0"
    assert json.loads(result) == {"status": "answered", "answer": "us-east", "answered_by": "bob"}
    assert not twice.paused
    assert adapter.model_turns == 2  # resumed twice: the model read the answer once


@pytest.mark.heavy
async def test_an_answer_from_signoff_answer_in_another_process_is_the_tool_s_result(
    adapter: Adapter, database: str
) -> None:
    question = await question_of(adapter, "t-process", REGION)

    # As a person at a terminal would, on the database the agent's run keeps its questions in.
    said = await signoff_says(
        "answer", question.id, "us-east", "--database", database, "--as", "bob"
    )
    done = await adapter.resume("t-process")

    assert said[0] == 0, said
    [(call_id, result)] = told(done)
    assert call_id == "call_0"
    assert json.loads(result) == {"status": "answered", "answer": "us-east", "answered_by": "bob"}


async def test_an_answer_that_breaks_the_form_is_refused_and_nothing_is_written(
    adapter: Adapter, database: str
) -> None:
    question = await question_of(adapter, "t-form", EMAIL)
    before = await audit_actions(adapter)

    async with inbox_api(database, POLICY) as api:
        refused = await api.post(
            f"/v1/approvals/{question.id}/decision",
            json={"kind": "answer", "value": {"email": "nope"}},
        )

    assert refused.status_code == 422, refused.text
    assert "answer.email" in refused.text
    [still] = await pending(adapter)
    assert (still.id, still.version, still.status) == (question.id, question.version, "pending")
    assert await audit_actions(adapter) == before
    assert (await adapter.resume("t-form")).paused


async def test_a_question_that_is_not_one_is_not_held_and_the_model_reads_why(
    adapter: Adapter,
) -> None:
    if adapter.no_ask:
        pytest.skip(adapter.no_ask)
    both = {**REGION, "schema": EMAIL["schema"]}

    done = await adapter.start("t-not-one", asked(both))

    assert await pending(adapter) == []
    [(call_id, result)] = told(done)
    assert call_id == "call_0"
    assert "question.schema: a question has choices or a form, not both" in result


@pytest.mark.parametrize(
    ("default", "told_then"),
    [
        ("eu-west", {"status": "no_answer", "answer": "eu-west", "default": True}),
        (None, {"status": "no_answer"}),
    ],
    ids=["with-a-default", "without"],
)
async def test_a_question_nobody_answered_in_time_gives_its_default_or_no_answer(
    adapter: Adapter, default: str | None, told_then: dict[str, Any]
) -> None:
    args = {**REGION, "timeout": "30m"} | ({} if default is None else {"default": default})
    question = await question_of(adapter, f"t-timeout-{default}", args)
    assert question.expires_at is not None
    assert question.expires_at - question.requested_at == timedelta(minutes=30)

    runs = adapter.runs  # the sweeper, half an hour on (no waiting: it is given the moment)
    later = question.expires_at + timedelta(seconds=1)
    [lapsed] = await runs.bridge.arun(runs.gate.expire_due(later))
    done = await adapter.resume(f"t-timeout-{default}")

    assert (lapsed.id, lapsed.status) == (question.id, "expired")
    [(_, result)] = told(done)
    assert json.loads(result) == told_then


async def test_a_declined_question_tells_the_model_why(adapter: Adapter, database: str) -> None:
    question = await question_of(adapter, "t-decline", REGION)

    async with inbox_api(database, POLICY) as api:
        declined = await api.post(
            f"/v1/approvals/{question.id}/decision",
            json={"kind": "reject", "reason": "ask finance"},
        )
    done = await adapter.resume("t-decline")

    assert declined.status_code == 200, declined.text
    [(_, result)] = told(done)
    assert json.loads(result) == {"status": "declined", "reason": "ask finance"}
