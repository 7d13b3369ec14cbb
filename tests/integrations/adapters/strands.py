"""A Strands `Agent` with `SignoffHooks`, as the shared scenarios drive it: the real agent, its
`FileSessionManager` (a fresh agent restored from it for every step, as another process would),
a `Model` playing the script with the provider's call ids, and the scenarios' tools."""

from __future__ import annotations

import contextlib
import importlib.util
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("strands") is None:  # pragma: no cover
    pytest.skip("Strands Agents is not installed: pip install 'signoff[strands]'",
                allow_module_level=True)  # fmt: skip

from strands import Agent, tool
from strands.agent import AgentResult
from strands.models import Model
from strands.session import FileSessionManager

from signoff.errors import ConflictError
from signoff.gate.external import ExternalRuns, Resumed, Resumer
from signoff.integrations.strands import NAME, ORIGIN, SignoffHooks, ask_person, connect
from tests.integrations.adapters import _base
from tests.integrations.adapters._base import AdapterBase
from tests.integrations.scenarios import REQUESTER, Call, Outcome, Script, Seen, final_text, tools


class Played(Model):
    """Turn n (the model's answers so far) proposes `script[n]`, with the script's call ids; its
    final text carries the tool results it was given (`final_text`)."""

    def __init__(self, script: Script, turns: list[int]) -> None:
        self.script = list(script)
        self.turns = turns

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        turn = sum(m["role"] == "assistant" for m in messages)
        self.turns.append(turn)
        step = _base.step(self.script, turn)
        yield {"messageStart": {"role": "assistant"}}
        if isinstance(step, str):
            results = [(r["toolUseId"], _said(r)) for m in messages for b in m["content"]
                       if (r := b.get("toolResult"))]  # fmt: skip
            yield {"contentBlockDelta": {"delta": {"text": final_text(step, results)}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        for call in step:
            start = {"toolUse": {"toolUseId": call.id, "name": call.name}}
            yield {"contentBlockStart": {"start": start}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(call.args)}}}}
            yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


def _said(result: Any) -> str:
    """What a tool result told the model, as text (a person's edit's note left out)."""
    texts = [c["text"] for c in result["content"] if "text" in c]
    return texts[-1] if texts else json.dumps(result["content"])


class StrandsAdapter(AdapterBase):
    name = "strands"
    no_ask = ""

    def __init__(self, runs: ExternalRuns, sessions: Path, side_effects: Path) -> None:
        super().__init__(runs, side_effects)
        self.sessions = sessions
        self.hooks = SignoffHooks(runs)
        self._scripts: dict[str, Script] = {}
        self._results: dict[str, AgentResult] = {}

    async def close(self) -> None:
        pass

    def agent(self, thread: str) -> Agent:
        """The thread's agent as its session keeps it (a new one each time)."""
        manager = FileSessionManager(session_id=thread, storage_dir=str(self.sessions))
        functions = [tool(f) for f in tools(self.side_effects)]
        return Agent(model=Played(self._scripts[thread], self._turns), callback_handler=None,
                     tools=[*functions, ask_person()], hooks=[self.hooks],
                     session_manager=manager)  # fmt: skip

    def _outcome(self, thread: str, result: AgentResult) -> Outcome:
        self._results[thread] = result
        if result.stop_reason == "interrupt":
            return Outcome(paused=True)
        return Outcome(paused=False, text=str(result).strip())

    async def start(self, thread: str, script: Script) -> Outcome:
        self._scripts[thread] = script
        result = await self.agent(thread).invoke_async(
            "go", invocation_state={"user_id": REQUESTER}
        )
        return self._outcome(thread, result)

    async def _pause(self, thread: str) -> Any:
        runs = self.runs
        approvals = await runs.bridge.arun(runs.store.list_approvals())
        mine = [a.id for a in approvals if a.thread_id == f"{thread}/default"]
        return await runs.open_pause(mine) if mine else None

    async def resume(self, thread: str) -> Outcome:
        """As `SignoffHooks.resumer` does (on signoff's loop): the pause, once ready, claimed and
        continued."""
        pause = await self._pause(thread)
        if pause is not None:
            resumer = self.resumer(thread, on_resumed=lambda r: None)
            if await self.runs.bridge.arun(resumer.resume_ready(pause.id)):
                return self._outcome(thread, (await resumer.resumed(thread)).output)
        last = self._results[thread]
        paused = last.stop_reason == "interrupt" and await self._pause(thread) is not None
        return Outcome(paused=True) if paused else self._outcome(thread, last)

    def resumer(self, thread: str, *, on_resumed: Callable[[Resumed], Any]) -> Resumer:
        return self.hooks.resumer(self.agent, on_resumed=on_resumed)

    def text(self, output: Any) -> str | None:
        return str(output).strip()

    async def send(
        self, thread: str, approve: bool, *, user: str | None, seen: Seen = None
    ) -> Outcome:
        """The app's own ``agent(responses)``: a decision per interrupt, with the version it
        showed (or `seen`), as the invocation's user."""
        shown = self._shown(thread)
        responses = [
            {"interruptResponse": {"interruptId": i, "response": {
                "type": "approve" if approve else "reject",
                "version": (seen or {}).get(ours["approval"], ours["version"])}}}
            for i, ours in shown.items()
        ]  # fmt: skip
        state = {"user_id": user} if user is not None else {}
        with contextlib.suppress(ConflictError):  # refused: the calls still wait
            return self._outcome(thread, await self.agent(thread).invoke_async(
                responses, invocation_state=state))  # fmt: skip
        return Outcome(paused=True)

    def _shown(self, thread: str) -> dict[str, dict[str, Any]]:
        """signoff's part of each interrupt the agent stopped on, by interrupt id."""
        found = self._results[thread].interrupts or []
        return {i.id: i.reason["signoff"] for i in found if i.name == NAME}

    async def shown(self, thread: str) -> dict[str, int]:
        return {ours["approval"]: ours["version"] for ours in self._shown(thread).values()}

    async def tamper(self, thread: str, call: Call) -> None:
        """What an editor of the session's files does: the waiting call, same id, another call
        — in the conversation and in the interrupted state Strands resumes from."""
        for path in self.sessions.rglob("*.json"):
            data = json.loads(path.read_text())
            text = json.dumps(data)
            changed = _replaced(data, call)
            if json.dumps(changed) != text:
                path.write_text(json.dumps(changed))


def _replaced(node: Any, call: Call) -> Any:
    if isinstance(node, dict):
        use = node.get("toolUse")
        if isinstance(use, dict) and use.get("toolUseId") == call.id:
            return {**node, "toolUse": {**use, "name": call.name, "input": call.args}}
        return {k: _replaced(v, call) for k, v in node.items()}
    if isinstance(node, list):
        return [_replaced(v, call) for v in node]
    return node


@contextlib.asynccontextmanager
async def opened(database: str, tmp_path: Path) -> AsyncIterator[StrandsAdapter]:
    async with _base.opened_with(
        connect, ORIGIN, database,
        lambda runs: StrandsAdapter(runs, tmp_path / "sessions", tmp_path / "side-effects.txt"),
    ) as adapter:  # fmt: skip
        yield adapter
