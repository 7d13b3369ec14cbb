"""`signoff demo` as a user runs it: a real server process with the two demo agents."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from signoff.demo.agents import cluster_pods
from signoff.demo.folder import ADDRESS
from tests.cli.test_inbox_cli import Terminal
from tests.deadline import HANG
from tests.processes import (
    signoff_command,
    signoff_says,
    signoff_server,
    typed_here,
    websocket_handshake,
)


@pytest.fixture
async def demo(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, Path]]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "SIGNOFF_MODEL")}
    async with (
        signoff_server("demo", "--port", "0", "--data-dir", str(tmp_path), env=env) as (url, _),
        httpx.AsyncClient(base_url=url, timeout=HANG) as client,
    ):
        yield client, tmp_path


async def run(client: httpx.AsyncClient, agent: str, text: str) -> dict[str, Any]:
    response = await client.post(
        "/v1/threads/" + agent + str(id(text)) + "/runs",
        params={"wait": 10},
        json={"agent": agent, "input": text},
    )
    assert response.status_code == 201, response.text
    result: dict[str, Any] = response.json()
    return result


async def until_done(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    async with asyncio.timeout(HANG):
        while True:
            result: dict[str, Any] = (await client.get(f"/v1/runs/{run_id}")).json()
            if result["status"] in ("completed", "failed"):
                return result
            await asyncio.sleep(0.05)


async def test_the_ops_agent_lists_asks_before_deleting_and_refuses_admin(
    demo: tuple[httpx.AsyncClient, Path],
):
    client, folder = demo
    paused = await run(client, "ops", "list pods then delete nginx-123")
    assert paused["status"] == "paused"
    assert "(scripted demo model)" in paused["messages"][1]["content"]  # it says what it is
    assert "nginx-123" in paused["messages"][2]["content"]  # list_pods ran already
    assert "nginx-123" in cluster_pods(folder / "signoff.db")  # nothing deleted yet
    [pending] = paused["pending_approvals"]
    decided = await client.post(f"/v1/approvals/{pending}/decision", json={"kind": "approve"})
    assert decided.json()["decided_by"] == "local"
    done = await until_done(client, paused["id"])
    assert done["status"] == "completed"
    assert "pod nginx-123 deleted" in done["messages"][-1]["content"]
    assert "nginx-123" not in cluster_pods(folder / "signoff.db")

    refused = await run(client, "ops", "reset the cluster")
    assert refused["status"] == "completed"
    blocked = json.loads(refused["messages"][2]["content"])
    assert blocked["status"] == "blocked"
    assert cluster_pods(folder / "signoff.db")  # still there


async def test_the_files_agent_writes_what_the_person_edited(
    demo: tuple[httpx.AsyncClient, Path],
):
    client, folder = demo
    paused = await run(client, "files", "read notes.txt then write Hello there to hello.txt")
    assert "Buy milk." in paused["messages"][2]["content"]
    [pending] = paused["pending_approvals"]
    edited = {"path": "hello.txt", "content": "Hello, edited."}
    await client.post(f"/v1/approvals/{pending}/decision", json={"kind": "edit", "args": edited})
    done = await until_done(client, paused["id"])
    assert done["status"] == "completed"
    assert (folder / "sandbox" / "hello.txt").read_text() == "Hello, edited."
    escape = await run(client, "files", "read ../signoff.db")
    assert "outside the sandbox" in escape["messages"][2]["content"]


async def test_a_person_approves_from_the_shell_through_the_server(
    demo: tuple[httpx.AsyncClient, Path],
):
    client, folder = demo
    paused = await run(client, "files", "delete todo.md")
    [pending] = paused["pending_approvals"]
    approve = await asyncio.create_subprocess_exec(
        *signoff_command(), "approve", pending[-8:], "--server", str(client.base_url),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await approve.communicate()
    assert approve.returncode == 0, err.decode()
    assert out.decode() == f"{pending}: approved by local (delete_file)\n"
    done = await until_done(client, paused["id"])
    assert done["status"] == "completed"
    assert not (folder / "sandbox" / "todo.md").exists()
    again = await asyncio.create_subprocess_exec(
        *signoff_command(), "reject", pending, "--reason", "late",
        "--server", str(client.base_url),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await again.communicate()
    assert again.returncode == 1
    assert "already approved by local at " in err.decode()


async def test_a_person_decides_in_the_terminal_inbox_through_the_server(
    demo: tuple[httpx.AsyncClient, Path],
):
    client, folder = demo
    paused = await run(client, "files", "delete todo.md")
    [pending] = paused["pending_approvals"]
    terminal = Terminal("inbox", "--server", str(client.base_url))
    assert "1 waiting" in terminal.until("inbox> ")
    terminal.type("approve 1")
    assert f"#1 {pending[-8:]} delete_file: approved by local" in terminal.until("inbox> ")
    terminal.type("approve 1")
    assert "#1 (delete_file) was already approved by local" in terminal.until("inbox> ")
    terminal.type("quit")
    assert terminal.close() == 0
    assert (await until_done(client, paused["id"]))["status"] == "completed"
    assert not (folder / "sandbox" / "todo.md").exists()


async def test_an_edit_in_the_terminal_inbox_starts_from_the_whole_arguments(
    demo: tuple[httpx.AsyncClient, Path], monkeypatch: pytest.MonkeyPatch
):
    client, _ = demo
    text = "b" * 5000  # cut in the listing; the inbox reads the call again before deciding
    paused = await run(client, "files", f"write {text} to whole.txt")
    [pending] = paused["pending_approvals"]
    monkeypatch.setenv("EDITOR", "true")  # leaves the arguments as they were given
    terminal = Terminal("inbox", "--server", str(client.base_url))
    terminal.until("inbox> ")
    terminal.type(f"edit {pending[-8:]}")
    assert "edited by local" in terminal.until("inbox> ")
    terminal.type("quit")
    assert terminal.close() == 0
    decided = (await client.get(f"/v1/approvals/{pending}")).json()
    assert decided["decision"]["args"] == {"path": "whole.txt", "content": text}


async def test_a_tool_s_failure_reaches_the_model_and_the_person_in_words(
    demo: tuple[httpx.AsyncClient, Path],
):
    client, _ = demo
    done = await run(client, "ops", "logs of nginx-999")
    failed = done["messages"][2]
    assert (failed["content"], failed["is_error"]) == ("There is no pod named 'nginx-999'.", True)
    missing = await run(client, "files", "read nothing.txt")
    assert missing["messages"][2]["content"] == "There is no file 'nothing.txt' in the sandbox."


async def test_the_api_is_described_at_openapi_json_with_no_page_that_needs_a_cdn(
    demo: tuple[httpx.AsyncClient, Path],
):
    client, _ = demo
    assert (await client.get("/openapi.json")).json()["info"]["title"] == "signoff"
    for page in ("/docs", "/redoc"):
        assert (await client.get(page)).status_code == 404


async def test_a_body_that_is_not_json_is_told_where_it_stops_being_json(
    demo: tuple[httpx.AsyncClient, Path],
):
    client, _ = demo
    answer = await client.post(
        "/v1/threads/t/runs",
        content=b'{\n  "agent": "ops",\n  "input": "list pods",\n}',
        headers={"content-type": "application/json"},
    )
    assert answer.status_code == 400
    assert answer.json()["detail"] == (
        "the body is not valid JSON: Expecting property name enclosed in double quotes "
        "at line 4 column 1"
    )
    wrong = await client.post("/v1/threads/t/runs", json={"agent": "ops", "input": 5})
    assert wrong.status_code == 422  # JSON, with a field that is wrong: the field is named
    assert wrong.json()["problems"][0]["field"] == "body.input"


async def test_approve_and_the_inbox_find_the_demo_running_here_with_no_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    for name in ("SIGNOFF_SERVER", "SIGNOFF_TOKEN", "SIGNOFF_DATABASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    address = tmp_path / "signoff" / "demo" / ADDRESS
    async with (
        signoff_server("demo", "--port", "0") as (url, _),
        httpx.AsyncClient(base_url=url, timeout=HANG) as client,
    ):
        first, second = [
            (await run(client, "files", f"delete {name}"))["pending_approvals"][0]
            for name in ("todo.md", "notes.txt")
        ]
        code, out, err = await signoff_says("approve", first[-8:])
        assert (code, out) == (0, f"{first}: approved by local (delete_file)\n")
        assert err == (
            f"signoff approve: through the demo at {url} (from {address}; "
            "--server URL names another)\n"
        )
        terminal = Terminal("inbox")
        shown = terminal.until("inbox> ")
        assert f"signoff inbox: through the demo at {url}" in shown
        assert "1 waiting" in shown
        terminal.type("reject 1 keep my notes")
        assert f"#1 {second[-8:]} delete_file: rejected by local" in terminal.until("inbox> ")
        terminal.type("quit")
        assert terminal.close() == 0
    assert not address.exists()  # the demo stopped: it says so by removing its address
    code, out, err = await signoff_says("approve", first[-8:])
    assert (code, out) == (2, "")
    assert err == (
        "signoff approve: no server given and no demo running here: pass --server URL "
        f"(with --token) or --database URL, or start one with `{typed_here()} demo`\n"
    )


async def test_demo_reset_starts_afresh_and_says_what_it_removed(tmp_path: Path):
    async with (
        signoff_server("demo", "--port", "0", "--data-dir", str(tmp_path)) as (url, _),
        httpx.AsyncClient(base_url=url, timeout=HANG) as client,
    ):
        paused = await run(client, "ops", "list pods then delete nginx-123")
        await client.post(f"/v1/approvals/{paused['pending_approvals'][0]}/decision",
                          json={"kind": "approve"})  # fmt: skip
        assert (await until_done(client, paused["id"]))["status"] == "completed"
    assert "nginx-123" not in cluster_pods(tmp_path / "signoff.db")

    process = await asyncio.create_subprocess_exec(
        *signoff_command(), "demo", "--reset", "--port", "0", "--data-dir", str(tmp_path),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        async with asyncio.timeout(HANG):
            said = (await process.stdout.readline()).decode()
            serving = (await process.stdout.readline()).decode()
        assert said.startswith("signoff demo --reset: removed signoff.db")
        assert said.endswith(f"sandbox/ (2 files) from {tmp_path}\n")
        assert "signoff demo on http://127.0.0.1:" in serving
        assert "nginx-123" in cluster_pods(tmp_path / "signoff.db")  # the cluster as it began
        found = re.search(r"http://[\d.:]+", serving)
        assert found is not None
        async with httpx.AsyncClient(base_url=found.group(0), timeout=HANG) as client:
            assert (await client.get("/v1/approvals")).json()["items"] == []
    finally:
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(HANG):
            await process.wait()


async def test_a_page_on_a_rebound_dns_name_cannot_drive_the_demo(
    demo: tuple[httpx.AsyncClient, Path],
):
    client, _ = demo
    paused = await run(client, "ops", "list pods then delete nginx-123")
    [pending] = paused["pending_approvals"]
    port = client.base_url.port
    assert port is not None
    evil = {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}
    decided = await client.post(
        f"/v1/approvals/{pending}/decision", json={"kind": "approve"}, headers=evil
    )
    assert decided.status_code == 421
    policy = await client.put("/v1/policy", json={"document": {"default": "allow"}}, headers=evil)
    assert policy.status_code == 421
    assert (await websocket_handshake(port, evil["Host"], evil["Origin"])).startswith(
        "HTTP/1.1 403"
    )
    assert (await client.get(f"/v1/approvals/{pending}")).json()["status"] == "pending"
    assert (
        await client.get("/v1/health", headers={"Host": f"localhost:{port}"})
    ).status_code == 200


async def test_the_demo_refuses_an_allowed_host_that_is_not_a_host_name(tmp_path: Path):
    for value, words in (("*", "'*' would let any web page"), ("a/b", "'a/b' is not a host")):
        process = await asyncio.create_subprocess_exec(
            *signoff_command(), "demo", "--data-dir", str(tmp_path),
            "--allowed-host", value,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        out, _ = await process.communicate()
        assert process.returncode == 2
        assert words in " ".join(out.decode().split()), out.decode()


def documented(name: str) -> Any:
    """The JSON block named `name` in docs/a2a.md."""
    text = (Path(__file__).resolve().parents[2] / "docs/a2a.md").read_text(encoding="utf-8")
    found = re.search(rf"<!-- example: {name} -->\n```json\n(.*?)```", text, re.S)
    assert found, name
    return json.loads(found.group(1))


def like(shown: Any, real: Any, where: str = "") -> None:
    """`real` is what the docs show: the same keys and items, where ``…`` stands for anything
    and a text ending in ``…`` for any text that begins the same."""
    if isinstance(shown, str) and shown.endswith("…"):
        if shown != "…":
            assert isinstance(real, str) and real.startswith(shown[:-1]), (where, real)
        return
    if isinstance(shown, dict):
        assert isinstance(real, dict) and sorted(shown) == sorted(real), (where, real)
        for key, value in shown.items():
            like(value, real[key], f"{where}.{key}")
    elif isinstance(shown, list):
        assert isinstance(real, list) and len(shown) == len(real), (where, real)
        for n, (value, item) in enumerate(zip(shown, real, strict=True)):
            like(value, item, f"{where}[{n}]")
    else:
        assert shown == real, (where, shown, real)


async def test_the_a2a_exchange_of_the_docs_is_what_the_demo_answers(
    demo: tuple[httpx.AsyncClient, Path],
):
    client, _ = demo
    headers = {"A2A-Version": "1.0"}
    asked = await client.post("/a2a/ops", json=documented("a2a-send"), headers=headers)
    like(documented("a2a-input-required"), asked.json())
    decision = json.loads(
        json.dumps(documented("a2a-decide")).replace(
            "TASK_ID", asked.json()["result"]["task"]["id"]
        )
    )
    done = await client.post("/a2a/ops", json=decision, headers=headers)
    like(documented("a2a-completed"), done.json())


async def test_a_sub_agents_held_call_waits_on_the_a2a_task_of_its_root_agent(
    demo: tuple[httpx.AsyncClient, Path],
):
    client, _ = demo
    headers = {"A2A-Version": "1.0"}

    async def send(message: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
        answer = (await client.post("/a2a/ops", json=body, headers=headers)).json()
        task: dict[str, Any] = answer["result"]["task"]
        return task

    asked = await send(
        {"messageId": "s-1", "role": "ROLE_USER", "parts": [{"text": "ask db to drop table users"}]}
    )
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    parts = asked["status"]["message"]["parts"]
    assert 'drop_table(name="users") (by ops/db)' in parts[0]["text"]
    [held] = parts[1]["data"]["approvals"]
    assert (held["tool"], held["agent"]) == ("drop_table", "ops/db")
    done = await send(
        {"messageId": "s-2", "role": "ROLE_USER", "taskId": asked["id"],
         "parts": [{"data": {"decisions": {held["approvalId"]: {"kind": "approve"}}}}]}
    )  # fmt: skip
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "users" in done["status"]["message"]["parts"][0]["text"]
