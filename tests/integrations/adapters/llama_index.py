"""A LlamaIndex `FunctionAgent` behind `SignoffWorkflow`, as the shared scenarios drive it: the real
agent workflow, LlamaIndex's own `MockFunctionCallingLLM` playing the script with the provider's
call ids, the scenarios' tools, and the paused run's `Context` where the integration keeps it —
in signoff's store."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core", reason="LlamaIndex is not installed: pip install "
                    "'signoff[llama-index]'")  # fmt: skip

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import HumanResponseEvent
from sqlalchemy import update

from signoff.gate.external import ExternalRuns, Resumed, Resumer
from signoff.integrations.llama_index import ORIGIN, Ran, SignoffWorkflow, ask_person, connect
from signoff.store import schema
from tests.integrations.adapters import _base
from tests.integrations.adapters._base import AdapterBase
from tests.integrations.scenarios import (
    REQUESTER,
    Call,
    Outcome,
    Script,
    Seen,
    final_text,
    tools,
)


def model(script: Script, turns: list[int]) -> MockFunctionCallingLLM:
    """Turn n (the model's messages in its input so far) plays `script[n]`, with the script's
    call ids; its final text says the tool results it was given."""

    def reply(messages: Sequence[ChatMessage], **_: Any) -> ChatMessage:
        turn = sum(m.role == MessageRole.ASSISTANT for m in messages)
        turns.append(turn)
        step = _base.step(script, turn)
        if isinstance(step, str):
            results = [(str(m.additional_kwargs.get("tool_call_id")), m.content or "")
                       for m in messages if m.role == MessageRole.TOOL]  # fmt: skip
            return ChatMessage(role="assistant", content=final_text(step, results))
        blocks = [ToolCallBlock(tool_call_id=c.id, tool_name=c.name, tool_kwargs=c.args)
                  for c in step]  # fmt: skip
        return ChatMessage(role="assistant", blocks=list(blocks))

    return MockFunctionCallingLLM(response_generator=reply)


def agent(script: Script, turns: list[int], side_effects: Path) -> FunctionAgent:
    functions = [FunctionTool.from_defaults(f) for f in tools(side_effects)]
    return FunctionAgent(
        name="assistant", llm=model(script, turns), tools=[*functions, ask_person()]
    )


class LlamaIndexAdapter(AdapterBase):
    name = "llama-index"
    no_ask = ""

    def __init__(self, runs: ExternalRuns, side_effects: Path) -> None:
        super().__init__(runs, side_effects)
        self._agents: dict[str, SignoffWorkflow] = {}
        self._ran: dict[str, Ran] = {}

    async def start(self, thread: str, script: Script) -> Outcome:
        wrapped = SignoffWorkflow(agent(script, self._turns, self.side_effects), self.runs,
                                  requested_by=REQUESTER)  # fmt: skip
        self._agents[thread] = wrapped
        return self._outcome(thread, await wrapped.run("go", thread=thread))

    async def resume(self, thread: str) -> Outcome:
        """As the resumer does (`SignoffWorkflow.resumer` calls the same resume)."""
        return self._outcome(thread, await self._agents[thread].resume(thread))

    async def send(
        self, thread: str, approve: bool, *, user: str | None, seen: Seen = None
    ) -> Outcome:
        """Answer each request the run wrote to the stream with a ``HumanResponseEvent``, as a
        LlamaIndex app does, naming the version it was shown."""
        shown = seen if seen is not None else await self.shown(thread)
        kind = "approve" if approve else "reject"
        responses = [HumanResponseEvent.model_validate({
            "approval": approval, "decision": {"type": kind, "version": v},
            **({"user": user} if user else {})}) for approval, v in shown.items()]  # fmt: skip
        return self._outcome(thread, await self._agents[thread].resume(thread, responses))

    async def shown(self, thread: str) -> dict[str, int]:
        """The run's ``InputRequiredEvent``s: each names its call's approval and version."""
        return {e.approval: e.version for e in self._ran[thread].asked}

    def resumer(self, thread: str, *, on_resumed: Callable[[Resumed], Any]) -> Resumer:
        return self._agents[thread].resumer(on_resumed=on_resumed)

    def text(self, output: Any) -> str | None:
        assert isinstance(output, Ran)
        return str(output.output.response.content)

    async def tamper(self, thread: str, call: Call) -> None:
        """Edit the paused run's `Context` in the thread's kept entries (signoff's store), as an
        editor of that database would: the waiting call, same id, becomes `call`."""
        entries = await self._entries(thread)
        seq = max(n for n, e in enumerate(entries) if e.startswith('{"ctx"'))
        entry = _replaced(json.loads(entries[seq]), call)
        table = schema.external_history
        query = (
            update(table)
            .where(table.c.origin == ORIGIN, table.c.thread_id == thread, table.c.seq == seq)
            .values(data=json.dumps(entry))
        )
        store: Any = self.runs.store  # the SQL store's own transaction, as a DBA's edit
        await self.runs.bridge.arun(store.run(lambda c: c.execute(query)))

    async def _entries(self, thread: str) -> list[str]:
        return await self.runs.bridge.arun(self.runs.store.history(ORIGIN, thread))

    def _outcome(self, thread: str, ran: Ran | None) -> Outcome:
        if ran is not None:
            self._ran[thread] = ran
        last = self._ran[thread]
        if last.waiting:
            return Outcome(paused=True)
        return Outcome(paused=False, text=str(last.output.response.content))


def _replaced(value: Any, call: Call) -> Any:
    """`value` with every tool call event `call.id` in it (JSON within JSON, as LlamaIndex
    serializes events) made the call `call`."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return json.dumps(_replaced(parsed, call))
    if isinstance(value, list):
        return [_replaced(v, call) for v in value]
    if isinstance(value, dict):
        if value.get("tool_id") == call.id and "tool_kwargs" in value:
            value = {**value, "tool_name": call.name, "tool_kwargs": call.args}
        return {k: _replaced(v, call) for k, v in value.items()}
    return value


@contextlib.asynccontextmanager
async def opened(database: str, tmp_path: Path) -> AsyncIterator[LlamaIndexAdapter]:
    async with _base.connected(connect, ORIGIN, database) as runs:
        yield LlamaIndexAdapter(runs, tmp_path / "side-effects.txt")
