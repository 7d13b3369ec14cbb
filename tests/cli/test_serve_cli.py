"""What ``signoff serve`` says when it starts, and a decision from the command line through it on
an approval no longer pending (the banner with agents and tokens: tests/server/test_serve.py)."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC
from pathlib import Path

import pytest

from signoff import Policy, ToolCall
from signoff.cli.serve import shown_database
from signoff.gate import Gate
from signoff.store import open_store
from tests.conftest import fresh_postgres_database
from tests.deadline import HANG
from tests.processes import signoff_says, signoff_server, typed_here

CONFIG = "database: {database}\nrules:\n  - ask: delete_pod\n"


async def held(url: str, count: int) -> list[str]:
    async with open_store(url) as store:
        gate = Gate(Policy.from_dict({"rules": [{"ask": "delete_pod"}]}), store)
        calls = [ToolCall(id=f"c{i}", name="delete_pod", args={"n": i}) for i in range(count)]
        return [o.approval.id for o in await gate.check(calls) if o.approval is not None]


async def rest_of_banner(process: asyncio.subprocess.Process) -> list[str]:
    """The lines ``signoff serve`` prints after its first, up to the one saying how to stop."""
    assert process.stdout is not None
    lines: list[str] = []
    async with asyncio.timeout(HANG):
        while not lines or "(Ctrl+C stops)" not in lines[-1]:
            line = (await process.stdout.readline()).decode()
            assert line, "the server ended:\n" + "".join(lines)
            lines.append(line.rstrip("\n"))
    return lines


async def says(*args: str) -> tuple[int, str, str]:
    code, out, err = await signoff_says(*args)
    return code, out, " ".join(err.split())


async def decided_at(url: str, approval_id: str) -> str:
    async with open_store(url) as store:
        moment = (await store.get_approval(approval_id)).decided_at
    assert moment is not None
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


async def test_serve_says_its_inbox_its_database_that_it_has_no_agents_and_no_sign_in(
    tmp_path: Path,
):
    database = tmp_path / "served.db"
    config = tmp_path / "signoff.yaml"
    config.write_text(CONFIG.format(database=f"sqlite:///{database}"))
    async with signoff_server("serve", "--config", str(config), "--no-auth", "--port", "0") as (
        url,
        process,
    ):
        assert await rest_of_banner(process) == [
            f"  web inbox:  {url}/",
            f"  database:   {database} (SQLite)",
            "  agents:     no agents of its own: framework runs and the MCP gateway show up in "
            "the inbox once they connect to the same database",
            "  auth:       no sign-in: anyone who can reach this address can decide (--no-auth)",
            f"  decide in a terminal: {typed_here()} inbox --server {url}   (Ctrl+C stops)",
        ]
        # A decision on a call decided already says so, and fails, through the server as on
        # the database (tests/cli/test_decide_cli.py).
        first, second = await held(f"sqlite:///{database}", 2)
        assert await says("approve", first, "--url", url) == (
            0, f"{first}: approved by local (delete_pod)\n", "",
        )  # fmt: skip
        when = await decided_at(f"sqlite:///{database}", first)
        already = (
            f"error: {first} (delete_pod): already approved by local at {when}; nothing changed"
        )
        assert await says("approve", first, "--url", url) == (1, "", already)
        assert await says("reject", first[-8:], "too late", "--url", url) == (1, "", already)
        assert await says("reject", second, "no", "--url", url) == (
            0, f"{second}: rejected by local (delete_pod)\n", "",
        )  # fmt: skip


async def test_serve_shows_a_postgresql_database_without_its_password(tmp_path: Path):
    async with fresh_postgres_database() as url:
        secret = url.replace("://postgres@", "://postgres:s3cret@")  # the server trusts any
        assert secret != url
        config = tmp_path / "signoff.yaml"
        config.write_text(CONFIG.format(database=secret))
        env = {**os.environ, "SIGNOFF_TEST_TOKEN": "t0ken"}
        config.write_text(
            CONFIG.format(database=secret)
            + "auth:\n  tokens:\n    - principal: olga\n      token_env: SIGNOFF_TEST_TOKEN\n"
        )
        async with signoff_server("serve", "--config", str(config), "--port", "0", env=env) as (
            served,
            process,
        ):
            banner = await rest_of_banner(process)
        assert f"  database:   {url.replace('://postgres@', '://postgres:***@')}" in banner
        assert "s3cret" not in json.dumps(banner)
        assert "  auth:       a bearer token from the config's auth.tokens (1)" in banner
        assert banner[-1].endswith(f"inbox --server {served} --token T   (Ctrl+C stops)")


def test_a_database_is_shown_as_a_person_finds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    assert shown_database("sqlite:///signoff.db") == f"{tmp_path / 'signoff.db'} (SQLite)"
    assert shown_database("sqlite+aiosqlite:////var/x.db") == "/var/x.db (SQLite)"
    assert shown_database("postgresql://u:p@h/db") == "postgresql://u:***@h/db"
