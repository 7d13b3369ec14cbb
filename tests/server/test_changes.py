"""``GET /v1/approvals/changes`` in-process, on both stores: every change to an approval — held,
edited, voted on, handed on, decided — as an event naming the approval, its version and its
status, never what changed; resumable after its last id."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.types import ASGIApp, Message

from signoff import Policy, ToolCall
from signoff.errors import StoreUnavailableError
from signoff.gate import CheckContext, Gate
from signoff.server import Auth, Principal, Service, create_app
from signoff.store import SQLStore
from tests.deadline import HANG

POLICY = Policy.from_dict(
    {
        "rules": [
            {"ask": "pay", "approvals": {"count": 2, "distinct": True}},
            {"ask": "restart", "approvers": ["ops"]},
        ]
    }
)
TOKENS = {name: Principal(name=name, roles=frozenset({"ops"})) for name in ("olga", "bob", "carol")}


class LiveASGI(httpx.AsyncBaseTransport):
    """`httpx.ASGITransport`, but the body is handed over as the app sends it: the former answers
    once the app has finished, which a live stream never does. Closing the response disconnects,
    and the app must end then."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        started: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        chunks: asyncio.Queue[bytes | None] = asyncio.Queue()
        gone = asyncio.Event()
        read = False

        async def receive() -> Message:
            nonlocal read
            if not read:
                read = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                started.set_result(message)
            elif message["type"] == "http.response.body":
                chunks.put_nowait(message.get("body", b""))
                if not message.get("more_body", False):
                    chunks.put_nowait(None)

        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": request.method, "scheme": "http", "root_path": "",
            "path": request.url.path, "raw_path": request.url.raw_path.split(b"?")[0],
            "query_string": request.url.query, "server": ("signoff", 80),
            "client": ("127.0.0.1", 123),
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
        }  # fmt: skip
        app = asyncio.create_task(run_app(self.app, scope, receive, send))
        either: list[asyncio.Future[Any]] = [app, started]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not started.done():
            app.result()  # what the app raised
            raise AssertionError("the app ended without answering")
        start = started.result()
        return httpx.Response(
            start["status"], headers=start.get("headers", []), stream=_Body(chunks, gone, app)
        )


async def run_app(app: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
    """`app` on one request, as a coroutine (what a task runs)."""
    await app(scope, receive, send)


class _Body(httpx.AsyncByteStream):
    def __init__(
        self, chunks: asyncio.Queue[bytes | None], gone: asyncio.Event, app: asyncio.Task[None]
    ) -> None:
        self.chunks, self.gone, self.app = chunks, gone, app

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while (chunk := await self.chunks.get()) is not None:
            yield chunk

    async def aclose(self) -> None:
        self.gone.set()
        async with asyncio.timeout(HANG):  # a stream that outlives its reader is a leak
            await self.app


class People:
    """One in-process app over a service, and a client of it for each person (their name is
    their token)."""

    def __init__(self, service: Service) -> None:
        self.app = create_app(service, Auth(tokens=TOKENS))
        self.clients: dict[str, httpx.AsyncClient] = {}

    def __call__(self, name: str) -> httpx.AsyncClient:
        if name not in self.clients:
            self.clients[name] = httpx.AsyncClient(
                transport=LiveASGI(self.app),
                base_url="http://signoff",
                headers={"Authorization": f"Bearer {name}"},
            )
        return self.clients[name]


@contextlib.asynccontextmanager
async def people(service: Service) -> AsyncIterator[People]:
    found = People(service)
    async with found.app.router.lifespan_context(found.app):
        try:
            yield found
        finally:
            for client in found.clients.values():
                await client.aclose()


class Events:
    """The events of a server-sent event stream, as they arrive: (id, type, data)."""

    def __init__(self, response: httpx.Response) -> None:
        self.lines = response.aiter_lines()
        self.text: list[str] = []  # every line read, to check what the stream never says

    async def next(self) -> tuple[str, str, dict[str, Any]]:
        event: dict[str, str] = {}
        async with asyncio.timeout(HANG):
            async for line in self.lines:
                self.text.append(line)
                if not line and "data" in event:
                    return event["id"], event["event"], json.loads(event["data"])
                field, _, value = line.partition(": ")
                if line and not line.startswith(":"):
                    event[field] = value
        raise AssertionError("the stream ended")


@contextlib.asynccontextmanager
async def changes(
    client: httpx.AsyncClient, last_event_id: str | None = None
) -> AsyncIterator[Events]:
    headers = {} if last_event_id is None else {"Last-Event-ID": last_event_id}
    async with client.stream("GET", "/v1/approvals/changes", headers=headers) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        yield Events(response)


async def held(service: Service, call_id: str, tool: str, **args: Any) -> str:
    context = CheckContext(thread_id="t", requested_by="agent-owner", origin="langgraph")
    [outcome] = await service.gate.check([ToolCall(id=call_id, name=tool, args=args)], context)
    assert outcome.approval is not None
    return outcome.approval.id


async def test_every_change_to_an_approval_is_an_event_with_its_version_and_status_only(
    store: SQLStore,
):
    service = Service(store=store, gate=Gate(POLICY, store), agents=[])
    async with people(service) as person:
        bob, olga, carol = person("bob"), person("olga"), person("carol")
        async with changes(bob) as events:
            start, kind, data = await events.next()
            assert (kind, data) == ("open", {"after": await store.audit_length()})
            assert start == str(data["after"])

            approval_id = await held(service, "c1", "pay", amount=100, to="bob")
            seen = [await events.next()]
            edit = {"kind": "edit", "args": {"amount": 999999, "to": "mallory"}, "version": 1}
            assert (await olga.post(f"/v1/approvals/{approval_id}/decision", json=edit)).is_success
            seen.append(await events.next())
            assign = {"to": "bob", "note": "look at the amount"}
            assert (await carol.post(f"/v1/approvals/{approval_id}/assign", json=assign)).is_success
            seen.append(await events.next())
            approve = {"kind": "approve", "version": 3}
            done = await bob.post(f"/v1/approvals/{approval_id}/decision", json=approve)
            assert done.json()["status"] == "edited", done.text
            seen.append(await events.next())

        now = (await bob.get(f"/v1/approvals/{approval_id}")).json()
        assert [(kind, data) for _, kind, data in seen] == [
            ("approval", {"id": approval_id, "version": 1, "status": "pending"}),
            ("approval", {"id": approval_id, "version": 2, "status": "pending"}),
            ("approval", {"id": approval_id, "version": 3, "status": "pending"}),
            ("approval", {"id": approval_id, "version": now["version"], "status": "edited"}),
        ]
        # Ids are the audit log's entry numbers, in its order.
        ids = [int(event_id) for event_id, _, _ in seen]
        assert int(start) < ids[0] < ids[1] < ids[2] < ids[3] <= await store.audit_length()
        # What changed is for the approval's own page to show: the stream names no argument.
        said = "\n".join(events.text)
        assert "999999" not in said and "mallory" not in said and "look at the amount" not in said


async def test_a_stream_resumed_after_its_last_id_gets_what_it_missed_once_each(store: SQLStore):
    service = Service(store=store, gate=Gate(POLICY, store), agents=[])
    async with people(service) as person:
        bob, olga = person("bob"), person("olga")
        async with changes(bob) as events:
            last, _, _ = await events.next()  # open: where it starts
        # While nobody listens: two calls held, one of them voted on.
        first = await held(service, "c1", "pay", amount=1)
        second = await held(service, "c2", "restart", name="web")
        vote = {"kind": "approve", "version": 1}
        assert (await olga.post(f"/v1/approvals/{first}/decision", json=vote)).is_success

        async with changes(bob, last_event_id=last) as events:
            _, kind, data = await events.next()
            assert (kind, data["after"]) == ("open", int(last))
            missed = [await events.next(), await events.next()]
            # The first approval once, as it stands (voted on), after the second's: by the
            # newest entry that changed each.
            assert [data for _, _, data in missed] == [
                {"id": second, "version": 1, "status": "pending"},
                {"id": first, "version": 2, "status": "pending"},
            ]
            resumed_at = missed[-1][0]
            assert (await olga.post(f"/v1/approvals/{second}/decision", json=vote)).is_success
            after = await events.next()
            assert after[2] == {"id": second, "version": 2, "status": "approved"}

        # From the last id it got: only what came after it.
        async with changes(bob, last_event_id=resumed_at) as events:
            await events.next()  # open
            assert (await events.next())[2]["id"] == second


async def test_a_database_that_stops_answering_pauses_the_stream_and_loses_nothing(
    store: SQLStore, monkeypatch: pytest.MonkeyPatch
):
    service = Service(store=store, gate=Gate(POLICY, store), agents=[])
    refused = asyncio.Event()
    read = store.audit_changes

    async def unanswered(**_: Any) -> Any:
        refused.set()
        raise StoreUnavailableError("the database did not answer: 10.0.0.5:5432 timed out")

    async with people(service) as person, changes(person("bob")) as events:
        await events.next()  # open
        monkeypatch.setattr(store, "audit_changes", unanswered)
        approval_id = await held(service, "c1", "pay", amount=1)  # wakes the stream: refused
        async with asyncio.timeout(HANG):
            await refused.wait()
        monkeypatch.setattr(store, "audit_changes", read)
        _, kind, data = await events.next()
    assert (kind, data) == ("approval", {"id": approval_id, "version": 1, "status": "pending"})


async def test_an_id_past_the_log_s_end_starts_at_its_end_and_a_bad_one_is_refused(
    store: SQLStore,
):
    service = Service(store=store, gate=Gate(POLICY, store), agents=[])
    await held(service, "c1", "pay", amount=1)
    async with people(service) as person:
        bob = person("bob")
        async with changes(bob, last_event_id="999999") as events:
            _, kind, data = await events.next()
            assert (kind, data) == ("open", {"after": await store.audit_length()})
        for bad in ("soon", "-1", str(2**63)):
            refused = await bob.get("/v1/approvals/changes", headers={"Last-Event-ID": bad})
            assert refused.status_code == 422, (bad, refused.text)
        anonymous = await bob.get("/v1/approvals/changes", headers={"Authorization": ""})
        assert anonymous.status_code == 401
