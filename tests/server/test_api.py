"""The HTTP API in-process (httpx over ASGI) and, for live streams, a real uvicorn server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Callable, MutableMapping
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.types import ASGIApp

from signoff import Policy
from signoff.agent import Agent, ModelTurn, tool
from signoff.errors import StoreUnavailableError
from signoff.gate import Gate
from signoff.server import Auth, Principal, Service, create_app
from signoff.store import SQLStore
from signoff.testing import ScriptedModel, call
from tests.deadline import HANG
from tests.processes import websocket_handshake

POLICY = Policy.from_dict(
    {
        "rules": [
            {"allow": "list_pods"},
            {"ask": ["delete_pod", "scale"]},
            {"ask": "drain_node", "approvers": ["ops"]},
        ]
    }
)
deleted: list[str] = []


@tool
def list_pods() -> list[str]:
    """List the pods."""
    return ["nginx-123", "web-1"]


@tool
def delete_pod(name: str) -> str:
    """Delete a pod."""
    deleted.append(name)
    return f"deleted {name}"


@tool
def scale(name: str, replicas: int) -> str:
    """Scale a deployment."""
    return f"scaled {name} to {replicas}"


@tool
def drain_node(name: str) -> str:
    """Drain a node (ops only)."""
    return f"drained {name}"


@pytest.fixture(autouse=True)
def clear() -> None:
    deleted.clear()


TOKENS = {
    "alice-token": Principal(name="alice", roles=frozenset({"ops"})),
    "bob-token": Principal(name="bob"),
}


def service(store: SQLStore, turns: list[Any]) -> Service:
    agent = Agent(
        name="ops", model=ScriptedModel(turns), tools=[list_pods, delete_pod, scale, drain_node]
    )
    return Service(store=store, gate=Gate(POLICY, store), agents=[agent], poll_interval=0.05)


@pytest.fixture
def api(
    store: SQLStore,
) -> Callable[..., contextlib.AbstractAsyncContextManager[httpx.AsyncClient]]:
    """An API client over a fresh service whose ops agent plays `turns`; as alice."""

    @contextlib.asynccontextmanager
    async def make(
        turns: list[Any], token: str | None = "alice-token"
    ) -> AsyncIterator[httpx.AsyncClient]:
        app = create_app(service(store, turns), Auth(tokens=TOKENS))
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://signoff", headers=headers
            ) as client:
                yield client

    return make


async def until(client: httpx.AsyncClient, run_id: str, status: str) -> dict[str, Any]:
    async with asyncio.timeout(HANG):
        while True:
            run: dict[str, Any] = (await client.get(f"/v1/runs/{run_id}")).json()
            if run["status"] == status:
                return run
            await asyncio.sleep(0.02)


DELETE_THEN_DONE = [
    ModelTurn(tool_calls=(call("list_pods"), call("delete_pod", name="nginx-123"))),
    ModelTurn(text="nginx-123 is gone."),
]


async def test_what_a_run_was_asked_is_read_once_for_all_its_approvals(
    api: Any, store: SQLStore, monkeypatch: pytest.MonkeyPatch
):
    reads: list[set[str]] = []
    read_inputs = store.run_inputs

    async def counted(run_ids: Any) -> dict[str, str]:
        reads.append(set(run_ids))
        return await read_inputs(run_ids)

    monkeypatch.setattr(store, "run_inputs", counted)
    turns = [ModelTurn(tool_calls=(call("delete_pod", name="a"), call("delete_pod", name="b")))]
    async with api([*turns, ModelTurn(text="done")]) as client:
        run = (
            await client.post(
                "/v1/threads/t1/runs", params={"wait": 5}, json={"agent": "ops", "input": "go"}
            )
        ).json()
        first, second = run["pending_approvals"]
        listed = (await client.get("/v1/approvals", params={"status": "pending"})).json()
        assert [item["input"] for item in listed["items"]] == ["go", "go"]
        for pending in (first, second):
            decided = await client.post(
                f"/v1/approvals/{pending}/decision", json={"kind": "approve"}
            )
            assert decided.json()["input"] == "go"
    assert reads == [{run["id"]}]  # once, for the listing; not again at each decision


async def test_a_run_pauses_is_approved_over_http_and_the_worker_finishes_it(api: Any):
    async with api(DELETE_THEN_DONE) as client:
        response = await client.post(
            "/v1/threads/t1/runs", params={"wait": 5}, json={"agent": "ops", "input": "go"}
        )
        assert response.status_code == 201
        run = response.json()
        assert (run["status"], run["agent"], run["started_by"]) == ("paused", "ops", "alice")
        [pending] = run["pending_approvals"]

        listed = (await client.get("/v1/approvals", params={"status": "pending"})).json()
        [item] = listed["items"]
        assert listed["next"] is None
        assert (item["id"], item["tool"], item["args"]) == (
            pending,
            "delete_pod",
            {"name": "nginx-123"},
        )
        assert (item["run_id"], item["agent"], item["status"]) == (run["id"], "ops", "pending")

        decided = await client.post(f"/v1/approvals/{pending}/decision", json={"kind": "approve"})
        assert decided.status_code == 200
        assert (decided.json()["status"], decided.json()["decided_by"]) == ("approved", "alice")
        done = await until(client, run["id"], "completed")
        assert deleted == ["nginx-123"]
        assert done["messages"][-1] == {"role": "assistant", "content": "nginx-123 is gone."}
        # The same decision again is a no-op; a different one is a conflict.
        again = await client.post(f"/v1/approvals/{pending}/decision", json={"kind": "approve"})
        assert again.status_code == 200
        other = await client.post(
            f"/v1/approvals/{pending}/decision", json={"kind": "reject", "reason": "no"}
        )
        assert other.status_code == 409
        assert other.json()["error"] == "ConflictError"
        assert deleted == ["nginx-123"]


async def test_bad_requests_get_json_errors_naming_the_problem(api: Any):
    turns = [ModelTurn(tool_calls=(call("scale", name="web", replicas=2),)), ModelTurn(text="ok")]
    async with api(turns) as client:
        run = (
            await client.post(
                "/v1/threads/t1/runs", params={"wait": 5}, json={"agent": "ops", "input": "go"}
            )
        ).json()
        [pending] = run["pending_approvals"]
        cases = [
            (await client.post(f"/v1/approvals/{pending}/decision", json={"kind": "maybe"}),
             422, "body.kind"),
            (await client.post(f"/v1/approvals/{pending}/decision", json={"kind": "edit"}),
             422, "needs 'args'"),
            (await client.post(f"/v1/approvals/{pending}/decision",
                               json={"kind": "edit", "args": {"name": "web", "replicas": "x"}}),
             422, "/replicas"),
            (await client.post("/v1/approvals/nope/decision", json={"kind": "approve"}),
             404, "nope"),
            (await client.post("/v1/threads/t2/runs", json={"agent": "ghost", "input": "x"}),
             404, "no agent named 'ghost'"),
            (await client.post("/v1/threads/t2/runs", json={"input": "x"}), 422, "body.agent"),
            (await client.get("/v1/runs/nope"), 404, "nope"),
            (await client.get("/v1/approvals", params={"limit": 0}), 422, "query.limit"),
            (await client.get("/v1/approvals", params={"short_id": "x", "tool": "scale"}), 400,
             "short_id goes alone"),
            (await client.post("/v1/approvals/decisions", json={"decisions": {}}), 422,
             "body.decisions"),
            (await client.get("/v1/nowhere"), 404, "Not Found"),
        ]  # fmt: skip
        for response, status, words in cases:
            assert response.status_code == status, response.text
            body = response.json()
            assert words in body["detail"], body
            assert body["error"]
        bad_edit = cases[2][0].json()
        assert bad_edit["schema_path"] == "properties/replicas/type"
        still = (await client.get(f"/v1/approvals/{pending}")).json()
        assert still["status"] == "pending"  # nothing half-done by the bad requests


async def test_without_a_known_token_nothing_is_served_and_roles_are_enforced(api: Any):
    turns = [ModelTurn(tool_calls=(call("drain_node", name="n1"),)), ModelTurn(text="ok")]
    async with api(turns, token=None) as anonymous:
        refused = await anonymous.get("/v1/approvals")
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        assert refused.json() == {
            "error": "Unauthorized", "detail": "send 'Authorization: Bearer <token>'",
        }  # fmt: skip
        wrong = await anonymous.get("/v1/approvals", headers={"Authorization": "Bearer guess"})
        assert wrong.status_code == 401
        assert (await anonymous.get("/v1/health")).status_code == 200

        alice = {"Authorization": "Bearer alice-token"}
        run = (
            await anonymous.post(
                "/v1/threads/t1/runs",
                params={"wait": 5},
                json={"agent": "ops", "input": "drain n1"},
                headers=alice,
            )
        ).json()
        [pending] = run["pending_approvals"]
        bob = {"Authorization": "Bearer bob-token"}
        forbidden = await anonymous.post(
            f"/v1/approvals/{pending}/decision", json={"kind": "approve"}, headers=bob
        )
        assert forbidden.status_code == 403
        assert "needs one of the roles ['ops']" in forbidden.json()["detail"]
        allowed = await anonymous.post(
            f"/v1/approvals/{pending}/decision", json={"kind": "approve"}, headers=alice
        )
        assert allowed.json()["decided_by"] == "alice"


async def test_approve_all_decides_a_batch_at_once_and_a_long_poll_sees_it(api: Any):
    turns = [
        ModelTurn(tool_calls=tuple(call("delete_pod", name=n) for n in ("a", "b", "c"))),
        ModelTurn(text="all three gone"),
    ]
    async with api(turns) as client:
        run = (
            await client.post(
                "/v1/threads/t1/runs", params={"wait": 5}, json={"agent": "ops", "input": "go"}
            )
        ).json()
        ids = run["pending_approvals"]
        assert len(ids) == 3
        waiting = asyncio.create_task(client.get(f"/v1/approvals/{ids[0]}", params={"wait": 10}))
        await asyncio.sleep(0.1)
        assert not waiting.done()
        batch = await client.post(
            "/v1/approvals/decisions", json={"decisions": {i: {"kind": "approve"} for i in ids}}
        )
        assert [a["status"] for a in batch.json()["items"]] == ["approved"] * 3
        assert (await waiting).json()["status"] == "approved"
        await until(client, run["id"], "completed")
        assert sorted(deleted) == ["a", "b", "c"]


async def test_approvals_are_found_by_the_short_id_the_terminal_inbox_shows(api: Any):
    turns = [
        ModelTurn(tool_calls=tuple(call("delete_pod", name=n) for n in ("a", "b"))),
        ModelTurn(text="both gone"),
    ]
    async with api(turns) as client:
        run = (
            await client.post(
                "/v1/threads/t1/runs", params={"wait": 5}, json={"agent": "ops", "input": "go"}
            )
        ).json()
        first, second = run["pending_approvals"]
        found = (await client.get("/v1/approvals", params={"short_id": second[-8:]})).json()
        assert ([a["id"] for a in found["items"]], found["next"]) == ([second], None)
        whole = (await client.get("/v1/approvals", params={"short_id": first})).json()
        assert [a["id"] for a in whole["items"]] == [first]
        none = (await client.get("/v1/approvals", params={"short_id": "0" * 9})).json()
        assert none == {"items": [], "next": None}


async def test_agents_list_their_tools_with_schemas_and_verdicts(api: Any):
    async with api([]) as client:
        [ops] = (await client.get("/v1/agents")).json()["items"]
        tools = {t["name"]: t for t in ops["tools"]}
        assert tools["list_pods"]["verdict"]["kind"] == "allow"
        assert tools["delete_pod"]["verdict"]["kind"] == "ask"
        assert tools["scale"]["parameters"]["properties"]["replicas"]["type"] == "integer"


async def test_audit_lists_the_decisions_and_verifies(api: Any):
    async with api(DELETE_THEN_DONE) as client:
        run = (
            await client.post(
                "/v1/threads/t1/runs", params={"wait": 5}, json={"agent": "ops", "input": "go"}
            )
        ).json()
        [pending] = run["pending_approvals"]
        await client.post(
            f"/v1/approvals/{pending}/decision", json={"kind": "reject", "reason": "not today"}
        )
        entries = (await client.get("/v1/audit")).json()["items"]
        decision = [e for e in entries if e["action"] == "decision"]
        assert decision and decision[-1]["actor"] == "alice"
        verified = (await client.get("/v1/audit/verify")).json()
        assert (verified["ok"], verified["first_bad_entry"]) == (True, None)
        assert verified["reason"].startswith(f"chain intact ({len(entries)} entries)")


@contextlib.asynccontextmanager
async def live_server(store: SQLStore, turns: list[Any]) -> AsyncIterator[int]:
    """A real uvicorn server over a fresh service on a free loopback port, until the block ends."""
    async with live_app(create_app(service(store, turns), Auth(tokens=TOKENS))) as port:
        yield port


@contextlib.asynccontextmanager
async def live_app(app: ASGIApp) -> AsyncIterator[int]:
    """A real uvicorn server of `app` on a free loopback port, until the block ends."""
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="error")
    )
    serving = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(HANG):
            while not server.started:
                await asyncio.sleep(0.01)
        yield server.config.port
    finally:
        server.should_exit = True
        await serving


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_live_event_stream_resumes_after_last_event_id_and_shows_the_decision(
    store: SQLStore,
):
    headers = {"Authorization": "Bearer alice-token"}
    async with (
        live_server(store, DELETE_THEN_DONE) as port,
        asyncio.timeout(HANG),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=headers) as client,
    ):
        run = (
            await client.post(
                "/v1/threads/t1/runs", params={"wait": 5}, json={"agent": "ops", "input": "go"}
            )
        ).json()
        seen: list[dict[str, Any]] = []
        async with client.stream("GET", f"/v1/runs/{run['id']}/events") as stream:
            lines = stream.aiter_lines()
            async for line in lines:
                if line.startswith("data: "):
                    seen.append(json.loads(line[6:]))
                    if seen[-1]["type"] == "paused":
                        break
            # Live: the decision and the rest arrive on the open stream, and a long-poll
            # over the same server answers as soon as it is taken.
            [pending] = run["pending_approvals"]
            polling = asyncio.create_task(
                client.get(f"/v1/approvals/{pending}", params={"wait": 10})
            )
            await asyncio.sleep(0.1)
            assert not polling.done()
            await client.post(f"/v1/approvals/{pending}/decision", json={"kind": "approve"})
            assert (await polling).json()["status"] == "approved"
            async for line in lines:
                if line.startswith("data: "):
                    seen.append(json.loads(line[6:]))
        types = [e["type"] for e in seen]
        assert types[0] == "run_started"
        assert types.index("paused") < types.index("decision") < types.index("resumed")
        assert types[-1] == "completed"
        assert [e["seq"] for e in seen] == list(range(1, len(seen) + 1))
        # Reconnecting with Last-Event-ID gives only what came after.
        middle = seen[len(seen) // 2]["seq"]
        async with client.stream(
            "GET", f"/v1/runs/{run['id']}/events", headers={"Last-Event-ID": str(middle)}
        ) as again:
            rest = [
                json.loads(line[6:])
                async for line in again.aiter_lines()
                if line.startswith("data: ")
            ]
        assert [e["seq"] for e in rest] == [e["seq"] for e in seen if e["seq"] > middle]


async def test_the_all_runs_stream_shows_every_runs_events_live_and_resumes(store: SQLStore):
    turns = [
        ModelTurn(tool_calls=(call("delete_pod", name="x"),)),
        ModelTurn(text="x is gone"),
    ]
    headers = {"Authorization": "Bearer alice-token"}
    async with (
        live_server(store, turns) as port,
        asyncio.timeout(HANG),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=headers) as client,
    ):
        ids: list[str] = []
        seen: list[dict[str, Any]] = []
        async with client.stream("GET", "/v1/events") as stream:
            lines = stream.aiter_lines()
            assert (await anext(lines)).startswith(":")  # open before any event
            run = (
                await client.post(
                    "/v1/threads/t1/runs",
                    params={"wait": 5},
                    json={"agent": "ops", "input": "go"},
                )
            ).json()
            [pending] = run["pending_approvals"]
            await client.post(f"/v1/approvals/{pending}/decision", json={"kind": "approve"})
            async for line in lines:
                if line.startswith("id: "):
                    ids.append(line[4:])
                if line.startswith("data: "):
                    seen.append(json.loads(line[6:]))
                    if seen[-1]["type"] == "completed":
                        break
        assert {e["run_id"] for e in seen} == {run["id"]}
        types = [e["type"] for e in seen]
        assert types[0] == "run_started"
        assert types.index("paused") < types.index("decision") < types.index("completed")
        assert [e["seq"] for e in seen] == list(range(1, len(seen) + 1))  # none lost, none twice
        # Resuming after an id gives what followed it, and only that.
        async with client.stream("GET", "/v1/events", headers={"Last-Event-ID": ids[2]}) as again:
            rest: list[int] = []
            async for line in again.aiter_lines():
                if line.startswith("data: "):
                    rest.append(json.loads(line[6:])["seq"])
                    if len(rest) == len(seen) - 3:
                        break
        assert rest == [e["seq"] for e in seen[3:]]
        bad = await client.get("/v1/events", headers={"Last-Event-ID": "nonsense"})
        assert bad.status_code == 400
        assert bad.json()["error"] == "InvalidRequest"


async def test_the_policy_in_force_and_what_it_would_say_of_a_call(api: Any):
    async with api([]) as client:
        policy = (await client.get("/v1/policy")).json()
        assert policy["version"] == POLICY.version
        assert policy["default"] == "ask"
        assert policy["rules"][0] == {"id": "rules[0]", "allow": ["list_pods"]}
        explained = await client.post(
            "/v1/policy/explain", json={"tool": "drain_node", "args": {"name": "n1"}}
        )
        assert explained.json() == {
            "kind": "ask",
            "rule": "rules[2]",
            "reason": explained.json()["reason"],
            "shadowed": [],
            "grant": None,
            "grants_passed_over": [],
        }
        assert "drain_node" in explained.json()["reason"]
        missing = await client.post("/v1/policy/explain", json={"args": {}})
        assert missing.status_code == 422
        assert "body.tool" in missing.json()["detail"]
        # A resource read named like an allowed tool: no rule judges reads, the default does.
        read = {"tool": "list_pods", "kind": "resource"}
        explained = await client.post("/v1/policy/explain", json=read)
        assert (explained.json()["kind"], explained.json()["rule"]) == ("ask", None)
        odd = await client.post("/v1/policy/explain", json={**read, "kind": "file"})
        assert odd.status_code == 422
        assert "body.kind" in odd.json()["detail"]


async def test_the_websocket_pushes_requests_and_takes_decisions(store: SQLStore):
    import websockets
    from websockets.typing import Subprotocol

    async with live_server(store, DELETE_THEN_DONE) as port:
        async with asyncio.timeout(HANG):
            url = f"ws://127.0.0.1:{port}/v1/ws"
            with pytest.raises(websockets.exceptions.ConnectionClosed) as refused:
                async with websockets.connect(
                    url, subprotocols=[Subprotocol("signoff.bearer"), Subprotocol("guess")]
                ) as bad:
                    await bad.recv()
            assert refused.value.rcvd is not None and refused.value.rcvd.code == 4401

            # A browser offers the token as a subprotocol: it cannot set headers.
            async with (
                websockets.connect(
                    url, subprotocols=[Subprotocol("signoff.bearer"), Subprotocol("alice-token")]
                ) as socket,
                httpx.AsyncClient(
                    base_url=f"http://127.0.0.1:{port}",
                    headers={"Authorization": "Bearer alice-token"},
                ) as client,
            ):
                hello = json.loads(await socket.recv())
                assert (hello["type"], hello["principal"], hello["pending"]) == (
                    "hello",
                    "alice",
                    [],
                )
                await client.post("/v1/threads/t1/runs", json={"agent": "ops", "input": "go"})

                received: list[dict[str, Any]] = []  # in order; taken ones are removed

                async def next_matching(test: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
                    """The first message, received or to come, that passes `test`: events are
                    pushed all along, so answers and events interleave."""
                    while True:
                        for message in received:
                            if test(message):
                                received.remove(message)
                                return message
                        received.append(json.loads(await socket.recv()))

                async def next_message(kind: str) -> dict[str, Any]:
                    return await next_matching(lambda m: m["type"] == kind)

                async def next_event(kind: str) -> dict[str, Any]:
                    message = await next_matching(
                        lambda m: m["type"] == "event" and m["event"]["type"] == kind
                    )
                    event: dict[str, Any] = message["event"]
                    return event

                await socket.send("not json")
                garbled = await next_message("error")
                assert (garbled["error"], garbled["request_id"]) == ("InvalidRequest", None)
                requested = await next_event("approval_requested")
                approval_id = requested["data"]["approval_id"]
                assert requested["data"]["tool"] == "delete_pod"

                await socket.send(
                    json.dumps(
                        {
                            "type": "decide",
                            "id": approval_id,
                            "decision": {"kind": "maybe"},
                            "request_id": 1,
                        }
                    )
                )
                error = await next_message("error")
                assert (error["type"], error["request_id"]) == ("error", 1)
                assert "decision.kind" in error["detail"]

                await socket.send(
                    json.dumps(
                        {
                            "type": "decide",
                            "id": approval_id,
                            "decision": {"kind": "approve"},
                            "request_id": 2,
                        }
                    )
                )
                answer = await next_message("decided")
                assert answer["request_id"] == 2
                assert (answer["approval"]["status"], answer["approval"]["decided_by"]) == (
                    "approved", "alice",
                )  # fmt: skip
                decision = await next_event("decision")
                assert decision["data"]["approval_id"] == approval_id
                await next_event("completed")
            assert deleted == ["nginx-123"]


async def test_a_burst_of_events_larger_than_a_page_reaches_the_all_runs_reader(store: SQLStore):
    from datetime import UTC, datetime

    from signoff.store.runs import RunRecord

    svc = service(store, [])
    start = datetime.now(UTC)
    record = RunRecord(
        id="burst", thread_id="b", agent="ops", status="running", started_by=None,
        lease_owner="w", version=1,
    )  # fmt: skip
    await store.create_run(record, at=start, lease_until=start)
    burst = [("text", {"n": i}) for i in range(1100)]
    await store.append_to_run("burst", at=start, events=burst, owner="w", lease_until=start)
    got: list[int] = []

    async def read() -> None:
        async for event in svc.follow_all(since=start):
            got.append(event.seq)
            if len(got) == 1101:
                return

    reader = asyncio.create_task(read())
    await asyncio.sleep(0.3)
    later = datetime.now(UTC)
    await store.append_to_run(
        "burst", at=later, events=[("text", {})], owner="w", lease_until=later
    )
    async with asyncio.timeout(HANG):
        await reader
    assert got == list(range(1, 1102))  # every one, once, in order


@contextlib.asynccontextmanager
async def local_server(
    store: SQLStore, auth: Auth, turns: list[Any] = DELETE_THEN_DONE
) -> AsyncIterator[Callable[..., httpx.AsyncClient]]:
    """An app over a fresh service (its ops agent playing `turns`); yields a function that
    makes a client of it as one host and origin sees it: ``client("evil.example:8000")``."""
    app = create_app(service(store, turns), auth)
    async with app.router.lifespan_context(app), contextlib.AsyncExitStack() as clients:

        def client(host: str, origin: str | None = None) -> httpx.AsyncClient:
            made = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app),
                base_url=f"http://{host}",
                headers={} if origin is None else {"Origin": origin},
            )
            clients.push_async_callback(made.aclose)
            return made

        yield client


async def test_without_authentication_another_origin_is_refused(store: SQLStore):
    async with local_server(store, Auth.none(roles=["admin"])) as client:
        local = client("127.0.0.1:8000")
        assert (await local.get("/v1/approvals")).status_code == 200  # a tool: no Origin
        same = await local.get("/v1/approvals", headers={"Origin": "http://127.0.0.1:8000"})
        assert same.status_code == 200
        for origin in ("https://evil.example", "http://localhost:3000", "null"):
            evil = await local.post(
                "/v1/threads/t/runs",
                json={"agent": "ops", "input": "x"},
                headers={"Origin": origin},
            )
            assert evil.status_code == 403, origin  # another local port is another origin too
            assert evil.json() == {
                "error": "Forbidden",
                "detail": f"requests from {origin} are not served",
            }


async def test_without_authentication_a_rebound_dns_name_can_neither_decide_nor_set_the_policy(
    store: SQLStore,
):
    """DNS rebinding: evil.example's page, its name pointed at 127.0.0.1 afterwards, is
    same-origin with itself — Origin and Host agree — but the Host is not one this serves."""
    async with local_server(store, Auth.none(roles=["admin"])) as client:
        local = client("127.0.0.1:8000")
        run = (
            await local.post(
                "/v1/threads/t1/runs", params={"wait": 5}, json={"agent": "ops", "input": "go"}
            )
        ).json()
        [pending] = run["pending_approvals"]
        before = (await local.get("/v1/policy")).json()
        evil = client("evil.example:8000", origin="http://evil.example:8000")
        decision = {"kind": "approve"}
        attempts: list[tuple[str, str, Any]] = [
            ("POST", f"/v1/approvals/{pending}/decision", decision),
            ("POST", "/v1/approvals/decisions", {"decisions": {pending: decision}}),
            ("PUT", "/v1/policy", {"document": {"default": "allow"}}),
            ("PUT", "/v1/policy/tools/delete_pod", {"verdict": "allow"}),
            ("GET", "/v1/approvals", None),
            ("GET", "/", None),
            ("POST", "/agui/ops", {"threadId": "t", "runId": "r", "messages": []}),
            ("GET", "/a2a/ops/.well-known/agent-card.json", None),
            ("POST", "/a2a/ops", {"jsonrpc": "2.0", "id": 1, "method": "ListTasks"}),
        ]
        for method, path, body in attempts:
            refused = await evil.request(method, path, json=body)
            assert refused.status_code == 421, (path, refused.text)
            answer = refused.json()
            assert answer["error"] == "MisdirectedRequest"
            assert "'evil.example'" in answer["detail"] and "allowed_hosts" in answer["detail"]
        assert (await local.get(f"/v1/approvals/{pending}")).json()["status"] == "pending"
        assert (await local.get("/v1/policy")).json() == before
        # The very same requests on a loopback name do what they say.
        for method, path, body in attempts[:3:2]:
            done = await local.request(method, path, json=body)
            assert done.status_code == 200, (path, done.text)
        assert (await local.get("/v1/policy")).json()["default"] == "allow"
        # Loopback names are served, by any port; a name DNS answers for is not.
        for host in ("localhost:8000", "127.0.0.1", "[::1]:9", "LOCALHOST:1", "127.0.0.2:80"):
            assert (await client(host).get("/v1/health")).status_code == 200, host
        for host in ("localhost.:8000", "app.localhost:8000", "0.0.0.0:8000", "10.0.0.1:8000"):
            assert (await client(host).get("/v1/health")).status_code == 421, host


async def test_without_authentication_a_request_without_a_proper_host_is_refused(store: SQLStore):
    async with local_server(store, Auth.none()) as client:
        local = client("127.0.0.1:8000")
        for host in (None, "", "a@127.0.0.1", "127.0.0.1:x", "[::1"):
            request = local.build_request("GET", "/v1/health")
            del request.headers["host"]
            if host is not None:
                request.headers["host"] = host
            refused = await local.send(request)
            assert refused.status_code == 400, host
            assert refused.json()["error"] == "InvalidRequest"


async def test_a_host_the_config_allows_is_served_and_pages_on_it_are_same_origin(store: SQLStore):
    async with local_server(store, Auth.none(hosts=["Inbox.Internal", "[fd00::5]"])) as client:
        assert (await client("inbox.internal:8000").get("/v1/health")).status_code == 200
        assert (await client("[fd00::5]:8000").get("/v1/health")).status_code == 200
        assert (await client("localhost:8000").get("/v1/health")).status_code == 200
        assert (await client("evil.example").get("/v1/health")).status_code == 421
        # A proxy in front of a loopback server may rewrite Host: the page's origin is on an
        # allowed host, and that is enough; a page on another local port still is not.
        behind = client("127.0.0.1:8000", origin="https://inbox.internal")
        assert (await behind.get("/v1/approvals")).status_code == 200
        other = client("127.0.0.1:8000", origin="http://localhost:3000")
        assert (await other.get("/v1/approvals")).status_code == 403


async def test_with_tokens_any_host_is_served_unless_the_config_names_the_hosts(store: SQLStore):
    token = {"Authorization": "Bearer alice-token"}
    async with local_server(store, Auth(tokens=TOKENS)) as client:
        evil = client("evil.example:8000", origin="http://evil.example:8000")
        assert (await evil.get("/v1/approvals")).status_code == 401  # the token protects
        assert (await evil.get("/v1/approvals", headers=token)).status_code == 200
    async with local_server(
        store, Auth(tokens=TOKENS, hosts=frozenset({"inbox.internal"}))
    ) as client:
        assert (await client("evil.example").get("/v1/approvals", headers=token)).status_code == 421
        assert (
            await client("inbox.internal").get("/v1/approvals", headers=token)
        ).status_code == 200
        assert (await client("localhost").get("/v1/approvals", headers=token)).status_code == 200


async def test_without_authentication_a_rebound_dns_name_cannot_open_the_websocket(
    store: SQLStore,
):
    app = create_app(service(store, []), Auth.none(roles=["admin"]))
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="error")
    )
    serving = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(HANG):
            while not server.started:
                await asyncio.sleep(0.01)
            port = server.config.port
            rebound = f"evil.example:{port}"
            assert (await websocket_handshake(port, rebound, f"http://{rebound}")).startswith(
                "HTTP/1.1 403"
            )
            for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
                status = await websocket_handshake(port, host, f"http://{host}")
                assert status.startswith("HTTP/1.1 101"), status
    finally:
        server.should_exit = True
        await serving


async def test_a_refused_websocket_is_closed_with_4000_plus_the_status(store: SQLStore):
    app = create_app(service(store, []), Auth.none())
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> MutableMapping[str, Any]:
        return {"type": "websocket.connect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    for host, origin, code in (
        (b"evil.example:8000", b"http://evil.example:8000", 4421),
        (b"127.0.0.1:8000", b"http://evil.example", 4403),
    ):
        sent.clear()
        scope = {
            "type": "websocket", "path": "/v1/ws", "raw_path": b"/v1/ws", "query_string": b"",
            "headers": [(b"host", host), (b"origin", origin)], "root_path": "", "scheme": "ws",
            "subprotocols": [], "asgi": {"version": "3.0"}, "app": app,
        }  # fmt: skip
        await app(scope, receive, send)
        assert sent == [{"type": "websocket.close", "code": code}]


async def test_odd_stream_ids_and_times_are_answered_not_crashed(api: Any):
    async with api([]) as client:
        huge = await client.get("/v1/events", headers={"Last-Event-ID": "99999999999999999999.r.1"})
        assert huge.status_code == 400
        assert "not an id of this stream" in huge.json()["detail"]
        # A NUL is refused the same way on SQLite and PostgreSQL (one would keep it, one fail).
        for nul in (
            await client.get("/v1/runs/a%00b"),
            await client.get("/v1/approvals?tool=x%00"),
        ):
            assert nul.status_code == 400
            assert nul.json() == {
                "error": "InvalidRequest",
                "detail": "NUL characters are not allowed",
            }


ROUTED = "application/vnd.signoff+json"
"""A content type FastAPI reads as JSON and the decision route's short way leaves to FastAPI."""


async def test_the_short_way_answers_exactly_as_the_route(api: Any):
    async with api(DELETE_THEN_DONE) as client:
        run = (
            await client.post(
                "/v1/threads/t1/runs", params={"wait": 5}, json={"agent": "ops", "input": "go"}
            )
        ).json()
        [pending] = run["pending_approvals"]
        url = f"/v1/approvals/{pending}/decision"
        body = json.dumps({"kind": "approve"}).encode()
        quick = await client.post(url, content=body, headers={"content-type": "application/json"})
        # A `+json` type FastAPI reads as JSON too, and the short way leaves it to the route:
        # the same decision again returns the stored approval.
        routed = await client.post(url, content=body, headers={"content-type": ROUTED})
        assert quick.status_code == routed.status_code == 200
        assert quick.content == routed.content
        assert quick.headers["content-type"] == routed.headers["content-type"]
        for ct in ("application/json", ROUTED):
            answer = await client.post(
                "/v1/approvals/nope/decision", content=body, headers={"content-type": ct}
            )
            assert (answer.status_code, answer.json()["error"]) == (404, "NotFoundError")
        conflict = {"kind": "reject", "reason": "late"}
        refused = [
            await client.post(url, content=json.dumps(conflict), headers={"content-type": ct})
            for ct in ("application/json", ROUTED)
        ]
        assert [r.status_code for r in refused] == [409, 409]
        assert refused[0].content == refused[1].content


async def test_a_database_that_does_not_answer_is_a_503_to_try_again(
    api: Any, store: SQLStore, monkeypatch: pytest.MonkeyPatch
):
    """Not a 400 (the request was fine) nor a 500: a 503 with Retry-After, which a client or a
    load balancer retries elsewhere; what the driver said stays in the server's log."""

    async def unanswered(**_: Any) -> None:
        raise StoreUnavailableError("the database did not answer: 10.0.0.5:5432 timed out")

    async with api([]) as client:
        monkeypatch.setattr(store, "list_approvals", unanswered)
        answer = await client.get("/v1/approvals")
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "1"
    assert answer.json() == {
        "error": "StoreUnavailableError",
        "detail": "the database cannot be reached now: try again",
    }


async def test_over_the_websocket_too_an_unanswering_database_is_said_without_its_address(
    store: SQLStore, monkeypatch: pytest.MonkeyPatch
):
    import websockets
    from websockets.typing import Subprotocol

    async def unanswered(*_: Any, **__: Any) -> None:
        raise StoreUnavailableError("the database did not answer: 10.0.0.5:5432 timed out")

    monkeypatch.setattr(Service, "decide", unanswered)
    offered = [Subprotocol("signoff.bearer"), Subprotocol("alice-token")]
    decide = {"type": "decide", "request_id": 7, "id": "a1", "decision": {"kind": "approve"}}
    async with (
        live_server(store, []) as port,
        asyncio.timeout(HANG),
        websockets.connect(f"ws://127.0.0.1:{port}/v1/ws", subprotocols=offered) as socket,
    ):
        assert json.loads(await socket.recv())["type"] == "hello"
        await socket.send(json.dumps(decide))
        answer = json.loads(await socket.recv())
    assert answer == {
        "type": "error",
        "request_id": 7,
        "error": "StoreUnavailableError",
        "detail": "the database cannot be reached now: try again",
    }
