"""The agent the partition test's replicas serve (`--agents tests.chaos.agents:agents`): each
real execution of a tool appends ``PID TOOL NAME TIME`` to the file named by
SIGNOFF_TEST_SIDE_FILE (TIME: this machine's clock, in seconds), and the tool's result names the
process that ran it, so the checker can tell which holder a recorded result came from, and that
it ran after it was let through."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from signoff.agent import Agent, Message, ModelTurn, ToolSpec, tool
from signoff.types import ToolCall

__all__ = ["agents", "executed"]


def executed(tool: str, name: str) -> str:
    """Record one real execution of `tool` on `name`; its result."""
    with Path(os.environ["SIGNOFF_TEST_SIDE_FILE"]).open("a") as side:
        side.write(f"{os.getpid()} {tool} {name} {time.time()}\n")
    return f"{tool} {name} by {os.getpid()}"


@tool
def delete_pod(name: str) -> str:
    """Delete a pod (each name is deleted by one run: twice is a double execution)."""
    return executed("delete_pod", name)


@tool
def restart_pod(name: str) -> str:
    """Restart a pod (the calls a grant lets through)."""
    return executed("restart_pod", name)


class Model:
    """``delete NAME`` or ``restart NAME``: that tool on that name, then ``done: RESULT``."""

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        last = messages[-1]
        if last.role == "tool":
            return ModelTurn(text=f"done: {last.content}")
        verb, name = last.content.split()
        call = ToolCall(id="c1", name=f"{verb}_pod", args={"name": name})
        return ModelTurn(tool_calls=(call,))


def agents() -> list[Agent]:
    return [Agent(name="ops", model=Model(), tools=[delete_pod, restart_pod])]
