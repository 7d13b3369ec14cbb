"""`signoff serve --log-format json`: a real server process whose stderr, through a held call and
its decision, is one JSON object a line — with the approval's id, never an argument's value;
and `signoff demo --log-format json`'s."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
from pathlib import Path

import httpx

from tests.deadline import HANG
from tests.processes import signoff_command

ROOT = Path(__file__).resolve().parents[2]
SECRET = "nginx-s3cr3t-4711"
"""An argument value that must appear in no log line."""
CONFIG = """\
database: sqlite:///{database}
auth:
  tokens:
    - principal: olga
      roles: [ops]
      token_env: SIGNOFF_TEST_TOKEN
rules:
  - ask: delete_pod
"""
HEADERS = {"Authorization": "Bearer t0ken"}


async def served_at(stdout: asyncio.StreamReader) -> str:
    """The URL a starting server prints on `stdout` (its logs go to stderr)."""
    while True:
        line = (await stdout.readline()).decode()
        assert line, "the process ended before serving"
        found = re.search(r"http://127(?:\.\d+){3}:\d+", line)
        if found:
            return found.group(0)


async def test_serve_logs_json_lines_with_the_approval_id_and_no_argument_value(tmp_path: Path):
    config = tmp_path / "signoff.yaml"
    config.write_text(CONFIG.format(database=tmp_path / "signoff.db"))
    env = os.environ | {
        "SIGNOFF_TEST_TOKEN": "t0ken",
        "SIGNOFF_TEST_SIDE_FILE": str(tmp_path / "side.txt"),
        "PYTHONPATH": str(ROOT),
    }
    process = await asyncio.create_subprocess_exec(
        *signoff_command(), "serve", "--config", str(config), "--port", "0",
        "--agents", "tests.server.serve_agents:agents", "--log-format", "json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    logged = asyncio.ensure_future(process.stderr.read())  # drained as it is written
    try:
        async with asyncio.timeout(HANG):
            url = await served_at(process.stdout)
            async with httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=HANG) as client:
                run = (
                    await client.post(
                        "/v1/threads/t/runs", params={"wait": 10},
                        json={"agent": "ops", "input": f"delete {SECRET}"},
                    )
                ).json()  # fmt: skip
                assert run["status"] == "paused", run
                [held] = run["pending_approvals"]
                decided = await client.post(
                    f"/v1/approvals/{held}/decision", json={"kind": "approve"}
                )
                assert decided.status_code == 200, decided.text
    finally:
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(HANG):
            await process.wait()
    text = (await logged).decode()

    lines = [json.loads(line) for line in text.splitlines()]  # every line is JSON
    assert lines, "nothing was logged"
    for line in lines:
        assert {"time", "level", "logger", "message"} <= line.keys(), line
    about = [line for line in lines if line.get("approval_id") == held]
    assert {line["logger"] for line in about} == {"uvicorn.access", "signoff.server.service"}
    [decision] = [line for line in about if line["logger"] == "signoff.server.service"]
    assert decision["message"] == f"{held}: approved by olga"
    assert decision["tool"] == "delete_pod"
    assert decision["run_id"] == run["id"] and decision["thread_id"] == "t"
    assert any(line.get("thread_id") == "t" and line.get("method") == "POST" for line in lines)
    assert SECRET not in text
    assert (tmp_path / "side.txt").read_text().count(SECRET) == 1  # the call did run


async def test_the_demo_logs_json_lines_too(tmp_path: Path):
    process = await asyncio.create_subprocess_exec(
        *signoff_command(), "demo", "--port", "0", "--data-dir", str(tmp_path / "demo"),
        "--log-format", "json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    logged = asyncio.ensure_future(process.stderr.read())
    try:
        async with asyncio.timeout(HANG):
            url = await served_at(process.stdout)
            async with httpx.AsyncClient(base_url=url, timeout=HANG) as client:
                assert (await client.get("/readyz")).status_code == 200
    finally:
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(HANG):
            await process.wait()

    lines = [json.loads(line) for line in (await logged).decode().splitlines()]
    assert any(line.get("path") == "/readyz" and line["status"] == 200 for line in lines)
