"""The agent the A2A tests talk to, in-process or through `signoff serve --agents
tests.protocols.a2a_agents:agents`. Its model keeps no state of its own, so a restarted server
plays the same part; its tools write each call they really make to the file named by
SIGNOFF_TEST_SIDE_FILE, so a test counts executions in any process.

- "delete A" calls delete_pod(A) (asks);
- "delete A and B" calls list_pods (allowed), delete_pod(A) and delete_pod(B) (both ask);
- "scale A to N" calls scale(A, N) (asks; replicas is an integer from 0 to 50);
- "delete A then B" calls delete_pod(A), and once it has the result, delete_pod(B);
- "slowly delete A" thinks for a second first;
- "ask WORDS?" asks a person WORDS through ask_person, a pick of eu-west or us-east (ops answer);
- after tool results it says ``done:`` and each result; anything else gets ``hello``.

A second agent, ``greeter``, has no tools and always says hello.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

from pydantic import Field

from signoff import Policy
from signoff.agent import Agent, Message, ModelTurn, ToolSpec, ask_person, tool
from signoff.types import ToolCall

POLICY = Policy.from_dict(
    {
        "rules": [
            {"allow": "list_pods"},
            {"ask": ["delete_pod", "scale"], "timeout": "1h"},
            {"ask": {"question": "*"}, "approvers": ["ops"]},
        ]
    }
)
FOUR_EYES = Policy.from_dict(
    {
        "rules": [
            {"allow": "list_pods"},
            {"ask": ["delete_pod", "scale"], "approvals": {"count": 2, "distinct": True}},
        ]
    }
)
"""The same, but each call that asks needs two people (never the one who asked)."""
CONFIG_RULES = """\
rules:
  - allow: list_pods
  - ask: [delete_pod, scale]
    timeout: 1h
"""


def _record(line: str) -> None:
    with Path(os.environ["SIGNOFF_TEST_SIDE_FILE"]).open("a") as side:
        side.write(line + "\n")


@tool
def list_pods() -> list[str]:
    """List the pods."""
    _record("list_pods")
    return ["web-1", "web-2", "db-0"]


@tool
def delete_pod(name: str) -> str:
    """Delete a pod."""
    _record(f"delete_pod {name}")
    return f"deleted {name}"


@tool
def scale(name: str, replicas: Annotated[int, Field(ge=0, le=50)]) -> str:
    """Scale a deployment."""
    _record(f"scale {name} {replicas}")
    return f"scaled {name} to {replicas}"


class Model:
    label = "scripted model (A2A tests)"

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        last = messages[-1]
        asked = next(m.content for m in reversed(messages) if m.role == "user")
        then = re.fullmatch(r"delete (\S+) then (\S+)", asked)
        previous = messages[-2].tool_calls if len(messages) > 1 else ()
        if last.role == "tool" and then and [c.id for c in previous] == ["c-1"]:
            later = {"name": then.group(2)}  # the first is done: now the second
            return ModelTurn(tool_calls=(ToolCall(id="c-2", name="delete_pod", args=later),))
        if last.role == "tool":
            results: list[str] = []
            for message in reversed(messages):
                if message.role != "tool":
                    break
                results.insert(0, message.content)
            return ModelTurn(text="done: " + " | ".join(results))
        words = last.content
        if found := re.fullmatch(r"ask (.+\?)", words):
            choices = ["eu-west", "us-east"]
            args = {"question": found.group(1), "choices": choices}
            return ModelTurn(tool_calls=(ToolCall(id="c-q", name="ask_person", args=args),))
        if words.startswith("slowly "):
            await asyncio.sleep(1.0)
            words = words.removeprefix("slowly ")
        if found := re.fullmatch(r"delete (\S+) and (\S+)", words):
            first, second = found.groups()
            return ModelTurn(
                text="Looking first.",
                tool_calls=(
                    ToolCall(id="c-list", name="list_pods", args={}),
                    ToolCall(id=f"c-{first}", name="delete_pod", args={"name": first}),
                    ToolCall(id=f"c-{second}", name="delete_pod", args={"name": second}),
                ),
            )
        if then:
            one = {"name": then.group(1)}
            return ModelTurn(tool_calls=(ToolCall(id="c-1", name="delete_pod", args=one),))
        if found := re.fullmatch(r"delete (\S+)", words):
            name = found.group(1)
            return ModelTurn(
                tool_calls=(ToolCall(id="c-1", name="delete_pod", args={"name": name}),)
            )
        if found := re.fullmatch(r"scale (\S+) to (\d+)", words):
            name, replicas = found.group(1), int(found.group(2))
            args = {"name": name, "replicas": replicas}
            return ModelTurn(tool_calls=(ToolCall(id="c-1", name="scale", args=args),))
        return ModelTurn(text="hello")


def agents() -> list[Agent]:
    return [
        Agent(
            name="ops",
            description="Looks after the cluster's pods.",
            model=Model(),
            tools=[list_pods, delete_pod, scale, ask_person()],
        ),
        Agent(name="greeter", model=Greeter()),
    ]


class Greeter:
    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        return ModelTurn(text="hello")
