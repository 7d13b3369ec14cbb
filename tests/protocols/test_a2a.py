"""signoff's agents over A2A, driven by real clients: a2a-sdk's Python client (JSON-RPC and REST
bindings), @a2a-js/sdk in Node, and raw A2A 0.3 JSON-RPC as kagent's UI sends it — against a real
uvicorn server, and a `signoff serve` process restarted while a task waits."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import (
    InvalidParamsError,
    InvalidRequestError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.utils.task import encode_page_token
from google.protobuf.json_format import MessageToDict, ParseDict

from signoff import Approve, Edit, Policy
from signoff.gate import Gate
from signoff.protocols.a2a import EXTENSION
from signoff.protocols.a2a.messages import SENT
from signoff.redaction import MASK, Redaction
from signoff.server import Auth, Service, create_app
from signoff.store import SQLStore
from tests.deadline import HANG
from tests.processes import signoff_server
from tests.protocols.a2a_agents import CONFIG_RULES, FOUR_EYES, POLICY, agents
from tests.protocols.live import TOKENS, ran, serving

ROOT = Path(__file__).resolve().parents[2]


@contextlib.asynccontextmanager
async def connect(
    url: str,
    *,
    binding: str = "JSONRPC",
    token: str = "alice-token",
    streaming: bool = True,
    agent: str = "ops",
) -> AsyncIterator[Client]:
    """a2a-sdk's client for an agent (ops by default), from its card."""
    async with httpx.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=HANG
    ) as http:
        config = ClientConfig(
            httpx_client=http, streaming=streaming, supported_protocol_bindings=[binding]
        )
        client = await ClientFactory(config).create_from_url(f"{url}/a2a/{agent}")
        yield client


_sent = 0


def message(
    text: str | None = None, *, data: Any = None, task: str | None = None, id: str | None = None
) -> SendMessageRequest:
    global _sent
    _sent += 1
    part: dict[str, Any] = {"text": text} if text is not None else {"data": data}
    body: dict[str, Any] = {
        "messageId": id or f"m-{os.getpid()}-{_sent}",
        "role": "ROLE_USER",
        "parts": [part],
    }
    if task is not None:
        body["taskId"] = task
    return SendMessageRequest(message=ParseDict(body, Message()))


async def send(client: Client, request: SendMessageRequest) -> list[dict[str, Any]]:
    """Every event the client gets for the request, as JSON."""
    return [MessageToDict(event) async for event in client.send_message(request)]


def states(events: list[dict[str, Any]]) -> list[str]:
    found = []
    for event in events:
        status = (event.get("task") or event.get("statusUpdate") or {}).get("status")
        if status:
            found.append(status["state"].removeprefix("TASK_STATE_").lower())
    return found


def last_status(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(
        (e.get("task") or e["statusUpdate"])["status"]
        for e in reversed(events)
        if "task" in e or "statusUpdate" in e
    )


def task_id(events: list[dict[str, Any]]) -> str:
    first = events[0]
    return str(first["task"]["id"] if "task" in first else first["statusUpdate"]["taskId"])


def data_parts(status_or_message: dict[str, Any]) -> list[dict[str, Any]]:
    message = status_or_message.get("message", status_or_message)
    return [p for p in message.get("parts", []) if "data" in p]


def words(status_or_message: dict[str, Any]) -> str:
    message = status_or_message.get("message", status_or_message)
    return "".join(p.get("text", "") for p in message.get("parts", []))


def listing(status: dict[str, Any]) -> list[dict[str, Any]]:
    [part] = [p for p in data_parts(status) if p["data"].get("type") == "signoff.approvals"]
    approvals: list[dict[str, Any]] = part["data"]["approvals"]
    return approvals


async def subscribed(client: Client, task: str, seen: list[dict[str, Any]]) -> asyncio.Task[None]:
    """A subscription to the task, in the background, adding each event to `seen`; returned
    once the first (the task as it stands) has come."""

    async def subscribe() -> None:
        async for event in client.subscribe(SubscribeToTaskRequest(id=task)):
            seen.append(MessageToDict(event))

    subscriber = asyncio.create_task(subscribe())
    async with asyncio.timeout(HANG):
        while not seen:
            await asyncio.sleep(0.02)
    return subscriber


def kind_of(part: dict[str, Any]) -> Any:
    """What a part is: its data's type or name, and its metadata's; or text."""
    if "text" in part:
        return "text"
    return (part["data"].get("type") or part["data"].get("name"), part.get("metadata"))


def documented_json(name: str) -> Any:
    """The JSON example `name` of docs/a2a.md."""
    text = (ROOT / "docs/a2a.md").read_text(encoding="utf-8")
    found = re.search(rf"<!-- example: {name} -->\n```json\n(.*?)```", text, re.S)
    assert found, name
    return json.loads(found.group(1))


async def get_task(client: Client, id: str, **fields: Any) -> dict[str, Any]:
    return MessageToDict(await client.get_task(GetTaskRequest(id=id, **fields)))


# -- the agent card ---------------------------------------------------------------------------


async def test_the_card_is_public_advertises_both_bindings_and_the_hitl_extension(
    store: SQLStore, side: Path
):
    async with serving(store) as (url, _), httpx.AsyncClient(base_url=url) as http:
        card = (await http.get("/a2a/ops/.well-known/agent-card.json")).json()
        assert card["name"] == "ops"
        assert card["description"] == "Looks after the cluster's pods."
        assert {
            (i["protocolBinding"], i["protocolVersion"], i["url"])
            for i in card["supportedInterfaces"]
        } == {
            ("JSONRPC", "1.0", f"{url}/a2a/ops"),
            ("HTTP+JSON", "1.0", f"{url}/a2a/ops"),
            ("JSONRPC", "0.3", f"{url}/a2a/ops"),
        }
        assert card["capabilities"]["streaming"] is True
        [extension] = card["capabilities"]["extensions"]
        assert extension["uri"] == EXTENSION
        assert "adk_request_confirmation" in extension["params"]["requestParts"]
        assert "a2a.hitl.formResponse" in extension["params"]["decisionParts"]
        assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
        assert card["skills"][0]["tags"] == ["ops"]  # public: not the tools' names
        # Everything but the card needs the token.
        for method, path in (("POST", "/a2a/ops"), ("POST", "/a2a/ops/message:send"),
                             ("GET", "/a2a/ops/tasks/x"), ("POST", "/a2a/ops/v1/message:send"),
                             ("GET", "/a2a/ops/tasks/x/.well-known/agent-card.json")):  # fmt: skip
            refused = await http.request(method, path, json={})
            assert refused.status_code == 401, (method, path, refused.text)
            assert refused.headers["www-authenticate"] == "Bearer"
        assert (await http.get("/a2a/nobody/.well-known/agent-card.json")).status_code == 404


# -- ask, decide, complete ----------------------------------------------------------------------


async def test_python_client_approves_a_held_call_and_the_task_completes(
    store: SQLStore, side: Path
):
    async with serving(store) as (url, _), connect(url) as client:
        asked = await send(client, message("delete web-1"))
        assert states(asked)[-1] == "input_required"
        status = last_status(asked)
        assert "delete_pod" in words(status) and "approval" in words(status)
        [held] = listing(status)
        assert (held["tool"], held["args"], held["rule"], held["callId"]) == (
            "delete_pod", {"name": "web-1"}, "rules[1]", "c-1",
        )  # fmt: skip
        assert held["expiresAt"] is not None  # the rule's 1h timeout
        kinds = {p["metadata"]["type"]: p for p in data_parts(status)}
        confirmation = kinds["function_call"]
        assert confirmation["data"]["name"] == "adk_request_confirmation"
        assert confirmation["data"]["args"]["originalFunctionCall"] == {
            "name": "delete_pod", "args": {"name": "web-1"}, "id": "c-1",
        }  # fmt: skip
        assert confirmation["metadata"]["is_long_running"] is True
        form = kinds["a2a.hitl.form"]["data"]
        assert form["type"] == "a2a.hitl.form"
        assert [f["name"] for f in form["fields"]] == [
            held["approvalId"],
            f"{held['approvalId']}.reason",
            f"{held['approvalId']}.version",  # hidden: the call's version, sent back as it is
        ]
        assert form["fields"][2]["value"] == held["version"] == 1
        assert ran(side) == []  # held: not run

        task = task_id(asked)
        done = await send(client, message(data={"decision_type": "approve"}, task=task))
        assert states(done)[0] == "working" and states(done)[-1] == "completed"
        [artifact] = [e["artifactUpdate"]["artifact"] for e in done if "artifactUpdate" in e]
        assert artifact["parts"] == [{"text": "done: deleted web-1"}]
        assert ran(side) == ["delete_pod web-1"]

        stored = await get_task(client, task)
        assert stored["status"]["state"] == "TASK_STATE_COMPLETED"
        assert words(stored["status"]) == "done: deleted web-1"
        marks = [m.get("metadata", {}).get("signoff.hitl") for m in stored["history"]]
        # The request, the client's decision and the agent's record of it: marked for a UI.
        assert marks.count("request") == 1 and marks.count("decision") == 2
        decided = [m for m in stored["history"] if m["role"] == "ROLE_AGENT"
                   and m.get("metadata", {}).get("signoff.hitl") == "decision"]  # fmt: skip
        [record] = [p["data"] for p in data_parts(decided[0])]
        assert (record["decision_type"], record["status"], record["decidedBy"]) == (
            "approve", "approved", "alice",
        )  # fmt: skip
        # The history is the task from the start: the user's words first.
        assert stored["history"][0]["role"] == "ROLE_USER"
        assert words(stored["history"][0]) == "delete web-1"


async def test_one_approval_of_two_leaves_the_task_waiting_and_the_second_completes_it(
    store: SQLStore, side: Path
):
    two = Policy.from_dict({"rules": [{"ask": "delete_pod", "approvals": {"count": 2}}]})
    async with (
        serving(store, policy=two) as (url, service),
        connect(url) as alice,
        connect(url, token="bob-token") as bob,
    ):
        asked = await send(alice, message("delete web-1"))
        task = task_id(asked)
        # alice asked: bob's approval is the first of the two it needs.
        counted = await send(bob, message(data={"decision_type": "approve"}, task=task))
        assert states(counted)[-1] == "input_required"
        assert ran(side) == []
        [pending] = await store.list_approvals(status="pending")
        assert [v.by for v in pending.votes] == ["bob"]
        await service.gate.decide(pending.id, Approve(), actor="carol")
        async with asyncio.timeout(HANG):
            while (await get_task(alice, task))["status"]["state"] != "TASK_STATE_COMPLETED":
                await asyncio.sleep(0.02)
        assert ran(side) == ["delete_pod web-1"]


@pytest.mark.parametrize(("binding", "streaming"), [("JSONRPC", True), ("HTTP+JSON", False)])
async def test_an_approval_sent_on_the_call_before_an_edit_is_refused_naming_the_edit(
    store: SQLStore, side: Path, binding: str, streaming: bool
):
    """Four eyes: alice asks; olga edits the call in signoff after bob was shown version 1. Bob's
    approval of version 1 is not taken — the task, still waiting, says what changed and lists
    the call as it stands — and his approval of version 2 runs the edited call."""
    async with (
        serving(store, policy=FOUR_EYES) as (url, service),
        connect(url) as alice,
        connect(url, token="bob-token", binding=binding, streaming=streaming) as bob,
    ):
        asked = await send(alice, message("scale web to 3"))
        task = task_id(asked)
        [shown] = listing(last_status(asked))
        assert shown["version"] == 1 and "requestedArgs" not in shown
        nine = Edit(args={"name": "web", "replicas": 9})
        edited = await service.decide(shown["approvalId"], nine, actor="olga", roles=(), version=1)
        assert (edited.status, edited.version) == ("pending", 2)
        length = await store.audit_length()
        history = (await get_task(bob, task))["history"]

        on_one = {"decisions": {shown["approvalId"]: {"kind": "approve", "version": 1}}}
        refused = await send(bob, message(data=on_one, task=task))
        assert states(refused) == ["input_required"]
        status = last_status(refused)
        said = words(status)
        assert said.startswith(f"Nothing was decided: approval '{shown['approvalId']}' changed")
        # What docs/a2a.md shows of it: the same keys, the same parts in the same order.
        documented = documented_json("a2a-stale")
        assert sorted(documented) == sorted(status["message"])
        assert [kind_of(p) for p in documented["parts"]] == [
            kind_of(p) for p in status["message"]["parts"]
        ]
        assert "edited by olga at " in said and "replicas 3 → 9" in said
        [stale] = [
            p["data"] for p in data_parts(status) if p["data"].get("type") == "signoff.stale"
        ]
        assert (stale["approvalId"], stale["seen"], stale["version"]) == (
            shown["approvalId"], 1, 2,
        )  # fmt: skip
        assert sorted(stale) == sorted(documented["parts"][1]["data"])
        [change] = stale["changes"]
        assert (change["kind"], change["by"], change["edits"]) == (
            "edit", "olga", [{"path": ["replicas"], "before": 3, "after": 9}],
        )  # fmt: skip
        [now] = listing(status)  # the call as it stands, to decide again
        assert (now["version"], now["args"], now["requestedArgs"]) == (
            2, {"name": "web", "replicas": 9}, {"name": "web", "replicas": 3},
        )  # fmt: skip
        assert [c["by"] for c in now["changes"]] == ["olga"]
        # Nothing written: the call waits on olga's one approval, and ran not.
        assert ran(side) == []
        [waiting] = await store.list_approvals(status="pending")
        assert (waiting.version, [v.by for v in waiting.votes]) == (2, ["olga"])
        assert await store.audit_length() == length
        stored = await get_task(bob, task)
        assert stored["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        assert stored["history"] == history

        # kagent's approval names no version: of a call edited while it waited, it is refused.
        bare = await send(bob, message(data={"decision_type": "approve"}, task=task))
        assert "must say which version it was made on" in words(last_status(bare))
        assert ran(side) == []

        # The form of the refusal, sent back with its hidden version: the call as edited.
        [form] = [p["data"] for p in data_parts(status) if p["data"].get("type") == "a2a.hitl.form"]
        values = {
            f["name"]: f.get("value", "approve") for f in form["fields"] if f["type"] != "text"
        }
        assert values[f"{shown['approvalId']}.version"] == 2
        response = {"type": "a2a.hitl.formResponse", "formId": form["formId"], "values": values}
        done = await send(bob, message(data=response, task=task))
        assert states(done)[-1] == "completed"
        assert ran(side) == ["scale web 9"]


async def test_a_rejection_with_a_reason_reaches_the_model_over_rest(store: SQLStore, side: Path):
    async with (
        serving(store) as (url, _),
        connect(url, binding="HTTP+JSON", streaming=False) as client,
    ):
        [asked] = await send(client, message("delete web-2"))
        assert asked["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        reason = "web-2 serves live traffic"
        [done] = await send(
            client,
            message(data={"decision_type": "deny", "reason": reason}, task=asked["task"]["id"]),
        )
        assert done["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        reply = words(done["task"]["status"])
        assert reason in reply and "Do not retry it" in reply
        results = [
            p["data"]["response"]["result"]
            for m in done["task"]["history"]
            for p in data_parts(m)
            if p.get("metadata", {}).get("type") == "function_response"
        ]
        assert results[0]["status"] == "rejected"  # kagent's isHitlRejection reads this
        assert ran(side) == []


async def test_a_mixed_batch_takes_per_call_decisions_by_approval_or_call_id(
    store: SQLStore, side: Path
):
    async with serving(store) as (url, _), connect(url) as client:
        asked = await send(client, message("delete web-3 and web-4"))
        assert ran(side) == ["list_pods"]  # allowed: it ran at once
        first, second = listing(last_status(asked))
        decisions = {
            first["approvalId"]: {"kind": "approve"},
            second["callId"]: {"kind": "reject", "reason": "keep web-4"},
        }
        done = await send(client, message(data={"decisions": decisions}, task=task_id(asked)))
        assert states(done)[-1] == "completed"
        reply = words(last_status(done))
        assert "deleted web-3" in reply and "keep web-4" in reply
        assert ran(side) == ["list_pods", "delete_pod web-3"]


async def test_an_adr_0012_form_response_decides_the_batch(store: SQLStore, side: Path):
    async with serving(store) as (url, _), connect(url) as client:
        asked = await send(client, message("delete a and b"))
        [form] = [
            p["data"]
            for p in data_parts(last_status(asked))
            if p["data"].get("type") == "a2a.hitl.form"
        ]
        first, second = (f["name"] for f in form["fields"] if "." not in f["name"])
        response = {
            "type": "a2a.hitl.formResponse",
            "formId": form["formId"],
            "values": {first: "approve", second: "reject", f"{second}.reason": "not b"},
        }
        done = await send(client, message(data=response, task=task_id(asked)))
        assert states(done)[-1] == "completed"
        assert "not b" in words(last_status(done))
        assert ran(side) == ["list_pods", "delete_pod a"]


async def test_an_edit_runs_the_edited_call_and_one_the_schema_refuses_changes_nothing(
    store: SQLStore, side: Path
):
    async with serving(store) as (url, _), connect(url) as client:
        asked = await send(client, message("scale web to 3"))
        [held] = listing(last_status(asked))
        task = task_id(asked)
        too_many = {held["approvalId"]: {"kind": "edit", "args": {"name": "web", "replicas": 99}}}
        with pytest.raises(InvalidParamsError) as refused:
            await send(client, message(data={"decisions": too_many}, task=task))
        assert "/replicas" in refused.value.message
        assert (await get_task(client, task))["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        fine = {held["approvalId"]: {"kind": "edit", "args": {"name": "web", "replicas": 5}}}
        done = await send(client, message(data={"decisions": fine}, task=task))
        assert states(done)[-1] == "completed"
        assert ran(side) == ["scale web 5"]


# -- refusals ----------------------------------------------------------------------------------


async def test_malformed_partial_and_late_decisions_are_refused_and_change_nothing(
    store: SQLStore, side: Path
):
    async with serving(store) as (url, _), connect(url, streaming=False) as client:
        [asked] = await send(client, message("delete x and y"))
        task = asked["task"]["id"]
        first, second = listing(asked["task"]["status"])
        refusals: list[tuple[SendMessageRequest, str]] = [
            (message("yes please", task=task), "waits for a decision on 2 tool calls"),
            (message(data={"decision_type": "maybe"}, task=task), "must be 'approve' or 'deny'"),
            (
                message(data={"decisions": {first["approvalId"]: "approve"}}, task=task),
                f"left out: {second['approvalId']} (delete_pod)",
            ),
            (
                message(data={"decisions": {"nope": "approve"}}, task=task),
                "this task holds no call nope",
            ),
            (
                message(data={"decisions": {first["approvalId"]: {"kind": "edit"}}}, task=task),
                "an edit needs 'args'",
            ),
            (
                message(
                    data={"type": "a2a.hitl.formResponse", "formId": "old", "values": {}},
                    task=task,
                ),
                'formId "old" is not the form this task waits on',
            ),
            (message(data={"decision_type": "approve"}), "set message.taskId"),
        ]
        for request, expected in refusals:
            with pytest.raises(InvalidParamsError) as refused:
                await send(client, request)
            assert expected in refused.value.message, refused.value.message
            stored = await get_task(client, task)
            assert stored["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        assert ran(side) == ["list_pods"]
        with pytest.raises(TaskNotFoundError):
            await send(client, message(data={"decision_type": "approve"}, task="no-such-task"))

        decision = message(data={"decision_type": "approve"}, task=task, id="the-decision")
        [done] = await send(client, decision)
        assert done["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        # The very same message again (a client's retry) is taken once: no error, no change.
        [again] = await send(client, decision)
        assert again["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        # Another decision, late, is refused: the task is done.
        with pytest.raises(UnsupportedOperationError, match="is completed"):
            await send(client, message(data={"decision_type": "deny"}, task=task))
        assert sorted(ran(side)) == ["delete_pod x", "delete_pod y", "list_pods"]  # side by side
        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(CancelTaskRequest(id=task))


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_message_to_a_finished_task_is_an_unsupported_operation(
    store: SQLStore, side: Path, binding: str
):
    """A2A 1.0 §3.1.1: a task in a terminal state takes no more messages — neither a new
    request nor a decision — and the refusal changes nothing."""
    async with (
        serving(store) as (url, _),
        connect(url, binding=binding, streaming=False) as client,
    ):
        [asked] = await send(client, message("delete web-5"))
        task = asked["task"]["id"]
        [done] = await send(client, message(data={"decision_type": "approve"}, task=task))
        assert done["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        for late in (
            message("and delete web-6 too", task=task),
            message(data={"decision_type": "deny", "reason": "too late"}, task=task),
        ):
            with pytest.raises(UnsupportedOperationError, match="is completed"):
                await send(client, late)
        assert await get_task(client, task) == done["task"]
        assert ran(side) == ["delete_pod web-5"]


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_an_id_with_a_nul_character_is_invalid_params_and_nothing_is_written(
    store: SQLStore, side: Path, binding: str
):
    """PostgreSQL keeps no NUL in text, SQLite would: both refuse such an id where it comes in,
    naming the field, before the store sees it. Free text keeps its NUL (inside JSON)."""
    async with (
        serving(store) as (url, _),
        connect(url, binding=binding) as client,
    ):
        in_context = message("hello")
        in_context.message.context_id = "ctx\x00"
        sends = [
            (message("hello", id="m\x00"), "message.messageId has a NUL character"),
            (in_context, "message.contextId has a NUL character"),
            (message(data={"decision_type": "approve"}, task="t\x00"), "message.taskId has a NUL"),
        ]
        for request, expected in sends:
            with pytest.raises(InvalidParamsError) as refused:
                await send(client, request)
            assert expected in refused.value.message, refused.value.message
        if binding == "JSONRPC":  # REST puts these ids in the URL: a NUL there is refused up front
            reads: list[tuple[Callable[[], Awaitable[Any]], str]] = [
                (lambda: client.get_task(GetTaskRequest(id="t\x00")), "id has a NUL"),
                (lambda: client.cancel_task(CancelTaskRequest(id="t\x00")), "id has a NUL"),
                (
                    lambda: client.list_tasks(ListTasksRequest(context_id="c\x00")),
                    "contextId has a NUL character",
                ),
                (
                    lambda: client.list_tasks(
                        ListTasksRequest(page_token=encode_page_token("t\x00"))
                    ),
                    "is not one this server gave",
                ),
            ]
            for call, expected in reads:
                with pytest.raises(InvalidParamsError) as refused:
                    await call()
                assert expected in refused.value.message, refused.value.message
            with pytest.raises(InvalidParamsError, match="id has a NUL character"):
                async for _ in client.subscribe(SubscribeToTaskRequest(id="t\x00")):
                    pass
        assert await store.list_runs() == []
        assert await store.notes(SENT, "ops") == []  # no message id reserved
        done = await send(client, message("hello\x00there"))
        assert states(done)[-1] == "completed"
        assert words((await get_task(client, task_id(done)))["history"][0]) == "hello\x00there"


async def test_an_a2a_0_3_message_with_a_nul_in_its_id_is_invalid_params(
    store: SQLStore, side: Path
):
    async with (
        serving(store) as (url, _),
        httpx.AsyncClient(base_url=url, headers={"Authorization": "Bearer alice-token"}) as http,
    ):
        answer = await http.post("/a2a/ops", json={"jsonrpc": "2.0", "id": 1,
            "method": "message/send", "params": {"message": {
                "kind": "message", "messageId": "k\x00", "role": "user",
                "parts": [{"kind": "text", "text": "hello"}],
            }}})  # fmt: skip
        error = answer.json()["error"]
        assert error["code"] == -32602
        assert "message.messageId has a NUL character" in error["message"]
        assert await store.list_runs() == []


async def test_a_second_task_in_a_context_that_waits_is_refused(store: SQLStore, side: Path):
    async with serving(store) as (url, _), connect(url, streaming=False) as client:
        first = message("delete p")
        first.message.context_id = "ctx-1"
        [asked] = await send(client, first)
        second = message("delete q")
        second.message.context_id = "ctx-1"
        with pytest.raises(InvalidRequestError, match="has a task still going"):
            await send(client, second)
        assert asked["task"]["contextId"] == "ctx-1"


# -- decisions elsewhere, subscribers, listing ----------------------------------------------------


async def test_a_decision_in_the_inbox_moves_the_task_on_for_a2a_subscribers(
    store: SQLStore, side: Path
):
    async with serving(store) as (url, _), connect(url) as client:
        asked = await send(client, message("delete web-7"))
        task = task_id(asked)
        [held] = listing(last_status(asked))
        seen: list[dict[str, Any]] = []
        subscriber = await subscribed(client, task, seen)
        assert states(seen) == ["input_required"]
        async with httpx.AsyncClient(
            base_url=url, headers={"Authorization": "Bearer bob-token"}
        ) as inbox:
            decided = await inbox.post(
                f"/v1/approvals/{held['approvalId']}/decision", json={"kind": "approve"}
            )
            assert decided.status_code == 200, decided.text
        async with asyncio.timeout(HANG):
            await subscriber
        assert states(seen)[-1] == "completed"
        records = [
            p["data"]
            for e in seen
            if "statusUpdate" in e and "message" in e["statusUpdate"]["status"]
            for p in data_parts(e["statusUpdate"]["status"])
            if p["data"].get("type") == "signoff.decision"
        ]
        assert [(r["decidedBy"], r["status"]) for r in records] == [("bob", "approved")]
        assert ran(side) == ["delete_pod web-7"]
        with pytest.raises(UnsupportedOperationError, match=r"is completed"):
            async for _ in client.subscribe(SubscribeToTaskRequest(id=task)):
                pass


async def test_tasks_are_listed_by_context_and_read_with_a_short_history(
    store: SQLStore, side: Path
):
    async with serving(store) as (url, _), connect(url, streaming=False) as client:
        ids = []
        for n, context in enumerate(["ctx-a", "ctx-b", "ctx-a"]):
            request = message(f"hi {n}")
            request.message.context_id = context
            [done] = await send(client, request)
            ids.append(done["task"]["id"])
        page = MessageToDict(await client.list_tasks(ListTasksRequest(context_id="ctx-a")))
        assert [t["id"] for t in page["tasks"]] == [ids[2], ids[0]]  # newest first
        assert page["totalSize"] == 2
        first = MessageToDict(await client.list_tasks(ListTasksRequest(page_size=1)))
        assert [t["id"] for t in first["tasks"]] == [ids[2]]
        assert first["totalSize"] == 3  # over every page
        rest = MessageToDict(
            await client.list_tasks(
                ListTasksRequest(page_size=5, page_token=first["nextPageToken"])
            )
        )
        assert [t["id"] for t in rest["tasks"]] == [ids[1], ids[0]]
        done_only = await client.list_tasks(
            ListTasksRequest(status=TaskState.TASK_STATE_COMPLETED, context_id="ctx-b")
        )
        assert [t.id for t in done_only.tasks] == [ids[1]]
        short = await get_task(client, ids[0], history_length=1)
        assert [words(m) for m in short["history"]] == ["hello"]
        assert words(short["status"]) == "hello"


async def test_a_completed_tasks_history_has_each_message_once(store: SQLStore, side: Path):
    """The answer is the model's last words and the completed status's message: the history
    holds it once, however the task is read."""
    async with serving(store) as (url, _), connect(url, streaming=False) as client:
        [asked] = await send(client, message("delete web-1"))
        task = asked["task"]["id"]
        [done] = await send(client, message(data={"decision_type": "approve"}, task=task))
        answer = done["task"]["status"]["message"]
        assert words(answer) == "done: deleted web-1"
        [listed] = MessageToDict(await client.list_tasks(ListTasksRequest()))["tasks"]
        reads = {"SendMessage": done["task"], "GetTask": await get_task(client, task),
                 "ListTasks": listed}  # fmt: skip
        for read, stored in reads.items():
            ids = [m["messageId"] for m in stored["history"]]
            assert len(ids) == len(set(ids)), (read, ids)
            assert ids.count(answer["messageId"]) == 1, read
            assert stored["history"][-1] == answer, read


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_list_filter_naming_no_task_state_is_invalid_params(
    store: SQLStore, side: Path, binding: str
):
    """The SDK reads a status name it does not know as no filter at all: it is refused before,
    and a number that names no state is refused too (not a server error)."""
    async with (
        serving(store) as (url, _),
        connect(url, binding=binding, streaming=False) as client,
        httpx.AsyncClient(
            base_url=url, headers={"Authorization": "Bearer alice-token", "A2A-Version": "1.0"}
        ) as http,
    ):
        await send(client, message("hi"))
        for status in ("TASK_STATE_RUNNING", "completed", "99"):
            if binding == "HTTP+JSON":
                answer = await http.get("/a2a/ops/tasks", params={"status": status})
                assert answer.status_code == 400, answer.text
                [info] = answer.json()["error"]["details"]
                assert info["reason"] == "INVALID_PARAMS"
                error = answer.json()["error"]
            else:
                body = {"jsonrpc": "2.0", "id": 7, "method": "ListTasks",
                        "params": {"status": status}}  # fmt: skip
                answer = await http.post("/a2a/ops", json=body)
                error = answer.json()["error"]
                assert (error["code"], answer.json()["id"]) == (-32602, 7)
            assert "is not a task state" in error["message"], error
            assert "TASK_STATE_COMPLETED" in error["message"]
        # The SDK's client sends a number too: the enum is open, so any number gets through.
        with pytest.raises(InvalidParamsError, match="status 99 is not a task state"):
            await client.list_tasks(ListTasksRequest(status=99))  # type: ignore[arg-type]
        done = await client.list_tasks(ListTasksRequest(status=TaskState.TASK_STATE_COMPLETED))
        assert done.total_size == 1


async def test_redacted_arguments_are_masked_in_what_a2a_shows(store: SQLStore, side: Path):
    async with serving(store, redaction=Redaction(["name"])) as (url, _), connect(url) as client:
        asked = await send(client, message("delete secret-pod"))
        status = last_status(asked)
        stored = await get_task(client, task_id(asked))
        said = [m for m in stored["history"] if m["role"] == "ROLE_AGENT"]
        assert said and "secret-pod" not in json.dumps(said)  # only the user's own words have it
        [held] = listing(status)
        assert held["args"] == {"name": MASK}
        # An edit that keeps the mask runs with the original value.
        keep = {held["approvalId"]: {"kind": "edit", "args": {"name": MASK}}}
        done = await send(client, message(data={"decisions": keep}, task=task_id(asked)))
        assert states(done)[-1] == "completed"
        assert ran(side) == ["delete_pod secret-pod"]


# -- kagent's UI speaks A2A 0.3 ------------------------------------------------------------------


async def test_kagent_ui_payloads_over_a2a_0_3_json_rpc(store: SQLStore, side: Path):
    """The exact shapes of seed 000: ``message/send``, ``kind: data`` parts, the
    ``adk_request_confirmation`` part of the input-required status, the decision part."""

    async def rpc(http: httpx.AsyncClient, method: str, params: dict[str, Any]) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        answer = (await http.post("/a2a/ops", json=body)).json()
        assert "error" not in answer, answer
        return answer["result"]

    async with (
        serving(store) as (url, _),
        httpx.AsyncClient(
            base_url=url, headers={"Authorization": "Bearer alice-token"}, timeout=HANG
        ) as http,
    ):
        task = await rpc(http, "message/send", {"message": {
            "kind": "message", "messageId": "k1", "role": "user",
            "parts": [{"kind": "text", "text": "delete web-8"}],
        }})  # fmt: skip
        assert task["status"]["state"] == "input-required"
        [confirmation] = [
            p for p in task["status"]["message"]["parts"]
            if p["kind"] == "data" and p["data"].get("name") == "adk_request_confirmation"
        ]  # fmt: skip
        assert confirmation["metadata"] == {"type": "function_call", "is_long_running": True}
        original = confirmation["data"]["args"]["originalFunctionCall"]
        assert (original["name"], original["args"]) == ("delete_pod", {"name": "web-8"})
        done = await rpc(http, "message/send", {"message": {
            "kind": "message", "messageId": "k2", "role": "user", "taskId": task["id"],
            "parts": [{"kind": "data", "data": {"decision_type": "approve"}, "metadata": {}}],
        }})  # fmt: skip
        assert done["status"]["state"] == "completed"
        # A reload rebuilds the cards from the history: the request, then the decision.
        reloaded = await rpc(http, "tasks/get", {"id": task["id"]})
        decisions = [
            p["data"]["decision_type"]
            for m in reloaded["history"]
            for p in m["parts"]
            if p["kind"] == "data" and "decision_type" in p["data"]
        ]
        assert decisions == ["approve", "approve"]  # the UI's message, and the agent's record
        assert ran(side) == ["delete_pod web-8"]


# -- @a2a-js/sdk --------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_the_javascript_client_asks_approves_rejects_and_decides_a_batch(
    store: SQLStore, side: Path, binding: str
):
    async with serving(store) as (url, _):
        report = await node_client(url, binding)
    approve = report["approve"]
    assert approve["asked"][-1] == "input-required"
    [confirmation] = approve["confirmations"]
    assert confirmation["data"]["args"]["originalFunctionCall"]["args"] == {"name": "web-1"}
    assert confirmation["metadata"]["is_long_running"] is True
    assert approve["decided"][-1] == "completed" and approve["finalState"] == "completed"
    assert approve["answer"] == ["done: deleted web-1"]
    assert approve["historyMarks"].count("request") == 1
    assert report["reject"] == {
        "asked": "input-required",
        "decided": "completed",
        "reply": report["reject"]["reply"],
    }
    assert "web-2 serves live traffic" in report["reject"]["reply"]
    batch = report["batch"]
    assert batch["held"] == [["delete_pod", "web-3"], ["delete_pod", "web-4"]]
    assert batch["decided"][-1] == "completed"
    assert "deleted web-3" in batch["reply"] and "keep web-4" in batch["reply"]
    partial = report["partial"]
    assert partial["state"] == "input-required"
    assert "left out" in partial["error"]["message"]
    assert ran(side) == ["delete_pod web-1", "list_pods", "delete_pod web-3", "list_pods"]


# -- a restart while a task waits ----------------------------------------------------------------


@contextlib.asynccontextmanager
async def serve_process(config: Path, side: Path) -> AsyncIterator[str]:
    """`signoff serve` on the config with the test agents; yields its URL."""
    env = os.environ | {
        "SIGNOFF_TEST_TOKEN": "alice-token",
        "SIGNOFF_TEST_SIDE_FILE": str(side),
        "PYTHONPATH": str(ROOT),
    }
    async with signoff_server(
        "serve", "--config", str(config), "--agents", "tests.protocols.a2a_agents:agents",
        "--port", "0", env=env,
    ) as (url, _):  # fmt: skip
        yield url


async def node_client(url: str, *arguments: str) -> Any:
    """What tests/js/a2a_client.mjs (@a2a-js/sdk) printed, run against `url`."""
    node = await asyncio.create_subprocess_exec(
        "node", str(ROOT / "tests/js/a2a_client.mjs"), url, "alice-token", *arguments,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(HANG):
        out, err = await node.communicate()
    assert node.returncode == 0, err.decode()
    return json.loads(out)


def config_file(folder: Path, database: str) -> Path:
    config = folder / "signoff.yaml"
    config.write_text(
        f"database: {database}\n"
        "auth:\n  tokens:\n    - principal: alice\n      token_env: SIGNOFF_TEST_TOKEN\n"
        + CONFIG_RULES
    )
    return config


@pytest.mark.heavy
async def test_two_replicas_on_postgresql_serve_one_task(
    postgres_url: str, tmp_path: Path, side: Path
):
    """Asked on one replica, followed there, decided over A2A on the other: the subscriber on
    the first sees it complete, and the call ran once."""
    config = config_file(tmp_path, postgres_url)
    async with (
        serve_process(config, side) as url_a,
        serve_process(config, side) as url_b,
        connect(url_a) as a,
        connect(url_b) as b,
    ):
        asked = await send(a, message("delete web-11"))
        task = task_id(asked)
        seen: list[dict[str, Any]] = []
        subscriber = await subscribed(a, task, seen)
        done = await send(b, message(data={"decision_type": "approve"}, task=task))
        assert states(done)[-1] == "completed"
        async with asyncio.timeout(HANG):
            await subscriber
        assert states(seen)[0] == "input_required" and states(seen)[-1] == "completed"
        assert words(last_status(seen)) == "done: deleted web-11"
    assert ran(side) == ["delete_pod web-11"]


async def test_tasks_waiting_for_input_survive_a_server_restart(tmp_path: Path, side: Path):
    """Both clients start a task, the server stops, a new process on the same database serves
    the tasks, and each client approves its own."""
    config = config_file(tmp_path, f"sqlite:///{tmp_path / 'a2a.db'}")
    async with serve_process(config, side) as url, connect(url) as client:
        asked = await send(client, message("delete web-9"))
        task = task_id(asked)
        assert states(asked)[-1] == "input_required"
        js = await node_client(url, "JSONRPC", "ask", "delete web-10")
        assert js["states"][-1] == "input-required"
    async with serve_process(config, side) as url, connect(url) as client:
        stored = await get_task(client, task)
        assert stored["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        [held] = listing(stored["status"])
        assert held["args"] == {"name": "web-9"}
        done = await send(client, message(data={"decision_type": "approve"}, task=task))
        assert states(done)[-1] == "completed"
        assert words(last_status(done)) == "done: deleted web-9"
        js_done = await node_client(url, "HTTP+JSON", "approve", js["taskId"])
        assert js_done["before"] == "input-required"
        assert js_done["states"][-1] == "completed"
        assert js_done["reply"] == "done: deleted web-10"
    assert ran(side) == ["delete_pod web-9", "delete_pod web-10"]


async def test_the_blocking_send_with_return_immediately_answers_before_the_run_is_done(
    store: SQLStore, side: Path
):
    async with serving(store) as (url, _), connect(url, streaming=False) as client:
        request = message("slowly delete web-10")  # the model thinks for a second
        request.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
        [answer] = await send(client, request)
        assert answer["task"]["status"]["state"] == "TASK_STATE_WORKING"
        stored = await get_task(client, answer["task"]["id"])
        assert stored["history"][0]["parts"] == [{"text": "slowly delete web-10"}]
        # A blocking send on the same task's decision waits for the pause first.
        async with asyncio.timeout(HANG):
            while (await get_task(client, answer["task"]["id"]))["status"]["state"] != (
                "TASK_STATE_INPUT_REQUIRED"
            ):
                await asyncio.sleep(0.05)


# -- what the review found --------------------------------------------------------------------


async def test_a_first_message_sent_again_is_the_same_task_and_a_reused_id_is_refused(
    store: SQLStore, side: Path
):
    async with (
        serving(store) as (url, _),
        connect(url, streaming=False) as alice,
        connect(url, streaming=False, token="bob-token") as bob,
    ):
        [first] = await send(alice, message("hello there", id="msg-1"))
        [again] = await send(alice, message("hello there", id="msg-1"))
        assert again["task"]["id"] == first["task"]["id"]
        with pytest.raises(InvalidParamsError, match="already used for another message"):
            await send(alice, message("delete web-1", id="msg-1"))
        # Message ids are the sender's: bob's "msg-1" is a message of his own.
        [bobs] = await send(bob, message("delete bobs-pod", id="msg-1"))
        assert bobs["task"]["id"] != first["task"]["id"]
        assert words(bobs["task"]["history"][0]) == "delete bobs-pod"
        listed = await alice.list_tasks(ListTasksRequest())
        assert listed.total_size == 2
        with pytest.raises(InvalidParamsError, match="longer than 200"):
            await send(alice, message("hi", id="x" * 201))
        assert (await alice.list_tasks(ListTasksRequest())).total_size == 2
        # Sent twice at once (a client retrying on a timeout): one task, one run.
        twice = await asyncio.gather(*(send(alice, message("delete web-12", id="msg-2"))
                                       for _ in range(2)))  # fmt: skip
        assert twice[0][0]["task"]["id"] == twice[1][0]["task"]["id"]
        assert (await alice.list_tasks(ListTasksRequest())).total_size == 3


async def test_part_of_a_batch_decided_in_the_inbox_leaves_the_task_waiting_for_the_rest(
    store: SQLStore, side: Path
):
    async with serving(store) as (url, _), connect(url, streaming=False) as client:
        [asked] = await send(client, message("delete c and d"))
        task = asked["task"]["id"]
        first, second = listing(asked["task"]["status"])
        async with httpx.AsyncClient(
            base_url=url, headers={"Authorization": "Bearer bob-token"}
        ) as inbox:
            decided = await inbox.post(
                f"/v1/approvals/{first['approvalId']}/decision", json={"kind": "approve"}
            )
            assert decided.status_code == 200, decided.text
        stored = await get_task(client, task)
        assert stored["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        assert [a["approvalId"] for a in listing(stored["status"])] == [second["approvalId"]]
        [form] = [
            p["data"]
            for p in data_parts(stored["status"])
            if p["data"].get("type") == "a2a.hitl.form"
        ]
        assert [f["name"] for f in form["fields"]] == [
            second["approvalId"], f"{second['approvalId']}.reason",
            f"{second['approvalId']}.version",
        ]  # fmt: skip
        # The first is decided: naming it again is late; the rest is decided as usual.
        both = {first["approvalId"]: "approve", second["approvalId"]: "approve"}
        with pytest.raises(InvalidRequestError, match="already decided"):
            await send(client, message(data={"decisions": both}, task=task))
        response = {
            "type": "a2a.hitl.formResponse",
            "formId": form["formId"],
            "values": {second["approvalId"]: "reject", f"{second['approvalId']}.reason": "no"},
        }
        [done] = await send(client, message(data=response, task=task))
        assert done["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert sorted(ran(side)) == ["delete_pod c", "list_pods"]


async def test_a_context_of_another_agent_is_not_continued(store: SQLStore, side: Path):
    async with (
        serving(store) as (url, _),
        connect(url, streaming=False) as ops,
        connect(url, streaming=False, agent="greeter") as greeter,
    ):
        started = message("hi")
        started.message.context_id = "ctx-ops"
        await send(ops, started)
        borrowed = message("hi")
        borrowed.message.context_id = "ctx-ops"
        with pytest.raises(InvalidParamsError, match="a conversation of another agent"):
            await send(greeter, borrowed)
        with pytest.raises(TaskNotFoundError):  # nor is another agent's task read
            await greeter.get_task(GetTaskRequest(id=(await ops.list_tasks(
                ListTasksRequest())).tasks[0].id))  # fmt: skip


async def test_the_token_is_needed_when_the_app_is_mounted_under_a_prefix(
    store: SQLStore, side: Path
):
    from starlette.applications import Starlette
    from starlette.routing import Mount

    service = Service(store=store, gate=Gate(POLICY, store), agents=agents())
    outer = Starlette(routes=[Mount("/signoff", app=create_app(service, Auth(tokens=TOKENS)))])
    transport = httpx.ASGITransport(app=outer)
    async with httpx.AsyncClient(transport=transport, base_url="http://signoff") as http:
        card = await http.get("/signoff/a2a/ops/.well-known/agent-card.json")
        assert card.status_code == 200
        for method, path in (("GET", "/signoff/a2a/ops/tasks"), ("POST", "/signoff/a2a/ops")):
            refused = await http.request(method, path, json={})
            assert refused.status_code == 401, (path, refused.text)
        listed = await http.get(
            "/signoff/a2a/ops/tasks",
            headers={"Authorization": "Bearer alice-token", "A2A-Version": "1.0"},
        )
        assert listed.status_code == 200, listed.text
        assert listed.json()["tasks"] == []


async def test_what_a_decision_edited_is_masked_for_everyone_reading_the_task(
    store: SQLStore, side: Path
):
    async with (
        serving(store, redaction=Redaction(["name"])) as (url, _),
        connect(url) as alice,
        connect(url, token="bob-token") as bob,
    ):
        asked = await send(alice, message("delete old-pod"))
        [held] = listing(last_status(asked))
        edited = {held["approvalId"]: {"kind": "edit", "args": {"name": "new-secret"}}}
        done = await send(alice, message(data={"decisions": edited}, task=task_id(asked)))
        assert states(done)[-1] == "completed"
        assert ran(side) == ["delete_pod new-secret"]
        seen_by_bob = await get_task(bob, task_id(asked))
        decisions = [
            m
            for m in seen_by_bob["history"]
            if m.get("metadata", {}).get("signoff.hitl") == "decision"
        ]
        # Alice's message and the agent's record of it; only what the tool said afterwards (its
        # result, the model's words: not arguments) names the pod.
        assert len(decisions) == 2 and "new-secret" not in json.dumps(decisions)
        [sent] = [m for m in decisions if m["role"] == "ROLE_USER"]
        assert sent["parts"][0]["data"]["decisions"][held["approvalId"]]["args"] == {"name": MASK}
