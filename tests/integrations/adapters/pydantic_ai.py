"""Pydantic AI's `Agent` behind `SignoffAgent`, as the shared scenarios drive it: the real agent,
its own `FunctionModel` playing the script with the provider's call ids, the scenarios' tools,
and the thread's message history where the integration keeps it — in signoff's store."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests
from pydantic_core import to_json
from sqlalchemy import update

from signoff.gate.external import ExternalRuns, Resumed, Resumer
from signoff.integrations.pydantic_ai import ORIGIN, SignoffAgent, ask_person, connect
from signoff.store import schema
from tests.integrations.adapters import _base
from tests.integrations.adapters._base import AdapterBase
from tests.integrations.scenarios import (
    REQUESTER,
    Call,
    Outcome,
    Script,
    final_text,
    tools,
)


def _model(script: Script, turns: list[int]) -> FunctionModel:
    """Turn n (the model responses in the thread so far) proposes `script[n]`, with the
    script's call ids."""

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        turns.append(turn)
        step = _base.step(script, turn)
        if isinstance(step, str):
            results = [(p.tool_call_id, str(p.content)) for m in messages
                       if isinstance(m, ModelRequest) for p in m.parts
                       if isinstance(p, ToolReturnPart)]  # fmt: skip
            return ModelResponse(parts=[TextPart(final_text(step, results))])
        return ModelResponse(parts=[ToolCallPart(c.name, c.args, tool_call_id=c.id) for c in step])

    return FunctionModel(reply)


def _agent(script: Script, turns: list[int], side_effects: Path) -> Agent[None, str]:
    return Agent(_model(script, turns), name="assistant",
                 tools=[*tools(side_effects), ask_person()])  # fmt: skip


class PydanticAIAdapter(AdapterBase):
    name = "pydantic-ai"
    no_ask = ""
    no_send = (
        "SignoffAgent.resume takes no DeferredToolResults: Pydantic AI's resume payload is "
        "built by signoff from the decisions in its store, so decisions come only through "
        "signoff"
    )

    def __init__(self, runs: ExternalRuns, side_effects: Path) -> None:
        super().__init__(runs, side_effects)
        self._agents: dict[str, SignoffAgent] = {}
        self._outputs: dict[str, Any] = {}
        """Each thread's last run's output: `DeferredToolRequests` while it waits."""

    async def start(self, thread: str, script: Script) -> Outcome:
        agent = _agent(script, self._turns, self.side_effects)
        self._agents[thread] = SignoffAgent(agent, self.runs, requested_by=REQUESTER)
        self._outputs[thread] = (await self._agents[thread].run("go", thread=thread)).output
        return await self._outcome(thread)

    async def resume(self, thread: str) -> Outcome:
        """As the resumer does (`SignoffAgent.resumer` calls the same resume)."""
        result = await self._agents[thread].resume(thread)
        if result is not None:
            self._outputs[thread] = result.output
        return await self._outcome(thread)

    def resumer(self, thread: str, *, on_resumed: Callable[[Resumed], Any]) -> Resumer:
        return self._agents[thread].resumer(on_resumed=on_resumed)

    def text(self, output: Any) -> str | None:
        return str(output.output)

    async def shown(self, thread: str) -> dict[str, int]:
        """The run's `DeferredToolRequests`: its metadata names each call's approval and
        version."""
        requests = self._outputs[thread]
        assert isinstance(requests, DeferredToolRequests)
        return {
            m["signoff"]["approval"]: m["signoff"]["version"] for m in requests.metadata.values()
        }

    async def tamper(self, thread: str, call: Call) -> None:
        """Edit the model response in the thread's kept history (signoff's store), as an editor
        of that database would: the waiting call, same id, becomes `call`."""
        entries = await self._history(thread)
        for seq in range(len(entries) - 1, -1, -1):
            parsed = json.loads(entries[seq])
            if parsed.get("kind") != "response":
                continue
            [message] = ModelMessagesTypeAdapter.validate_python([parsed])
            assert isinstance(message, ModelResponse)
            parts = [ToolCallPart(call.name, call.args, tool_call_id=call.id)
                     if isinstance(p, ToolCallPart) and p.tool_call_id == call.id else p
                     for p in message.parts]  # fmt: skip
            message.parts = parts
            data = to_json(message).decode()
            table = schema.external_history
            query = (
                update(table)
                .where(table.c.origin == ORIGIN, table.c.thread_id == thread, table.c.seq == seq)
                .values(data=data)
            )
            store: Any = self.runs.store  # the SQL store's own transaction, as a DBA's edit
            await self.runs.bridge.arun(store.run(lambda c, q=query: c.execute(q)))
            return
        raise AssertionError(f"no model response in thread {thread!r}")

    async def _history(self, thread: str) -> list[str]:
        return await self.runs.bridge.arun(self.runs.store.history(ORIGIN, thread))

    async def _outcome(self, thread: str) -> Outcome:
        """Where the thread stands, as signoff keeps it: waiting on calls, or the model's last
        text."""
        kept = [json.loads(e) for e in await self._history(thread)]
        messages = ModelMessagesTypeAdapter.validate_python([m for m in kept if "kind" in m])
        at = max(i for i, m in enumerate(messages) if isinstance(m, ModelResponse))
        last = messages[at]
        # Answered after the last response: an earlier response may have used the same ids.
        answered = {p.tool_call_id for m in messages[at:] if isinstance(m, ModelRequest)
                    for p in m.parts if isinstance(p, ToolReturnPart)}  # fmt: skip
        if any(isinstance(p, ToolCallPart) and p.tool_call_id not in answered
               for p in last.parts):  # fmt: skip
            return Outcome(paused=True)
        assert isinstance(last, ModelResponse)
        return Outcome(paused=False, text=last.text)


@contextlib.asynccontextmanager
async def opened(database: str, tmp_path: Path) -> AsyncIterator[PydanticAIAdapter]:
    async with _base.connected(connect, ORIGIN, database) as runs:
        yield PydanticAIAdapter(runs, tmp_path / "side-effects.txt")
