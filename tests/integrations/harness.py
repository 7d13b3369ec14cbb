"""What the tests of a framework that signoff keeps the threads of share: signoff's store on
SQLite or PostgreSQL, a side-effect file counting every real execution, a file noting each model
turn, the approvals as the inbox shows them, the tools every framework's app wraps, and worker
processes that start or resume a thread.

Each framework's app module (``pa_app``, ``oa_app``, ``ag_app``, ``adk_app``) is its `Rig`: the
one place its agent is built, for its own tests, for the tests every framework shares
(tests/integrations/shared.py) and for the worker processes (tests/integrations/worker.py)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from signoff import Approve, Policy
from signoff.gate.external import ExternalRuns
from tests.conftest import fresh_postgres_database
from tests.deadline import HANG

ROOT = Path(__file__).resolve().parents[2]
HANG_IN_TOOL = "SIGNOFF_TEST_HANG_IN_TOOL"
"""When set, the `charge` tool of a test agent records its execution, says ``inside the tool``
on standard output and hangs (for a test to kill the process there)."""
IDEMPOTENT = "SIGNOFF_TEST_IDEMPOTENT_CHARGE"
"""When set, an app declares its `charge` tool idempotent (where its framework can say so)."""

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

EVERY = ["read_file report.txt", "send_email bob@example.com hi", "charge 50"]
"""What `DEFAULT` runs, in some order, once every call it asks about is approved."""


def tools(side_effects: Path) -> list[Callable[..., str]]:
    """read_file, send_email, charge and read_secrets as plain functions, for an app to hand its
    framework (read_secrets is the one a framework is told asks for approval itself): each real
    execution appends a line to `side_effects`."""

    def record(line: str) -> None:
        with side_effects.open("a") as f:
            f.write(line + "\n")

    def read_file(path: str) -> str:
        """Read a file."""
        record(f"read_file {path}")
        return f"contents of {path}"

    def send_email(to: str, body: str = "") -> str:
        """Send an email."""
        record(f"send_email {to} {body}")
        return f"sent to {to}"

    def charge(amount: int) -> str:
        """Charge the customer."""
        record(f"charge {amount}")
        if os.environ.get(HANG_IN_TOOL):
            print("inside the tool", flush=True)
            while True:
                time.sleep(1)  # the test kills this process here
        return f"charged {amount}"

    def read_secrets() -> str:
        """Read the secrets (the tool itself asks for approval)."""
        record("read_secrets")
        return "the secrets"

    return [read_file, send_email, charge, read_secrets]


def asynced(tool: Callable[..., str]) -> Callable[..., Awaitable[str]]:
    """`tool` as a coroutine function of the same name, signature and docstring."""

    @functools.wraps(tool)
    async def run(*args: Any, **kwargs: Any) -> str:
        return tool(*args, **kwargs)

    return run


def listed(text: str) -> dict[str, Any]:
    """The tool results a scripted model's final text lists, by call id."""
    found: dict[str, Any] = json.loads(text[text.index("{") :])
    return found


class Rig(Protocol):
    """One framework's app behind signoff, as its tests and worker processes drive it (an app
    module is one: `pa_app`, `oa_app`, `ag_app`, `adk_app`)."""

    ORIGIN: str
    POLICY: Policy
    THREAD: str
    """The thread (or session) its tests run on."""
    WAITS_ON_DENIED: bool
    """Whether the framework's paused run lists a call the policy denied among those it waits
    on (signoff answers it once the run goes on)."""
    LOST_RACE: tuple[type[BaseException], ...]
    """What a resume that lost the race to another resume of the same pause may raise (else it
    finds nothing waiting)."""

    def open_runs(self, database: str) -> ExternalRuns: ...

    def agent(self, runs: ExternalRuns, folder: Path, script: Any = ..., **options: Any) -> Any:
        """The app's agent behind signoff, its model playing `script`, its side effects and the
        model's turns noted in `folder`, started by alice."""
        ...

    async def start(self, agent: Any, thread: str, text: str = "go") -> Any:
        """Say `text` to `agent` on `thread`: the framework's result."""
        ...

    async def resume(self, agent: Any, thread: str) -> Any:
        """Continue `thread` after its calls were decided in signoff: the framework's result, or
        None where nothing went on."""
        ...

    def asked(self, result: Any) -> list[str]:
        """The calls a paused run waits on, by id, as the framework lists them."""
        ...

    def text(self, result: Any) -> str:
        """The model's final text in a finished run's result."""
        ...

    async def last(self, agent: Any, thread: str) -> dict[str, Any] | None:
        """The tool results the model's final text listed, as the thread is kept once it
        finished; None while it has not."""
        ...


def side_effects_in(folder: Path) -> Path:
    return folder / "side-effects.txt"


def turns_in(folder: Path) -> Path:
    return folder / "calls.txt"


@dataclass
class Harness:
    database: str
    runs: ExternalRuns
    side_effects: Path
    calls: Path
    rig: Any = None
    """The `Rig` of the framework under test, where the test file names one (``RIG``)."""

    @property
    def folder(self) -> Path:
        return self.side_effects.parent

    def agent(self, script: Any = DEFAULT, runs: ExternalRuns | None = None,
              **options: Any) -> Any:  # fmt: skip
        return self.rig.agent(runs or self.runs, self.folder, script, **options)

    def said(self, result: Any) -> dict[str, Any]:
        """The tool results the model's final text in `result` listed, by call id."""
        return listed(self.rig.text(result))

    async def finished(self) -> bool:
        """Whether the rig's thread has finished (a fresh agent reads it as it is kept)."""
        return await self.rig.last(self.agent(), self.rig.THREAD) is not None

    async def history(self) -> list[str]:
        """The rig's thread as signoff keeps it, where it does."""
        return await self.runs.bridge.arun(self.runs.store.history(self.rig.ORIGIN,
                                                                   self.rig.THREAD))  # fmt: skip

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

    async def approved_pause(self) -> str:
        """The pause that waits on every call asked about so far."""
        found = await self.runs.bridge.arun(self.runs.store.list_approvals())
        pause = await self.runs.open_pause([a.id for a in found])
        assert pause is not None
        return pause.id

    def worker(self, thread: str, action: str, env: dict[str, str] | None = None
               ) -> subprocess.Popen[str]:  # fmt: skip
        """A worker process of the rig's app that starts or resumes `thread`."""
        return worker(self.rig.__name__, self, thread, action, env)


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
            yield database, runs, side_effects_in(tmp_path), turns_in(tmp_path)
        finally:
            await asyncio.to_thread(runs.close)


async def until(done: Callable[[], Awaitable[bool]]) -> None:
    """Wait until `done` says so (polled)."""
    async with asyncio.timeout(HANG):
        while not await done():
            await asyncio.sleep(0.05)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


# -- worker processes ------------------------------------------------------------------------


def worker(app: str, harness: Harness, thread: str, action: str,
           env: dict[str, str] | None = None) -> subprocess.Popen[str]:  # fmt: skip
    """``python -m tests.integrations.worker APP DATABASE FOLDER THREAD start|resume``."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integrations.worker", app, harness.database,
         str(harness.folder), thread, action],
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
