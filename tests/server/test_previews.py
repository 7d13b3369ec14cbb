"""Previews of signoff's own tools through the API: computed when a call is held, stored with
its approval (SQLite and PostgreSQL), returned with it, recomputed for edited arguments — and a
preview that fails or is too slow says so without holding up the decision; the values the
server's ``redact:`` hides never show in one, wherever it was computed."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from signoff import Policy, ToolCall
from signoff.agent import Agent, ModelTurn, tool
from signoff.gate import CheckContext, Gate
from signoff.gate.preview import Previews
from signoff.redaction import MASK, Redaction
from signoff.server import Auth, Principal, Service, create_app
from signoff.store import SQLStore
from signoff.testing import ScriptedModel, call
from tests.server.test_api import until

POLICY = Policy.from_dict(
    {
        "rules": [
            {"ask": ["write_file", "delete_pods", "resize"]},
            {"deny": "write_file", "when": {"path": {"glob": "/etc/*"}}},
        ]
    }
)
FILES = {"app.conf": "port = 80\nworkers = 2\n"}
written: dict[str, str] = {}


def diff_of(path: str, content: str) -> str:
    """The unified diff a write of `content` to `path` would make."""
    before = FILES.get(path, "").splitlines(keepends=True)
    after = content.splitlines(keepends=True)
    return "".join(difflib.unified_diff(before, after, f"a/{path}", f"b/{path}"))


@tool(preview=diff_of)
def write_file(path: str, content: str) -> str:
    """Write a file."""
    written[path] = content
    return f"wrote {path}"


def pods_hit(selector: str) -> list[dict[str, Any]]:
    if selector == "broken":
        raise ValueError("the cluster cannot be reached")
    return [{"pod": f"{selector}-{i}", "namespace": "default"} for i in range(2)]


@tool(preview=pods_hit)
def delete_pods(selector: str) -> str:
    """Delete the pods a label selector picks."""
    return f"deleted pods of {selector}"


async def slow(name: str, replicas: int) -> str:
    """Never done: it waits past its bound, on what nothing answers."""
    await asyncio.get_running_loop().create_future()
    return f"{name}: {replicas}"


@tool(preview=slow)
def resize(name: str, replicas: int) -> str:
    """Resize a deployment."""
    return f"resized {name}"


TOKENS = {"alice-token": Principal(name="alice"), "bob-token": Principal(name="bob")}


@pytest.fixture(autouse=True)
def clear() -> None:
    written.clear()


@pytest.fixture
def api(
    store: SQLStore,
) -> Callable[..., contextlib.AbstractAsyncContextManager[httpx.AsyncClient]]:
    """An API client (as alice) over a service whose agent plays `turns`; previews may take
    0.2 s."""

    @contextlib.asynccontextmanager
    async def make(turns: list[Any]) -> AsyncIterator[httpx.AsyncClient]:
        agent = Agent(
            name="ops", model=ScriptedModel(turns), tools=[write_file, delete_pods, resize]
        )
        service = Service(
            store=store, gate=Gate(POLICY, store), agents=[agent], poll_interval=0.05,
            preview_timeout=0.2,
        )  # fmt: skip
        app = create_app(service, Auth(tokens=TOKENS))
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport,
                base_url="http://signoff",
                headers={"Authorization": "Bearer alice-token"},
            ) as client:
                yield client

    return make


async def start(client: httpx.AsyncClient, thread: str) -> dict[str, Any]:
    response = await client.post(
        f"/v1/threads/{thread}/runs", params={"wait": 5}, json={"agent": "ops", "input": "go"}
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


NEW_CONF = "port = 8080\nworkers = 2\n"
WRITE = [
    ModelTurn(tool_calls=(call("write_file", path="app.conf", content=NEW_CONF),)),
    ModelTurn(text="done"),
]


async def test_a_held_calls_diff_is_stored_with_its_approval_and_returned_by_the_api(api: Any):
    async with api(WRITE) as client:
        run = await start(client, "t1")
        [approval_id] = run["pending_approvals"]

        whole = (await client.get(f"/v1/approvals/{approval_id}")).json()
        listed = (await client.get("/v1/approvals", params={"status": "pending"})).json()

        expected = {
            "kind": "diff",
            "body": diff_of("app.conf", "port = 8080\nworkers = 2\n"),
            "truncated": False,
            "error": None,
        }
        assert whole["preview"] == expected
        assert "-port = 80\n+port = 8080\n" in whole["preview"]["body"]
        assert listed["items"][0]["preview"] == expected
        assert whole["preview_edits"] is True

        decided = await client.post(
            f"/v1/approvals/{approval_id}/decision", json={"kind": "approve"}
        )
        assert decided.json()["preview"] == expected  # kept once decided
        await until(client, run["id"], "completed")
        assert written == {"app.conf": "port = 8080\nworkers = 2\n"}


async def test_edited_arguments_get_a_fresh_preview_before_the_edit_is_sent(api: Any):
    async with api(WRITE) as client:
        run = await start(client, "t2")
        [approval_id] = run["pending_approvals"]

        fresh = await client.post(
            f"/v1/approvals/{approval_id}/preview",
            json={"args": {"path": "app.conf", "content": "port = 9090\nworkers = 4\n"}},
        )
        assert fresh.status_code == 200, fresh.text
        assert fresh.json()["preview"] == {
            "kind": "diff",
            "body": diff_of("app.conf", "port = 9090\nworkers = 4\n"),
            "truncated": False,
            "error": None,
        }
        # Previewing decides nothing, writes nothing.
        stored = (await client.get(f"/v1/approvals/{approval_id}")).json()
        assert stored["status"] == "pending"
        assert stored["preview"]["body"] == diff_of("app.conf", "port = 8080\nworkers = 2\n")
        assert written == {}

        denied = await client.post(
            f"/v1/approvals/{approval_id}/preview",
            json={"args": {"path": "/etc/passwd", "content": "x"}},
        )
        assert denied.json()["preview"]["error"].startswith(
            "not previewed: the policy denies the edited call"
        )
        wrong = await client.post(
            f"/v1/approvals/{approval_id}/preview", json={"args": {"path": "app.conf"}}
        )
        assert wrong.json()["preview"]["error"] == (
            "preview failed: ValueError: invalid arguments for write_file: content: Field required"
        )
        bad = await client.post(f"/v1/approvals/{approval_id}/preview", json={"arguments": {}})
        assert bad.status_code == 422 and "args" in bad.text

        missing = await client.post("/v1/approvals/nope/preview", json={"args": {}})
        assert missing.status_code == 404


async def test_a_failing_preview_and_a_slow_one_say_so_and_the_decisions_still_work(api: Any):
    turns = [
        ModelTurn(
            tool_calls=(
                call("delete_pods", selector="broken"),
                call("resize", name="web", replicas=3),
            )
        ),
        ModelTurn(text="done"),
    ]
    async with api(turns) as client:
        run = await start(client, "t3")
        approvals = {
            a["tool"]: a
            for a in (await client.get("/v1/approvals", params={"status": "pending"})).json()[
                "items"
            ]
        }
        assert approvals["delete_pods"]["preview"] == {
            "kind": "text",
            "body": "",
            "truncated": False,
            "error": "preview failed: ValueError: the cluster cannot be reached",
        }
        assert approvals["resize"]["preview"]["error"] == "preview took longer than 0.2 s"

        for approval in approvals.values():
            decided = await client.post(
                f"/v1/approvals/{approval['id']}/decision", json={"kind": "approve"}
            )
            assert decided.status_code == 200
        done = await until(client, run["id"], "completed")
        results = [m["content"] for m in done["messages"] if m["role"] == "tool"]
        assert results == ["deleted pods of broken", "resized web"]


async def test_a_table_preview_lists_the_rows_a_call_would_touch(api: Any):
    turns = [ModelTurn(tool_calls=(call("delete_pods", selector="web"),)), ModelTurn(text="ok")]
    async with api(turns) as client:
        run = await start(client, "t4")
        [approval_id] = run["pending_approvals"]
        preview = (await client.get(f"/v1/approvals/{approval_id}")).json()["preview"]
        assert preview == {
            "kind": "table",
            "body": [
                {"pod": "web-0", "namespace": "default"},
                {"pod": "web-1", "namespace": "default"},
            ],
            "truncated": False,
            "error": None,
        }


SECRET = "hunter2-8f2e91c4"
REDACT = Redaction(["**.password"])


def login_plan(host: str, password: str) -> str:
    """What logging in would do, secret and all (a preview that does not mind `redact:`)."""
    return f"ssh admin:{password}@{host}\n" + json.dumps({"host": host, "password": password})


@tool(preview=login_plan)
def login(host: str, password: str) -> str:
    """Log in to a host."""
    return f"logged in to {host}"


async def test_a_previews_redacted_values_never_reach_the_api_wherever_it_was_computed(
    store: SQLStore,
):
    policy = Policy.from_dict({"rules": [{"ask": "login"}]})
    gate = Gate(policy, store)
    turns = [ModelTurn(tool_calls=(call("login", host="db-1", password=SECRET),))]
    agent = Agent(name="ops", model=ScriptedModel(turns), tools=[login])
    service = Service(store=store, gate=gate, agents=[agent], redaction=REDACT)
    # A framework's app previews its held call without knowing the server's `redact:`.
    elsewhere = Previews({"login": login_plan})
    held = ToolCall(id="c1", name="login", args={"host": "db-2", "password": SECRET})
    [outcome] = await gate.hold_external(
        [held], CheckContext(thread_id="t-app", origin="langgraph"), previews=elsewhere
    )
    assert outcome.approval is not None and outcome.approval.preview is not None
    assert SECRET in str(outcome.approval.preview.body)  # stored as the app computed it

    app = create_app(service, Auth(tokens=TOKENS))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://signoff",
            headers={"Authorization": "Bearer alice-token"},
        ) as client:
            run = await start(client, "t-ops")
            [own] = run["pending_approvals"]
            # This server's own agent's preview is masked where it is computed: stored so.
            stored = (await store.get_approval(own)).preview
            assert stored is not None and SECRET not in str(stored.body)

            listed = await client.get("/v1/approvals", params={"status": "pending"})
            pages = [await client.get(f"/v1/approvals/{i}") for i in (own, outcome.approval.id)]
            for answer in (listed, *pages):
                assert answer.status_code == 200 and SECRET not in answer.text
            for page in pages:
                host = page.json()["args"]["host"]
                assert page.json()["preview"]["body"] == (
                    f"ssh admin:{MASK}@{host}\n"
                    + json.dumps({"host": host, "password": MASK}, ensure_ascii=False)
                )

            # An edit's preview, the mask sent back as the API showed it: the secret is put
            # back to preview with, and masked in what is shown.
            edited = await client.post(
                f"/v1/approvals/{own}/preview", json={"args": {"host": "db-3", "password": MASK}}
            )
            assert edited.status_code == 200 and SECRET not in edited.text
            assert edited.json()["preview"]["body"].startswith(f"ssh admin:{MASK}@db-3\n")
