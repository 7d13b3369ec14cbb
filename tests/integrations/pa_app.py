"""One Pydantic AI agent behind signoff, built the same way by the tests and by the worker
processes they start (tests/integrations/pa_worker.py): the real `Agent`, its own `FunctionModel`
playing a script (offline), tools that count every real execution in a file."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from signoff import Policy
from signoff.gate.external import ExternalRuns
from signoff.integrations.pydantic_ai import ORIGIN, connect
from tests.integrations.harness import DEFAULT, HANG_IN_TOOL
from tests.integrations.harness import POLICY as RULES

__all__ = ["DEFAULT", "HANG_IN_TOOL", "POLICY", "THREAD", "build", "open_runs"]


POLICY = Policy.from_dict(RULES)
THREAD = "t-1"
Script = list[list[tuple[str, dict[str, Any]]] | str]


def scripted(script: Script, turns: Path) -> FunctionModel:
    """Turn n (the number of model responses so far) proposes `script[n]`: tool calls or a text
    that lists the tool results it was given. Every call of the model is noted in `turns`."""

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        with turns.open("a") as f:
            f.write(f"{turn}\n")
        step = script[turn] if turn < len(script) else "done"
        if isinstance(step, str):
            results = {
                p.tool_call_id: str(p.content)
                for m in messages
                if isinstance(m, ModelRequest)
                for p in m.parts
                if isinstance(p, ToolReturnPart)
            }
            return ModelResponse(parts=[TextPart(f"{step} {json.dumps(results, sort_keys=True)}")])
        return ModelResponse(
            parts=[
                ToolCallPart(name, args, tool_call_id=f"call_{turn}_{i}")
                for i, (name, args) in enumerate(step)
            ]
        )

    return FunctionModel(reply)


def build(script: Script, side_effects: Path, turns: Path) -> Agent[None, str]:
    agent = Agent(scripted(script, turns), name="assistant")

    def record(line: str) -> None:
        with side_effects.open("a") as f:
            f.write(line + "\n")

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        record(f"read_file {path}")
        return f"contents of {path}"

    @agent.tool_plain
    def send_email(to: str, body: str = "") -> str:
        """Send an email."""
        record(f"send_email {to} {body}")
        return f"sent to {to}"

    @agent.tool_plain
    def charge(amount: int) -> str:
        """Charge the customer."""
        record(f"charge {amount}")
        if os.environ.get(HANG_IN_TOOL):
            print("inside the tool", flush=True)
            while True:
                time.sleep(1)  # the test kills this process here
        return f"charged {amount}"

    @agent.tool_plain(requires_approval=True)
    def read_secrets() -> str:
        """Read the secrets (the tool itself asks for approval)."""
        record("read_secrets")
        return "the secrets"

    return agent


def open_runs(database: str) -> ExternalRuns:
    return connect(POLICY, origin=ORIGIN, database=database)
