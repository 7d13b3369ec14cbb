"""AdalFlow's `Agent` and `Runner` behind `SignoffPermissions`, as the shared scenarios drive it:
the real runner, a `ModelClient` playing the script one call per step, and the scenarios' tools.

AdalFlow waits for a decision inside the permission manager's `check_permission`, in memory: its
run is not saved anywhere, so it cannot be stopped and resumed. `start` runs the agent in a
background task until it waits on a person or finishes, and `resume` lets that same task go on
to its next wait or its end — the decision reaches it from signoff's store, as it does in an app.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.integrations import af_app  # noqa: F401 - before AdalFlow: see its docstring

from adalflow.components.agent.agent import Agent  # isort: skip
from adalflow.components.agent.runner import Runner  # isort: skip
from adalflow.core.func_tool import FunctionTool  # isort: skip
from adalflow.core.model_client import ModelClient  # isort: skip
from adalflow.core.types import GeneratorOutput, ModelType  # isort: skip

from signoff.gate.external import ExternalRuns
from signoff.integrations.adalflow import ORIGIN, SignoffPermissions, ask_person, connect
from tests.integrations.adapters import _base
from tests.integrations.adapters._base import AdapterBase, GoesOnByItself
from tests.integrations.scenarios import (
    REQUESTER,
    Call,
    Outcome,
    Script,
    final_text,
    tools,
)

NO_PAYLOAD = (
    "AdalFlow has no resume payload: its PermissionManager waits in memory for the decision, "
    "which only comes through signoff's store (inbox, REST API, CLI)"
)
NO_STATE = (
    "AdalFlow keeps no saved state of a run (it lives in the runner's memory): there is no "
    "waiting call a person could edit"
)


class _Model(ModelClient):  # type: ignore[misc]
    """Step n proposes `steps[n]`: one call (AdalFlow's planner proposes one per step, so a
    script turn of several calls is several steps), or the final text with the results the
    runner gave the model (its step history), under the script's call ids."""

    def __init__(self, steps: list[Call | str], turns: list[int]) -> None:
        super().__init__()
        self.steps = steps
        self.turns = turns
        self.played = 0
        self.history: Callable[[], list[Any]] = list

    def convert_inputs_to_api_kwargs(
        self, input: Any = None, model_kwargs: Any = None, model_type: Any = ModelType.UNDEFINED
    ) -> dict[str, Any]:
        return {"input": input}

    def _next(self) -> str:
        step = self.steps[self.played] if self.played < len(self.steps) else "done"
        self.turns.append(self.played)
        self.played += 1
        if isinstance(step, str):
            # AdalFlow numbers each step's call itself: the nth result is the nth call's.
            ids = [s.id for s in self.steps if isinstance(s, Call)]
            results = [(ids[i], str(s.observation)) for i, s in enumerate(self.history())]
            return json.dumps({"thought": "", "name": "finish", "kwargs": {},
                               "_is_answer_final": True,
                               "_answer": final_text(step, results)})  # fmt: skip
        return json.dumps({"thought": "", "name": step.name, "kwargs": step.args,
                           "_is_answer_final": False, "_answer": None})  # fmt: skip

    def call(self, api_kwargs: Any = None, model_type: Any = ModelType.UNDEFINED) -> str:
        return self._next()

    async def acall(self, api_kwargs: Any = None, model_type: Any = ModelType.UNDEFINED) -> str:
        return self._next()

    def parse_chat_completion(self, completion: Any) -> GeneratorOutput:
        return GeneratorOutput(data=None, raw_response=completion)


class _Requests(dict[str, Any]):
    """AdalFlow's `pending_approvals` of a permission manager: sets `asked` each time the run
    begins to wait on a person."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = asyncio.Event()

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self.asked.set()


def _tools(side_effects: Path) -> list[FunctionTool]:
    transfer, read_file, delete_all = tools(side_effects)

    async def atransfer(amount: int, to: str) -> str:  # an async tool: AdalFlow awaits it
        """Move money."""
        return transfer(amount, to)

    atransfer.__name__ = "transfer"
    return [*(FunctionTool(f) for f in (atransfer, read_file, delete_all)), ask_person()]


@dataclass
class _Run:
    task: asyncio.Task[Any]
    requests: _Requests


class AdalFlowAdapter(GoesOnByItself, AdapterBase):
    name = "adalflow"
    no_send = NO_PAYLOAD
    no_state = NO_STATE
    no_ask = ""
    no_resumer = (
        "an AdalFlow run is not durable: it waits in memory for its decision and goes on "
        "by itself, so nothing resumes it (its runner returns the output)"
    )

    def __init__(self, runs: ExternalRuns, tmp_path: Path) -> None:
        super().__init__(runs, tmp_path / "side-effects.txt")
        self.tmp_path = tmp_path
        self._runs: dict[str, _Run] = {}

    async def start(self, thread: str, script: Script) -> Outcome:
        steps: list[Call | str] = []
        for turn in script:
            steps.extend([turn] if isinstance(turn, str) else turn)
        model = _Model(steps, self._turns)
        agent = Agent(
            name="assistant",
            tools=_tools(self.side_effects),
            model_client=model,
            model_kwargs={"model": "scripted"},
            cache_path=str(self.tmp_path / "adalflow-cache"),  # never the home folder
            use_cache=False,
            max_steps=len(steps) + 1,
        )
        permissions = SignoffPermissions(self.runs, agent="assistant", thread=thread,
                                         requested_by=REQUESTER)  # fmt: skip
        requests = _Requests()
        permissions.pending_approvals = requests
        runner = Runner(agent=agent, permission_manager=permissions)
        model.history = lambda: runner.step_history
        task = asyncio.ensure_future(runner.acall(prompt_kwargs={"input_str": "go"}))
        self._runs[thread] = _Run(task=task, requests=requests)
        return await self._next(thread)

    async def shown(self, thread: str) -> dict[str, int]:
        """The permission manager's `pending_approvals`: each request's confirmation details
        name its approval and version."""
        return {
            request.confirmation_details["signoff"]["approval"]:
                request.confirmation_details["signoff"]["version"]
            for request in self._runs[thread].requests.values()
        }  # fmt: skip

    async def _next(self, thread: str) -> Outcome:
        """Where the run stands once it waits on a call nobody decided yet, or has finished."""
        run = self._runs[thread]

        async def waits() -> bool:
            return bool(run.requests) and await self._undecided(thread)

        if await _base.stopped(run.task, run.requests.asked, waits):
            return Outcome(paused=True)
        return Outcome(paused=False, text=str(run.task.result().answer))

    async def _undecided(self, thread: str) -> bool:
        store = self.runs.store
        pending = await self.runs.bridge.arun(store.list_approvals(status="pending"))
        return any(a.thread_id == thread for a in pending)

    async def close(self) -> None:
        await _base.cancelled(run.task for run in self._runs.values())


def opened(
    database: str, tmp_path: Path
) -> contextlib.AbstractAsyncContextManager[AdalFlowAdapter]:
    return _base.opened_with(
        connect, ORIGIN, database, lambda runs: AdalFlowAdapter(runs, tmp_path)
    )
