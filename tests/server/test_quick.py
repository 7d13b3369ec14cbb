"""The decision route's short way (`signoff.server.quick`): it takes exactly the well-formed
decisions, answers as the route does, and leaves everything else to FastAPI."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import pytest
from fastapi import FastAPI

from signoff.server import Auth, Principal
from signoff.server.quick import QuickDecision
from signoff.server.shapes import DecisionBody

ALICE = Principal(name="alice", roles=frozenset({"ops"}))


async def drive(
    headers: dict[str, str], body: bytes, *, path: str = "/v1/approvals/a1/decision"
) -> tuple[list[tuple[str, str, DecisionBody]], list[bytes], int]:
    """What `take` was given and what reached the app behind, for one request."""
    taken: list[tuple[str, str, DecisionBody]] = []
    behind: list[bytes] = []

    async def take(
        who: Principal, approval_id: str, decision: DecisionBody, if_match: str | None
    ) -> dict[str, Any]:
        taken.append((who.name, approval_id, decision))
        return {"id": approval_id}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        behind.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    quick = QuickDecision(app, auth=Auth(tokens={"t": ALICE}), take=take)
    outer = FastAPI()  # the app whose handlers answer errors
    scope = {
        "type": "http", "method": "POST", "path": path, "app": outer, "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }  # fmt: skip
    statuses: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    await quick(scope, receive, send)
    return taken, behind, statuses[0]


JSON = {"content-type": "application/json", "authorization": "Bearer t"}


async def test_a_well_formed_decision_is_taken_without_the_app():
    taken, behind, status = await drive(JSON, b'{"kind": "reject", "reason": "no"}')
    assert [(who, i, d.kind, d.reason) for who, i, d in taken] == [("alice", "a1", "reject", "no")]
    assert (behind, status) == ([], 200)


@pytest.mark.parametrize(
    ("headers", "body", "path"),
    [
        (JSON, b'{"kind": "maybe"}', "/v1/approvals/a1/decision"),  # the model refuses it
        (JSON, b'{"kind": ', "/v1/approvals/a1/decision"),  # not JSON
        (JSON, b"", "/v1/approvals/a1/decision"),
        (
            {**JSON, "content-type": "text/plain"},
            b'{"kind": "approve"}',
            "/v1/approvals/a1/decision",
        ),
        ({"authorization": "Bearer t"}, b'{"kind": "approve"}', "/v1/approvals/a1/decision"),
        (JSON, b'{"kind": "approve"}', "/v1/approvals/decisions"),
        (JSON, b'{"kind": "approve"}', "/v1/approvals/a/b/decision"),
    ],
)
async def test_anything_else_goes_to_the_app_with_its_body(
    headers: dict[str, str], body: bytes, path: str
):
    taken, behind, status = await drive(headers, body, path=path)
    assert (taken, behind, status) == ([], [body], 299)


async def test_an_error_is_answered_by_the_apps_own_handlers():
    _, _, status = await drive({**JSON, "authorization": "Bearer nobody"}, b'{"kind": "approve"}')
    assert status == 401
