"""The calls a user gives a command to explain: a YAML or JSON file of them, whose problems
carry line and column, or the arguments of one, as a JSON object on the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from signoff.errors import PolicyError, Problem
from signoff.types import ToolCall

__all__ = ["load_calls", "parse_args"]


def load_calls(path: Path) -> list[ToolCall]:
    """A list of ``{tool, server?, agent?, args?}`` mappings; problems carry line and column."""
    from signoff.policy.source import Locator, format_path, read_file

    source = str(path)
    text, data = read_file(path, "the calls")
    if not isinstance(data, list):
        raise PolicyError([Problem(message="expected a list of calls", source=source)])
    calls: list[ToolCall] = []
    problems: list[Problem] = []
    locate = Locator(text)
    for i, item in enumerate(data):
        message = _call_problem(item)
        if message is None:
            calls.append(
                ToolCall(
                    id=f"call-{i}",
                    name=item["tool"],
                    server=item.get("server"),
                    agent=item.get("agent"),
                    args=item.get("args", {}),
                )
            )
            continue
        line, column = locate((i,)) or (None, None)
        problems.append(
            Problem(
                message=message, path=format_path((i,)), source=source, line=line, column=column
            )
        )
    if problems:
        raise PolicyError(problems)
    return calls


def _call_problem(item: Any) -> str | None:
    if not isinstance(item, dict):
        return "a call must be a mapping like {tool: NAME, args: {...}}"
    unknown = set(item) - {"tool", "server", "agent", "args"}
    if unknown:
        return f"unknown keys {sorted(unknown)!r}; a call has tool, server, agent and args"
    if not isinstance(item.get("tool"), str) or not item["tool"]:
        return "a call needs 'tool', the tool's name"
    for key in ("server", "agent"):
        if key in item and not isinstance(item[key], str):
            return f"{key!r} must be a string"
    return None


def parse_args(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(
            f"not valid JSON at column {exc.colno}: {exc.msg}", param_hint="'--args'"
        ) from None
    except RecursionError:
        raise typer.BadParameter("nested too deep to read", param_hint="'--args'") from None
