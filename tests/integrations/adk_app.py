"""One Google ADK agent behind signoff, the framework's `Rig` (tests/integrations/harness.py):
built the same way by its tests and by the worker processes they start: the real `LlmAgent`,
`App` and `Runner`, a `BaseLlm` that plays a script (offline), ADK's SQLite session service, and
tools that count every real execution in a file."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.adk.tools.function_tool import FunctionTool
from google.genai import types

from signoff import Policy
from signoff.gate.external import ExternalRuns
from signoff.integrations.google_adk import ORIGIN, SignoffPlugin, confirmations, connect
from tests.integrations.harness import DEFAULT, POLICY, side_effects_in, tools, turns_in

__all__ = ["DEFAULT", "POLICY", "build", "open_runs", "say", "sessions_in", "user"]

APP = "shop"
USER = "alice"
THREAD = "s-1"
"""The session a worker starts."""
LOST_RACE: tuple[type[BaseException], ...] = ()

Script = list[Any]
"""Turn n of a session (the model's answers so far) plays `script[n]`: tool calls
``(name, args)``, or a text, to which the model adds the tool results it was given."""


def open_runs(database: str) -> ExternalRuns:
    return connect(Policy.from_dict(POLICY), origin=ORIGIN, database=database)


class Played(BaseLlm):
    """A model that plays a script by the conversation it is given, noting each turn it plays
    in a file (so any process, resuming any session, gets the same answer)."""

    model: str = "played"
    script: list[Any]
    calls: str
    numbered: bool = False
    """Number the calls of each response from 0 (``call_0``), as LiteLLM does when the
    provider gives none: the same ids again in every response."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        contents = llm_request.contents
        turn = sum(c.role == "model" and any(p.function_call or p.text for p in c.parts or [])
                   for c in contents)  # fmt: skip
        with Path(self.calls).open("a") as f:
            f.write(f"{turn}\n")
        step = self.script[turn] if turn < len(self.script) else "done"
        if isinstance(step, str):
            results = {
                p.function_response.id
                or p.function_response.name
                or "": p.function_response.response
                for c in contents
                for p in c.parts or []
                if p.function_response
            }
            text = f"{step} {json.dumps(results, sort_keys=True, default=str)}"
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
            return
        parts = [
            types.Part(
                function_call=types.FunctionCall(
                    id=f"call_{n}" if self.numbered else f"call_{turn}_{n}", name=name, args=args
                )
            )
            for n, (name, args) in enumerate(step)
        ]
        yield LlmResponse(content=types.Content(role="model", parts=parts))


def build(
    runs: ExternalRuns,
    script: Script,
    side_effects: Path,
    calls: Path,
    sessions: Path,
    **options: Any,
) -> tuple[Runner, SignoffPlugin]:
    """The assistant's runner, and its plugin (`options` for it)."""
    read_file, send_email, charge, read_secrets = tools(side_effects)
    model = Played(script=script, calls=str(calls), numbered=options.pop("numbered", False))
    agent = LlmAgent(
        name="assistant",
        model=model,
        tools=[
            *(FunctionTool(t) for t in (read_file, send_email, charge)),
            FunctionTool(read_secrets, require_confirmation=True),
        ],
    )
    plugin = SignoffPlugin(runs, **options)
    app = App(name=APP, root_agent=agent, plugins=[plugin])
    return Runner(app=app, session_service=SqliteSessionService(str(sessions))), plugin


def agent(runs: ExternalRuns, folder: Path, script: Script = DEFAULT,
          **options: Any) -> tuple[Runner, SignoffPlugin]:  # fmt: skip
    """`build`'s runner, its sessions kept in `folder`."""
    return build(runs, script, side_effects_in(folder), turns_in(folder), sessions_in(folder),
                 **options)  # fmt: skip


def sessions_in(folder: Path) -> Path:
    return folder / "sessions.db"


async def start(agent: tuple[Runner, SignoffPlugin], thread: str, text: str = "go") -> list[Any]:
    """A new session `thread`, told `text`: the run's events."""
    runner, _ = agent
    await runner.session_service.create_session(app_name=APP, user_id=USER, session_id=thread)
    return await say(runner, thread, user(text))


async def resume(agent: tuple[Runner, SignoffPlugin], thread: str) -> list[Any] | None:
    """The confirmations the session's pause asked for, sent back once its calls are decided
    (the runner closed after): the run's events."""
    runner, plugin = agent
    found = await plugin.runs.bridge.arun(plugin.runs.store.list_approvals(status="approved"))
    pause = await plugin.runs.open_pause([a.id for a in found])
    if pause is None:
        return None
    events = await say(runner, thread, confirmations(pause.data["confirmations"]))
    await runner.close()
    return events


async def say(runner: Runner, session: str, message: types.Content) -> list[Any]:
    """Send `message` to the session; the events of the run it starts."""
    return [e async for e in runner.run_async(user_id=USER, session_id=session,
                                              new_message=message)]  # fmt: skip


def user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])
