"""MCP servers' tools in the runtime, through the official `mcp` client: the reference
filesystem server from npm over stdio, and an SDK server over streamable HTTP."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from signoff import Approve, ConflictError, Edit, InvalidEditError, Policy
from signoff.agent import Agent, ModelTurn, Runner
from signoff.gate import Gate
from signoff.protocols.mcp import MCPServer
from signoff.store import SQLStore
from signoff.testing import ScriptedModel, call
from tests.agent.test_runner import collect, of

ROOT = Path(__file__).resolve().parents[2]
FILESYSTEM = ROOT / "tests/js/node_modules/.bin/mcp-server-filesystem"
HTTP_SERVER = Path(__file__).with_name("mcp_http_server.py")

POLICY = Policy.from_dict(
    {
        "default": "ask",
        "servers": {
            "fs": {
                "auto_approve_tools": ["read_*", "list_*"],
                "require_approval": ["write_file"],
            }
        },
        "rules": [{"deny": "write_file", "when": {"path": {"glob": "*/secrets/*"}}}],
    }
)


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("buy milk\n")
    (tmp_path / "secrets").mkdir()
    return tmp_path


def filesystem(sandbox: Path) -> MCPServer:
    """The reference filesystem server on the sandbox. Entered in the test itself: the client's
    task group must be left by the task that entered it, which an async fixture does not do."""
    assert FILESYSTEM.exists(), "run `make pytest`: it installs tests/js with npm ci"
    return MCPServer(
        "fs", command=str(FILESYSTEM), args=[str(sandbox)], exclude=["move_file", "*media*"]
    )


async def test_a_filesystem_servers_tools_run_asked_and_denied_by_the_policy(
    store: SQLStore, sandbox: Path
):
    async with filesystem(sandbox) as fs:
        await files_scenario(store, fs, sandbox)


async def files_scenario(store: SQLStore, fs: MCPServer, sandbox: Path) -> None:
    names = {t.name for t in fs.tools}
    assert {"read_text_file", "write_file", "list_directory"} <= names
    assert "move_file" not in names and "read_media_file" not in names  # excluded: never offered
    target, secret = sandbox / "todo.txt", sandbox / "secrets" / "key.txt"
    model = ScriptedModel(
        [
            ModelTurn(
                tool_calls=(
                    call("read_text_file", path=str(sandbox / "notes.txt")),
                    call("write_file", path=str(target), content="call mum\n"),
                    call("write_file", path=str(secret), content="hunter2"),
                )
            ),
            ModelTurn(text="Written."),
        ]
    )
    runner = Runner(Agent(name="files", model=model, tools=fs.tools), Gate(POLICY, store))
    events = await collect(runner.start("t1", "copy my notes"))
    [held] = of(events, "approval_requested")
    approval = await store.get_approval(str(held["approval_id"]))
    assert (approval.call.name, approval.call.server) == ("write_file", "fs")
    assert not target.exists() and not secret.exists()

    # The edit is checked against the server's own input schema for the tool.
    with pytest.raises(InvalidEditError, match="content"):
        await runner.gate.decide(
            approval.id, Edit(args={"path": str(target), "content": 7}), actor="al"
        )
    edited = {"path": str(target), "content": "call mum today\n"}
    await runner.gate.decide(approval.id, Edit(args=edited), actor="al")
    resumed = await collect(runner.resume(events[0].run_id))
    assert resumed[-1].type == "completed"
    assert target.read_text() == "call mum today\n"  # what the server wrote is the edit
    assert not secret.exists()  # denied by the argument condition, never sent
    results = {m.name: m.content for m in model.requests[-1].messages if m.role == "tool"}
    assert results["read_text_file"] == "buy milk\n"
    assert "blocked" in [m for m in model.requests[-1].messages if m.role == "tool"][1].content


async def test_a_server_error_is_an_error_result_and_the_run_goes_on(
    store: SQLStore, sandbox: Path
):
    model = ScriptedModel(
        [ModelTurn(tool_calls=(call("read_text_file", path="/etc/passwd"),)), ModelTurn(text="ok")]
    )
    async with filesystem(sandbox) as fs:
        runner = Runner(Agent(name="files", model=model, tools=fs.tools), Gate(POLICY, store))
        events = await collect(runner.start("t1", "read the passwords"))
    assert events[-1].type == "completed"
    [result] = [m for m in model.requests[-1].messages if m.role == "tool"]
    assert "Access denied" in result.content


def test_read_only_and_idempotent_hints_make_a_tool_safe_to_repeat():
    from types import SimpleNamespace

    from signoff.protocols.mcp import MCPTool

    def listed(**hints: bool) -> SimpleNamespace:
        annotations = SimpleNamespace(
            idempotent_hint=hints.get("idempotent"), read_only_hint=hints.get("read_only")
        )
        return SimpleNamespace(name="t", description="", input_schema=None, annotations=annotations)

    client = object()
    assert MCPTool(client, "s", listed(read_only=True)).idempotent  # type: ignore[arg-type]
    assert MCPTool(client, "s", listed(idempotent=True)).idempotent  # type: ignore[arg-type]
    assert not MCPTool(client, "s", listed()).idempotent  # type: ignore[arg-type]


async def test_a_call_to_a_closed_server_is_not_started_and_its_approval_is_not_used(
    store: SQLStore, sandbox: Path
):
    target = sandbox / "late.txt"
    model = ScriptedModel(
        [
            ModelTurn(tool_calls=(call("write_file", path=str(target), content="x"),)),
            ModelTurn(text="done"),
        ]
    )
    async with filesystem(sandbox) as fs:
        tools = list(fs.tools)
        runner = Runner(Agent(name="files", model=model, tools=tools), Gate(POLICY, store))
        events = await collect(runner.start("t1", "write late.txt"))
    [held] = of(events, "approval_requested")
    await runner.gate.decide(str(held["approval_id"]), Approve(), actor="al")
    with pytest.raises(ConflictError, match="cannot be run now"):
        await collect(runner.resume(events[0].run_id))
    assert await store.ledger_start(  # nothing was started under the approval
        str(held["approval_id"]),
        run_id="r",
        call_id="c",
        tool="t",
        digest="d",
        at=datetime.now(UTC),
    ) == (None, [])
    assert not target.exists()


def test_a_server_needs_a_command_or_a_url():
    with pytest.raises(ValueError, match="either a command or a url"):
        MCPServer("x")
    with pytest.raises(ValueError, match="either a command or a url"):
        MCPServer("x", command="a", url="http://b")


@pytest.fixture
def bank_url() -> Iterator[str]:
    """A fresh bank server per test: it counts its transfers."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(HTTP_SERVER), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            with socket.socket() as attempt:
                if attempt.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if process.poll() is not None:
                raise RuntimeError("the MCP server did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(5)


async def test_an_http_servers_approved_call_runs_exactly_once(store: SQLStore, bank_url: str):
    # Offered with the server's name in front, the tools are known to the policy by that name.
    policy = Policy.from_dict({"rules": [{"allow": "bank_balance"}, {"ask": "bank_transfer"}]})
    async with MCPServer("bank", url=bank_url, prefix=True) as bank:
        assert sorted(t.name for t in bank.tools) == ["bank_balance", "bank_transfer"]
        model = ScriptedModel(
            [
                ModelTurn(
                    tool_calls=(
                        call("bank_balance"),
                        call("bank_transfer", cents=250, to="alice"),
                    )
                ),
                ModelTurn(text="Sent."),
            ]
        )
        runner = Runner(Agent(name="payer", model=model, tools=bank.tools), Gate(policy, store))
        events = await collect(runner.start("t1", "pay alice 2.50"))
        [held] = of(events, "approval_requested")
        assert held["tool"] == "bank_transfer"
        await runner.gate.decide(str(held["approval_id"]), Approve(), actor="al")
        # Two resumers race: the transfer goes out once.
        outcomes = await asyncio.gather(
            collect(runner.resume(events[0].run_id)),
            collect(runner.resume(events[0].run_id)),
            return_exceptions=True,
        )
        assert sum(not isinstance(o, BaseException) for o in outcomes) == 1
        results = [m.content for m in model.requests[-1].messages if m.role == "tool"]
        assert results == ["1000", "sent 250 to alice; transfer #1"]
        # A new call to the balance shows one transfer happened.
        [after] = [t for t in bank.tools if t.name == "bank_balance"]
        assert (await after.invoke({})).content == "750"
