"""`signoff audit verify|checkpoint|list` against real databases, tampered with by raw SQL.

Exit statuses: 0 intact, 1 tampering found, 2 the check cannot be made (a checkpoint that is
not one, or that the key does not match). Never a traceback.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from signoff import Approve, Policy, ToolCall
from signoff.cli import app
from signoff.gate import Gate
from signoff.store import open_store

runner = CliRunner()
KEY = "k3y-that-the-database-never-sees"
NO_KEY: dict[str, str | None] = {"SIGNOFF_AUDIT_KEY": None}
SIGNED: dict[str, str | None] = {"SIGNOFF_AUDIT_KEY": KEY}


@pytest.fixture
def database(store_url: str) -> str:
    """A store whose log has two entries: a verdict and alice's decision."""

    async def fill() -> None:
        async with open_store(store_url) as store:
            gate = Gate(Policy.from_dict({}), store)
            [outcome] = await gate.check([ToolCall(id="c1", name="rm", args={"path": "/x"})])
            assert outcome.approval is not None
            await gate.decide(outcome.approval.id, Approve(), actor="alice")

    asyncio.run(fill())
    return store_url


def tamper(url: str, *statements: str) -> None:
    async def run() -> None:
        async with open_store(url, migrate=False) as store:
            await store.run(lambda c: [c.exec_driver_sql(s) for s in statements])

    asyncio.run(run())


def audit(*args: str, env: dict[str, str | None] | None = None) -> Result:
    result = runner.invoke(app, ["audit", *args], env=NO_KEY | (env or {}))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_verify_passes_on_an_intact_chain_and_says_what_it_cannot_prove(database: str):
    result = audit("verify", "--database", database)
    assert (result.exit_code, result.stdout) == (
        0,
        "ok: chain intact (2 entries); without a checkpoint, removal of the newest entries "
        "cannot be detected — see `signoff audit checkpoint`\n",
    )


def test_verify_names_the_first_edited_entry_and_exits_1(database: str):
    tamper(database, "UPDATE audit SET actor = 'mallory' WHERE seq = 2")
    result = audit("verify", "--database", database)
    assert result.exit_code == 1
    assert result.stderr == (
        "broken: entry 2 was altered or moved: its content does not match its hash\n"
    )


def test_a_signed_checkpoint_catches_the_tail_cut_off_with_the_head(database: str):
    made = audit("checkpoint", "--database", database, env=SIGNED)
    assert made.exit_code == 0
    checkpoint = made.stdout.strip()
    assert checkpoint.startswith("signoff-audit-1.2.") and not checkpoint.endswith(".unsigned")
    assert "checkpoint of 2 entries, signed with SIGNOFF_AUDIT_KEY" in made.stderr
    assert audit("verify", "--since", checkpoint, "-d", database, env=SIGNED).exit_code == 0

    tamper(
        database,
        "DELETE FROM audit WHERE seq = 2",
        "UPDATE audit_head SET seq = 1, hash = (SELECT hash FROM audit WHERE seq = 1)",
    )
    plain = audit("verify", "--database", database)
    assert plain.exit_code == 0 and "removal of the newest entries cannot be detected" in (
        plain.stdout
    )
    anchored = audit("verify", "--since", checkpoint, "--database", database, env=SIGNED)
    assert anchored.exit_code == 1
    assert anchored.stderr.startswith(
        "broken: entry 2 is gone: the checkpoint of 20"
    ) and anchored.stderr.endswith(" says the log had 2 entries; it now has 1\n")


def test_without_a_key_the_checkpoint_is_unsigned_and_says_what_that_is_worth(database: str):
    made = audit("checkpoint", "--database", database)
    assert made.exit_code == 0 and made.stdout.strip().endswith(".unsigned")
    assert made.stderr == (
        "unsigned checkpoint of 2 entries (SIGNOFF_AUDIT_KEY is not set): it proves nothing "
        "unless kept where the database's writers cannot change it\n"
    )
    checked = audit("verify", "--since", made.stdout.strip(), "--database", database)
    assert checked.exit_code == 0
    assert checked.stdout.startswith("ok: chain intact (2 entries), and entries 1 to 2 are ")
    assert "the checkpoint is unsigned: it proves this only if it was kept where" in checked.stderr


def test_a_broken_log_is_not_checkpointed(database: str):
    tamper(database, "DELETE FROM audit WHERE seq = 1")
    result = audit("checkpoint", "--database", database, env=SIGNED)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        "not checkpointed, the log is broken: entry 1 is missing: the log starts at entry 2\n"
    )


def test_a_checkpoint_can_be_made_against_the_last_one(database: str):
    first = audit("checkpoint", "--database", database, env=SIGNED).stdout.strip()
    second = audit("checkpoint", "--since", first, "--database", database, env=SIGNED)
    assert second.exit_code == 0 and second.stdout.startswith("signoff-audit-1.2.")


def test_a_checkpoint_that_cannot_be_trusted_is_a_usage_error(database: str):
    signed = audit("checkpoint", "--database", database, env=SIGNED).stdout.strip()
    unsigned = audit("checkpoint", "--database", database).stdout.strip()
    forged = signed.replace("signoff-audit-1.2.", "signoff-audit-1.1.")
    cases: list[tuple[list[str], dict[str, str | None], str]] = [
        (["--since", "not-a-checkpoint"], SIGNED, "'not-a-checkpoint' is not an audit checkpoint"),
        (["--since", forged], SIGNED, "signature does not match SIGNOFF_AUDIT_KEY"),
        (["--since", signed], {"SIGNOFF_AUDIT_KEY": "another key of 16+"}, "does not match"),
        (["--since", signed], NO_KEY, "set SIGNOFF_AUDIT_KEY to the key it was signed with"),
        (["--since", unsigned], SIGNED, "the checkpoint is unsigned, but SIGNOFF_AUDIT_KEY is"),
        (["--since", signed], {"SIGNOFF_AUDIT_KEY": "short"}, "shorter than 16 characters"),
    ]
    for args, env, problem in cases:
        result = audit("verify", *args, "--database", database, env=env)
        assert (result.exit_code, result.stdout) == (2, ""), args
        assert result.stderr.startswith("error: ") and problem in result.stderr, result.stderr
    short = audit("checkpoint", "--database", database, env={"SIGNOFF_AUDIT_KEY": "short"})
    assert short.exit_code == 2 and "shorter than 16 characters" in short.stderr


def test_verify_and_list_never_fail_on_damaged_rows(database: str):
    tamper(
        database,
        f"UPDATE audit SET data = '{'[' * 100_000}' WHERE seq = 1",
        f"UPDATE audit SET at = {2**62}, data = 'not json' WHERE seq = 2",
        "DELETE FROM audit_head",
    )
    verified = audit("verify", "--database", database)
    assert (verified.exit_code, verified.stderr) == (
        1,
        "broken: entry 1 was altered or moved: its content does not match its hash; "
        "its data is nested too deep to read\n",
    )
    listed = audit("list", "--database", database, "--json")
    assert listed.exit_code == 0
    entries = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [(e["seq"], e["at"], e["data"], e["problem"]) for e in entries] == [
        (1, entries[0]["at"], {}, "its data is nested too deep to read"),
        (2, None, {}, f"its time {2**62} is out of range (not in the years 1 to 9999)"),
    ]
    table = audit("list", "--database", database, env={"COLUMNS": "300"})
    assert table.exit_code == 0 and "damaged: its data is nested too deep to read" in table.stdout


def test_verify_reads_the_database_from_the_environment(database: str):
    result = runner.invoke(app, ["audit", "verify"], env={"SIGNOFF_DATABASE_URL": database})
    assert result.exit_code == 0


def test_list_prints_who_did_what_as_json_lines(database: str):
    result = audit("list", "--database", database, "--json")
    assert result.exit_code == 0
    entries = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(e["seq"], e["actor"], e["action"], e["problem"]) for e in entries] == [
        (1, "agent", "verdict", None),
        (2, "alice", "decision", None),
    ]
    assert entries[1]["data"]["decision"] == {"kind": "approve"}


def test_a_missing_database_is_an_error_not_a_new_file(tmp_path: Path):
    missing = tmp_path / "nope.db"
    for command in ("verify", "checkpoint"):
        result = audit(command, "--database", f"sqlite:///{missing}")
        assert result.exit_code == 2  # it could not check: not the 1 of a broken log
        assert result.stderr.startswith("error: there is no signoff database at")
    assert not missing.exists()
