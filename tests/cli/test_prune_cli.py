"""`signoff prune --config FILE` on both stores: what the config's retention: no longer keeps
goes, the audit log only behind a signed checkpoint, and `signoff audit verify` passes after
every prune."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from signoff.cli import app
from signoff.store import AuditRecord, open_store

runner = CliRunner()
KEY = "k3y-that-the-database-never-sees"
SIGNED: dict[str, str | None] = {"SIGNOFF_AUDIT_KEY": KEY}
OLD = datetime(2025, 1, 1, tzinfo=UTC)


def signoff(*args: str, env: dict[str, str | None] | None = None) -> Result:
    result = runner.invoke(app, list(args), env={"SIGNOFF_AUDIT_KEY": None} | (env or {}))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def add_entries(url: str, n: int, at: datetime) -> None:
    async def add() -> None:
        async with open_store(url) as store:
            await store.append_audit(
                [
                    AuditRecord(actor="alice", action="decided", subject=f"a{i}", at=at)
                    for i in range(n)
                ]
            )

    asyncio.run(add())


def seqs(url: str) -> list[int]:
    async def read() -> list[int]:
        async with open_store(url, migrate=False) as store:
            return [entry.seq for entry in await store.audit_log()]

    return asyncio.run(read())


@pytest.fixture
def config(store_url: str, tmp_path: Path) -> Path:
    path = tmp_path / "signoff.yaml"
    path.write_text(
        f"database: {store_url}\n"
        "retention: {audit: 365d, outbox: 7d, payloads: 30d}\n"
        "default: ask\n"
    )
    return path


def test_prune_removes_old_entries_behind_a_signed_checkpoint_and_the_log_still_verifies(
    store_url: str, config: Path
):
    add_entries(store_url, 6, OLD)
    add_entries(store_url, 2, datetime.now(UTC))
    made = signoff("audit", "checkpoint", "--database", store_url, env=SIGNED)
    assert made.exit_code == 0, made.output
    checkpoint = made.stdout.strip()

    prune = ("prune", "--config", str(config), "--checkpoint", checkpoint)
    dry = signoff(*prune, "--dry-run", env=SIGNED)
    assert dry.exit_code == 0, dry.output
    assert dry.stdout.splitlines() == [
        "audit:    would remove 6 entries (1 to 6) behind the checkpoint of entry 8",
        "outbox:   would remove 0 delivered notifications",
        "payloads: would remove the large payloads of 0 finished runs (0 blobs)",
        "dry run: nothing was removed",
    ]
    assert seqs(store_url) == list(range(1, 9))

    done = signoff(*prune, env=SIGNED)
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[0] == (
        "audit:    removed 6 entries (1 to 6) behind the checkpoint of entry 8"
    )
    assert seqs(store_url) == [7, 8]
    for since in ((), ("--since", checkpoint)):
        verified = signoff("audit", "verify", "--database", store_url, *since, env=SIGNED)
        assert verified.exit_code == 0, verified.output
        assert "entries 7 to 8; 1 to 6 pruned behind the checkpoint of" in verified.stdout

    # Again, behind the checkpoint kept from the last prune: nothing is old enough now.
    again = signoff("prune", "--config", str(config), env=SIGNED)
    assert again.exit_code == 0, again.output
    assert again.stdout.splitlines()[0] == (
        "audit:    nothing to remove (pruned up to entry 6; the rest is newer or not yet sent)"
    )
    assert signoff("audit", "verify", "--database", store_url, env=SIGNED).exit_code == 0


def test_prune_without_the_key_or_a_checkpoint_removes_nothing(store_url: str, config: Path):
    add_entries(store_url, 3, OLD)

    no_key = signoff("prune", "--config", str(config))
    assert no_key.exit_code == 2
    assert "pruning the audit log needs SIGNOFF_AUDIT_KEY" in no_key.stderr
    no_checkpoint = signoff("prune", "--config", str(config), env=SIGNED)
    assert no_checkpoint.exit_code == 2
    assert "no checkpoint to prune the audit log behind" in no_checkpoint.stderr
    not_one = signoff("prune", "--config", str(config), "--checkpoint", "yesterday", env=SIGNED)
    assert not_one.exit_code == 2
    assert "'yesterday' is not an audit checkpoint" in not_one.stderr
    assert seqs(store_url) == [1, 2, 3]


def test_a_config_without_retention_or_with_a_wrong_one_is_refused(tmp_path: Path):
    bare = tmp_path / "bare.yaml"
    bare.write_text("default: ask\n")
    result = signoff("prune", "--config", str(bare))
    assert result.exit_code == 2
    assert "has no retention: section, so nothing is to be pruned" in result.stderr

    from signoff.errors import PolicyError

    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("default: ask\nretention:\n  audit: forever\n  logs: 3d\n")
    result = runner.invoke(app, ["prune", "--config", str(wrong)])
    assert isinstance(result.exception, PolicyError)
    assert str(result.exception).splitlines() == [
        f"{wrong}:3:10: retention.audit: retention.audit must be a positive number of seconds "
        "or a duration like '30s', '5m', '1h30m', '2d'; not 'forever'",
        f"{wrong}:4:3: retention.logs: unknown key 'logs' in retention "
        "(expected one of: audit, outbox, payloads)",
    ]


def test_a_bound_given_for_only_some_kinds_keeps_the_others(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'signoff.db'}"
    add_entries(url, 3, OLD)
    path = tmp_path / "outbox-only.yaml"
    path.write_text(f"database: {url}\nretention: {{outbox: 1d}}\ndefault: ask\n")
    result = signoff("prune", "--config", str(path))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "audit:    kept (retention: names no bound for audit)",
        "outbox:   removed 0 delivered notifications",
        "payloads: kept (retention: names no bound for payloads)",
    ]
    assert seqs(url) == [1, 2, 3]


SERVING_SECRETS = (
    "SIGNOFF_TOKEN_OLGA", "SIGNOFF_OIDC_SECRET", "SIGNOFF_SESSION_KEY", "HOOK_SECRET",
    "SLACK_WEBHOOK_URL", "SLACK_SIGNING_SECRET", "SMTP_USERNAME", "SMTP_PASSWORD",
)  # fmt: skip
"""What only a server needs: its people's tokens, its sign-on's and its notifications' secrets."""


def serving_config(path: Path, url: str, *, more: str = "") -> Path:
    """A config at `path` on the database `url` that names every secret of `SERVING_SECRETS`."""
    path.write_text(
        f"database: {url}\n"
        "retention: {audit: 365d, outbox: 7d}\n"
        "auth:\n"
        "  tokens: [{principal: olga, roles: [ops], token_env: SIGNOFF_TOKEN_OLGA}]\n"
        "  oidc: {issuer: 'https://login.example.com', client_id: signoff,\n"
        "         client_secret_env: SIGNOFF_OIDC_SECRET, session_key_env: SIGNOFF_SESSION_KEY}\n"
        "notify:\n"
        "  webhooks: [{url: 'https://hooks.example.com/s', secret_env: HOOK_SECRET}]\n"
        "  slack: [{url_env: SLACK_WEBHOOK_URL, signing_secret_env: SLACK_SIGNING_SECRET}]\n"
        "  email: [{host: smtp.example.com, sender: s@example.com, to: [o@example.com],\n"
        "           username_env: SMTP_USERNAME, password_env: SMTP_PASSWORD}]\n"
        f"{more}"
        "rules: [{ask: delete_pod}]\n"
    )
    return path


def test_commands_that_serve_nothing_read_none_of_the_server_s_secrets(
    store_url: str, tmp_path: Path
):
    config = serving_config(tmp_path / "signoff.yaml", store_url)
    add_entries(store_url, 3, OLD)
    unset: dict[str, str | None] = dict.fromkeys(SERVING_SECRETS)
    made = signoff("audit", "checkpoint", "--database", store_url, env=SIGNED | unset)
    assert made.exit_code == 0, made.output
    checkpoint = made.stdout.strip()

    # The prune job holds SIGNOFF_AUDIT_KEY alone (docs/operations.md).
    pruned = signoff(
        "prune", "--config", str(config), "--checkpoint", checkpoint, env=SIGNED | unset
    )
    assert pruned.exit_code == 0, pruned.output
    assert pruned.stdout.splitlines()[0] == (
        "audit:    removed 3 entries (1 to 3) behind the checkpoint of entry 3"
    )
    # So do the other commands that read a config: only its policy.
    for command in (
        ["policy", "check", str(config)],
        ["policy", "explain", "--config", str(config), "--tool", "delete_pod"],
        ["policy", "suggest", "--config", str(config), "--database", store_url],
    ):
        result = signoff(*command, env=unset)
        assert result.exit_code == 0, (command, result.output)


def test_a_config_a_command_that_serves_nothing_reads_is_still_checked_whole(tmp_path: Path):
    from signoff.errors import PolicyError
    from signoff.server.config import load_config

    wrong = serving_config(
        tmp_path / "wrong.yaml",
        f"sqlite:///{tmp_path / 'signoff.db'}",
        more="web: {undo_seconds: 99}\n",
    )
    text = wrong.read_text()
    wrong.write_text(text.replace("secret_env: HOOK_SECRET", "secret_env: [HOOK_SECRET]"))
    unset: dict[str, str | None] = dict.fromkeys(SERVING_SECRETS)
    result = runner.invoke(app, ["prune", "--config", str(wrong)], env=unset)
    assert isinstance(result.exception, PolicyError)
    assert str(result.exception).splitlines() == [
        f"{wrong}:8:63: notify.webhooks[0].secret_env: secret_env must be a non-empty string, "
        "not ['HOOK_SECRET']",
        f"{wrong}:12:21: web.undo_seconds: web.undo_seconds must be from 0 (no undo) to 60, not 99",
    ]
    # What serves reads every secret, and says which is missing.
    with pytest.raises(PolicyError, match="the environment variable SIGNOFF_TOKEN_OLGA is not set"):
        load_config(serving_config(tmp_path / "right.yaml", "sqlite:///x.db"))
