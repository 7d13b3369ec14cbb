"""Microsoft Agent Framework's `Agent` behind `SignoffAgent`, as the shared scenarios drive it:
the real agent, a chat client of the framework's own layers (`FunctionInvocationLayer` over
`BaseChatClient`, as its tests fake one) playing the script with the provider's call ids, the
scenarios' tools, and the thread's `AgentSession` where the integration keeps it — in signoff's
store."""

from __future__ import annotations

import contextlib
import importlib.util
import json
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("agent_framework") is None:  # pragma: no cover
    pytest.skip(
        "Microsoft Agent Framework is not installed: pip install 'signoff[agent-framework]'",
        allow_module_level=True,
    )

from agent_framework import (
    Agent,
    AgentResponse,
    BaseChatClient,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    Message,
)
from sqlalchemy import update

from signoff.gate.external import ExternalRuns, Resumed, Resumer
from signoff.integrations.agent_framework import ORIGIN, SignoffAgent, ask_person, connect
from signoff.integrations.agent_framework.agent import read
from signoff.store import schema
from tests.integrations.adapters import _base
from tests.integrations.adapters._base import AdapterBase
from tests.integrations.scenarios import REQUESTER, Call, Outcome, Script, Seen, final_text, tools


class ScriptedClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """Turn n (the model's answers in the conversation so far) plays `script[n]`, with the
    script's call ids; its final text ends with the tool results it was given."""

    def __init__(self, script: Script, turns: list[int]) -> None:
        super().__init__()
        self.script = script
        self.turns = turns

    def _inner_get_response(self, *, messages: Sequence[Message], stream: bool,
                            options: Any, **kwargs: Any) -> Any:  # fmt: skip
        turn = sum(m.role == "assistant" for m in messages)
        self.turns.append(turn)
        step = _base.step(self.script, turn)

        async def respond() -> ChatResponse:
            if isinstance(step, str):
                results = [(c.call_id, str(c.result)) for m in messages for c in m.contents
                           if c.type == "function_result"]  # fmt: skip
                contents = [Content.from_text(final_text(step, results))]
            else:
                contents = [Content.from_function_call(call_id=c.id, name=c.name, arguments=c.args)
                            for c in step]  # fmt: skip
            return ChatResponse(messages=[Message("assistant", contents)])

        return respond()


def agent_of(script: Script, turns: list[int], side_effects: Path) -> Agent[Any]:
    """The scenarios' agent: the framework's `Agent`, its model playing `script`."""
    return Agent(client=ScriptedClient(script, turns), name="assistant",
                 tools=[*tools(side_effects), ask_person()])  # fmt: skip


class AgentFrameworkAdapter(AdapterBase):
    name = "agent-framework"
    no_ask = ""

    def __init__(self, runs: ExternalRuns, side_effects: Path) -> None:
        super().__init__(runs, side_effects)
        self._agents: dict[str, SignoffAgent] = {}
        self._last: dict[str, AgentResponse] = {}

    async def start(self, thread: str, script: Script) -> Outcome:
        agent = agent_of(script, self._turns, self.side_effects)
        self._agents[thread] = SignoffAgent(agent, self.runs, requested_by=REQUESTER)
        self._last[thread] = await self._agents[thread].run("go", thread=thread)
        return await self._outcome(thread)

    async def resume(self, thread: str) -> Outcome:
        """As the resumer does (`SignoffAgent.resumer` calls the same resume)."""
        response = await self._agents[thread].resume(thread)
        if response is not None:
            self._last[thread] = response
        return await self._outcome(thread)

    async def send(
        self, thread: str, approve: bool, *, user: str | None, seen: Seen = None
    ) -> Outcome:
        """Answer each approval request the framework's way: its approval response, which
        carries the version it showed (or `seen`'s)."""
        answers = []
        for request in self._last[thread].user_input_requests:
            answer = request.to_function_approval_response(approve)
            shown = dict(answer.additional_properties["signoff"])
            if seen is not None:
                shown["version"] = seen[shown["approval"]]
            answer.additional_properties = {"signoff": shown}
            answers.append(answer)
        agent = self._agents[thread]
        self._last[thread] = await agent.run(Message("user", answers), thread=thread, user=user)
        return await self._outcome(thread)

    async def shown(self, thread: str) -> dict[str, int]:
        """The run's approval requests: each names its signoff approval and version."""
        shown = [r.additional_properties["signoff"] for r in self._last[thread].user_input_requests]
        return {s["approval"]: s["version"] for s in shown}

    def resumer(self, thread: str, *, on_resumed: Callable[[Resumed], Any]) -> Resumer:
        return self._agents[thread].resumer(on_resumed=on_resumed)

    def text(self, output: Any) -> str | None:
        return str(output.text)

    async def tamper(self, thread: str, call: Call) -> None:
        """Edit the thread's kept session (signoff's store), as an editor of that database
        would: the waiting call, same id, becomes `call` — in its message and its request."""
        entries = await self._history(thread)

        def edited(value: Any) -> Any:
            if isinstance(value, dict):
                if value.get("type") == "function_call" and value.get("call_id") == call.id:
                    return {**value, "name": call.name, "arguments": call.args}
                return {k: edited(v) for k, v in value.items()}
            return [edited(v) for v in value] if isinstance(value, list) else value

        table = schema.external_history
        store: Any = self.runs.store  # the SQL store's own transaction, as a DBA's edit
        for seq, entry in enumerate(entries):
            data = json.dumps(edited(json.loads(entry)))
            query = (
                update(table)
                .where(table.c.origin == ORIGIN, table.c.thread_id == thread, table.c.seq == seq)
                .values(data=data)
            )
            await self.runs.bridge.arun(store.run(lambda c, q=query: c.execute(q)))

    async def _history(self, thread: str) -> list[str]:
        return await self.runs.bridge.arun(self.runs.store.history(ORIGIN, thread))

    async def _outcome(self, thread: str) -> Outcome:
        """Where the thread stands, as signoff keeps it: waiting on requests, or the model's
        last text."""
        messages, _, requests = read(await self._history(thread))
        if requests:
            return Outcome(paused=True)
        last = [m for m in messages if m["role"] == "assistant"][-1]
        text = "".join(c.get("text", "") for c in last["contents"] if c["type"] == "text")
        return Outcome(paused=False, text=text)


@contextlib.asynccontextmanager
async def opened(database: str, tmp_path: Path) -> AsyncIterator[AgentFrameworkAdapter]:
    async with _base.connected(connect, ORIGIN, database) as runs:
        yield AgentFrameworkAdapter(runs, tmp_path / "side-effects.txt")
