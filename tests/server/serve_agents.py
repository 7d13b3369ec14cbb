"""Agents for `signoff serve --agents tests.server.serve_agents:agents` in the tests: an ops agent
whose delete_pod appends to the file named by SIGNOFF_TEST_SIDE_FILE, so a test counts how often
it really ran, whichever replica ran it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from signoff.agent import Agent, Message, ModelTurn, ToolSpec, tool
from signoff.types import ToolCall


@tool
def delete_pod(name: str) -> str:
    """Delete a pod."""
    with Path(os.environ["SIGNOFF_TEST_SIDE_FILE"]).open("a") as side:
        side.write(f"{os.getpid()} {name}\n")
    return f"deleted {name}"


class Model:
    """Deletes the pod the user names, then says it is done: any replica may play either turn."""

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        last = messages[-1]
        if last.role == "tool":
            return ModelTurn(text=f"done: {last.content}")
        name = last.content.split()[-1]
        return ModelTurn(tool_calls=(ToolCall(id="c1", name="delete_pod", args={"name": name}),))


def agents() -> list[Agent]:
    return [Agent(name="ops", model=Model(), tools=[delete_pod])]
