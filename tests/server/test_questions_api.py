"""Questions over the HTTP API: listed as approvals of kind ``question``, answered with
``{"kind": "answer", "value": ...}`` — refused naming the field when the answer misfits, once
only (409 naming who answered) — and the run goes on with the answer as the tool's result."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from signoff import Policy
from signoff.agent import Agent, ModelTurn, ask_person
from signoff.gate import Gate
from signoff.server import Auth, Principal, Service, create_app
from signoff.store import SQLStore
from signoff.testing import ScriptedModel, call
from tests.server.test_api import until

TOKENS = {
    "alice-token": Principal(name="alice", roles=frozenset({"ops"})),
    "bob-token": Principal(name="bob", roles=frozenset({"ops"})),
}
FORM = {
    "type": "object",
    "properties": {"email": {"type": "string", "format": "email"}},
    "required": ["email"],
}


@contextlib.asynccontextmanager
async def api(store: SQLStore, question: dict[str, Any]) -> AsyncIterator[httpx.AsyncClient]:
    turns = [ModelTurn(tool_calls=(call("ask_person", **question),)), ModelTurn(text="done")]
    agent = Agent(name="helper", model=ScriptedModel(turns), tools=[ask_person()])
    gate = Gate(Policy.from_dict({}), store)
    app = create_app(
        Service(store=store, gate=gate, agents=[agent], poll_interval=0.05), Auth(tokens=TOKENS)
    )
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://signoff", headers=as_("alice")
        ) as client:
            yield client


def as_(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {who}-token"}


async def test_a_question_is_listed_answered_once_over_http_and_the_run_goes_on(store: SQLStore):
    async with api(store, {"question": "Invoice to?", "schema": FORM}) as client:
        run = (
            await client.post(
                "/v1/threads/t1/runs",
                params={"wait": 5},
                json={"agent": "helper", "input": "bill me"},
            )
        ).json()
        [pending] = run["pending_approvals"]
        listed = (await client.get("/v1/approvals")).json()
        [item] = listed["items"]
        assert (item["kind"], item["tool"], item["args"]["question"]) == (
            "question",
            "ask_person",
            "Invoice to?",
        )
        url = f"/v1/approvals/{pending}/decision"
        misfit = await client.post(
            url, json={"kind": "answer", "value": {"email": "x"}}, headers=as_("bob")
        )
        assert misfit.status_code == 422
        assert misfit.json()["detail"] == "answer.email: not an email"
        empty = await client.post(url, json={"kind": "answer"}, headers=as_("bob"))
        assert (empty.status_code, empty.json()["detail"]) == (
            422,
            "an answer needs 'value': what the person answers",
        )
        approved = await client.post(url, json={"kind": "approve"}, headers=as_("bob"))
        assert approved.status_code == 422
        assert "a question is answered, not approved" in approved.json()["detail"]
        still = (await client.get(f"/v1/approvals/{pending}", headers=as_("bob"))).json()
        assert (still["status"], still["version"]) == ("pending", 1)

        answer = {"kind": "answer", "value": {"email": "ap@example.com"}}
        answered = await client.post(url, json=answer, headers=as_("bob"))
        assert answered.status_code == 200
        assert (answered.json()["status"], answered.json()["decided_by"]) == ("answered", "bob")
        second = await client.post(
            url, json={"kind": "answer", "value": {"email": "me@example.com"}}
        )
        assert second.status_code == 409
        assert "already answered by 'bob'" in second.json()["detail"]

        done = await until(client, run["id"], "completed")
        [result] = [m for m in done["messages"] if m["role"] == "tool"]
        assert json.loads(result["content"]) == {
            "status": "answered",
            "answer": {"email": "ap@example.com"},
            "answered_by": "bob",
        }
