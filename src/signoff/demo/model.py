"""The demo's offline model: it turns plain requests into tool calls by pattern, and says that
it is scripted. A real model takes its place when ``SIGNOFF_MODEL`` or ``OPENAI_BASE_URL`` is set.

It understands, joined by "then", "and" or commas: "list pods", "logs of NAME", "delete
NAME", "scale NAME to N", "deploy IMAGE", "reset the cluster" (denied), "ask db to drop table
NAME" (ops hands it to its db sub-agent); "list files", "read PATH", "write TEXT to PATH", "delete
PATH".
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence

from signoff.agent import Message, Model, ModelTurn, ToolSpec
from signoff.types import ToolCall

__all__ = ["ScriptedDemoModel", "demo_model"]

SCRIPTED = "(scripted demo model)"

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (tool, re.compile(pattern, re.IGNORECASE))
    for tool, pattern in [
        ("list_pods", r"^(?:list|show)(?: the)? pods$"),
        ("get_logs", r"^(?:get |show |read )?(?:the )?logs? (?:of |for )?(?P<name>\S+)$"),
        ("scale_deployment", r"^scale (?P<name>\S+) to (?P<replicas>\d+)$"),
        ("admin_reset_cluster", r"^reset(?: the)? cluster$"),
        ("deploy", r"^deploy (?P<image>(?P<name>[a-z0-9-]+)\S*)$"),
        ("db", r"^ask (?:the )?db to (?P<input>.+)$"),
        ("list_tables", r"^(?:list|show)(?: the)? tables$"),
        ("drop_table", r"^drop(?: the)? table (?P<name>\S+)$"),
        ("list_files", r"^(?:list|show)(?: the)? files$"),
        ("read_file", r"^(?:read|show|open) (?P<path>\S+)$"),
        ("write_file", r"^write (?P<content>.+) (?:to|into) (?P<path>\S+)$"),
        ("delete_pod", r"^delete (?:pod )?(?P<name>\S+)$"),
        ("delete_file", r"^delete (?:file )?(?P<path>\S+)$"),
    ]
]
_SPLIT = re.compile(r"\s*(?:,|;|\bthen\b|\band\b)\s*", re.IGNORECASE)


class ScriptedDemoModel:
    """Plain requests in, tool calls out; after the tools, a summary of their results."""

    label = "scripted demo model (offline, not an LLM)"
    """What the web inbox shows as the agent's model."""

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        last = messages[-1] if messages else Message(role="user")
        if last.role == "tool":
            return ModelTurn(text=_summary(messages))
        offered = {t.name for t in tools}
        calls = _calls(last.content, offered)
        if not calls:
            examples = (
                '"list pods then delete nginx-123", "scale web to 5"'
                if "list_pods" in offered
                else '"list files", "write hello to hello.txt", "delete notes.txt"'
            )
            return ModelTurn(
                text=f"{SCRIPTED} I only understand simple requests, such as {examples}. "
                "Set SIGNOFF_MODEL and OPENAI_BASE_URL to use a real model."
            )
        names = ", ".join(c.name for c in calls)
        return ModelTurn(text=f"{SCRIPTED} Calling {names}.", tool_calls=tuple(calls))


def demo_model() -> Model:
    """A real model when one is configured, else the scripted one."""
    if os.environ.get("OPENAI_BASE_URL") or os.environ.get("SIGNOFF_MODEL"):
        from signoff.agent.openai import OpenAIChatModel

        return OpenAIChatModel(os.environ.get("SIGNOFF_MODEL", "gpt-4o-mini"))
    return ScriptedDemoModel()


def _calls(request: str, offered: set[str]) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for index, clause in enumerate(_SPLIT.split(request.strip().rstrip("."))):
        for tool, pattern in _PATTERNS:
            match = pattern.match(clause)
            if tool in offered and match is not None:
                args: dict[str, object] = dict(match.groupdict())
                if "replicas" in args:
                    digits = str(args["replicas"])
                    args["replicas"] = int(digits) if len(digits) <= 6 else 10**6
                calls.append(ToolCall(id=f"call_{index}_{tool}", name=tool, args=args))
                break
    return calls


def _summary(messages: Sequence[Message]) -> str:
    """What the tools of the last turn said, one line each."""
    results: list[str] = []
    for message in reversed(messages):
        if message.role != "tool":
            break
        results.insert(0, f"{message.name}: {_short(message.content)}")
    return f"{SCRIPTED} Done. " + " | ".join(results)


def _short(content: str) -> str:
    try:
        data = json.loads(content)
    except ValueError:
        data = content
    if isinstance(data, dict) and "message" in data:
        return str(data["message"])
    text = content if isinstance(data, str) else json.dumps(data)
    return text if len(text) <= 200 else text[:197] + "..."
