"""`signoff serve --config FILE`: the config file, and real server processes — two replicas on
this machine's PostgreSQL among them."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from signoff.errors import PolicyError
from signoff.server.config import load_config
from tests.processes import signoff_server

ROOT = Path(__file__).resolve().parents[2]

CONFIG = """\
database: {database}
auth:
  tokens:
    - principal: olga
      roles: [ops]
      token_env: SIGNOFF_TEST_TOKEN
rules:
  - ask: delete_pod
"""


def test_a_config_file_is_the_policy_plus_the_servers_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("SIGNOFF_TEST_TOKEN", "t0ken")
    path = tmp_path / "signoff.yaml"
    path.write_text(CONFIG.format(database="sqlite:///x.db"))
    config = load_config(path)
    assert config.database == "sqlite:///x.db"
    assert config.tokens["t0ken"].name == "olga"
    assert config.tokens["t0ken"].roles == frozenset({"ops"})
    assert (config.policy.rules[0].effect, config.policy.rules[0].tools) == ("ask", ("delete_pod",))


def test_every_mistake_of_a_config_is_named_with_its_line_and_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("SIGNOFF_TEST_UNSET", raising=False)
    path = tmp_path / "bad.yaml"
    url_path = tmp_path / "url.yaml"
    url_path.write_text("rules: []\ndatabase: not a url\n")
    with pytest.raises(
        PolicyError, match=r"url\.yaml:2:11: database: database must be a database URL"
    ):
        load_config(url_path)
    path.write_text(
        "database: 7\n"
        "auth:\n"
        "  tokens:\n"
        "    - principal: olga\n"
        "      token_env: SIGNOFF_TEST_UNSET\n"
        "    - principal: bob\n"
        "      tokn: abc\n"
        "rules:\n"
        '  - ask: ["["]\n'
    )
    with pytest.raises(PolicyError) as caught:
        load_config(path)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith(f"{path}:1:11: database: database must be a non-empty string")
    assert (
        f"{path}:5:18: auth.tokens[0].token_env: the environment variable SIGNOFF_TEST_UNSET"
        in lines[1]
    )
    assert any("unknown key 'tokn' in a token; did you mean 'token'?" in line for line in lines)
    assert any(line.startswith(f"{path}:9:") and "rules[0]" in line for line in lines)


def test_the_config_sets_the_body_and_argument_limits_and_names_a_bad_one(tmp_path: Path):
    path = tmp_path / "limits.yaml"
    path.write_text("limits: {body: 2MiB, arguments: 512KB}\nrules: []\n")
    config = load_config(path)
    assert (config.body_bytes, config.argument_bytes) == (2 * 1024**2, 512_000)
    path.write_text("rules: []\nlimits:\n  body: lots\n  argument: 1\n")
    with pytest.raises(PolicyError) as caught:
        load_config(path)
    assert str(caught.value).splitlines() == [
        f"{path}:3:9: limits.body: limits.body must be a positive number of bytes or a size "
        "like '512KB', '16MiB'; not 'lots'",
        f"{path}:4:3: limits.argument: unknown key 'argument' in limits; did you mean "
        "'arguments'? (expected one of: arguments, body)",
    ]


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


Server = Callable[..., AbstractAsyncContextManager[tuple[str, asyncio.subprocess.Process]]]


@pytest.fixture
def server(tmp_path: Path) -> Server:
    """Start `signoff serve` on the config; yields its URL and process."""

    @asynccontextmanager
    async def start(
        database: str, *extra: str
    ) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
        config = tmp_path / "signoff.yaml"
        config.write_text(CONFIG.format(database=database))
        env = os.environ | {
            "SIGNOFF_TEST_TOKEN": "t0ken",
            "SIGNOFF_TEST_SIDE_FILE": str(tmp_path / "side.txt"),
            "PYTHONPATH": str(ROOT),
        }
        async with signoff_server(
            "serve", "--config", str(config), "--agents", "tests.server.serve_agents:agents",
            "--port", "0", *extra, env=env,
        ) as served:  # fmt: skip
            yield served

    return start


HEADERS = {"Authorization": "Bearer t0ken"}


async def wait_for(client: httpx.AsyncClient, run_id: str, status: str) -> dict[str, Any]:
    async with asyncio.timeout(20):
        while True:
            run: dict[str, Any] = (await client.get(f"/v1/runs/{run_id}")).json()
            if run["status"] == status:
                return run
            await asyncio.sleep(0.05)


async def test_serve_needs_the_token_and_runs_the_configured_agents(server: Server, tmp_path: Path):
    async with (
        server(f"sqlite:///{tmp_path / 'one.db'}") as (url, _),
        httpx.AsyncClient(base_url=url) as client,
    ):
        assert (await client.get("/v1/agents")).status_code == 401
        started = await client.post(
            "/v1/threads/t/runs", params={"wait": 10}, headers=HEADERS,
            json={"agent": "ops", "input": "delete nginx-123"},
        )  # fmt: skip
        run = started.json()
        assert run["status"] == "paused", run
        [held] = run["pending_approvals"]
        decided = await client.post(
            f"/v1/approvals/{held}/decision", json={"kind": "approve"}, headers=HEADERS
        )
        assert decided.json()["decided_by"] == "olga"
        client.headers.update(HEADERS)
        await wait_for(client, run["id"], "completed")
    assert len((tmp_path / "side.txt").read_text().splitlines()) == 1


async def test_serve_refuses_to_run_without_tokens_off_loopback(tmp_path: Path):
    config = tmp_path / "open.yaml"
    config.write_text("rules: [{ask: delete_pod}]\n")
    for extra, words in (
        ([], "configures no tokens"),
        (["--no-auth", "--host", "0.0.0.0"], "--no-auth serves loopback only"),
    ):
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "signoff", "serve", "--config", str(config), *extra,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        out, _ = await process.communicate()
        assert process.returncode == 2
        assert words in " ".join(out.decode().split()), out.decode()


async def test_two_replicas_on_postgresql_serve_as_one(
    server: Server, store_url: str, tmp_path: Path
):
    if not store_url.startswith("postgresql"):
        pytest.skip("replicas share a PostgreSQL database; SQLite is one process's")
    side = tmp_path / "side.txt"
    async with (
        server(store_url) as (url_a, process_a),
        server(store_url) as (url_b, _),
        httpx.AsyncClient(base_url=url_a, headers=HEADERS) as a,
        httpx.AsyncClient(base_url=url_b, headers=HEADERS) as b,
    ):
        # Started on A, approved on B: it completes once, and A's stream shows it all.
        run = (
            await a.post(
                "/v1/threads/t1/runs",
                params={"wait": 10},
                json={"agent": "ops", "input": "delete web-1"},
            )
        ).json()
        [held] = run["pending_approvals"]
        seen: list[str] = []

        async def follow() -> None:
            async with a.stream("GET", f"/v1/runs/{run['id']}/events") as stream:
                async for line in stream.aiter_lines():
                    if line.startswith("data: "):
                        seen.append(json.loads(line[6:])["type"])

        following = asyncio.create_task(follow())
        await b.post(f"/v1/approvals/{held}/decision", json={"kind": "approve"})
        await wait_for(b, run["id"], "completed")
        async with asyncio.timeout(10):
            await following
        assert seen.index("decision") < seen.index("tool_finished") < seen.index("completed")
        assert len(side.read_text().splitlines()) == 1

        # A dies (SIGKILL) while a run waits; approved on B, it still completes, once.
        run = (
            await a.post(
                "/v1/threads/t2/runs",
                params={"wait": 10},
                json={"agent": "ops", "input": "delete web-2"},
            )
        ).json()
        [held] = run["pending_approvals"]
        process_a.kill()
        await process_a.wait()
        await b.post(f"/v1/approvals/{held}/decision", json={"kind": "approve"})
        done = await wait_for(b, run["id"], "completed")
        assert done["messages"][-1]["content"] == "done: deleted web-2"
        assert [line.split()[1] for line in side.read_text().splitlines()] == ["web-1", "web-2"]
