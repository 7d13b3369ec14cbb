"""One Strands agent behind signoff, the framework's `Rig` (tests/integrations/harness.py): built
the same way by its tests and by the worker processes they start — the real `Agent` with
`SignoffHooks` and a `FileSessionManager`, a `Model` that plays a script (offline), and tools
that count every real execution in a file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from strands import Agent, tool
from strands.agent import AgentResult
from strands.models import Model
from strands.session import FileSessionManager

from signoff import Policy
from signoff.gate.external import ExternalRuns
from signoff.integrations.strands import ORIGIN, SignoffHooks, connect
from tests.integrations.harness import DEFAULT, POLICY, side_effects_in, tools, turns_in

__all__ = ["DEFAULT", "POLICY", "Played", "agent", "open_runs", "resume", "start"]

USER = "alice"
THREAD = "s-1"
"""The session a worker starts."""

Script = list[Any]
"""Turn n of a session (the model's answers so far) plays `script[n]`: tool calls
``(name, args)``, each with the id ``call_<turn>_<n>``, or a text, to which the model adds the
tool results it was given (a JSON object by call id)."""


def open_runs(database: str) -> ExternalRuns:
    return connect(Policy.from_dict(POLICY), origin=ORIGIN, database=database)


class Played(Model):
    """A model that plays a script by the conversation it is given, noting each turn it plays in
    a file (so any process, resuming any session, gets the same answer)."""

    def __init__(self, script: Script, calls: Path) -> None:
        self.script = script
        self.calls = calls

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        turn = sum(m["role"] == "assistant" for m in messages)
        with self.calls.open("a") as f:
            f.write(f"{turn}\n")
        step = self.script[turn] if turn < len(self.script) else "done"
        yield {"messageStart": {"role": "assistant"}}
        if isinstance(step, str):
            told = {r["toolUseId"]: [c.get("text") for c in r["content"]] for m in messages
                    for b in m["content"] if (r := b.get("toolResult"))}  # fmt: skip
            text = f"{step} {json.dumps(told, sort_keys=True)}"
            yield {"contentBlockDelta": {"delta": {"text": text}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        for n, (name, args) in enumerate(step):
            yield {"contentBlockStart": {"start": {"toolUse": {
                "toolUseId": f"call_{turn}_{n}", "name": name}}}}  # fmt: skip
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
            yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


class App:
    """The app: its hooks, and its agents by session (each restored by its session manager)."""

    def __init__(self, runs: ExternalRuns, folder: Path, script: Script, **options: Any) -> None:
        self.hooks = SignoffHooks(runs, **options)
        self.folder = folder
        self.script = script
        read_file, send_email, charge, _ = tools(side_effects_in(folder))
        self.tools = [tool(t) for t in (read_file, send_email, charge)]

    def __call__(self, session: str) -> Agent:
        manager = FileSessionManager(session_id=session, storage_dir=str(self.folder / "sessions"))
        return Agent(model=Played(self.script, turns_in(self.folder)), tools=self.tools,
                     hooks=[self.hooks], session_manager=manager, callback_handler=None,
                     name="assistant")  # fmt: skip


def agent(runs: ExternalRuns, folder: Path, script: Script = DEFAULT, **options: Any) -> App:
    return App(runs, folder, script, **options)


async def start(app: App, thread: str, text: str = "go") -> AgentResult:
    return await app(thread).invoke_async(text, invocation_state={"user_id": USER})


async def resume(app: App, thread: str) -> Any:
    """The session's pause, once its calls are decided, resumed by the hooks' resumer: its
    `AgentResult`, or None where nothing went on."""
    runs = app.hooks.runs
    found = await runs.bridge.arun(runs.store.list_approvals())
    pause = await runs.open_pause([a.id for a in found if a.thread_id == f"{thread}/default"])
    resumer = app.hooks.resumer(app)
    if pause is None or not await runs.bridge.arun(resumer.resume_ready(pause.id)):
        return None
    return (await resumer.resumed(thread)).output
