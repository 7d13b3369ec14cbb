"""`signoff serve --config FILE`: the config file, and real server processes — two replicas on
this machine's PostgreSQL among them."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from signoff.errors import PolicyError
from signoff.server.config import load_config
from tests.cli.test_serve_cli import rest_of_banner
from tests.deadline import HANG
from tests.processes import signoff_command, signoff_server, websocket_handshake

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


def test_runs_lease_is_a_duration_from_a_second_to_a_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("SIGNOFF_TEST_TOKEN", "t0ken")
    path = tmp_path / "signoff.yaml"
    path.write_text(CONFIG.format(database="sqlite:///x.db") + "runs: {lease: 90s}\n")
    assert load_config(path).run_lease.total_seconds() == 90
    for runs, says in (
        ("{lease: 500ms}", "9:15: runs.lease: runs.lease must be from 1s to 1d, not 0.5s"),
        ("{lease: soon}", "9:15: runs.lease: runs.lease must be a positive number of seconds"),
        ("{leese: 1m}", "unknown key 'leese' in runs; did you mean 'lease'?"),
    ):
        path.write_text(CONFIG.format(database="sqlite:///x.db") + f"runs: {runs}\n")
        with pytest.raises(PolicyError) as caught:
            load_config(path)
        assert says in str(caught.value) and str(caught.value).startswith(f"{path}:9:")


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
        "'arguments'? (expected one of: arguments, body, preview)",
    ]


def test_the_config_sets_how_long_a_preview_may_take_and_names_a_bad_one(tmp_path: Path):
    path = tmp_path / "limits.yaml"
    path.write_text("limits: {preview: 5s}\nrules: []\n")
    assert load_config(path).preview_seconds == 5.0
    path.write_text("rules: []\nlimits: {preview: 2m}\n")
    with pytest.raises(PolicyError) as caught:
        load_config(path)
    assert str(caught.value).splitlines() == [
        f"{path}:2:19: limits.preview: limits.preview must be more than 0 and at most 60s, "
        "not 120s",
    ]


def test_the_config_sets_the_inbox_s_undo_window_and_names_a_bad_one(tmp_path: Path):
    path = tmp_path / "web.yaml"
    path.write_text("rules: []\n")
    assert load_config(path).undo_seconds == 5
    path.write_text("web: {undo_seconds: 0}\nrules: []\n")
    assert load_config(path).undo_seconds == 0  # no undo: a decision is sent at once
    assert "web" not in load_config(path).document
    path.write_text("rules: []\nweb:\n  undo_seconds: 600\n  undo: 1\n")
    with pytest.raises(PolicyError) as caught:
        load_config(path)
    assert str(caught.value).splitlines() == [
        f"{path}:3:17: web.undo_seconds: web.undo_seconds must be from 0 (no undo) to 60, not 600",
        f"{path}:4:3: web.undo: unknown key 'undo' in web (expected one of: undo_seconds)",
    ]


def test_allowed_hosts_are_read_as_requests_name_them_and_mistakes_are_placed(tmp_path: Path):
    path = tmp_path / "hosts.yaml"
    path.write_text("allowed_hosts: [Inbox.Internal, '[FD00::5]', 10.0.0.7]\nrules: []\n")
    assert load_config(path).allowed_hosts == ("inbox.internal", "fd00::5", "10.0.0.7")
    assert "allowed_hosts" not in load_config(path).document  # the server's, not the policy's
    path.write_text(
        "rules: []\nallowed_hosts:\n  - ok.example\n  - https://inbox.internal\n  - '*'\n"
    )
    with pytest.raises(PolicyError) as caught:
        load_config(path)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith(
        f"{path}:4:5: allowed_hosts[1]: 'https://inbox.internal' is not a host name"
    ), lines
    assert lines[1].startswith(f"{path}:5:5: allowed_hosts[2]: '*' would let any web page"), lines


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
    async with asyncio.timeout(HANG):
        while True:
            run: dict[str, Any] = (await client.get(f"/v1/runs/{run_id}")).json()
            if run["status"] == status:
                return run
            await asyncio.sleep(0.05)


async def test_serve_needs_the_token_and_runs_the_configured_agents(server: Server, tmp_path: Path):
    async with (
        server(f"sqlite:///{tmp_path / 'one.db'}") as (url, process),
        httpx.AsyncClient(base_url=url) as client,
    ):
        banner = await rest_of_banner(process)  # (without agents or tokens: tests/cli)
        assert banner[2:4] == [
            "  agents:     ops",
            "  auth:       a bearer token from the config's auth.tokens (1)",
        ]
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
        (["--no-auth", "--allowed-host", "*"], "'*' would let any web page"),
        (["--no-auth", "--allowed-host", "http://x:80"], "'http://x:80' is not a host name"),
    ):
        process = await asyncio.create_subprocess_exec(
            *signoff_command(), "serve", "--config", str(config), *extra,
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
        async with asyncio.timeout(HANG):
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


async def test_serve_without_auth_answers_loopback_and_the_allowed_hosts_only(tmp_path: Path):
    """A real `signoff serve --no-auth`: a page on a rebound DNS name, same-origin with itself,
    can neither decide, nor set the policy, nor open the WebSocket."""
    config = tmp_path / "open.yaml"
    config.write_text(
        f"database: sqlite:///{tmp_path / 'open.db'}\nallowed_hosts: [inbox.internal]\n"
        "rules:\n  - ask: delete_pod\n"
    )
    env = os.environ | {
        "SIGNOFF_TEST_SIDE_FILE": str(tmp_path / "side.txt"),
        "PYTHONPATH": str(ROOT),
    }
    async with (
        signoff_server(
            "serve", "--config", str(config), "--agents", "tests.server.serve_agents:agents",
            "--port", "0", "--no-auth", "--allowed-host", "tunnel.example", env=env,
        ) as (url, _),
        httpx.AsyncClient(base_url=url) as client,
    ):  # fmt: skip
        port = url.rsplit(":", 1)[1]
        started = await client.post(
            "/v1/threads/t/runs",
            params={"wait": 10},
            json={"agent": "ops", "input": "delete web-1"},
        )
        [held] = started.json()["pending_approvals"]
        rebound = f"evil.example:{port}"
        evil = {"Host": rebound, "Origin": f"http://{rebound}"}
        for method, path, body in (
            ("POST", f"/v1/approvals/{held}/decision", {"kind": "approve"}),
            ("PUT", "/v1/policy", {"document": {"default": "allow"}}),
        ):
            refused = await client.request(method, path, json=body, headers=evil)
            assert refused.status_code == 421, refused.text
            assert "evil.example" in refused.json()["detail"]
        assert (await websocket_handshake(int(port), rebound, evil["Origin"])).endswith(
            "403 Forbidden"
        )
        assert (await client.get(f"/v1/approvals/{held}")).json()["status"] == "pending"
        assert (await client.get("/v1/policy")).json()["default"] == "ask"
        for name in ("inbox.internal", "tunnel.example", "localhost", "[::1]"):
            page = {"Host": f"{name}:{port}", "Origin": f"http://{name}:{port}"}
            assert (await client.get("/v1/approvals", headers=page)).status_code == 200, name
        assert (await websocket_handshake(int(port), f"localhost:{port}")).startswith(
            "HTTP/1.1 101"
        )
        decided = await client.post(f"/v1/approvals/{held}/decision", json={"kind": "approve"})
        assert decided.json()["decided_by"] == "local"
