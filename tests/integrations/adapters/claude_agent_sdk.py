"""The Claude Agent SDK (`claude_agent_sdk.query`, the real Claude Code CLI its wheel carries)
behind `signoff_hooks`, as the shared scenarios drive it: a scripted Messages API on loopback
plays the model (tests/hooks/messages.py), with the script's call ids as its ``tool_use`` ids,
and the scenarios' tools are in-process SDK MCP tools of the server ``scenario``
(``mcp__scenario__transfer``), judged by signoff by server and tool name, next to signoff's ask
tool (``mcp__signoff__ask_person``). Claude Code's own
tools are turned off (``tools=[]``); its settings, home and folder are the test's own.

A held call waits inside the ``PreToolUse`` hook, in the app's memory, for its decision: as
for AdalFlow, `start` runs the query in a background task until a call waits on a person (the
hooks' `on_hold`) or the run ends, and `resume` lets that same task go on. The resume of a
session a deferred call stopped (``resume=session_id``) is tested on its own, in
tests/integrations/test_claude_agent_sdk.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("claude_agent_sdk") is None:  # pragma: no cover
    pytest.skip(
        "the Claude Agent SDK (and the Claude Code CLI it carries) is not installed: "
        "pip install 'signoff[claude]'",
        allow_module_level=True,
    )

from claude_agent_sdk import (
    ClaudeAgentOptions,
    ResultMessage,
    SdkMcpTool,
    create_sdk_mcp_server,
    query,
    tool,
)

from signoff.gate.external import ExternalRuns
from signoff.gate.questions import ASK_TOOL
from signoff.integrations.claude_agent_sdk import (
    ASK_SERVER,
    ORIGIN,
    ask_person,
    connect,
    signoff_hooks,
)
from tests.deadline import HANG
from tests.hooks.messages import Turn, scripted_messages
from tests.integrations.adapters import _base
from tests.integrations.adapters._base import AdapterBase, GoesOnByItself, unique_ids
from tests.integrations.scenarios import (
    REQUESTER,
    Outcome,
    Script,
    final_text,
    tools,
)

SERVER = "scenario"
NO_PAYLOAD = (
    "the Claude Agent SDK has no decision payload of its own that reaches signoff: a held call "
    "waits in the PreToolUse hook on its approval in signoff's store (inbox, REST API, CLI)"
)
NO_STATE = (
    "a held call waits in the PreToolUse hook, in the app's memory: Claude Code reads nothing "
    "of it back from a saved state while it waits"
)
REMINDER = re.compile(r"\s*<system-reminder>.*?</system-reminder>\s*", re.DOTALL)
"""What Claude Code adds to a tool's result for the model (tokens left), not the tool's."""


def sdk_tools(side_effects: Path) -> list[SdkMcpTool[Any]]:
    """The scenarios' tools as in-process SDK MCP tools: each real execution is one line."""
    transfer, read_file, delete_all = tools(side_effects)

    def result(text: str) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": text}]}

    @tool("transfer", "Move money.", {"amount": int, "to": str})
    async def sdk_transfer(args: dict[str, Any]) -> dict[str, Any]:
        return result(transfer(args["amount"], args["to"]))

    @tool("read_file", "Read a file.", {"path": str})
    async def sdk_read_file(args: dict[str, Any]) -> dict[str, Any]:
        return result(read_file(args["path"]))

    @tool("delete_all", "Delete everything.", {})
    async def sdk_delete_all(args: dict[str, Any]) -> dict[str, Any]:
        return result(delete_all())

    return [sdk_transfer, sdk_read_file, sdk_delete_all]


def results(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The tool results a request of the agent loop gives the model, in order."""
    found = []
    for message in body.get("messages", []):
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                text = block.get("content")
                if isinstance(text, list):
                    text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
                found.append((block["tool_use_id"], REMINDER.sub("", str(text or ""))))
    return found


def player(script: Script, turns: list[int]) -> Callable[[dict[str, Any]], Turn]:
    """The scripted model: the turn its count of assistant messages names, calls named by the
    script's ids; its final text followed by the results it was given (`final_text`)."""

    def play(body: dict[str, Any]) -> Turn:
        done = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        turns.append(done)
        step = _base.step(script, done)
        if isinstance(step, str):
            return Turn(text=final_text(step, results(body)))
        calls = [(mcp_name(c.name), c.args) for c in step]
        return Turn(calls=calls, ids=[c.id for c in step])

    return play


def mcp_name(tool: str) -> str:
    """How Claude names a scenario's tool: signoff's ask tool on its server, the others on
    the scenarios'."""
    return f"mcp__{ASK_SERVER if tool == ASK_TOOL else SERVER}__{tool}"


def claude_env(home: Path, url: str) -> dict[str, str]:
    """Claude Code offline: a scratch home, the scripted API, no traffic of its own."""
    return {
        "HOME": str(home), "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-offline",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "CLAUDE_CODE_MAX_RETRIES": "0",
        "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
    }  # fmt: skip


@dataclass
class _Run:
    session: str
    task: asyncio.Task[str | None]
    asked: asyncio.Event = field(default_factory=asyncio.Event)
    stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)


class ClaudeAgentSDKAdapter(GoesOnByItself, AdapterBase):
    name = "claude-agent-sdk"
    no_send = NO_PAYLOAD
    no_shown = (
        "the Claude Agent SDK shows the app no list of held calls: the hook waits, and only "
        "signoff's channels show the call and its version"
    )
    no_state = NO_STATE
    no_resumer = (
        "a held call waits in the hook, in memory, and goes on by itself once decided: "
        "nothing resumes it (a deferred call is resumed by the app: resume=session_id)"
    )
    no_ask = ""
    answers_in_place = False  # a PreToolUse hook allows or denies: a response is the reason

    def __init__(self, runs: ExternalRuns, tmp_path: Path) -> None:
        super().__init__(runs, tmp_path / "side-effects.txt")
        self.home = tmp_path / "home"
        self.work = tmp_path / "work"
        self.home.mkdir()
        self.work.mkdir()
        self.tools = sdk_tools(self.side_effects)
        self.server = create_sdk_mcp_server(SERVER, tools=self.tools)
        self._runs: dict[str, _Run] = {}

    async def start(self, thread: str, script: Script) -> Outcome:
        unique_ids(
            script,
            "Claude Code's hook names a call by its tool_use_id alone (no model response), "
            "and Anthropic's Messages API never gives two calls one id (toolu_…): a script "
            "that reuses call_0 is not one Claude Code meets",
        )
        stack = contextlib.ExitStack()
        api = stack.enter_context(scripted_messages(player(script, self._turns)))
        session = str(uuid.uuid4())
        asked = asyncio.Event()
        options = ClaudeAgentOptions(
            tools=[], mcp_servers={SERVER: self.server, ASK_SERVER: ask_person()},
            setting_sources=[],
            cwd=str(self.work), env=claude_env(self.home, api.url), session_id=session,
            model="claude-sonnet-4-5", stderr=lambda _: None,
            hooks=signoff_hooks(self.runs, requested_by=REQUESTER, wait=HANG,
                                tools={SERVER: self.tools},
                                on_hold=lambda _: asked.set()),
        )  # fmt: skip
        task = asyncio.ensure_future(_final(options))
        self._runs[thread] = _Run(session=session, task=task, asked=asked, stack=stack)
        return await self._next(thread)

    def thread_id(self, thread: str) -> str:
        return self._runs[thread].session  # Claude Code's session is a UUID of its own

    async def _next(self, thread: str) -> Outcome:
        run = self._runs[thread]

        async def waits() -> bool:
            return bool(await self.runs.waiting(run.session))

        if await _base.stopped(run.task, run.asked, waits):
            return Outcome(paused=True)
        return Outcome(paused=False, text=run.task.result())

    async def close(self) -> None:
        await _base.cancelled(run.task for run in self._runs.values())
        for run in self._runs.values():
            run.stack.close()


async def _final(options: ClaudeAgentOptions) -> str | None:
    """The model's final text, once the query ends."""
    text = None
    async for message in query(prompt="do what the scripted model says", options=options):
        if isinstance(message, ResultMessage):
            text = message.result
    return text


def opened(
    database: str, tmp_path: Path
) -> contextlib.AbstractAsyncContextManager[ClaudeAgentSDKAdapter]:
    return _base.opened_with(
        connect, ORIGIN, database, lambda runs: ClaudeAgentSDKAdapter(runs, tmp_path)
    )
