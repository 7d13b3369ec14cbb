"""A coding agent's tool call as its hook tells it: Claude Code's ``PreToolUse`` /
``PostToolUse`` and Gemini CLI's ``BeforeTool`` / ``AfterTool`` input, read into one `HookCall`
— checked, bounded, and named as signoff's policy reads a call: the tool (an MCP tool by its
server and name), its arguments, the agent (``claude-code/REPOSITORY``) and the session its
thread."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, Literal

from signoff.errors import SignoffError
from signoff.gate.forms import FormError
from signoff.protocols.hooks.asking import ASK_USER_QUESTION, question_of
from signoff.protocols.hooks.files import resolved
from signoff.protocols.hooks.transcript import sent
from signoff.types import CallKind, ToolCall

__all__ = ["AGENTS", "HookCall", "HookInputError", "read_call", "repository_of", "tail"]

Agent = Literal["claude-code", "gemini-cli"]
AGENTS: tuple[Agent, ...] = ("claude-code", "gemini-cli")

_MCP = {
    "claude-code": re.compile(r"^mcp__(.+?)__(.+)$"),
    "gemini-cli": re.compile(r"^mcp_(.+?)_(.+)$"),
}
"""How each agent names an MCP server's tool: ``mcp__github__create_issue``."""
_EVENTS = {
    "claude-code": ("PreToolUse", "PostToolUse", "PostToolUseFailure"),
    "gemini-cli": ("BeforeTool", "AfterTool"),
}
"""The events a hook reports: the first asks whether a call may run, the others say it ran."""
_FIELD = 4096
"""The longest session id, tool name, path or id taken from a hook's input."""


class HookInputError(SignoffError):
    """A hook's input that is not a coding agent's tool call (a 400: the field it names)."""


@dataclass(frozen=True, kw_only=True)
class HookCall:
    """One tool call of a coding agent, as its hook reported it."""

    agent: Agent
    event: str
    """``PreToolUse``/``BeforeTool`` (judge it), ``PostToolUse``/``AfterTool`` (it ran)."""
    session: str
    call_id: str
    """The agent's id of the call (Claude Code's ``tool_use_id``), or a new one when the agent
    gives none (`named` is False)."""
    named: bool = True
    """Whether the agent names its calls: Gemini CLI does not, and its ``AfterTool`` is told
    apart from another call only by what ran."""
    tool: str
    """The tool as the policy names it: an MCP tool's own name, its server in `server`."""
    server: str | None
    args: dict[str, Any]
    """The arguments as judged and run: a file tool's path resolved (`files.resolved`); of a
    question, the question signoff asks (`asking.question_of`)."""
    kind: CallKind = "tool"
    """``question`` for Claude Code's ``AskUserQuestion``: held for a person to answer."""
    asked: dict[str, Any]
    """The arguments as the agent sent them."""
    cwd: str | None
    repository: str | None
    """The repository the agent works in (its folder's name), where it can be told."""
    transcript_path: str | None
    response: Any = None
    """After the call: what the tool returned."""
    conversation: list[dict[str, Any]] | None = None
    """The session's last messages, where the command hook sent them (`transcript.sent`)."""

    @property
    def before(self) -> bool:
        return self.event in ("PreToolUse", "BeforeTool")

    @property
    def path(self) -> str:
        """The agent path the policy's ``agents:`` section matches: ``claude-code/signoff``."""
        return f"{self.agent}/{self.repository}" if self.repository else self.agent

    def call(self) -> ToolCall:
        return ToolCall(
            id=self.call_id,
            name=self.tool,
            args=self.args,
            server=self.server,
            agent=self.path,
            kind=self.kind,
        )


def read_call(agent: Agent, body: Any, *, local: bool = False) -> HookCall:
    """The call `body` (a hook's input, parsed JSON) reports; `HookInputError` naming the
    field that is wrong. `local`: the agent's files are this process's (the command hook, an
    app's hooks), where a file tool's path has its symlinks resolved and the repository is the
    project's — else (a server) nothing a request names is looked at."""
    if not isinstance(body, Mapping):
        raise HookInputError("the hook's input must be a JSON object")
    event = _text(body, "hook_event_name")
    known = _EVENTS[agent]
    if event not in known:
        raise HookInputError(f"hook_event_name: {event!r} is not one of {list(known)}")
    name = _text(body, "tool_name")
    args = body.get("tool_input", {})
    if not isinstance(args, Mapping):
        raise HookInputError("tool_input: must be a JSON object")
    session = _text(body, "session_id")
    cwd = _optional(body, "cwd")
    server, tool = _mcp_tool(agent, name, body)
    call_id = _optional(body, "tool_use_id")
    named = call_id is not None
    if call_id is None:
        # Gemini CLI names no call: each hook it runs is one call. Two alike in one turn are
        # two, and their hooks may start in the same millisecond (its `timestamp`'s grain).
        call_id = f"call-{secrets.token_hex(12)}"
    asked = dict(args)
    judged = body.get(RESOLVED)
    judged = dict(judged) if isinstance(judged, Mapping) else asked
    kind: CallKind = "tool"
    if agent == "claude-code" and server is None and tool == ASK_USER_QUESTION:
        kind, judged = "question", _question(asked)
    elif server is None:
        judged = resolved(name, judged, cwd, local=local)
    else:
        judged = asked
    return HookCall(
        agent=agent, event=event, session=session, call_id=call_id, named=named, tool=tool,
        server=server, args=judged, kind=kind, asked=asked, cwd=cwd,
        repository=_repository(body, cwd, local=local),
        transcript_path=_optional(body, "transcript_path"),
        response=body.get("tool_response", body.get("error")), conversation=sent(body),
    )  # fmt: skip


def _question(asked: dict[str, Any]) -> dict[str, Any]:
    """The signoff question Claude Code's ``AskUserQuestion`` asks (`asking.question_of`)."""
    try:
        return question_of(asked)
    except FormError as exc:
        raise HookInputError(str(exc)) from None


def _mcp_tool(agent: Agent, name: str, body: Mapping[str, Any]) -> tuple[str | None, str]:
    """The MCP server of the tool `name` (None: not an MCP tool), and the tool's own name — as
    the agent says them (Claude Code's ``mcp_server``, Gemini CLI's ``mcp_context``), else read
    from its name (``mcp__github__create_issue``)."""
    context = body.get("mcp_context")
    if isinstance(context, Mapping):
        server, tool = context.get("server_name"), context.get("tool_name")
        if isinstance(server, str) and isinstance(tool, str) and server and tool:
            return server[:_FIELD], tool[:_FIELD]
    found = _MCP[agent].match(name)
    if found is None:
        return None, name
    server = body.get("mcp_server")
    if isinstance(server, str) and name.startswith(f"mcp__{server}__"):
        return server, name[len(f"mcp__{server}__") :]
    return found.group(1), found.group(2)


RESOLVED = "signoff_resolved"
"""Where the command hook puts the call's arguments with a file tool's links resolved, as the
agent's own user sees them: what is judged, and what the agent is told to run."""
PROJECT = "signoff_project"
"""Where the command hook names the agent's project folder (its ``CLAUDE_PROJECT_DIR``,
``GEMINI_PROJECT_DIR``) in the input it sends a server."""


def _repository(body: Mapping[str, Any], cwd: str | None, *, local: bool) -> str | None:
    """The repository the agent works in: the project's — its folder's, or that of the folder
    holding ``.git`` above it where this process sees the agent's files — else the name of the
    folder the call runs in (which the model's ``cd`` moves)."""
    project = body.get(PROJECT)
    folder = project if isinstance(project, str) and project else cwd
    if local:
        return repository_of(folder)
    return (PurePath(folder).name or None) if folder else None


def repository_of(cwd: str | None) -> str | None:
    """The name of the repository `cwd` is in: the folder holding ``.git`` above it, else
    `cwd`'s own name."""
    if not cwd:
        return None
    try:
        for folder in (Path(cwd), *Path(cwd).parents):
            if (folder / ".git").exists():
                return folder.name or None
    except OSError:
        pass
    return PurePath(cwd).name or None


def _text(body: Mapping[str, Any], field: str) -> str:
    value = body.get(field)
    if not isinstance(value, str) or not value:
        raise HookInputError(f"{field}: must be a non-empty string")
    if len(value) > _FIELD:
        raise HookInputError(f"{field}: longer than {_FIELD} characters")
    return value


def _optional(body: Mapping[str, Any], field: str) -> str | None:
    if body.get(field) in (None, ""):
        return None
    return _text(body, field)


def tail(value: Any, chars: int = 2000, *, depth: int = 4) -> Any:
    """A bounded copy of what a tool returned, for the audit: each string's last `chars` (a
    command's output ends with what went wrong), nothing nested past `depth`."""
    if isinstance(value, str):
        return value if len(value) <= chars else "…" + value[-chars:]
    if depth <= 0 and isinstance(value, dict | list):
        return "…"
    if isinstance(value, dict):
        return {str(k)[:200]: tail(v, chars, depth=depth - 1) for k, v in list(value.items())[:50]}
    if isinstance(value, list):
        return [tail(v, chars, depth=depth - 1) for v in value[:50]]
    return value
