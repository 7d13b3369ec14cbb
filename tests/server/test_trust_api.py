"""The API against what an attacker or a careless client sends: bodies too big or too deep,
strangers' bodies, arguments nested far past the limits; and the grants an operator must see
and revoke. In-process (httpx over ASGI) and, for the WebSocket, a real uvicorn server."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from signoff import Policy
from signoff.agent import Agent, ModelTurn, tool
from signoff.gate import CheckContext, Gate
from signoff.limits import MAX_DEPTH, PREVIEW_CHARS, TOO_DEEP
from signoff.server import Auth, Principal, Service, create_app
from signoff.server.intake import BODY_DEPTH, BodyLimits
from signoff.store import SQLStore
from signoff.testing import ScriptedModel
from signoff.types import Approval, ToolCall
from tests.deadline import HANG

POLICY = Policy.from_dict(
    {"rules": [{"ask": "charge", "approvers": ["ops"], "forbid_self_approval": True}]}
)
TOKENS = {
    "bob-token": Principal(name="bob", roles=frozenset({"ops"})),
    "carol-token": Principal(name="carol"),
    "olga-token": Principal(name="olga", roles=frozenset({"ops", "admin"})),
    "dave-token": Principal(name="dave", roles=frozenset({"ops"})),
}
charged: list[dict[str, Any]] = []


@tool
def charge(amount: int, memo: str = "") -> str:
    """Charge the card."""
    charged.append({"amount": amount, "memo": memo})
    return "charged"


def nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


@contextlib.asynccontextmanager
async def client(
    store: SQLStore,
    *,
    token: str | None = "bob-token",
    turns: list[Any] = (),  # type: ignore[assignment]
    limits: BodyLimits | None = None,
) -> AsyncIterator[httpx.AsyncClient]:
    agent = Agent(name="pay", model=ScriptedModel(list(turns)), tools=[charge])
    service = Service(store=store, gate=Gate(POLICY, store), agents=[agent], poll_interval=0.05)
    app = create_app(service, Auth(tokens=TOKENS), limits=limits)
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://signoff", headers=headers
        ) as http:
            yield http


async def hold(store: SQLStore, call: ToolCall, *, by: str = "carol") -> str:
    [outcome] = await Gate(POLICY, store).check([call], CheckContext(requested_by=by))
    assert outcome.approval is not None
    return outcome.approval.id


async def test_a_call_nested_300_deep_stored_by_an_older_signoff_breaks_no_reader(
    store: SQLStore,
):
    # Written straight to the store, as a signoff without limits did.
    legacy = Approval(
        id="0" * 32, call=ToolCall(id="c", name="charge", args=nested(300)), batch_id="b",
        rule="rules[0]", reason="asked", requested_at=datetime.now(UTC), requested_by="carol",
        approvers=("ops",),
    )  # fmt: skip
    await store.create_approvals([legacy])
    async with client(store) as http:
        listed = await http.get("/v1/approvals")
        shown = await http.get(f"/v1/approvals/{legacy.id}")
        decided = await http.post(f"/v1/approvals/{legacy.id}/decision", json={"kind": "reject"})
    for response in (listed, shown, decided):
        assert response.status_code == 200, response.text
    args = shown.json()["args"]
    for _ in range(MAX_DEPTH - 1):
        args = args["a"]
    assert args == TOO_DEEP
    assert decided.json()["status"] == "rejected"


async def test_a_model_s_call_nested_far_too_deep_is_blocked_and_its_run_still_reads(
    store: SQLStore,
):
    from signoff.testing import call

    turns = [ModelTurn(tool_calls=(call("charge", amount=nested(100_000)),)), ModelTurn(text="ok")]
    async with client(store, turns=turns) as http:
        started = await http.post(
            "/v1/threads/t/runs", params={"wait": 30}, json={"agent": "pay", "input": "go"}
        )
        assert started.status_code == 201, started.text
        run = (await http.get(f"/v1/runs/{started.json()['id']}")).json()
        assert (await http.get("/v1/approvals")).json()["items"] == []
    assert run["status"] == "completed"
    said, result = run["messages"][1], run["messages"][2]
    reason = f"the arguments are nested more than {MAX_DEPTH} levels deep"
    assert said["tool_calls"][0]["args"] == {
        "signoff:refused": f"{reason}; signoff takes at most 64"
    }
    assert json.loads(result["content"])["status"] == "blocked"
    assert reason in result["content"]
    assert charged == []


async def test_bodies_nested_past_the_limit_are_refused_before_anything_reads_them(
    store: SQLStore,
):
    approval_id = await hold(store, ToolCall(id="c", name="charge", args={"amount": 5}))
    async with client(store) as http:
        cases = [
            await http.post(f"/v1/approvals/{approval_id}/decision",
                            json={"kind": "edit", "args": nested(800)}),
            await http.post("/v1/policy/explain", json={"tool": "charge", "args": nested(800)}),
            await http.put("/v1/policy", json={"document": {"rules": [
                {"ask": "x", "when": {"a": {"eq": nested(600)}}}]}}),
            await http.post("/v1/approvals/decisions",
                            content=b'{"decisions": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        ]  # fmt: skip
        # Within the body's limit but past the arguments': the gate refuses the edit itself.
        deep_edit = await http.post(
            f"/v1/approvals/{approval_id}/decision",
            json={"kind": "edit", "args": nested(MAX_DEPTH + 2)},
        )
        still = (await http.get(f"/v1/approvals/{approval_id}")).json()
    for response in cases:
        assert response.status_code == 400, response.text
        assert response.json() == {
            "error": "InvalidRequest",
            "detail": f"the body is nested more than {BODY_DEPTH} levels deep; it was not read",
        }
    assert deep_edit.status_code == 422
    assert f"nested more than {MAX_DEPTH} levels" in deep_edit.json()["detail"]
    assert still["status"] == "pending"
    assert [e.action for e in await store.audit_log()] == ["verdict"]  # nothing written


async def test_a_stranger_s_body_is_never_read_and_a_big_one_is_refused_unread(store: SQLStore):
    agent = Agent(name="pay", model=ScriptedModel([]), tools=[charge])
    service = Service(store=store, gate=Gate(POLICY, store), agents=[agent])
    app = create_app(service, Auth(tokens=TOKENS), limits=BodyLimits(max_bytes=1000))
    read: list[str] = []

    async def answer(headers: list[tuple[bytes, bytes]]) -> tuple[int, dict[str, Any]]:
        async def receive() -> MutableMapping[str, Any]:
            read.append("body")
            return {"type": "http.request", "body": b"{}" * 600, "more_body": False}

        sent: list[MutableMapping[str, Any]] = []

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(message)

        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
            "scheme": "http", "path": "/v1/approvals/decisions", "raw_path": b"",
            "query_string": b"", "root_path": "", "server": ("signoff", 80),
            "client": ("127.0.0.1", 1), "headers": headers,
        }  # fmt: skip
        await app(scope, receive, send)
        return sent[0]["status"], json.loads(sent[1]["body"])

    huge = [(b"content-type", b"application/json"), (b"content-length", b"200000000")]
    status, body = await answer(huge)
    assert (status, body["error"], read) == (401, "Unauthorized", [])
    status, body = await answer([*huge, (b"authorization", b"Bearer guess")])
    assert (status, read) == (401, [])
    status, body = await answer([*huge, (b"authorization", b"Bearer bob-token")])
    assert (status, body, read) == (
        413, {"error": "ContentTooLarge", "detail": "the body is bigger than 1,000 bytes"}, [],
    )  # fmt: skip
    # Without a length, it is read up to the limit only.
    status, body = await answer([(b"authorization", b"Bearer bob-token")])
    assert (status, body["error"], read) == (413, "ContentTooLarge", ["body"])


async def test_a_listing_cuts_long_arguments_and_the_approval_s_own_page_has_them_all(
    store: SQLStore,
):
    memo = "x" * (PREVIEW_CHARS * 5)
    approval_id = await hold(
        store, ToolCall(id="c", name="charge", args={"amount": 1, "memo": memo})
    )
    async with client(store) as http:
        [item] = (await http.get("/v1/approvals")).json()["items"]
        whole = (await http.get(f"/v1/approvals/{approval_id}")).json()
    assert item["truncated"] is True
    assert item["args"]["memo"] == memo[:PREVIEW_CHARS] + "…"
    assert whole["args"]["memo"] == memo and "truncated" not in whole


async def test_an_edited_approval_shows_the_arguments_requested_and_those_decided(
    store: SQLStore,
):
    approval_id = await hold(store, ToolCall(id="c", name="charge", args={"amount": 500}))
    async with client(store) as http:
        decided = await http.post(
            f"/v1/approvals/{approval_id}/decision", json={"kind": "edit", "args": {"amount": 50}}
        )
        shown = (await http.get(f"/v1/approvals/{approval_id}")).json()
        audit = (await http.get("/v1/audit")).json()["items"]
    assert decided.status_code == 200, decided.text
    for approval in (decided.json(), shown):
        assert approval["args"] == {"amount": 50}
        assert approval["requested_args"] == {"amount": 500}
        assert approval["edited"] is True
    assert audit[-1]["data"]["args"] == {"amount": 500}
    assert audit[-1]["data"]["decision"]["args"] == {"amount": 50}


async def test_grants_are_listed_explained_and_revoked_by_their_granter_or_an_admin(
    store: SQLStore,
):
    first = await hold(store, ToolCall(id="c", name="charge", args={"amount": 5}))
    async with client(store) as bob:
        # Widened to any arguments, in so many words: carol's next charges are of other amounts.
        always = {"kind": "approve", "always": {"scope": "global", "with_args": False}}
        assert (await bob.post(f"/v1/approvals/{first}/decision", json=always)).status_code == 200
        [grant] = (await bob.get("/v1/grants")).json()["items"]
        assert {k: grant[k] for k in ("tool", "scope", "with_args", "granted_by", "status")} == {
            "tool": "charge", "scope": "global", "with_args": False, "granted_by": "bob",
            "status": "active",
        }  # fmt: skip
        assert (grant["rule"], grant["roles"], grant["uses"]) == ("rules[0]", ["ops"], 0)
        # explain says when the grant would apply — and when it would not.
        carol = {"tool": "charge", "args": {"amount": 9}, "context": {"requested_by": "carol"}}
        explained = (await bob.post("/v1/policy/explain", json=carol)).json()
        assert (explained["kind"], explained["grant"]["id"]) == ("allow", grant["id"])
        own = {**carol, "context": {"requested_by": "bob"}}
        refused = (await bob.post("/v1/policy/explain", json=own)).json()
        assert (refused["kind"], refused["grant"]) == ("ask", None)
        assert refused["grants_passed_over"] == [
            {"id": grant["id"], "granted_by": "bob", "scope": "global",
             "why": "'bob' asked for the call and the rule forbids self-approval"},
        ]  # fmt: skip
    [through] = await Gate(POLICY, store).check(
        [ToolCall(id="d", name="charge", args={"amount": 7})], CheckContext(requested_by="carol")
    )
    assert through.kind == "run"  # under the grant
    async with client(store, token="dave-token") as dave:
        [used] = (await dave.get("/v1/grants")).json()["items"]
        assert used["uses"] == 1 and used["last_used_at"] is not None
        forbidden = await dave.delete(f"/v1/grants/{grant['id']}")
        assert forbidden.status_code == 403
        assert "needs the admin role" in forbidden.json()["detail"]
    async with client(store, token="olga-token") as olga:
        revoked = await olga.delete(f"/v1/grants/{grant['id']}")
        assert revoked.status_code == 200
        assert (revoked.json()["status"], revoked.json()["revoked_by"]) == ("revoked", "olga")
        assert (await olga.get("/v1/grants")).json()["items"] == []
        assert [g["id"] for g in (await olga.get("/v1/grants?revoked=true")).json()["items"]] == [
            grant["id"]
        ]
        audit = (await olga.get("/v1/audit")).json()["items"]
        assert (audit[-1]["action"], audit[-1]["actor"], audit[-1]["subject"]) == (
            "revoke", "olga", grant["id"],
        )  # fmt: skip
        assert (await olga.delete("/v1/grants/nope")).status_code == 404
    held = await Gate(POLICY, store).check(
        [ToolCall(id="e", name="charge", args={"amount": 1})], CheckContext(requested_by="carol")
    )
    assert held[0].kind == "hold"


@contextlib.asynccontextmanager
async def served(
    store: SQLStore, tokens: dict[str, Principal], token: str
) -> AsyncIterator[tuple[Service, httpx.AsyncClient]]:
    """A server with these tokens (a config as it stands after an edit), and a client of it."""
    service = Service(store=store, gate=Gate(POLICY, store), agents=[], poll_interval=0.05)
    app = create_app(service, Auth(tokens=tokens))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://signoff",
            headers={"Authorization": f"Bearer {token}"},
        ) as http,
    ):
        yield service, http


async def test_a_grant_is_judged_by_its_granter_s_roles_in_the_server_s_config_now(
    store: SQLStore,
):
    first = await hold(store, ToolCall(id="c", name="charge", args={"amount": 5}))
    async with served(store, TOKENS, "bob-token") as (_, bob):
        always = {"kind": "approve", "always": {"scope": "global", "with_args": False}}
        assert (await bob.post(f"/v1/approvals/{first}/decision", json=always)).status_code == 200
    carol = CheckContext(requested_by="carol")
    without_bob = {t: p for t, p in TOKENS.items() if p.name != "bob"}
    demoted = without_bob | {"bob-token": Principal(name="bob", roles=frozenset({"viewer"}))}
    gone = "its granter 'bob' is no longer a known principal"
    for tokens, amount, why, passed_over in (
        (without_bob, 77, gone, gone),
        (
            demoted,
            78,
            "its granter 'bob' no longer has any of the roles ['ops'] its rule needs",
            "'bob' has none of the roles ['ops'] the rule needs",
        ),
    ):
        async with served(store, tokens, "olga-token") as (service, olga):
            call = ToolCall(id=f"c{amount}", name="charge", args={"amount": amount})
            [outcome] = await service.gate.check([call], carol)
            assert outcome.kind == "hold"
            [grant] = (await olga.get("/v1/grants")).json()["items"]
            assert (grant["status"], grant["why"], grant["uses"]) == ("inactive", why, 0)
            asked = {"tool": "charge", "args": call.args, "context": {"requested_by": "carol"}}
            explained = (await olga.post("/v1/policy/explain", json=asked)).json()
            assert (explained["kind"], explained["grant"]) == ("ask", None)
            assert [g["why"] for g in explained["grants_passed_over"]] == [passed_over]
    async with served(store, TOKENS, "olga-token") as (service, olga):
        [outcome] = await service.gate.check(
            [ToolCall(id="c79", name="charge", args={"amount": 79})], carol
        )
        assert outcome.kind == "run"  # bob holds ops again: his grant stands
        [grant] = (await olga.get("/v1/grants")).json()["items"]
        assert (grant["status"], grant["why"], grant["uses"]) == ("active", None, 1)


async def test_approve_always_through_the_api_covers_the_same_arguments_unless_told_otherwise(
    store: SQLStore,
):
    gate = Gate(POLICY, store)
    carol = CheckContext(requested_by="carol", thread_id="t1")
    nginx = ToolCall(id="c1", name="charge", args={"amount": 5, "memo": "nginx-123"})
    prod = ToolCall(id="c2", name="charge", args={"amount": 5, "memo": "prod-db-0"})
    [first] = await gate.check([nginx], carol)
    assert first.approval is not None
    async with client(store) as bob:
        always = {"kind": "approve", "always": {"scope": "thread"}}
        decided = await bob.post(f"/v1/approvals/{first.approval.id}/decision", json=always)
        assert decided.json()["decision"]["always"] == {"scope": "thread", "with_args": True}
        [grant] = (await bob.get("/v1/grants")).json()["items"]
    assert (grant["with_args"], grant["args"]) == (True, nginx.args)
    assert [o.kind for o in await gate.check([prod, nginx], carol)] == ["hold", "run"]


async def test_a_websocket_frame_nested_100_000_deep_gets_an_error_and_the_socket_goes_on(
    store: SQLStore,
):
    import websockets

    from tests.server.test_api import live_server

    approval_id = await hold(store, ToolCall(id="c", name="charge", args={"amount": 5}))
    async with live_server(store, []) as port, asyncio.timeout(HANG):
        headers = {"Authorization": "Bearer alice-token"}
        async with websockets.connect(
            f"ws://127.0.0.1:{port}/v1/ws", additional_headers=headers
        ) as socket:
            assert json.loads(await socket.recv())["type"] == "hello"
            await socket.send("[" * 100_000 + "]" * 100_000)
            error = json.loads(await socket.recv())
            assert (error["type"], error["error"]) == ("error", "InvalidRequest")
            assert f"nested more than {BODY_DEPTH} levels" in error["detail"]
            decide = {"type": "decide", "id": approval_id, "decision": {"kind": "reject"}}
            await socket.send(json.dumps(decide))
            while (answer := json.loads(await socket.recv()))["type"] == "event":
                pass
    assert (answer["type"], answer["approval"]["status"]) == ("decided", "rejected")


@pytest.fixture(autouse=True)
def clear() -> None:
    charged.clear()


async def test_an_approval_id_with_a_nul_is_not_found_on_every_channel(store: SQLStore):
    async with client(store) as http:
        batch = await http.post(
            "/v1/approvals/decisions", json={"decisions": {"a\x00b": {"kind": "approve"}}}
        )
    assert batch.status_code == 404, batch.text
    assert batch.json()["detail"] == "no approval with id 'a\\x00b'"


async def test_a_listing_leaves_out_arguments_too_many_to_list(store: SQLStore):
    many = {"rows": [{"n": i} for i in range(20_000)]}
    approval_id = await hold(store, ToolCall(id="c", name="charge", args=many))
    async with client(store) as http:
        [item] = (await http.get("/v1/approvals")).json()["items"]
        whole = (await http.get(f"/v1/approvals/{approval_id}")).json()
    assert item["truncated"] is True
    assert item["args"].startswith("…(") and item["args"].endswith(
        "bytes of arguments, not listed)"
    )
    assert whole["args"] == many


async def test_a_websocket_message_past_the_configured_body_limit_closes_its_connection(
    tmp_path: Path,
):
    import websockets

    from tests.processes import signoff_server

    config = tmp_path / "signoff.yaml"
    config.write_text(
        f"database: sqlite:///{tmp_path / 'signoff.db'}\n"
        "auth: {tokens: [{principal: bob, token: bob-token}]}\n"
        "limits: {body: 1000}\n"
        "rules: []\n"
    )
    serving = signoff_server("serve", "--config", str(config), "--port", "0")
    async with serving as (url, _), asyncio.timeout(HANG):
        headers = {"Authorization": "Bearer bob-token"}
        socket_url = url.replace("http://", "ws://") + "/v1/ws"
        async with websockets.connect(socket_url, additional_headers=headers) as socket:
            assert json.loads(await socket.recv())["type"] == "hello"
            await socket.send(json.dumps({"type": "decide", "pad": "x" * 2000}))
            with pytest.raises(websockets.exceptions.ConnectionClosed) as closed:
                await socket.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
