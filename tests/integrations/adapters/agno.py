"""Agno's `Agent` behind `SignoffAgent`, as the shared scenarios drive it: the real agent with
its own `SqliteDb`, a `Model` playing the script with the provider's call ids, and the
scenarios' tools."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.message import Message
from agno.models.response import ModelResponse
from agno.run.agent import RunOutput

from signoff.errors import ForbiddenError
from signoff.gate.external import ExternalRuns, Resumed, Resumer
from signoff.integrations.agno import ORIGIN, SignoffAgent, ask_person, connect
from tests.integrations.adapters import _base
from tests.integrations.adapters._base import AdapterBase
from tests.integrations.ag_app import Scripted
from tests.integrations.scenarios import (
    REQUESTER,
    Call,
    Outcome,
    Script,
    Seen,
    final_text,
    tools,
)


@dataclass
class _Model(Scripted):
    """The rig's model (tests/integrations/ag_app.py) playing a scenario's script: turn n (the
    assistant messages so far) proposes `script[n]`, with the script's ids."""

    id: str = "scenario"
    name: str = "Scenario"
    played: list[int] = field(default_factory=list)

    def _reply(self, messages: list[Message]) -> ModelResponse:
        turn = sum(m.role == "assistant" for m in messages)
        self.played.append(turn)
        step = _base.step(self.script, turn)
        if isinstance(step, str):
            results = [(m.tool_call_id or "", str(m.content)) for m in messages
                       if m.role == "tool"]  # fmt: skip
            return ModelResponse(role="assistant", content=final_text(step, results))
        calls = [{"id": c.id, "type": "function",
                  "function": {"name": c.name, "arguments": json.dumps(c.args)}}
                 for c in step]  # fmt: skip
        return ModelResponse(role="assistant", tool_calls=calls)


def _tools(side_effects: Path) -> list[Any]:
    return [*tools(side_effects), ask_person()]


class AgnoAdapter(AdapterBase):
    name = "agno"
    no_ask = ""

    def __init__(self, runs: ExternalRuns, folder: Path) -> None:
        super().__init__(runs, folder / "side-effects.txt")
        self.db = SqliteDb(db_file=str(folder / "agno.db"))
        self._agents: dict[str, SignoffAgent] = {}

    @staticmethod
    def _outcome(out: RunOutput | None) -> Outcome:
        assert out is not None
        if out.is_paused:
            return Outcome(paused=True)
        return Outcome(paused=False, text=str(out.content))

    async def _last(self, thread: str) -> RunOutput | None:
        return await self._agents[thread].agent.aget_last_run_output(session_id=thread)

    async def start(self, thread: str, script: Script) -> Outcome:
        model = _Model(script=list(script), played=self._turns)
        agent = Agent(name="assistant", id="assistant", model=model,
                      tools=_tools(self.side_effects), db=self.db)  # fmt: skip
        self._agents[thread] = SignoffAgent(agent, self.runs)
        out = await self._agents[thread].run("go", session_id=thread, user_id=REQUESTER)
        return self._outcome(out)

    async def resume(self, thread: str) -> Outcome:
        """As `SignoffAgent.resumer` does: the session's paused run, continued."""
        out = await self._agents[thread].resume(thread)
        return self._outcome(out or await self._last(thread))

    def resumer(self, thread: str, *, on_resumed: Callable[[Resumed], Any]) -> Resumer:
        return self._agents[thread].resumer(on_resumed=on_resumed)

    def text(self, output: Any) -> str | None:
        return self._outcome(output).text

    async def send(
        self, thread: str, approve: bool, *, user: str | None, seen: Seen = None
    ) -> Outcome:
        """DCAF's message deciding every waiting call, as the person the app authenticated,
        each with the version of its call the answer listed (signoff's key)."""
        agent = self._agents[thread]
        listed = (await self._listed(thread))["pending_requirements"]
        calls = [{"id": p["requirement_id"], "execute": approve,
                  "rejection_reason": None if approve else "no",
                  "version": p["version"] if seen is None else seen[p["approval_id"]]}
                 for p in listed]  # fmt: skip
        body = {"messages": [{"role": "user", "content": "", "data": {"tool_calls": calls}}]}
        with contextlib.suppress(ForbiddenError):  # nobody named: nothing is taken
            await agent.dcaf(body, session_id=thread, actor=user)
        return self._outcome(await self._last(thread))

    async def shown(self, thread: str) -> dict[str, int]:
        """DCAF's pending list: each call with its approval and version (signoff's keys)."""
        listed = (await self._listed(thread))["pending_requirements"]
        return {p["approval_id"]: p["version"] for p in listed}

    async def _listed(self, thread: str) -> dict[str, Any]:
        """The answer to a DCAF message that decides nothing: the paused session as it
        stands."""
        paused = await self._last(thread)
        assert paused is not None and paused.is_paused  # else the message would start a run
        body = {"messages": [{"role": "user", "content": ""}]}
        return await self._agents[thread].dcaf(body, session_id=thread)

    async def tamper(self, thread: str, call: Call) -> None:
        """What an editor of Agno's db does: the paused run's waiting call, same id, another
        tool or other arguments."""
        agent = self._agents[thread].agent
        session = await agent.aget_session(session_id=thread)
        assert session is not None and session.runs
        run = session.runs[-1]
        assert isinstance(run, RunOutput)
        executions = [r.tool_execution for r in run.requirements or []] + list(run.tools or [])
        for execution in executions:
            if execution is not None and execution.tool_call_id == call.id:
                execution.tool_name, execution.tool_args = call.name, dict(call.args)
        await asyncio.to_thread(self.db.upsert_session, session)


@contextlib.asynccontextmanager
async def opened(database: str, tmp_path: Path) -> AsyncIterator[AgnoAdapter]:
    async with _base.connected(connect, ORIGIN, database) as runs:
        yield AgnoAdapter(runs, tmp_path)
