"""CrewAI's `Crew` behind `SignoffHooks`, as the shared scenarios drive it: the real crew, a
`BaseLLM` playing the script through native function calling, and the scenarios' tools.

A CrewAI hook waits for a decision in memory: the crew's run is not saved anywhere, so it cannot
be stopped and resumed. `start` kicks the crew off in a thread of its own until it waits on a
person or finishes, and `resume` lets that same run go on to its next wait or its end — the
decision reaches it from signoff's store, as it does in an app."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from signoff.gate.external import ExternalRuns
from signoff.integrations.crewai import ORIGIN, SignoffHooks, ask_person, connect
from signoff.types import Approval
from tests.deadline import HANG
from tests.integrations.adapters import _base
from tests.integrations.adapters._base import AdapterBase, GoesOnByItself
from tests.integrations.crewai_app import crew_of, crewai_tools
from tests.integrations.scenarios import REQUESTER, Outcome, Script, final_text, tools

NO_PAYLOAD = (
    "CrewAI has no resume payload: its tool hook waits in memory for the decision, which only "
    "comes through signoff's store (inbox, REST API, CLI)"
)
NO_STATE = (
    "CrewAI keeps no saved state of a run waiting in a hook (it lives in the crew's memory): "
    "there is no waiting call a person could edit"
)


class _Waiting(dict[str, Approval]):
    """`SignoffHooks.waiting`, setting `asked` (from CrewAI's thread) each time a call begins to
    wait or changes while it does."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self.loop = loop
        self.asked = asyncio.Event()

    def __setitem__(self, key: str, value: Approval) -> None:
        super().__setitem__(key, value)
        self.loop.call_soon_threadsafe(self.asked.set)


@dataclass
class _Run:
    task: asyncio.Future[Any]
    hooks: SignoffHooks
    waiting: _Waiting


class CrewAIAdapter(GoesOnByItself, AdapterBase):
    name = "crewai"
    no_send = NO_PAYLOAD
    no_state = NO_STATE
    no_ask = ""
    no_resumer = (
        "a CrewAI run is not durable: it waits in memory for its decision and goes on by "
        "itself, so nothing resumes it (its kickoff returns the output)"
    )

    def __init__(self, runs: ExternalRuns, side_effects: Path) -> None:
        super().__init__(runs, side_effects)
        self._runs: dict[str, _Run] = {}

    async def start(self, thread: str, script: Script) -> Outcome:
        turns = [t if isinstance(t, str) else [(c.id, c.name, c.args) for c in t]
                 for t in script]  # fmt: skip
        functions = [*crewai_tools(tools(self.side_effects)), ask_person()]
        crew = crew_of(turns, functions, self._turns,
                       lambda text, results: final_text(text, results))  # fmt: skip
        hooks = SignoffHooks(self.runs, thread=thread, requested_by=REQUESTER)
        hooks.waiting = waiting = _Waiting(asyncio.get_running_loop())
        hooks.register()  # unregistered at close, after the run stopped
        task = asyncio.ensure_future(asyncio.to_thread(crew.kickoff))
        self._runs[thread] = _Run(task=task, hooks=hooks, waiting=waiting)
        return await self._next(thread)

    async def shown(self, thread: str) -> dict[str, int]:
        """The hooks' `waiting`: each call's approval as it stands."""
        return {i: a.version for i, a in self._runs[thread].waiting.items()}

    async def _next(self, thread: str) -> Outcome:
        """Where the run stands once it waits on a call nobody decided yet, or has finished."""
        run = self._runs[thread]

        async def waits() -> bool:
            return bool(run.waiting) and await self._undecided(thread)

        if await _base.stopped(run.task, run.waiting.asked, waits):
            return Outcome(paused=True)
        return Outcome(paused=False, text=str(run.task.result().raw))

    async def _undecided(self, thread: str) -> bool:
        store = self.runs.store
        pending = await self.runs.bridge.arun(store.list_approvals(status="pending"))
        return any(a.thread_id == thread for a in pending)

    async def close(self) -> None:
        # A run still waiting is let go — what waits now expires, and so would what it asks
        # next — then the hooks come out.
        for run in self._runs.values():
            run.hooks.timeout = 0
        gate, store = self.runs.gate, self.runs.store
        for approval in await self.runs.bridge.arun(store.list_approvals(status="pending")):
            await self.runs.bridge.arun(gate.expire([approval]))
        async with asyncio.timeout(HANG):
            await asyncio.gather(*(r.task for r in self._runs.values()), return_exceptions=True)
        for run in self._runs.values():
            run.hooks.unregister()


def opened(database: str, tmp_path: Path) -> contextlib.AbstractAsyncContextManager[CrewAIAdapter]:
    return _base.opened_with(
        connect, ORIGIN, database, lambda runs: CrewAIAdapter(runs, tmp_path / "side-effects.txt")
    )
