"""One Agno agent behind signoff, the framework's `Rig` (tests/integrations/harness.py): built the
same way by its tests, the tests every framework shares and the worker processes they start: the
real `Agent` with its own `SqliteDb`, a `Model` of Agno's interface playing a script (offline),
tools that count every real execution in a file."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse
from agno.run.agent import RunOutput
from agno.run.base import RunStatus
from agno.tools import tool

from signoff import Policy
from signoff.gate.external import ExternalRuns
from signoff.integrations.agno import ORIGIN, SignoffAgent, connect
from tests.integrations.harness import (
    DEFAULT,
    asynced,
    listed,
    side_effects_in,
    turns_in,
)
from tests.integrations.harness import POLICY as RULES
from tests.integrations.harness import tools as counting

POLICY = Policy.from_dict(RULES)
THREAD = "s-1"
"""The session its tests run on."""
LOST_RACE: tuple[type[BaseException], ...] = ()
WAITS_ON_DENIED = True
"""A resume that lost the race finds the run taken, and nothing to resume."""
Script = list[Any]


@dataclass
class Scripted(Model):
    """Turn n (the number of assistant messages so far) proposes `script[n]`: tool calls, or a
    text that lists the tool results it was given. Every call of the model is noted in
    `turns`."""

    id: str = "scripted"
    name: str = "Scripted"
    provider: str = "signoff-tests"
    script: Script = field(default_factory=list)
    turns: Path | None = None
    numbered: bool = False
    """Number the calls of each response from 0 (``call_0``), as LiteLLM does when the
    provider gives none: the same ids again in every response."""

    def _reply(self, messages: list[Message]) -> ModelResponse:
        turn = sum(m.role == "assistant" for m in messages)
        if self.turns is not None:
            with self.turns.open("a") as f:
                f.write(f"{turn}\n")
        step = self.script[turn] if turn < len(self.script) else "done"
        if isinstance(step, str):
            results = {m.tool_call_id: str(m.content) for m in messages if m.role == "tool"}
            return ModelResponse(
                role="assistant", content=f"{step} {json.dumps(results, sort_keys=True)}"
            )
        calls = [
            {"id": f"call_{i}" if self.numbered else f"call_{turn}_{i}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(step)
        ]  # fmt: skip
        return ModelResponse(role="assistant", tool_calls=calls)

    def invoke(self, messages: list[Message], *args: Any, **kwargs: Any) -> ModelResponse:
        return self._reply(messages)

    async def ainvoke(self, messages: list[Message], *args: Any, **kwargs: Any) -> ModelResponse:
        return self._reply(messages)

    def invoke_stream(
        self, messages: list[Message], *args: Any, **kwargs: Any
    ) -> Iterator[ModelResponse]:
        yield self._reply(messages)

    async def ainvoke_stream(
        self, messages: list[Message], *args: Any, **kwargs: Any
    ) -> AsyncIterator[ModelResponse]:
        yield self._reply(messages)

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]


def build(script: Script, side_effects: Path, turns: Path, *, tools: list[Any] = ()) -> Agent:  # type: ignore[assignment]
    read_file, send_email, charge, read_secrets = counting(side_effects)
    return Agent(
        name="assistant",
        id="assistant",
        model=Scripted(script=script, turns=turns),
        tools=[
            read_file,
            asynced(send_email),
            charge,
            tool(requires_confirmation=True)(read_secrets),
            *tools,
        ],
        db=SqliteDb(db_file=str(side_effects.parent / "agno.db")),
        add_history_to_context=True,  # the model sees the session's earlier runs
        num_history_runs=100,
    )


def open_runs(database: str) -> ExternalRuns:
    return connect(POLICY, origin=ORIGIN, database=database)


def agent(runs: ExternalRuns, folder: Path, script: Script = DEFAULT) -> SignoffAgent:
    built = build(script, side_effects_in(folder), turns_in(folder))
    return SignoffAgent(built, runs, requested_by="alice")


async def start(agent: SignoffAgent, thread: str, text: str = "go") -> RunOutput:
    return await agent.run(text, session_id=thread)


async def resume(agent: SignoffAgent, thread: str) -> RunOutput | None:
    return await agent.resume(thread)


def asked(result: RunOutput) -> list[str]:
    """The calls the run waits on: its active requirements."""
    assert result.is_paused, result
    found = [r.tool_execution for r in result.active_requirements]
    return [e.tool_call_id or "" for e in found if e is not None]


def text(result: RunOutput | None) -> str:
    assert result is not None and result.status == RunStatus.completed, result
    return str(result.content)


async def last(agent: SignoffAgent, thread: str) -> dict[str, Any] | None:
    """What the model's final text listed, once the session's last run (in Agno's db) is
    complete."""
    found = await agent.agent.aget_last_run_output(session_id=thread)
    if found is None or found.status != RunStatus.completed:
        return None
    return listed(text(found))
