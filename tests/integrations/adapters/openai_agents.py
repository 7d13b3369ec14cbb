"""The OpenAI Agents SDK's `Agent` and `Runner` behind `SignoffAgent`, as the shared scenarios
drive them: a `Model` of the SDK's interface playing the script with the provider's call ids
(and no response id, as a custom model may give), the scenarios' tools, and the paused run's
`RunState` where the integration keeps it — in signoff's store."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from agents import Agent, Model, ModelResponse, Usage, function_tool, set_tracing_disabled
from agents.testing import assistant_message, function_call
from sqlalchemy import update

from signoff.gate.external import ExternalRuns, Resumed, Resumer
from signoff.integrations.openai_agents import ORIGIN, SignoffAgent, ask_person, connect
from signoff.store import schema
from tests.integrations.adapters import _base
from tests.integrations.adapters._base import AdapterBase, unique_ids
from tests.integrations.scenarios import (
    REQUESTER,
    Call,
    Outcome,
    Script,
    final_text,
    tools,
)


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


class _Played(Model):
    """Turn n (the model responses in the conversation so far: its answers, and each run of
    consecutive calls) plays `script[n]`, with the script's call ids."""

    def __init__(self, script: Script, turns: list[int]) -> None:
        self.script = script
        self.turns = turns

    def _output(self, input: str | list[Any]) -> list[Any]:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else input
        kinds = [_field(i, "type") or _field(i, "role") for i in items]
        turn = sum(k == "assistant" or (k == "function_call" and (n == 0 or kinds[n - 1]
                                                                  != "function_call"))
                   for n, k in enumerate(kinds))  # fmt: skip
        self.turns.append(turn)
        step = _base.step(self.script, turn)
        if isinstance(step, str):
            results = [(_field(i, "call_id"), str(_field(i, "output"))) for i in items
                       if _field(i, "type") == "function_call_output"]  # fmt: skip
            return [assistant_message(final_text(step, results))]
        return [function_call(c.name, c.args, call_id=c.id) for c in step]

    async def get_response(self, system_instructions: Any, input: Any, *args: Any,
                           **kwargs: Any) -> ModelResponse:  # fmt: skip
        return ModelResponse(output=self._output(input), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def _agent(script: Script, turns: list[int], side_effects: Path) -> Agent[Any]:
    functions = [function_tool(f) for f in tools(side_effects)]
    return Agent(name="assistant", model=_Played(script, turns),
                 tools=[*functions, ask_person()])  # fmt: skip


class OpenAIAgentsAdapter(AdapterBase):
    name = "openai-agents"
    no_ask = ""
    no_send = (
        "the Agents SDK's own way to decide is RunState.approve/reject on a state its caller "
        "holds; SignoffAgent.resume takes none — it answers the kept RunState from the "
        "decisions in signoff's store, so decisions come only through signoff"
    )
    no_shown = (
        "the SDK's interruptions (ToolApprovalItem: the agent, the raw call item) have no "
        "room for signoff's approval or its version: an app reads them from signoff "
        "(runs.waiting(thread), the inbox), which shows them with every held call"
    )

    def __init__(self, runs: ExternalRuns, side_effects: Path) -> None:
        super().__init__(runs, side_effects)
        self._agents: dict[str, SignoffAgent] = {}

    async def start(self, thread: str, script: Script) -> Outcome:
        unique_ids(
            script,
            "the Agents SDK ends a run whose model reuses a call id within the run "
            "(ModelBehaviorError: 'Model reused a tool call ID for a different "
            "invocation'): this scenario's one run cannot be played",
        )
        agent = _agent(script, self._turns, self.side_effects)
        self._agents[thread] = SignoffAgent(agent, self.runs, requested_by=REQUESTER)
        await self._agents[thread].run("go", thread=thread)
        return await self._outcome(thread)

    async def resume(self, thread: str) -> Outcome:
        """As the resumer does (`SignoffAgent.resumer` calls the same resume)."""
        await self._agents[thread].resume(thread)
        return await self._outcome(thread)

    def resumer(self, thread: str, *, on_resumed: Callable[[Resumed], Any]) -> Resumer:
        return self._agents[thread].resumer(on_resumed=on_resumed)

    def text(self, output: Any) -> str | None:
        return str(output.final_output)

    async def tamper(self, thread: str, call: Call) -> None:
        """Edit the paused run's saved `RunState` JSON in the thread's kept entries (signoff's
        store), as an editor of that database would: the waiting call, same id, becomes
        `call` wherever the state names it."""
        entries = await self._entries(thread)
        [seq] = [n for n, e in enumerate(entries) if e.startswith('{"state"')][-1:]
        entry = json.loads(entries[seq])
        _replace(entry, call)
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

    async def _outcome(self, thread: str) -> Outcome:
        """Where the thread stands, as signoff keeps it: a paused run's state, or the model's
        last text."""
        kept = [json.loads(e) for e in await self._entries(thread)]
        last = [e for e in kept if "state" in e or "item" in e or "conversation" in e][-1]
        if "state" in last:
            return Outcome(paused=True)
        item = last["item"] if "item" in last else last["conversation"][-1]
        [part] = item["content"]
        return Outcome(paused=False, text=part["text"])


def _replace(value: Any, call: Call) -> None:
    """Make every function call item `call.id` in a state's JSON the call `call` — and drop
    the fingerprint the SDK keeps of it, as a tamperer would: a check, not a seal."""
    if isinstance(value, list):
        for item in value:
            _replace(item, call)
    elif isinstance(value, dict):
        if isinstance(value.get("tool_invocations"), dict):
            value["tool_invocations"].pop(call.id, None)
        if value.get("type") == "function_call" and value.get("call_id") == call.id:
            value["name"] = call.name
            value["arguments"] = json.dumps(call.args)
        raw = value.get("raw_item") or value.get("tool_call")
        if isinstance(raw, dict) and raw.get("call_id") == call.id:
            # What the SDK keeps beside the call item: the tool it resolved it to.
            if "tool_name" in value:
                value["tool_name"] = call.name
            for named in (value.get("tool_lookup_key"), value.get("tool")):
                if isinstance(named, dict):
                    named["name"] = call.name
                    if isinstance(named.get("lookupKey"), dict):
                        named["lookupKey"]["name"] = call.name
        for item in value.values():
            _replace(item, call)


@contextlib.asynccontextmanager
async def opened(database: str, tmp_path: Path) -> AsyncIterator[OpenAIAgentsAdapter]:
    set_tracing_disabled(True)  # offline: the SDK would export traces to OpenAI
    try:
        async with _base.connected(connect, ORIGIN, database) as runs:
            yield OpenAIAgentsAdapter(runs, tmp_path / "side-effects.txt")
    finally:
        set_tracing_disabled(False)
