"""What the web inbox needs of the server: its files under a CSP, who the user is, runs newest
first, agents with their models, per-agent switches, and redacted arguments — in-process."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

import httpx
import pytest
from pydantic import Field

from signoff import Policy, ToolCall
from signoff.agent import Agent, ModelTurn, tool
from signoff.errors import PolicyError
from signoff.gate import CheckContext, Gate
from signoff.redaction import MASK, Redaction
from signoff.server import Auth, Principal, Service, create_app
from signoff.server.config import load_config
from signoff.server.routes.web import CSP
from signoff.server.shapes import INPUT_CHARS
from signoff.store import SQLStore
from signoff.testing import ScriptedModel, call
from tests.server.test_api import until

TOKENS = {
    "admin-token": Principal(name="ada", roles=frozenset({"admin"})),
    "viewer-token": Principal(name="vic"),
}
DOCUMENT = {"agents": {"ops": {"tools": {"login": "ask", "connect": "ask", "status": "allow"}}}}
used: list[dict[str, Any]] = []


@tool
def login(user: str, password: str, headers: dict[str, str]) -> str:
    """Log in somewhere."""
    used.append({"user": user, "password": password, "headers": headers})
    return f"logged in as {user}"


@tool
def connect(host: str, token: Annotated[str, Field(pattern="^tok-")]) -> str:
    """Connect with a token."""
    return f"connected to {host}"


@tool
def status() -> str:
    """How things are."""
    return "fine"


@contextlib.asynccontextmanager
async def client_for(
    store: SQLStore, turns: list[Any], token: str = "admin-token", policy_interval: float = 2.0
) -> AsyncIterator[httpx.AsyncClient]:
    agent = Agent(name="ops", model=ScriptedModel(turns), tools=[login, connect, status])
    service = Service(
        store=store,
        gate=Gate(Policy.from_dict(DOCUMENT), store),
        agents=[agent],
        policy_document=DOCUMENT,
        redaction=Redaction(["password", "headers.*auth*", "token"]),
        poll_interval=0.05,
        policy_interval=policy_interval,
    )
    app = create_app(service, Auth(tokens=TOKENS))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://signoff", headers=headers
        ) as client:
            yield client


LOGIN = [
    ModelTurn(
        tool_calls=(
            call(
                "login",
                user="ada",
                password="hunter2",
                headers={"Authorization": "Bearer s3cret", "Accept": "text/plain"},
            ),
        )
    ),
    ModelTurn(text="done"),
]


async def test_the_page_and_its_files_come_with_a_csp_and_nothing_else_is_served(
    store: SQLStore,
):
    async with client_for(store, []) as client:
        page = await client.get("/", headers={"Authorization": ""})  # the page needs no token
        assert page.status_code == 200
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert page.headers["content-security-policy"] == CSP
        assert "script-src 'self'" in CSP and "'unsafe-inline'" not in CSP
        assert page.headers["x-content-type-options"] == "nosniff"
        assert '<script type="module" src="/ui/app.js">' in page.text
        script = await client.get("/ui/app.js")
        assert script.headers["content-type"] == "text/javascript; charset=utf-8"
        assert "import" in script.text
        for name in ["../app.py", "..%2Fapp.py", "missing.js", "web.py", ".hidden.js"]:
            assert (await client.get(f"/ui/{name}")).status_code == 404, name
        assert "set-cookie" not in page.headers


async def test_an_approval_s_own_page_is_the_page_with_the_same_headers_at_its_path(
    store: SQLStore,
):
    """Notifications link to ``/approvals/<id>``: the page is served there (it asks the API for
    the approval once signed in), and names its files and the API from the root, so they load
    from that path as from ``/``."""
    async with client_for(store, []) as client:
        root = await client.get("/", headers={"Authorization": ""})
        own = await client.get("/approvals/01anything", headers={"Authorization": ""})
        assert own.status_code == 200
        assert own.text == root.text
        kept = ["content-type", "content-security-policy", "x-content-type-options",
                "referrer-policy", "cache-control"]  # fmt: skip
        assert {k: own.headers[k] for k in kept} == {k: root.headers[k] for k in kept}
        addresses = re.findall(r'(?:src|href)="([^"]*)"', own.text)
        assert addresses and all(a.startswith("/") for a in addresses), addresses
        script = (await client.get("/ui/app.js")).text
        assert "fetch(`/v1" in (await client.get("/ui/api.js")).text
        assert 'from "./' in script  # modules import each other beside themselves: /ui/
        assert (await client.get("/approvals")).status_code == 404
        assert (await client.get("/approvals/a/b")).status_code == 404


async def test_me_says_who_and_with_which_roles(store: SQLStore):
    async with client_for(store, [], token="viewer-token") as client:
        assert (await client.get("/v1/me")).json() == {
            "name": "vic",
            "roles": [],
            "authenticated": True,
        }
        anonymous = await client.get("/v1/me", headers={"Authorization": ""})
        assert anonymous.status_code == 401


async def test_the_page_reads_its_undo_window_from_the_server(store: SQLStore):
    async with client_for(store, [], token="viewer-token") as client:
        assert (await client.get("/v1/web")).json() == {"undo_seconds": 5}
        assert (await client.get("/v1/web", headers={"Authorization": ""})).status_code == 401


async def test_agents_show_their_model_tools_and_verdicts(store: SQLStore):
    async with client_for(store, []) as client:
        [ops] = (await client.get("/v1/agents")).json()["items"]
    assert (ops["name"], ops["path"], ops["model"], ops["subagents"]) == (
        "ops",
        "ops",
        "scripted model (tests)",
        [],
    )
    verdicts = {t["name"]: (t["verdict"]["kind"], t["verdict"]["rule"]) for t in ops["tools"]}
    assert verdicts == {
        "login": ("ask", "agents.ops.tools.login"),
        "connect": ("ask", "agents.ops.tools.connect"),
        "status": ("allow", "agents.ops.tools.status"),
    }


async def test_runs_are_listed_newest_first_with_a_cursor(store: SQLStore):
    turns = [ModelTurn(text="one"), ModelTurn(text="two"), ModelTurn(text="three")]
    async with client_for(store, turns) as client:
        ids = []
        for n in range(3):
            started = await client.post(
                f"/v1/threads/t{n}/runs", params={"wait": 5}, json={"agent": "ops", "input": "hi"}
            )
            ids.append(started.json()["id"])
        first = (await client.get("/v1/runs", params={"limit": 2})).json()
        assert [r["id"] for r in first["items"]] == [ids[2], ids[1]]
        assert first["items"][0]["status"] == "completed"
        assert first["items"][0]["created_at"] is not None
        rest = (await client.get("/v1/runs", params={"cursor": first["next"]})).json()
        assert [r["id"] for r in rest["items"]] == [ids[0]]
        assert rest["next"] is None
        by_status = (await client.get("/v1/runs", params={"status": "paused"})).json()
        assert by_status["items"] == []
        unknown = await client.get("/v1/runs", params={"cursor": "no-such-run"})
        assert unknown.status_code == 404


async def test_a_switch_for_one_agent_changes_its_verdict_and_needs_admin(store: SQLStore):
    async with client_for(store, [], token="viewer-token") as viewer:
        refused = await viewer.put("/v1/policy/tools/status?agent=ops", json={"verdict": "ask"})
        assert refused.status_code == 403
    async with client_for(store, []) as client:
        changed = await client.put("/v1/policy/tools/status?agent=ops", json={"verdict": "ask"})
        assert changed.status_code == 200, changed.text
        assert changed.json()["document"]["agents"]["ops"]["tools"]["status"] == {"verdict": "ask"}
        explained = await client.post(
            "/v1/policy/explain", json={"tool": "status", "agent": "ops", "args": {}}
        )
        assert (explained.json()["kind"], explained.json()["rule"]) == (
            "ask",
            "agents.ops.tools.status",
        )
        audit = (await client.get("/v1/audit")).json()["items"]
        assert [(e["actor"], e["action"]) for e in audit if e["action"] == "policy"][-1] == (
            "ada",
            "policy",
        )
        # A switch made against an older version is refused: another change came first.
        stale = await client.put(
            "/v1/policy/tools/status?agent=ops", json={"verdict": "allow", "version": "0" * 16}
        )
        assert stale.status_code == 409
        assert "reload" in stale.json()["detail"]
        current = (await client.get("/v1/policy")).json()["version"]
        fresh = await client.put(
            "/v1/policy/tools/status?agent=ops", json={"verdict": "allow", "version": current}
        )
        assert fresh.status_code == 200
        nobody = await client.put("/v1/policy/tools/status?agent=nobody", json={"verdict": "ask"})
        assert nobody.status_code == 404


async def test_redacted_arguments_are_masked_everywhere_and_an_edit_keeps_them(
    store: SQLStore,
):
    used.clear()
    async with client_for(store, LOGIN) as client:
        run = (
            await client.post(
                "/v1/threads/t/runs", params={"wait": 5}, json={"agent": "ops", "input": "go"}
            )
        ).json()
        [approval_id] = run["pending_approvals"]
        masked = {
            "user": "ada",
            "password": MASK,
            "headers": {"Authorization": MASK, "Accept": "text/plain"},
        }
        approval = (await client.get(f"/v1/approvals/{approval_id}")).json()
        assert approval["args"] == masked
        assert run["messages"][-1]["tool_calls"][0]["args"] == masked
        # The person changes the user and leaves the masked values as they are.
        edited = await client.post(
            f"/v1/approvals/{approval_id}/decision",
            json={"kind": "edit", "args": masked | {"user": "root"}},
        )
        assert edited.status_code == 200, edited.text
        assert edited.json()["decision"]["args"]["password"] == MASK
        await until(client, run["id"], "completed")
        # The whole log, once the run is over (over ASGI a stream arrives when it ends).
        events = (await client.get(f"/v1/runs/{run['id']}/events")).text
        assert "event: approval_requested" in events and "event: decision" in events
        assert "hunter2" not in events and "s3cret" not in events
        messages = json.dumps((await client.get(f"/v1/runs/{run['id']}")).json())
        assert "hunter2" not in messages and "s3cret" not in messages
        audit = (await client.get("/v1/audit", params={"limit": 1000})).json()
        assert "hunter2" not in json.dumps(audit) and "s3cret" not in json.dumps(audit)
        # The digests hash the arguments (a guessable secret could be found from them).
        assert all(e["hash"] is None for e in audit["items"])
        assert not any("digest" in e["data"] for e in audit["items"])
        assert audit["length"] == audit["items"][-1]["seq"]
    assert used == [
        {
            "user": "root",
            "password": "hunter2",
            "headers": {"Authorization": "Bearer s3cret", "Accept": "text/plain"},
        }
    ]


def test_redaction_patterns():
    redaction = Redaction(["**.password", "env.*.value", "*token*"])
    assert redaction.hidden(["password"])
    assert redaction.hidden(["db", "main", "Password"])
    assert redaction.hidden(["env", "0", "value"])
    assert not redaction.hidden(["env", "0", "name"])
    assert redaction.hidden(["api_token"])
    assert not redaction.hidden(["nested", "api_token"])
    assert redaction.args({"env": [{"name": "A", "value": "b"}], "x": 1}) == {
        "env": [{"name": "A", "value": MASK}],
        "x": 1,
    }
    # A mask where the original had nothing stays what it is; an unmasked value is the edit's.
    assert redaction.restore({"password": MASK}, {}) == {"password": MASK}
    assert redaction.restore({"password": "new"}, {"password": "old"}) == {"password": "new"}
    assert not Redaction()
    with pytest.raises(ValueError, match="dotted path"):
        Redaction(["a..b"])


def test_the_config_names_the_paths_to_redact(tmp_path: Path):
    config = tmp_path / "signoff.yaml"
    config.write_text('redact: ["**.password", "headers.authorization"]\nrules:\n  - ask: x\n')
    assert load_config(config).redact == ("**.password", "headers.authorization")
    config.write_text("redact:\n  - ok\n  - a..b\nrules:\n  - ask: x\n")
    with pytest.raises(PolicyError) as raised:
        load_config(config)
    assert str(raised.value).startswith(f"{config}:3:5: redact[1]: a redact pattern is a dotted")


async def test_an_edit_the_schema_refuses_does_not_quote_a_redacted_value(store: SQLStore):
    turns = [ModelTurn(tool_calls=(call("connect", host="db", token="s3cret-value"),))]
    async with client_for(store, turns) as client:
        run = (
            await client.post(
                "/v1/threads/t/runs", params={"wait": 5}, json={"agent": "ops", "input": "go"}
            )
        ).json()
        [approval_id] = run["pending_approvals"]
        # The host changes; the masked token is kept, and the original breaks the pattern.
        refused = await client.post(
            f"/v1/approvals/{approval_id}/decision",
            json={"kind": "edit", "args": {"host": "db2", "token": MASK}},
        )
        assert refused.status_code == 422
        body = refused.json()
        assert "s3cret" not in refused.text
        assert body["path"] == "/token"
        assert body["schema_path"] == "properties/token/pattern"
        assert "redacted" in body["detail"]
        # An error elsewhere is shown as the schema says it.
        other = await client.post(
            f"/v1/approvals/{approval_id}/decision",
            json={"kind": "edit", "args": {"host": 5, "token": "tok-new"}},
        )
        assert other.status_code == 422
        assert "5 is not of type 'string'" in other.json()["detail"]


def test_masks_in_a_list_that_changed_length_cannot_be_put_back():
    redaction = Redaction(["env.*.value"])
    original = {"env": [{"name": "A", "value": "a"}, {"name": "B", "value": "b"}]}
    kept = {"env": [{"name": "A", "value": MASK}, {"name": "B", "value": MASK}]}
    assert redaction.restore(kept, original) == original
    with pytest.raises(ValueError, match="/env: the list holds redacted values"):
        redaction.restore({"env": [{"name": "B", "value": MASK}]}, original)
    # Retyped values need nothing from the original.
    retyped = {"env": [{"name": "B", "value": "new"}]}
    assert redaction.restore(retyped, original) == retyped


def test_arguments_that_are_not_an_object_are_masked_whole():
    redaction = Redaction(["password"])
    assert redaction.tree({"args": '{"password": "x"'}) == {"args": MASK}
    listed: dict[str, Any] = {"args": ["x"]}
    assert redaction.tree(listed) == {"args": MASK}
    assert redaction.tree({"args": None, "decision": {"kind": "approve"}}) == {
        "args": None,
        "decision": {"kind": "approve"},
    }


async def test_a_switch_on_a_replica_that_missed_a_change_is_refused(store: SQLStore):
    """Two replicas on one database; the second has not yet picked up the first's change (it
    looks every `policy_interval`): its switch, made from an older copy, would undo it."""
    async with (
        client_for(store, []) as first,
        client_for(store, [], policy_interval=3600) as second,  # it will not look in time
    ):
        made = await first.put("/v1/policy/tools/status?agent=ops", json={"verdict": "deny"})
        assert made.status_code == 200
        stale = await second.put("/v1/policy/tools/login?agent=ops", json={"verdict": "allow"})
        assert stale.status_code == 409, stale.text
        assert "reload it" in stale.json()["detail"]
        saved = await store.latest_policy()
        assert saved is not None
        assert saved[1]["agents"]["ops"]["tools"]["status"] == {"verdict": "deny"}


async def test_another_framework_s_approval_is_listed_with_its_origin_thread_and_agent(
    store: SQLStore,
):
    """A LangGraph run's held call belongs to no run of signoff's: the API says whose it is, and
    approving it always is possible for its thread, agent or everywhere, never for a run."""
    email = ToolCall(
        id="c1", name="send_email", args={"to": "bob@example.com"}, agent="coordinator/researcher"
    )
    context = CheckContext(origin="langgraph", thread_id="t-42", requested_by="alice")
    [outcome] = await Gate(Policy.from_dict(DOCUMENT), store).hold_external([email], context)
    assert outcome.approval is not None
    approval_id = outcome.approval.id
    whose = {
        "id": approval_id,
        "origin": "langgraph",
        "run_id": None,
        "thread_id": "t-42",
        "call_id": "c1",
        "agent": "coordinator/researcher",
        "tool": "send_email",
        "requested_by": "alice",
        "status": "pending",
    }
    async with client_for(store, []) as client:
        listed = (await client.get("/v1/approvals", params={"status": "pending"})).json()
        one = (await client.get(f"/v1/approvals/{approval_id}")).json()
        by_agent = await client.get("/v1/approvals", params={"agent": "coordinator/researcher"})
        assert [{k: a[k] for k in whose} for a in listed["items"]] == [whose]
        assert {k: one[k] for k in whose} == whose
        assert [a["id"] for a in by_agent.json()["items"]] == [approval_id]

        for_a_run = await client.post(
            f"/v1/approvals/{approval_id}/decision",
            json={"kind": "approve", "always": {"scope": "run"}},
        )
        assert for_a_run.status_code == 422
        assert "belongs to no run" in for_a_run.json()["detail"]
        for_the_thread = await client.post(
            f"/v1/approvals/{approval_id}/decision",
            json={"kind": "approve", "always": {"scope": "thread"}},
        )
        assert for_the_thread.status_code == 200, for_the_thread.text
        decided = for_the_thread.json()
        assert {k: decided[k] for k in whose} == whose | {"status": "approved"}
        assert decided["decided_by"] == "ada"
        [grant] = (await client.get("/v1/grants")).json()["items"]
        assert (grant["scope"], grant["subject"], grant["tool"]) == ("thread", "t-42", "send_email")


async def test_an_approval_says_what_the_user_asked_its_run_and_null_when_no_run_holds_it(
    store: SQLStore,
):
    asked = "log in as ada, please. " + "Then more words. " * 200
    cut = asked[: INPUT_CHARS - 1] + "…"
    outside = ToolCall(id="c1", name="send_email", args={"to": "bob@example.com"})
    [held] = await Gate(Policy.from_dict(DOCUMENT), store).hold_external(
        [outside], CheckContext(origin="langgraph", thread_id="t-9")
    )
    assert held.approval is not None
    async with client_for(store, LOGIN) as client:
        run = (
            await client.post(
                "/v1/threads/t/runs", params={"wait": 5}, json={"agent": "ops", "input": asked}
            )
        ).json()
        [approval_id] = run["pending_approvals"]
        listed = (await client.get("/v1/approvals")).json()["items"]
        assert {a["id"]: a["input"] for a in listed} == {approval_id: cut, held.approval.id: None}
        by_short_id = await client.get("/v1/approvals", params={"short_id": approval_id[-6:]})
        assert [a["input"] for a in by_short_id.json()["items"]] == [cut]
        assert (await client.get(f"/v1/approvals/{approval_id}")).json()["input"] == cut
        decided = await client.post(
            f"/v1/approvals/{approval_id}/decision", json={"kind": "approve"}
        )
        assert decided.json()["input"] == cut
        batch = await client.post(
            "/v1/approvals/decisions",
            json={"decisions": {held.approval.id: {"kind": "reject", "reason": "no"}}},
        )
        assert [a["input"] for a in batch.json()["items"]] == [None]
    # One read answers for every run of a page; a run not found is left out.
    assert await store.run_inputs([run["id"], "no-such-run"]) == {run["id"]: asked}
    assert await store.run_inputs([]) == {}
