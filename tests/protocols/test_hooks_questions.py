"""Claude Code's ``AskUserQuestion`` through the hook endpoint (in process): held as a question
(its options the choices, several questions a form, Claude Code's text and number questions
fields), answered into the ``answers`` the tool reads, denied when the policy forbids asking or
when its input is not a question, and — nobody answering in the question's own time — told as
the hook's fallback. The real CLI answers one in tests/hooks/test_claude_code_questions.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from signoff import Policy
from signoff.protocols.hooks.asking import answered_input, question_of
from signoff.store import SQLStore
from tests.protocols.test_hooks import api, held, pre, said

ASKED = {
    "questions": [
        {"question": "Which database?", "header": "Database", "multiSelect": False,
         "options": [{"label": "Postgres", "description": "what prod runs"},
                     {"label": "SQLite", "description": ""}]},
    ]
}  # fmt: skip


def asks(tool_input: dict[str, Any], *, call_id: str = "toolu_q") -> dict[str, Any]:
    return pre("", call_id=call_id, tool="AskUserQuestion") | {"tool_input": tool_input}


async def test_a_question_is_held_and_the_answer_is_the_input_the_tool_reads(
    store: SQLStore,
) -> None:
    async with api(store) as (agent, person):
        asked = asyncio.create_task(agent.post("/v1/hooks/claude-code", json=asks(ASKED)))
        question = await held(person)
        assert question["kind"] == "question"
        assert question["args"] == {
            "question": "Which database?\n- Postgres: what prod runs",
            "choices": ["Postgres", "SQLite"],
            "multiple": False,
        }
        answer = {"kind": "answer", "value": "SQLite"}
        decided = await person.post(f"/v1/approvals/{question['id']}/decision", json=answer)
        assert decided.status_code == 200, decided.text
        out = said(await asked)
    assert out["permissionDecision"] == "allow"
    assert out["permissionDecisionReason"] == "signoff: answered by olga"
    assert out["updatedInput"] == {**ASKED, "answers": {"Which database?": "SQLite"}}


async def test_a_policy_that_forbids_asking_denies_the_question(store: SQLStore) -> None:
    denying = Policy.from_dict({"default": "ask", "rules": [
        {"deny": {"question": "AskUserQuestion"}, "reason": "decide it yourself"}]})  # fmt: skip
    async with api(store, policy=denying) as (agent, person):
        out = said(await agent.post("/v1/hooks/claude-code", json=asks(ASKED)))
        assert (await person.get("/v1/approvals")).json()["items"] == []
    assert out["permissionDecision"] == "deny"
    assert "may not ask this: decide it yourself" in out["permissionDecisionReason"]


async def test_nobody_answering_in_time_is_the_hooks_fallback(store: SQLStore) -> None:
    async with api(store, wait=0.05) as (agent, person):
        out = said(await agent.post("/v1/hooks/claude-code", json=asks(ASKED)))
        assert out["permissionDecision"] == "ask"  # Claude Code's own question dialog
        assert "Nobody answered this question in signoff" in out["permissionDecisionReason"]
        question = await held(person)
        assert question["id"] in out["permissionDecisionReason"]


@pytest.mark.parametrize(
    ("tool_input", "field"),
    [
        ({}, "tool_input.questions"),
        ({"questions": [{"question": "Which?", "options": []}]}, "questions[0].options"),
        ({"questions": [{"question": " ", "options": [{"label": "a"}]}]}, "questions[0].question"),
        ({"questions": [{"question": "Which?", "options": [{"description": "x"}]}]},
         "questions[0].options[0].label"),
    ],
)  # fmt: skip
async def test_an_input_that_is_not_a_question_is_a_400_naming_the_field(
    store: SQLStore, tool_input: dict[str, Any], field: str
) -> None:
    async with api(store) as (agent, person):
        answered = await agent.post("/v1/hooks/claude-code", json=asks(tool_input))
        assert answered.status_code == 400, answered.text
        assert field in answered.json()["detail"]
        assert (await person.get("/v1/approvals")).json()["items"] == []


def test_several_questions_are_a_form_of_a_field_each() -> None:
    asked = {"questions": [
        ASKED["questions"][0],
        {"question": "Which extras?", "header": "Extras", "multiSelect": True,
         "options": [{"label": "cache"}, {"label": "search", "description": "full text"}]},
        {"question": "What should it be called?", "header": "Name", "kind": "text"},
        {"question": "How many replicas?", "header": "Replicas", "kind": "number",
         "min": 1, "max": 5},
    ]}  # fmt: skip
    question = question_of(asked)
    assert question["question"] == (
        "Which database?\nWhich extras?\nWhat should it be called?\nHow many replicas?"
    )
    assert question["schema"] == {
        "type": "object",
        "required": ["Database", "Extras", "Name", "Replicas"],
        "properties": {
            "Database": {"type": "string", "title": "Which database?", "oneOf": [
                {"const": "Postgres", "title": "Postgres — what prod runs"},
                {"const": "SQLite", "title": "SQLite"}]},
            "Extras": {"type": "array", "title": "Which extras?", "minItems": 1, "items": {
                "anyOf": [{"const": "cache", "title": "cache"},
                          {"const": "search", "title": "search — full text"}]}},
            "Name": {"type": "string", "title": "What should it be called?", "minLength": 1},
            "Replicas": {"type": "number", "title": "How many replicas?", "minimum": 1,
                         "maximum": 5},
        },
    }  # fmt: skip
    value = {"Database": "Postgres", "Extras": ["cache"], "Name": "shop", "Replicas": 3}
    assert answered_input(asked, value)["answers"] == {
        "Which database?": "Postgres", "Which extras?": ["cache"],
        "What should it be called?": "shop", "How many replicas?": "3",
    }  # fmt: skip


def test_headers_that_cannot_name_fields_are_numbered() -> None:
    one = ASKED["questions"][0]
    twice = {"questions": [one, {**one, "question": "And the cache?"}]}  # the same header
    assert list(question_of(twice)["schema"]["properties"]) == ["question 1", "question 2"]


def test_one_text_question_is_a_form_of_one_field() -> None:
    asked = {"questions": [{"question": "What name?", "header": "Name", "kind": "text"}]}
    assert question_of(asked)["schema"]["properties"]["Name"]["type"] == "string"
    assert answered_input(asked, {"Name": "shop"})["answers"] == {"What name?": "shop"}


async def test_an_mcp_servers_ask_tool_is_told_as_the_questions_outcome(store: SQLStore) -> None:
    """Claude Code calling an MCP server's ``ask_person`` (signoff's MCP gateway offers one): the
    hook holds it as a question, and once answered the model reads the question's outcome, not
    a person answering instead of a call."""
    region = {"question": "Which region?", "choices": ["eu", "us"]}
    call = pre("", call_id="toolu_a", tool="mcp__signoff__ask_person") | {"tool_input": region}
    async with api(store) as (agent, person):
        asked = asyncio.create_task(agent.post("/v1/hooks/claude-code", json=call))
        question = await held(person)
        assert (question["kind"], question["args"]) == ("question", region)
        answer = {"kind": "answer", "value": "us"}
        decided = await person.post(f"/v1/approvals/{question['id']}/decision", json=answer)
        assert decided.status_code == 200, decided.text
        out = said(await asked)
    assert out["permissionDecision"] == "deny"
    told = out["permissionDecisionReason"]
    assert told == (
        "signoff asked a person this question; the outcome: "
        '{"status": "answered", "answer": "us", "answered_by": "olga"}'
    )
