"""`signoff audit verify|list` against a real store file."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from signoff import Approve, Policy, ToolCall
from signoff.cli import app
from signoff.gate import Gate
from signoff.store import open_store

runner = CliRunner()


@pytest.fixture
def database(tmp_path: Path) -> tuple[str, Path]:
    path = tmp_path / "signoff.db"
    url = f"sqlite:///{path}"

    async def fill() -> None:
        async with open_store(url) as store:
            gate = Gate(Policy.from_dict({}), store)
            [outcome] = await gate.check([ToolCall(id="c1", name="rm", args={"path": "/x"})])
            assert outcome.approval is not None
            await gate.decide(outcome.approval.id, Approve(), actor="alice")

    asyncio.run(fill())
    return url, path


def test_verify_passes_on_an_intact_chain(database: tuple[str, Path]):
    result = runner.invoke(app, ["audit", "verify", "--database", database[0]])
    assert (result.exit_code, result.stdout) == (0, "ok 2 audit entries, chain intact\n")


def test_verify_names_the_first_edited_entry_and_exits_1(database: tuple[str, Path]):
    with sqlite3.connect(database[1]) as connection:
        connection.execute("UPDATE audit SET actor = 'mallory' WHERE seq = 2")
    result = runner.invoke(app, ["audit", "verify", "--database", database[0]])
    assert result.exit_code == 1
    assert "broken at entry 2" in result.stderr


def test_verify_reads_the_database_from_the_environment(database: tuple[str, Path]):
    result = runner.invoke(app, ["audit", "verify"], env={"SIGNOFF_DATABASE_URL": database[0]})
    assert result.exit_code == 0


def test_list_prints_who_did_what_as_json_lines(database: tuple[str, Path]):
    result = runner.invoke(app, ["audit", "list", "--database", database[0], "--json"])
    assert result.exit_code == 0
    entries = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(e["seq"], e["actor"], e["action"]) for e in entries] == [
        (1, "agent", "verdict"),
        (2, "alice", "decision"),
    ]
    assert entries[1]["data"]["decision"] == {"kind": "approve"}


def test_a_missing_database_is_an_error_not_a_new_file(tmp_path: Path):
    from signoff.errors import StoreError

    missing = tmp_path / "nope.db"
    result = runner.invoke(app, ["audit", "verify", "--database", f"sqlite:///{missing}"])
    assert result.exit_code != 0
    assert isinstance(result.exception, StoreError)
    assert "there is no signoff database" in str(result.exception)
    assert not missing.exists()
