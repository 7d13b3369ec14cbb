"""Questions over the HTTP API: listed as approvals of kind ``question``, answered with
``{"kind": "answer", "value": ...}`` — refused naming the field when the answer misfits, once
only (409 naming who answered) — and the run goes on with the answer as the tool's result; and
answered over the WebSocket the same way, by a real client of a real server."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import websockets
from fastapi import FastAPI
from websockets.typing import Subprotocol

from signoff import Policy
from signoff.agent import Agent, ModelTurn, ask_person
from signoff.gate import Gate
from signoff.server import Auth, Principal, Service, create_app
from signoff.store import SQLStore
from signoff.testing import ScriptedModel, call
from tests.deadline import HANG
from tests.server.test_api import live_app, until

TOKENS = {
    "alice-token": Principal(name="alice", roles=frozenset({"ops"})),
    "bob-token": Principal(name="bob", roles=frozenset({"ops"})),
}
FORM = {
    "type": "object",
    "properties": {"email": {"type": "string", "format": "email"}},
    "required": ["email"],
}


def asking(store: SQLStore, question: dict[str, Any]) -> FastAPI:
    """The API of a service whose one agent, ``helper``, asks `question`, then is done."""
    turns = [ModelTurn(tool_calls=(call("ask_person", **question),)), ModelTurn(text="done")]
    agent = Agent(name="helper", model=ScriptedModel(turns), tools=[ask_person()])
    gate = Gate(Policy.from_dict({}), store)
    return create_app(
        Service(store=store, gate=gate, agents=[agent], poll_interval=0.05), Auth(tokens=TOKENS)
    )


@contextlib.asynccontextmanager
async def api(store: SQLStore, question: dict[str, Any]) -> AsyncIterator[httpx.AsyncClient]:
    app = asking(store, question)
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


async def test_a_question_is_answered_once_over_the_websocket_with_the_same_checks(
    store: SQLStore,
):
    async with (
        live_app(asking(store, {"question": "Invoice to?", "schema": FORM})) as port,
        asyncio.timeout(HANG),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=as_("alice")) as client,
    ):
        run = (
            await client.post(
                "/v1/threads/t1/runs",
                params={"wait": 5},
                json={"agent": "helper", "input": "bill me"},
            )
        ).json()
        [pending] = run["pending_approvals"]

        async def decide(who: str, value: Any) -> dict[str, Any]:
            """What the WebSocket says to `who` answering `value` on the version shown."""
            offered = [Subprotocol("signoff.bearer"), Subprotocol(f"{who}-token")]
            url = f"ws://127.0.0.1:{port}/v1/ws"
            async with websockets.connect(url, subprotocols=offered) as socket:
                assert json.loads(await socket.recv())["type"] == "hello"
                decision = {"kind": "answer", "value": value, "version": 1}
                await socket.send(
                    json.dumps({"type": "decide", "id": pending, "decision": decision})
                )
                while True:  # pushed events and changes come between
                    said: dict[str, Any] = json.loads(await socket.recv())
                    if said["type"] in ("decided", "error"):
                        return said

        misfit = await decide("bob", {"email": "x"})
        assert (misfit["type"], misfit["error"], misfit["detail"]) == (
            "error",
            "FormError",
            "answer.email: not an email",
        )
        still = (await client.get(f"/v1/approvals/{pending}")).json()
        assert (still["status"], still["version"]) == ("pending", 1)

        answered = await decide("bob", {"email": "ap@example.com"})
        assert answered["type"] == "decided"
        assert (answered["approval"]["status"], answered["approval"]["decided_by"]) == (
            "answered",
            "bob",
        )
        second = await decide("alice", {"email": "me@example.com"})
        assert (second["type"], second["error"]) == ("error", "ConflictError")
        assert "already answered by 'bob'" in second["detail"]

        done = await until(client, run["id"], "completed")
        [result] = [m for m in done["messages"] if m["role"] == "tool"]
        assert json.loads(result["content"])["answer"] == {"email": "ap@example.com"}
