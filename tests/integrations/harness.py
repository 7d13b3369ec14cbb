"""What the tests of a framework that signoff keeps the threads of share: signoff's store on
SQLite or PostgreSQL, a side-effect file counting every real execution, a file noting each model
turn, the approvals as the inbox shows them, and worker processes that resume a thread."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from signoff import Approve
from signoff.gate.external import ExternalRuns
from tests.conftest import fresh_postgres_database
from tests.deadline import HANG

ROOT = Path(__file__).resolve().parents[2]
HANG_IN_TOOL = "SIGNOFF_TEST_HANG_IN_TOOL"
"""When set, the `charge` tool of a test agent records its execution, says ``inside the tool``
on standard output and hangs (for a test to kill the process there)."""

POLICY: dict[str, Any] = {
    "default": "ask",
    "rules": [
        {"allow": "read_*"},
        {"deny": "charge", "when": {"amount": {"gt": 1000}}},
        {"ask": "charge", "approvers": ["finance"]},
    ],
}
"""The policy the framework tests share: reads run, a large charge is denied, a charge needs
finance's approval, anything else asks."""

DEFAULT: list[Any] = [
    [
        ("read_file", {"path": "report.txt"}),
        ("send_email", {"to": "bob@example.com", "body": "hi"}),
        ("charge", {"amount": 5000}),
        ("charge", {"amount": 50}),
    ],
    "done",
]
"""The model's turns the framework tests play by default: one of each verdict, then text."""


@dataclass
class Harness:
    database: str
    runs: ExternalRuns
    side_effects: Path
    calls: Path

    def executions(self) -> list[str]:
        return lines(self.side_effects)

    def turns(self) -> list[int]:
        """The model's turns played, in order."""
        return [int(t) for t in lines(self.calls)]

    async def pending(self) -> dict[str, Any]:
        """The pending approvals, by ``tool {args}``."""
        found = await self.runs.bridge.arun(self.runs.store.list_approvals(status="pending"))
        return {f"{a.call.name} {json.dumps(a.call.args, sort_keys=True)}": a for a in found}

    async def decide(self, approval_id: str, decision: Any) -> None:
        gate = self.runs.gate
        await self.runs.bridge.arun(
            gate.decide(approval_id, decision, actor="bob", roles=["finance"])
        )

    async def approve_all(self) -> None:
        for approval in (await self.pending()).values():
            await self.decide(approval.id, Approve())


@contextlib.asynccontextmanager
async def opened(
    backend: str, tmp_path: Path, open_runs: Callable[[str], ExternalRuns]
) -> AsyncIterator[tuple[str, ExternalRuns, Path, Path]]:
    """signoff opened on `backend` (``sqlite``: a file in `tmp_path`; ``postgres``: a fresh
    database): the database's URL, the runs, the side-effect file and the model's turns file."""
    async with contextlib.AsyncExitStack() as stack:
        if backend == "sqlite":
            database = f"sqlite:///{tmp_path / 'signoff.db'}"
        else:
            database = await stack.enter_async_context(fresh_postgres_database())
        runs = await asyncio.to_thread(open_runs, database)
        try:
            yield database, runs, tmp_path / "side-effects.txt", tmp_path / "calls.txt"
        finally:
            await asyncio.to_thread(runs.close)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


# -- worker processes ------------------------------------------------------------------------


def worker(module: str, harness: Harness, thread: str, action: str,
           env: dict[str, str] | None = None) -> subprocess.Popen[str]:  # fmt: skip
    """``python -m module DATABASE SIDE_EFFECTS MODEL_CALLS THREAD start|resume``."""
    return subprocess.Popen(
        [sys.executable, "-m", module, harness.database, str(harness.side_effects),
         str(harness.calls), thread, action],
        cwd=ROOT, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


async def finished(process: subprocess.Popen[str]) -> None:
    _out, err = await asyncio.to_thread(process.communicate, timeout=HANG)
    assert process.returncode == 0, err


async def killed_inside_the_tool(victim: subprocess.Popen[str]) -> None:
    """SIGKILL `victim` once it says it is inside the tool."""
    try:
        assert victim.stdout is not None
        line = await asyncio.to_thread(victim.stdout.readline)  # EOF if it died before
        assert line == "inside the tool\n", victim.communicate()[1]
    finally:
        victim.send_signal(signal.SIGKILL)
        await asyncio.to_thread(victim.communicate)
