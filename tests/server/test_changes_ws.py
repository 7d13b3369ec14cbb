"""The WebSocket's push of every change to an approval (as ``GET /v1/approvals/changes`` finds
them), in-process on both stores: each with the approval as it stands, redacted."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.types import ASGIApp, Message

from signoff.gate import Gate
from signoff.redaction import MASK, Redaction
from signoff.server import Service
from signoff.store import SQLStore
from tests.deadline import HANG
from tests.server.test_changes import POLICY, held, people, run_app


async def test_the_websocket_pushes_each_changed_approval_as_it_stands_redacted(store: SQLStore):
    service = Service(
        store=store, gate=Gate(POLICY, store), agents=[], redaction=Redaction(["password"])
    )
    async with people(service) as person:
        olga = person("olga")
        async with socket(person.app, "bob") as receive:
            hello = await receive()
            assert (hello["type"], hello["pending"]) == ("hello", [])
            approval_id = await held(service, "c1", "pay", amount=1, password="hunter2")
            pushed = await next_of(receive, "approval")
            edit = {"kind": "edit", "args": {"amount": 2, "password": "hunter2"}, "version": 1}
            assert (await olga.post(f"/v1/approvals/{approval_id}/decision", json=edit)).is_success
            edited = await next_of(receive, "approval")
    assert (pushed["id"], pushed["version"], pushed["status"]) == (approval_id, 1, "pending")
    assert (edited["version"], edited["args"], edited["edited"]) == (
        2,
        {"amount": 2, "password": MASK},
        True,
    )
    assert [v["by"] for v in edited["votes"]] == ["olga"]
    assert "hunter2" not in json.dumps([pushed, edited])


Receive = Callable[[], Awaitable[dict[str, Any]]]


@contextlib.asynccontextmanager
async def socket(app: ASGIApp, token: str) -> AsyncIterator[Receive]:
    """The app's WebSocket, in process, with `token`: a function that returns each JSON message
    it sends, in order."""
    inbound: asyncio.Queue[Message] = asyncio.Queue()
    outbound: asyncio.Queue[Message] = asyncio.Queue()
    inbound.put_nowait({"type": "websocket.connect"})
    scope = {
        "type": "websocket", "path": "/v1/ws", "raw_path": b"/v1/ws", "query_string": b"",
        "headers": [(b"host", b"signoff"), (b"authorization", f"Bearer {token}".encode())],
        "root_path": "", "scheme": "ws", "subprotocols": [], "asgi": {"version": "3.0"},
        "client": ("127.0.0.1", 123), "server": ("signoff", 80),
    }  # fmt: skip
    running = asyncio.create_task(run_app(app, scope, inbound.get, outbound.put))

    async def receive() -> dict[str, Any]:
        async with asyncio.timeout(HANG):
            while True:
                message = await outbound.get()
                if message["type"] == "websocket.send":
                    return dict(json.loads(message["text"]))
                assert message["type"] == "websocket.accept", message

    try:
        yield receive
    finally:
        inbound.put_nowait({"type": "websocket.disconnect", "code": 1000})
        async with asyncio.timeout(HANG):
            await running


async def next_of(receive: Receive, kind: str) -> dict[str, Any]:
    """The approval of the next message of `kind` (run events are pushed all along)."""
    while True:
        message = await receive()
        if message["type"] == kind:
            approval: dict[str, Any] = message["approval"]
            return approval
