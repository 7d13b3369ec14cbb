"""docs/operations.md as written: its config and probe files read as it says, its shell
examples run in an empty folder (PostgreSQL's against this machine's server), and its log line
has the fields the formatter writes."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml

from signoff.server.config import load_config
from signoff.server.logs import JSONFormatter, fields_of
from signoff.server.probes import PROBES
from signoff.server.retention import RetentionSettings
from signoff.store import AuditRecord, open_store
from signoff.types import Approval, ToolCall
from tests.conftest import fresh_postgres_database
from tests.test_docs import ROOT, files

DOC = files(ROOT / "docs" / "operations.md")
KEY = "k3y-that-the-database-never-sees"


def run_shell(name: str, folder: Path, **env: str) -> str:
    """Run the doc's shell file `name` in `folder` with bash, stopping at the first failure."""
    (folder / name).write_text(DOC[name])
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    result = subprocess.run(
        ["bash", "-e", "-o", "pipefail", name], cwd=folder, capture_output=True, text=True,
        env=os.environ | {"PATH": path, "COLUMNS": "300"} | env, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def fill(url: str, *, old: int, new: int) -> None:
    async def add() -> None:
        async with open_store(url) as store:
            for count, at in ((old, datetime(2025, 1, 1, tzinfo=UTC)), (new, datetime.now(UTC))):
                records = [
                    AuditRecord(actor="alice", action="decided", subject=f"a{i}", at=at)
                    for i in range(count)
                ]
                await store.append_audit(records)

    asyncio.run(add())


def test_the_probe_file_probes_the_probes():
    probes = yaml.safe_load(DOC["probes.yaml"])
    paths = {probe["httpGet"]["path"] for probe in probes.values()}
    assert paths == PROBES


def test_the_config_file_reads_as_its_comments_say(tmp_path: Path):
    (tmp_path / "signoff.yaml").write_text(DOC["signoff.yaml"])
    settings = load_config(tmp_path / "signoff.yaml")
    assert settings.retention == RetentionSettings(
        audit=timedelta(days=365), outbox=timedelta(days=7), payloads=timedelta(days=30)
    )


def test_the_prune_example_runs_and_verify_says_what_the_doc_shows(tmp_path: Path):
    (tmp_path / "signoff.yaml").write_text(DOC["signoff.yaml"])
    fill(f"sqlite:///{tmp_path / 'signoff.db'}", old=120, new=10)

    said = run_shell("prune.sh", tmp_path, SIGNOFF_AUDIT_KEY=KEY).splitlines()

    assert (
        "audit:    would remove 120 entries (1 to 120) behind the checkpoint of entry 130" in said
    )
    assert "audit:    removed 120 entries (1 to 120) behind the checkpoint of entry 130" in said
    [shown] = re.findall(r"^# (ok: .*)$", DOC["prune.sh"], re.M)
    pattern = ".*".join(re.escape(part) for part in shown.split("..."))
    assert re.fullmatch(pattern, said[-1]), said[-1]


def test_the_sqlite_backup_example_backs_up_restores_and_verifies(tmp_path: Path):
    fill(f"sqlite:///{tmp_path / 'signoff.db'}", old=3, new=3)

    said = run_shell("backup-sqlite.sh", tmp_path)

    assert said.startswith("backed up ")
    assert said.splitlines()[-1].startswith("ok: chain intact (6 entries)")


def test_the_postgres_backup_example_dumps_restores_and_verifies(tmp_path: Path):
    async def databases() -> None:
        async with (
            fresh_postgres_database() as source,
            fresh_postgres_database(empty=True) as restored,
        ):
            await asyncio.to_thread(fill, source, old=3, new=4)
            said = await asyncio.to_thread(
                run_shell,
                "backup-postgres.sh",
                tmp_path,
                DATABASE_URL=source.replace("+asyncpg", ""),
                RESTORED_URL=restored.replace("+asyncpg", ""),
            )
            assert said.splitlines()[-1].startswith("ok: chain intact (7 entries)")

    asyncio.run(databases())


def test_the_log_line_has_the_fields_the_formatter_writes():
    shown = json.loads(DOC["log-line.json"])
    approval = Approval(
        id=shown["approval_id"],
        batch_id="b",
        call=ToolCall(id="c1", name=shown["tool"], args={"name": "nginx-123"}),
        rule=None,
        reason="asked",
        status="approved",
        requested_at=datetime.now(UTC),
        run_id=shown["run_id"],
        thread_id=shown["thread_id"],
    )
    record = logging.LogRecord(
        "signoff.server.service", logging.INFO, __file__, 1, shown["message"], None, None
    )
    record.__dict__.update(fields_of(approval))
    written = json.loads(JSONFormatter().format(record))
    assert written.keys() == shown.keys()
    assert {k: v for k, v in written.items() if k != "time"} == {
        k: v for k, v in shown.items() if k != "time"
    }
    assert datetime.fromisoformat(shown["time"]).tzinfo is not None


def test_the_replicas_config_reads_as_the_doc_says(tmp_path: Path):
    from signoff.store.postgres import SERVER_SETTINGS, TIMEOUTS

    (tmp_path / "replicas.yaml").write_text(DOC["replicas.yaml"])
    settings = load_config(tmp_path / "replicas.yaml")
    assert settings.run_lease == timedelta(minutes=1)
    assert settings.database is not None and "idle_in_transaction_session_timeout=10s" in (
        settings.database
    )
    # The table's defaults are the code's.
    assert TIMEOUTS == {"connect_timeout": 10.0, "command_timeout": 60.0}
    assert SERVER_SETTINGS == {
        "idle_in_transaction_session_timeout": "30s",
        "tcp_user_timeout": "30s",
    }
    assert "| `connect_timeout` | 10 (seconds) |" in (ROOT / "docs" / "operations.md").read_text()
