"""Google ADK's `Runner` with `SignoffPlugin`, as the shared scenarios drive it: the real
`LlmAgent`, `App` and SQLite session service, a `BaseLlm` playing the script with the provider's
call ids, and the scenarios' tools."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.function_tool import FunctionTool
from google.genai import types

from signoff.gate.external import ExternalRuns, Resumed, Resumer
from signoff.integrations.google_adk import (
    CONFIRMATION,
    ORIGIN,
    SignoffPlugin,
    ask_person,
    connect,
)
from tests.integrations.adapters import _base
from tests.integrations.adapters._base import AdapterBase
from tests.integrations.scenarios import (
    REQUESTER,
    Call,
    NotSupported,
    Outcome,
    Script,
    Seen,
    final_text,
    tools,
)

APP = "scenarios"


class _Model(BaseLlm):
    """Turn n (the model's answers so far) proposes `script[n]`, with the script's call ids."""

    model: str = "scenario"
    script: list[Any]
    turns: Any  # the adapter's own list

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        contents = llm_request.contents
        turn = sum(c.role == "model" and any(p.function_call or p.text for p in c.parts or [])
                   for c in contents)  # fmt: skip
        self.turns.append(turn)
        step = _base.step(self.script, turn)
        if isinstance(step, str):
            results = [
                (p.function_response.id or "", _said(p.function_response.response or {}))
                for c in contents
                for p in c.parts or []
                if p.function_response and p.function_response.name != CONFIRMATION
            ]
            text = final_text(step, results)
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
            return
        parts = [
            types.Part(function_call=types.FunctionCall(id=c.id, name=c.name, args=c.args))
            for c in step
        ]
        yield LlmResponse(content=types.Content(role="model", parts=parts))


def _said(response: dict[str, Any]) -> str:
    """What a tool's response told the model, as text."""
    for field in ("result", "error"):
        if isinstance(response.get(field), str):
            return str(response[field])
    return json.dumps(response, sort_keys=True)


def _tools(side_effects: Path) -> list[BaseTool]:
    return [*(FunctionTool(f) for f in tools(side_effects)), ask_person()]


class GoogleAdkAdapter(AdapterBase):
    name = "google-adk"
    no_ask = ""

    def __init__(self, runs: ExternalRuns, sessions: Path, side_effects: Path) -> None:
        super().__init__(runs, side_effects)
        self.sessions = sessions
        self._runners: dict[str, tuple[Runner, SignoffPlugin]] = {}

    async def close(self) -> None:
        for runner, _ in self._runners.values():
            await runner.close()

    async def _outcome(self, thread: str) -> Outcome:
        runner, _ = self._runners[thread]
        if await self._pause(thread) is not None:
            return Outcome(paused=True)
        session = await runner.session_service.get_session(
            app_name=APP, user_id=REQUESTER, session_id=thread
        )
        assert session is not None
        texts = [p.text for e in session.events for p in (e.content.parts if e.content else None)
                 or [] if p.text]  # fmt: skip
        return Outcome(paused=False, text=texts[-1] if texts else None)

    async def _pause(self, thread: str) -> Any:
        runs = self.runs
        approvals = await runs.bridge.arun(runs.store.list_approvals())
        mine = [a.id for a in approvals if a.thread_id == f"{APP}/{REQUESTER}/{thread}"]
        return await runs.open_pause(mine) if mine else None

    async def start(self, thread: str, script: Script) -> Outcome:
        model = _Model(script=list(script), turns=self._turns)
        agent = LlmAgent(name="assistant", model=model, tools=_tools(self.side_effects))
        plugin = SignoffPlugin(self.runs, client_decisions=True)
        app = App(name=APP, root_agent=agent, plugins=[plugin])
        runner = Runner(app=app, session_service=SqliteSessionService(str(self.sessions)))
        self._runners[thread] = (runner, plugin)
        await runner.session_service.create_session(
            app_name=APP, user_id=REQUESTER, session_id=thread
        )
        await self._say(thread, types.Content(role="user", parts=[types.Part(text="go")]))
        return await self._outcome(thread)

    async def _say(self, thread: str, message: types.Content) -> None:
        runner, _ = self._runners[thread]
        async for _event in runner.run_async(
            user_id=REQUESTER, session_id=thread, new_message=message
        ):
            pass

    async def resume(self, thread: str) -> Outcome:
        """As `SignoffPlugin.resumer` does (on signoff's loop): the pause, once ready, claimed
        and continued."""
        runner, plugin = self._runners[thread]
        pause = await self._pause(thread)
        if pause is not None:
            await self.runs.bridge.arun(plugin.resumer(runner).resume_ready(pause.id))
        return await self._outcome(thread)

    def resumer(self, thread: str, *, on_resumed: Callable[[Resumed], Any]) -> Resumer:
        runner, plugin = self._runners[thread]
        return plugin.resumer(runner, on_resumed=on_resumed)

    def text(self, output: Any) -> str | None:
        texts = [p.text for e in output for p in (e.content.parts if e.content else None) or []
                 if p.text]  # fmt: skip
        return texts[-1] if texts else None

    async def send(
        self, thread: str, approve: bool, *, user: str | None, seen: Seen = None
    ) -> Outcome:
        """An ADK client's answer to the confirmations (kagent's UI), taken as the session's
        user's decision: each sends back the request's payload, with its version."""
        if user is None:
            raise NotSupported("ADK names the session's user with every message it takes")
        if user != REQUESTER:
            raise NotSupported(
                "an ADK session belongs to one user: only she can send it a confirmation "
                "(another person decides in signoff)"
            )
        asked = await self._asked(thread)
        answers = {
            call_id: {"confirmed": approve, "payload": {"signoff": {
                **ours, "version": ours["version"] if seen is None else seen[ours["approval"]]}}}
            for call_id, ours in asked.items()
        }  # fmt: skip
        message = types.Content(role="user", parts=[
            types.Part(function_response=types.FunctionResponse(
                name=CONFIRMATION, id=call_id, response=answer))
            for call_id, answer in answers.items()
        ])  # fmt: skip
        with contextlib.suppress(RuntimeError):  # refused: the calls still wait
            await self._say(thread, message)
        return await self._outcome(thread)

    async def shown(self, thread: str) -> dict[str, int]:
        """ADK's confirmation requests: each one's payload names signoff's approval and the
        version of its call."""
        return {ours["approval"]: ours["version"] for ours in (await self._asked(thread)).values()}

    async def _asked(self, thread: str) -> dict[str, dict[str, Any]]:
        """signoff's part of the payload of each confirmation the waiting pause asked ADK for,
        by the confirmation call's id, as the session's events keep it."""
        runner, _ = self._runners[thread]
        pause = await self._pause(thread)
        assert pause is not None
        session = await runner.session_service.get_session(
            app_name=APP, user_id=REQUESTER, session_id=thread
        )
        assert session is not None
        asked: list[str] = list(pause.data["confirmations"])
        return {
            call_id: call.args["toolConfirmation"]["payload"]["signoff"]
            for event in session.events
            for call in event.get_function_calls()
            if (call_id := call.id) in asked and call.name == CONFIRMATION and call.args
        }

    async def tamper(self, thread: str, call: Call) -> None:
        """What an editor of ADK's session store does: the model's function call and ADK's
        confirmation of it (ADK refuses the two when they differ), same id, another call."""

        def edit() -> None:
            with contextlib.closing(sqlite3.connect(self.sessions)) as db, db:
                rows = db.execute("SELECT id, event_data FROM events WHERE session_id = ?",
                                  (thread,)).fetchall()  # fmt: skip
                for event_id, data in rows:
                    event = json.loads(data)
                    changed = False
                    for part in (event.get("content") or {}).get("parts") or []:
                        found = part.get("function_call")
                        if not found:
                            continue
                        if found.get("id") == call.id:
                            found.update(name=call.name, args=call.args)
                            changed = True
                        original = (found.get("args") or {}).get("originalFunctionCall")
                        if (found.get("name") == CONFIRMATION and isinstance(original, dict)
                                and original.get("id") == call.id):  # fmt: skip
                            original.update(name=call.name, args=call.args)
                            changed = True
                    if changed:
                        db.execute("UPDATE events SET event_data = ? WHERE id = ?",
                                   (json.dumps(event), event_id))  # fmt: skip

        await asyncio.to_thread(edit)


@contextlib.asynccontextmanager
async def opened(database: str, tmp_path: Path) -> AsyncIterator[GoogleAdkAdapter]:
    async with _base.connected(connect, ORIGIN, database) as runs:
        adapter = GoogleAdkAdapter(runs, tmp_path / "sessions.db", tmp_path / "side-effects.txt")
        try:
            yield adapter
        finally:
            await adapter.close()
