"""`signoff backup FILE`: a SQLite store copied whole while another thread keeps writing to it;
a PostgreSQL URL is pointed at pg_dump."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from signoff import Approve, Policy, ToolCall
from signoff.cli import app
from signoff.gate import Gate
from signoff.store import open_store
from signoff.store.migrations import LATEST, schema_version
from tests.deadline import HANG

runner = CliRunner()


class Writer:
    """Holds and approves calls on its own thread until stopped."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.stop = threading.Event()
        self.written = threading.Semaphore(0)
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        try:
            asyncio.run(self._write())
        except BaseException as exc:  # reported by the test
            self.failure = exc

    async def _write(self) -> None:
        async with open_store(self.url) as store:
            gate = Gate(Policy.from_dict({}), store)
            n = 0
            while not self.stop.is_set():
                n += 1
                call = ToolCall(id=f"c{n}", name="rm", args={"path": f"/tmp/{n}"})
                [outcome] = await gate.check([call])
                assert outcome.approval is not None
                await gate.decide(outcome.approval.id, Approve(), actor="alice")
                self.written.release()


def test_a_backup_taken_while_approvals_are_written_opens_current_and_verifies(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'signoff.db'}"
    writer = Writer(url)
    writer.thread.start()
    copies = []
    try:
        for n in range(3):
            assert writer.written.acquire(timeout=HANG), "the writer wrote nothing"
            copy = tmp_path / "backups" / f"copy-{n}.db"
            copy.parent.mkdir(exist_ok=True)
            result = runner.invoke(app, ["backup", str(copy), "--database", url])
            assert result.exit_code == 0, result.output
            assert result.stdout.startswith(f"backed up {tmp_path / 'signoff.db'} to {copy} (")
            copies.append(copy)
    finally:
        writer.stop.set()
        writer.thread.join(HANG)
    assert writer.failure is None
    assert sorted(p.name for p in (tmp_path / "backups").iterdir()) == [
        "copy-0.db",
        "copy-1.db",
        "copy-2.db",
    ]  # no partial copy left behind

    async def check(copy: Path) -> int:
        async with open_store(f"sqlite:///{copy}", migrate=False) as store:
            assert await store.run(schema_version, write=False) == LATEST
            report = await store.verify_audit()
            assert report.ok, report.reason
            approvals = await store.list_approvals(limit=10_000)
            # Each hold and each decision is one transaction: at most the last call is held.
            pending = [a for a in approvals if a.status == "pending"]
            assert len(pending) <= 1
            assert {a.status for a in approvals} <= {"approved", "pending"}
            return len(approvals)

    counts = [asyncio.run(check(copy)) for copy in copies]
    assert counts[0] >= 1 and counts == sorted(counts)


def test_a_backup_replaces_the_last_one_whole_and_is_no_more_readable_than_the_database(
    tmp_path: Path,
):
    url = f"sqlite:///{tmp_path / 'signoff.db'}"
    asyncio.run(create(url))  # an empty store is backed up too
    (tmp_path / "signoff.db").chmod(0o600)
    copy = tmp_path / "copy.db"
    copy.write_text("the previous backup")
    copy.chmod(0o644)
    result = runner.invoke(app, ["backup", str(copy), "--database", url])
    assert result.exit_code == 0, result.output
    assert copy.read_bytes().startswith(b"SQLite format 3\x00")
    assert copy.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("database", "message"),
    [
        ("postgresql+asyncpg://signoff:secret@db/signoff", "is a PostgreSQL database: back it up"),
        ("sqlite:///nowhere/signoff.db", "there is no SQLite database to back up at"),
        ("mysql://db/signoff", "is not a database URL signoff backs up"),
    ],
)
def test_what_cannot_be_backed_up_here_is_refused_with_what_to_do(
    tmp_path: Path, database: str, message: str
):
    result = runner.invoke(app, ["backup", str(tmp_path / "copy.db"), "--database", database])
    assert result.exit_code == 2
    assert message in result.stderr
    assert "secret" not in result.stderr
    assert not (tmp_path / "copy.db").exists()


def test_the_database_itself_is_not_overwritten(tmp_path: Path):
    database = tmp_path / "signoff.db"
    asyncio.run(create(f"sqlite:///{database}"))
    result = runner.invoke(app, ["backup", str(database), "--database", f"sqlite:///{database}"])
    assert result.exit_code == 2
    assert "is the database itself" in result.stderr


async def create(url: str) -> None:
    async with open_store(url):
        pass
