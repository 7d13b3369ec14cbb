"""One Agno agent behind signoff, built the same way by the tests and by the worker processes
they start (tests/integrations/ag_worker.py): the real `Agent` with its own `SqliteDb`, a `Model`
of Agno's interface playing a script (offline), tools that count every real execution in a
file."""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse
from agno.tools import tool

from signoff import Policy
from signoff.gate.external import ExternalRuns
from signoff.integrations.agno import ORIGIN, connect
from tests.integrations.harness import DEFAULT, HANG_IN_TOOL
from tests.integrations.harness import POLICY as RULES

__all__ = ["DEFAULT", "HANG_IN_TOOL", "POLICY", "SESSION", "build", "open_runs"]

POLICY = Policy.from_dict(RULES)
SESSION = "s-1"
Script = list[Any]


@dataclass
class Scripted(Model):
    """Turn n (the number of assistant messages so far) proposes `script[n]`: tool calls, or a
    text that lists the tool results it was given. Every call of the model is noted in
    `turns`."""

    id: str = "scripted"
    name: str = "Scripted"
    provider: str = "signoff-tests"
    script: Script = field(default_factory=list)
    turns: Path | None = None
    numbered: bool = False
    """Number the calls of each response from 0 (``call_0``), as LiteLLM does when the
    provider gives none: the same ids again in every response."""

    def _reply(self, messages: list[Message]) -> ModelResponse:
        turn = sum(m.role == "assistant" for m in messages)
        if self.turns is not None:
            with self.turns.open("a") as f:
                f.write(f"{turn}\n")
        step = self.script[turn] if turn < len(self.script) else "done"
        if isinstance(step, str):
            results = {m.tool_call_id: str(m.content) for m in messages if m.role == "tool"}
            return ModelResponse(
                role="assistant", content=f"{step} {json.dumps(results, sort_keys=True)}"
            )
        calls = [
            {"id": f"call_{i}" if self.numbered else f"call_{turn}_{i}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(step)
        ]  # fmt: skip
        return ModelResponse(role="assistant", tool_calls=calls)

    def invoke(self, messages: list[Message], *args: Any, **kwargs: Any) -> ModelResponse:
        return self._reply(messages)

    async def ainvoke(self, messages: list[Message], *args: Any, **kwargs: Any) -> ModelResponse:
        return self._reply(messages)

    def invoke_stream(
        self, messages: list[Message], *args: Any, **kwargs: Any
    ) -> Iterator[ModelResponse]:
        yield self._reply(messages)

    async def ainvoke_stream(
        self, messages: list[Message], *args: Any, **kwargs: Any
    ) -> AsyncIterator[ModelResponse]:
        yield self._reply(messages)

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]


def build(script: Script, side_effects: Path, turns: Path, *, tools: list[Any] = ()) -> Agent:  # type: ignore[assignment]
    def record(line: str) -> None:
        with side_effects.open("a") as f:
            f.write(line + "\n")

    def read_file(path: str) -> str:
        """Read a file."""
        record(f"read_file {path}")
        return f"contents of {path}"

    async def send_email(to: str, body: str = "") -> str:
        """Send an email."""
        record(f"send_email {to} {body}")
        return f"sent to {to}"

    def charge(amount: int) -> str:
        """Charge the customer."""
        record(f"charge {amount}")
        if os.environ.get(HANG_IN_TOOL):
            print("inside the tool", flush=True)
            while True:
                time.sleep(1)  # the test kills this process here
        return f"charged {amount}"

    @tool(requires_confirmation=True)
    def read_secrets() -> str:
        """Read the secrets (the tool itself asks for confirmation)."""
        record("read_secrets")
        return "the secrets"

    return Agent(
        name="assistant",
        id="assistant",
        model=Scripted(script=script, turns=turns),
        tools=[read_file, send_email, charge, read_secrets, *tools],
        db=SqliteDb(db_file=str(side_effects.parent / "agno.db")),
        add_history_to_context=True,  # the model sees the session's earlier runs
        num_history_runs=100,
    )


def open_runs(database: str) -> ExternalRuns:
    return connect(POLICY, origin=ORIGIN, database=database)
