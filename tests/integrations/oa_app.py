"""One OpenAI Agents SDK agent behind signoff, built the same way by the tests and by the worker
processes they start (tests/integrations/oa_worker.py): the real `Agent`, a `Model` of the SDK's
interface that plays a script (offline), tools that count every real execution in a file."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from agents import Agent, Model, ModelResponse, Usage, function_tool, handoff
from agents.testing import ScriptedModel, assistant_message, function_call

from signoff import Policy
from signoff.gate.external import ExternalRuns
from signoff.integrations.openai_agents import ORIGIN, SignoffAgent, connect
from tests.integrations.harness import DEFAULT, HANG_IN_TOOL
from tests.integrations.harness import POLICY as RULES

__all__ = ["DEFAULT", "HANG_IN_TOOL", "POLICY", "THREAD", "build", "open_runs"]

POLICY: dict[str, Any] = {
    **RULES,
    "agents": {"assistant/billing": {"rules": [{"allow": "charge"}]}},
}
THREAD = "t-1"


Script = list[Any]
"""Turn n of a thread (the model's answers so far) plays `script[n]`: a list of tool calls
``(name, args)``, or a text, to which the model adds the tool results it was given."""


def open_runs(database: str) -> ExternalRuns:
    return connect(Policy.from_dict(POLICY), origin=ORIGIN, database=database)


class Played(Model):
    """A model that plays `script` by the conversation it is given (so any process, resuming
    any thread, gets the same answer), noting each turn it plays in `calls`."""

    def __init__(self, script: Script, calls: Path, *, fresh_ids: bool = False) -> None:
        self.script = script
        self.calls = calls
        self.fresh_ids = fresh_ids
        """Call ids made unique by each process (as a hosted model's are), not by the turn only."""

    def output(self, input: str | list[Any]) -> list[Any]:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else input
        turn = sum(
            _field(i, "role") == "assistant"
            or (
                _field(i, "type") == "function_call"
                and str(_field(i, "call_id")).split("-")[0].endswith("_0")
            )
            for i in items
        )
        with self.calls.open("a") as f:
            f.write(f"{turn}\n")
        step = self.script[turn] if turn < len(self.script) else "done"
        if isinstance(step, str):
            results = {
                _field(i, "call_id"): _field(i, "output")
                for i in items
                if _field(i, "type") == "function_call_output"
            }
            return [assistant_message(f"{step} {json.dumps(results, sort_keys=True)}")]
        fresh = f"-{uuid.uuid4().hex[:8]}" if self.fresh_ids else ""
        return [
            function_call(name, args, call_id=f"call_{turn}_{n}{fresh}")
            for n, (name, args) in enumerate(step)
        ]

    async def get_response(self, system_instructions: Any, input: Any, *args: Any,
                           **kwargs: Any) -> ModelResponse:  # fmt: skip
        return ModelResponse(output=self.output(input), usage=Usage(), response_id=None)

    async def stream_response(self, system_instructions: Any, input: Any, *args: Any,
                              **kwargs: Any) -> AsyncIterator[Any]:  # fmt: skip
        # The SDK's own scripted model turns one answer into the Responses API's events.
        once = ScriptedModel([self.output(input)])
        async for event in once.stream_response(system_instructions, input, *args, **kwargs):
            yield event


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def build(script: Script, side_effects: Path, calls: Path, *, billing: bool = False,
          fresh_ids: bool = False, billing_filter: Any = None) -> Agent[Any]:  # fmt: skip
    """The assistant (and, with `billing`, a billing agent it can hand off to, through a
    handoff with `billing_filter` as its input filter when given)."""

    def record(line: str) -> None:
        with side_effects.open("a") as f:
            f.write(line + "\n")

    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        record(f"read_file {path}")
        return f"contents of {path}"

    @function_tool
    def send_email(to: str, body: str = "") -> str:
        """Send an email."""
        record(f"send_email {to} {body}")
        return f"sent to {to}"

    @function_tool
    def charge(amount: int) -> str:
        """Charge the customer."""
        record(f"charge {amount}")
        if os.environ.get(HANG_IN_TOOL):
            print("inside the tool", flush=True)
            while True:
                time.sleep(1)  # the test kills this process here
        return f"charged {amount}"

    @function_tool(needs_approval=True)
    def read_secrets() -> str:
        """Read the secrets (the tool itself asks for approval)."""
        record("read_secrets")
        return "the secrets"

    @function_tool(failure_error_function=None)
    def flaky(note: str) -> str:
        """A tool whose failure ends the run (no error text for the model)."""
        record(f"flaky {note}")
        raise RuntimeError("the printer is on fire")

    model = Played(script, calls, fresh_ids=fresh_ids)
    handoffs: Sequence[Any] = ()
    if billing:
        biller = Agent(name="billing", model=model, tools=[charge, send_email])
        handoffs = [
            biller if billing_filter is None else handoff(biller, input_filter=billing_filter)
        ]
    return Agent(
        name="assistant",
        model=model,
        tools=[read_file, send_email, charge, read_secrets, flaky],
        handoffs=list(handoffs),
    )


def signoff_agent(runs: ExternalRuns, script: Script, side_effects: Path, calls: Path,
                  **kwargs: Any) -> SignoffAgent:  # fmt: skip
    options = {k: kwargs.pop(k) for k in ("billing", "fresh_ids", "billing_filter") if k in kwargs}
    agent = build(script, side_effects, calls, **options)
    return SignoffAgent(agent, runs, requested_by="alice", **kwargs)
