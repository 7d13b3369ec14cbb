"""One LlamaIndex agent behind signoff, the framework's `Rig` (tests/integrations/harness.py):
built the same way by its tests, the tests every framework shares and the worker processes they
start: the real `FunctionAgent`, LlamaIndex's own `MockFunctionCallingLLM` playing a script
(offline), tools that count every real execution in a file."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context

from signoff import Policy
from signoff.gate.external import ExternalRuns
from signoff.integrations.llama_index import ORIGIN, Ran, SignoffWorkflow, connect
from signoff.integrations.llama_index.workflow import _Serializer
from tests.integrations.harness import DEFAULT, listed, side_effects_in, tools, turns_in
from tests.integrations.harness import POLICY as RULES

__all__ = ["DEFAULT", "THREAD", "open_runs"]

POLICY = Policy.from_dict(RULES)
THREAD = "t-1"
LOST_RACE = ()
WAITS_ON_DENIED = False
Script = list[list[tuple[str, dict[str, Any]]] | str]


def scripted(script: Script, turns: Path) -> MockFunctionCallingLLM:
    """Turn n (the model's messages in its input so far) proposes `script[n]`: tool calls, or
    a text that lists the tool results it was given. Every call of the model is noted in
    `turns`."""

    def reply(messages: Sequence[ChatMessage], **_: Any) -> ChatMessage:
        turn = sum(m.role == MessageRole.ASSISTANT for m in messages)
        with turns.open("a") as f:
            f.write(f"{turn}\n")
        step = script[turn] if turn < len(script) else "done"
        if isinstance(step, str):
            results = {str(m.additional_kwargs.get("tool_call_id")): m.content
                       for m in messages if m.role == MessageRole.TOOL}  # fmt: skip
            return ChatMessage(role="assistant",
                               content=f"{step} {json.dumps(results, sort_keys=True)}")  # fmt: skip
        blocks = [ToolCallBlock(tool_call_id=f"call_{turn}_{i}", tool_name=name, tool_kwargs=args)
                  for i, (name, args) in enumerate(step)]  # fmt: skip
        return ChatMessage(role="assistant", blocks=list(blocks))

    return MockFunctionCallingLLM(response_generator=reply)


def agent(runs: ExternalRuns, folder: Path, script: Script = DEFAULT, *,
          more: Sequence[Callable[..., Any]] = (), **options: Any) -> SignoffWorkflow:  # fmt: skip
    """The assistant, the tools `more` beside the counting ones, behind signoff (`options` for
    `SignoffWorkflow`)."""
    functions = [*tools(side_effects_in(folder)), *more]
    built = FunctionAgent(name="assistant", llm=scripted(script, turns_in(folder)),
                          tools=[FunctionTool.from_defaults(f) for f in functions])  # fmt: skip
    return SignoffWorkflow(built, runs, requested_by="alice", **options)


async def start(agent: SignoffWorkflow, thread: str, text: str = "go") -> Ran:
    return await agent.run(text, thread=thread)


async def resume(agent: SignoffWorkflow, thread: str) -> Ran | None:
    """The resumed run, or None where nothing went on (the thread was kept as it was)."""
    before = await _entries(agent, thread)
    ran = await agent.resume(thread)
    return None if ran is None or await _entries(agent, thread) == before else ran


def asked(result: Ran) -> list[str]:
    """The calls the run waits on: its requests' call ids."""
    return sorted(e.call_id for e in result.asked)


def text(result: Ran) -> str:
    return str(result.output)


async def last(agent: SignoffWorkflow, thread: str) -> dict[str, Any] | None:
    """What the model's final text listed, once the thread's kept context ends with it."""
    kept = [json.loads(e) for e in await _entries(agent, thread) if e.startswith('{"ctx"')]
    if not kept or kept[-1]["waiting"]:
        return None
    ctx = Context.from_dict(agent.workflow, kept[-1]["ctx"], serializer=_Serializer())
    messages = (await ctx.store.get("memory")).get_all()
    return listed(str(messages[-1].content)) if messages else None


async def _entries(agent: SignoffWorkflow, thread: str) -> list[str]:
    return list(await agent.runs.bridge.arun(agent.runs.store.history(ORIGIN, thread)))


def open_runs(database: str) -> ExternalRuns:
    return connect(POLICY, origin=ORIGIN, database=database)
