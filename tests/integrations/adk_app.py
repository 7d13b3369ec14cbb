"""One Google ADK agent behind signoff, built the same way by the tests and by the worker
processes they start (tests/integrations/adk_worker.py): the real `LlmAgent`, `App` and `Runner`,
a `BaseLlm` that plays a script (offline), ADK's SQLite session service, and tools that count
every real execution in a file."""

from __future__ import annotations

import json
import os
import time
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
from signoff.integrations.google_adk import ORIGIN, SignoffPlugin, connect
from tests.integrations.harness import DEFAULT, HANG_IN_TOOL, POLICY

__all__ = ["DEFAULT", "HANG_IN_TOOL", "POLICY", "build", "open_runs", "say", "user"]

APP = "shop"
USER = "alice"

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

    def record(line: str) -> None:
        with side_effects.open("a") as f:
            f.write(line + "\n")

    def read_file(path: str) -> dict[str, Any]:
        """Read a file."""
        record(f"read_file {path}")
        return {"contents": f"contents of {path}"}

    def send_email(to: str, body: str = "") -> dict[str, Any]:
        """Send an email."""
        record(f"send_email {to} {body}")
        return {"sent": to}

    def charge(amount: int) -> dict[str, Any]:
        """Charge the customer."""
        record(f"charge {amount}")
        if os.environ.get(HANG_IN_TOOL):
            print("inside the tool", flush=True)
            while True:
                time.sleep(1)  # the test kills this process here
        return {"charged": amount}

    def read_secrets() -> dict[str, Any]:
        """Read the secrets (the tool itself asks for a confirmation)."""
        record("read_secrets")
        return {"secrets": "the secrets"}

    model = Played(script=script, calls=str(calls), numbered=options.pop("numbered", False))
    agent = LlmAgent(
        name="assistant",
        model=model,
        tools=[
            FunctionTool(read_file),
            FunctionTool(send_email),
            FunctionTool(charge),
            FunctionTool(read_secrets, require_confirmation=True),
        ],
    )
    plugin = SignoffPlugin(runs, **options)
    app = App(name=APP, root_agent=agent, plugins=[plugin])
    return Runner(app=app, session_service=SqliteSessionService(str(sessions))), plugin


async def say(runner: Runner, session: str, message: types.Content) -> list[Any]:
    """Send `message` to the session; the events of the run it starts."""
    return [e async for e in runner.run_async(user_id=USER, session_id=session,
                                              new_message=message)]  # fmt: skip


def user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])
