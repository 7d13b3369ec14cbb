"""`signoff insights` and `signoff policy suggest` against real databases (SQLite and
PostgreSQL): the figures, and each suggestion with its evidence and its diff."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from signoff import Policy, PolicyEngine, ToolCall
from signoff.cli import app
from signoff.demo.folder import ADDRESS
from signoff.store import open_store
from tests.history import POLICY, write_history, write_rows
from tests.insights import histories
from tests.processes import signoff_says, signoff_server

runner = CliRunner()


@pytest.fixture
def database(store_url: str) -> str:
    """400 decisions of the last 20 days, and the policy that asked them in force."""

    async def fill() -> None:
        async with open_store(store_url) as store:
            now = datetime.now(UTC)
            await write_history(store, 400, now=now, days=20, grant_uses=3)
            version = Policy.from_dict(POLICY).version
            await store.save_policy(version, POLICY, actor="config", at=now)

    asyncio.run(fill())
    return store_url


def filled(store_url: str, history: Callable[[datetime], list[dict[str, Any]]]) -> str:
    """The database at `store_url` with `history` written in it, and the policy that asked it."""

    async def fill() -> None:
        async with open_store(store_url) as store:
            now = datetime.now(UTC)
            await write_rows(store, history(now))
            await store.save_policy(
                Policy.from_dict(POLICY).version, POLICY, actor="config", at=now
            )

    asyncio.run(fill())
    return store_url


def verdict(document: dict[str, Any], name: str, agent: str, **args: object) -> str:
    engine = PolicyEngine(Policy.from_dict(document))
    return engine.evaluate(ToolCall(id="c", name=name, agent=agent, args=args)).kind


def signoff(*args: str) -> Result:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_insights_prints_a_row_per_rule_tool_and_agent(database: str):
    result = signoff("insights", "--database", database)

    assert result.exit_code == 0, result.output
    for tool in ("send_email", "delete_file", "charge", "write_file", "read_file"):
        assert tool in result.stdout
    assert "alice " in result.stdout
    assert "3 suggestion(s); see them with `signoff policy suggest --days 30`" in result.stdout


def test_insights_as_json_is_what_the_api_answers(database: str):
    result = signoff("insights", "--database", database, "--days", "7", "--json")

    found = json.loads(result.stdout)
    assert found["days"] == 7
    assert {g["tool"] for g in found["groups"]} >= {"send_email", "charge"}
    assert sum(g["asked"] for g in found["groups"]) < 400  # only the last 7 of 20 days


def test_suggest_prints_each_suggestion_with_its_diff(database: str):
    result = signoff("policy", "suggest", "--database", database)

    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "`send_email` (agent `mailer`) with `to` like `<name>@example.com` was approved" in text
    assert "`delete_file` (agent `ops`) was rejected 9" in text
    assert "edits of `charge` (agent `billing`) always lower `amount` under 100" in text
    assert f"--- policy {Policy.from_dict(POLICY).version}\n+++ policy suggested\n" in text
    assert "+- id: suggested-deny-delete_file\n+  deny: delete_file\n+  agent: ops\n" in text


def test_suggest_for_a_policy_file_diffs_that_file(database: str, tmp_path: Path):
    config = tmp_path / "signoff.yaml"
    document = {**POLICY, "rules": [*POLICY["rules"], {"deny": "delete_file"}]}
    config.write_text(yaml.safe_dump(document))

    result = signoff("policy", "suggest", "--database", database, "--config", str(config))

    assert result.exit_code == 0, result.output
    assert "deny it?" not in result.stdout
    assert "+- id: suggested-allow-send_email\n" in result.stdout


@pytest.mark.parametrize("days", ["0", "-3", "3651", "week"])
def test_a_window_out_of_bounds_is_a_usage_error_naming_days(days: str, tmp_path: Path):
    result = signoff("insights", "--database", f"sqlite:///{tmp_path / 'none.db'}", "--days", days)

    assert result.exit_code == 2
    assert "--days" in result.output


def test_a_policy_file_needs_the_database_of_its_decisions(tmp_path: Path):
    config = tmp_path / "signoff.yaml"
    config.write_text(yaml.safe_dump(POLICY))

    result = signoff("policy", "suggest", "--config", str(config))

    assert result.exit_code == 2
    assert "--database" in result.output


async def test_both_commands_work_through_the_demo_running_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    address = tmp_path / "signoff" / "demo" / ADDRESS
    async with signoff_server("demo", "--port", "0") as (url, _):
        code, out, err = await signoff_says("insights", "--json", "--days", "3", cwd=tmp_path)
        assert (code, json.loads(out)["days"]) == (0, 3)
        assert err == (
            f"signoff insights: through the demo at {url} (from {address}; "
            "--server URL names another)\n"
        )
        code, out, err = await signoff_says("policy", "suggest", cwd=tmp_path)
        assert (code, out) == (0, "no suggestions from the decisions of the last 30 days\n")
        assert err == (
            f"signoff policy suggest: through the demo at {url} (from {address}; "
            "--url URL names another)\n"
        )
        code, _, err = await signoff_says("insights", "--url", url, "--days", "0", cwd=tmp_path)
        assert code == 2 and "--days" in err
    code, out, err = await signoff_says("insights", cwd=tmp_path)
    assert (code, out) == (2, "")
    assert err.startswith("signoff insights: no server given and no demo running here")


def test_a_folder_suggested_allows_one_name_in_it_not_the_traversal_a_person_rejected(
    store_url: str,
):
    database = filled(store_url, histories.tmp_files_and_a_traversal)

    printed = signoff("policy", "suggest", "--database", database).stdout
    [allow] = json.loads(signoff("insights", "--database", database, "--json").stdout)[
        "suggestions"
    ]

    document = allow["document"]
    assert verdict(document, "delete_file", "ops", path=histories.SHADOW) == "ask"
    for path in ("/tmp/a/b", "/tmp/..", "/tmp/.", "/tmp/", "/tmp/x\n", "/tmp/a\\..\\b"):
        assert verdict(document, "delete_file", "ops", path=path) == "ask", path
    assert verdict(document, "delete_file", "ops", path="/tmp/cache-new.2") == "allow"
    assert printed.startswith(
        "`delete_file` (agent `ops`) with `path` like `/tmp/<name>` was approved unchanged 50 "
        "of 50 times in 30 days, by 3 people, requested by 3 principals; it lets through none "
        "of the 1 call like these that people refused: allow it with that condition?\n"
        "checked: the policy with this rule judges the 50 calls behind it as said; it lets "
        "through 0 of the 1 call like them that people refused\n"
    )
    assert "+      regex: \\A/tmp/(?!\\.\\.?\\Z)[A-Za-z0-9._+-]+\\Z\n" in printed


def test_a_mail_domain_suggested_allows_one_address_not_the_pair_a_person_rejected(
    store_url: str,
):
    database = filled(store_url, histories.mail_and_a_smuggled_address)

    printed = signoff("policy", "suggest", "--database", database).stdout
    [allow] = json.loads(signoff("insights", "--database", database, "--json").stdout)[
        "suggestions"
    ]

    document = allow["document"]
    assert verdict(document, "send_email", "mailer", to=histories.SMUGGLED, subject="Hi") == "ask"
    for to in ("a@b@example.com", "a;b@example.com", "Boss <b@example.com>", "a b@example.com",
               "@example.com", "a@example.com\n", "a@example.com.evil.test"):  # fmt: skip
        assert verdict(document, "send_email", "mailer", to=to, subject="Hi") == "ask", to
    ann = "ann.lee+news@example.com"
    assert verdict(document, "send_email", "mailer", to=ann, subject="Hi") == "allow"
    assert printed.startswith(
        "`send_email` (agent `mailer`) with `to` like `<name>@example.com` was approved "
        "unchanged 50 of 50 times in 30 days, by 3 people, requested by 3 principals; it lets "
        "through none of the 1 call like these that people refused: allow it with that "
        "condition?\n"
    )
    assert "+      regex: \\A[A-Za-z0-9._+-]+@example\\.com\\Z\n" in printed


def test_no_rule_is_suggested_that_would_allow_a_call_a_person_edited_and_it_says_so(
    store_url: str,
):
    database = filled(store_url, histories.edited_into_the_folder)

    result = signoff("policy", "suggest", "--database", database)

    assert result.stdout.startswith(
        "no suggestions from the decisions of the last 30 days\n"
        "nearest to a suggestion:\n"
        "  allow `delete_file` (agent `ops`) with `path` like `/tmp/<name>`: 98.4% approved "
        "unchanged, needs 98%; 60 approvals, needs 20; 3 people deciding, needs 2; 3 principals "
        "requesting, needs 2; not offered: it would have allowed 1 of the 1 call like these that "
        "people refused (rejected, edited or answered with text)\n"
    )


@pytest.mark.parametrize(
    ("history", "short"),
    [
        (histories.one_approver, "1 person deciding, needs 2"),
        (histories.one_requester, "1 principal requesting, needs 2"),
    ],
)
def test_a_flood_of_approvals_from_one_voice_suggests_nothing_and_says_whose_voice_is_missing(
    store_url: str, history: Callable[[datetime], list[dict[str, Any]]], short: str
):
    database = filled(store_url, history)

    result = signoff("policy", "suggest", "--database", database)

    lines = result.stdout.splitlines()
    assert lines[:2] == [
        "no suggestions from the decisions of the last 30 days",
        "nearest to a suggestion:",
    ]
    assert lines[2].startswith("  allow `delete_file` (agent `ops`) with `path` like `/tmp/")
    assert short in lines[2]


def test_both_commands_say_how_near_each_candidate_came_when_none_is_suggested(store_url: str):
    database = filled(store_url, histories.mail_nearly_always_approved)
    nearest = (
        "allow `send_email` (agent `mailer`) with `to` like `<name>@example.com`: 95.7% "
        "approved unchanged, needs 98%; 22 approvals, needs 20; 3 people deciding, needs 2; "
        "3 principals requesting, needs 2"
    )

    suggested = signoff("policy", "suggest", "--database", database)
    told = signoff("insights", "--database", database)

    assert suggested.stdout == (
        "no suggestions from the decisions of the last 30 days\n"
        "nearest to a suggestion:\n"
        f"  {nearest}\n"
        "  deny `send_email` (agent `mailer`): 4.3% rejected, needs 95%; 23 decisions, needs 20\n"
    )
    assert told.stdout.endswith(
        f"no suggestions; the nearest: {nearest} (see the others with `signoff policy suggest "
        "--days 30`)\n"
    )
