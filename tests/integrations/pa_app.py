"""One Pydantic AI agent behind signoff, the framework's `Rig` (tests/integrations/harness.py):
built the same way by its tests, the tests every framework shares and the worker processes they
start: the real `Agent`, its own `FunctionModel` playing a script (offline), tools that count
every real execution in a file."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, Tool
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from signoff import Policy
from signoff.errors import ConflictError
from signoff.gate.external import ExternalRuns
from signoff.integrations.pydantic_ai import ORIGIN, SignoffAgent, connect
from tests.integrations.harness import DEFAULT, listed, side_effects_in, tools, turns_in
from tests.integrations.harness import POLICY as RULES

__all__ = ["DEFAULT", "THREAD", "build", "open_runs"]  # what other tests take from this app

POLICY = Policy.from_dict(RULES)
THREAD = "t-1"
LOST_RACE = (ConflictError,)
WAITS_ON_DENIED = False
STREAMED = "CallToolsNode"
"""What a streamed run yields on its way to the tools."""
Script = list[list[tuple[str, dict[str, Any]]] | str]


def scripted(script: Script, turns: Path) -> FunctionModel:
    """Turn n (the number of model responses so far) proposes `script[n]`: tool calls or a text
    that lists the tool results it was given. Every call of the model is noted in `turns`."""

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        with turns.open("a") as f:
            f.write(f"{turn}\n")
        step = script[turn] if turn < len(script) else "done"
        if isinstance(step, str):
            results = {
                p.tool_call_id: str(p.content)
                for m in messages
                if isinstance(m, ModelRequest)
                for p in m.parts
                if isinstance(p, ToolReturnPart)
            }
            return ModelResponse(parts=[TextPart(f"{step} {json.dumps(results, sort_keys=True)}")])
        return ModelResponse(
            parts=[
                ToolCallPart(name, args, tool_call_id=f"call_{turn}_{i}")
                for i, (name, args) in enumerate(step)
            ]
        )

    return FunctionModel(reply)


def build(script: Script, side_effects: Path, turns: Path, *,
          more: Sequence[Callable[..., Any]] = ()) -> Agent[None, str]:  # fmt: skip
    """The assistant, with the tools `more` beside the counting ones."""
    read_file, send_email, charge, read_secrets = tools(side_effects)
    return Agent(
        scripted(script, turns),
        name="assistant",
        tools=[read_file, send_email, charge, Tool(read_secrets, requires_approval=True), *more],
    )


def agent(runs: ExternalRuns, folder: Path, script: Script = DEFAULT, *,
          more: Sequence[Callable[..., Any]] = (), **options: Any) -> SignoffAgent:  # fmt: skip
    """`build`'s assistant behind signoff (`options` for `SignoffAgent`)."""
    built = build(script, side_effects_in(folder), turns_in(folder), more=more)
    return SignoffAgent(built, runs, requested_by="alice", **options)


async def start(agent: SignoffAgent, thread: str, text: str = "go") -> Any:
    return await agent.run(text, thread=thread)


async def resume(agent: SignoffAgent, thread: str) -> Any:
    return await agent.resume(thread)


async def stream(agent: SignoffAgent, thread: str) -> list[str]:
    """The kinds of what a streamed run yields: its graph's nodes."""
    return [type(node).__name__ async for node in agent.stream("go", thread=thread)]


def asked(result: Any) -> list[str]:
    """The calls the run waits on: its deferred requests."""
    assert isinstance(result.output, DeferredToolRequests), result
    return [c.tool_call_id for c in result.output.approvals]


def text(result: Any) -> str:
    return str(result.output)


async def last(agent: SignoffAgent, thread: str) -> dict[str, Any] | None:
    """What the model's final text listed, once the thread's kept history ends with it."""
    entries = await agent.runs.bridge.arun(agent.runs.store.history(ORIGIN, thread))
    *_, message = [m for m in map(json.loads, entries) if "kind" in m]
    texts = [p["content"] for p in message["parts"] if p["part_kind"] == "text"]
    return listed(texts[-1]) if message["kind"] == "response" and texts else None


def open_runs(database: str) -> ExternalRuns:
    return connect(POLICY, origin=ORIGIN, database=database)
