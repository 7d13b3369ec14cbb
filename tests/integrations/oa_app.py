"""One OpenAI Agents SDK agent behind signoff, the framework's `Rig`
(tests/integrations/harness.py): built the same way by its tests, the tests every framework
shares and the worker processes they start: the real `Agent`, a `Model` of the SDK's interface
that plays a script (offline), tools that count every real execution in a file."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from agents import (
    Agent,
    Model,
    ModelResponse,
    Usage,
    function_tool,
    handoff,
    set_tracing_disabled,
)
from agents.testing import ScriptedModel, assistant_message, function_call

from signoff import Policy
from signoff.errors import ConflictError
from signoff.gate.external import ExternalRuns
from signoff.integrations.openai_agents import ORIGIN, SignoffAgent, connect
from tests.integrations.harness import (
    DEFAULT,
    IDEMPOTENT,
    listed,
    side_effects_in,
    tools,
    turns_in,
)
from tests.integrations.harness import POLICY as RULES

POLICY = Policy.from_dict(
    {**RULES, "agents": {"assistant/billing": {"rules": [{"allow": "charge"}]}}}
)
THREAD = "t-1"
LOST_RACE = (ConflictError,)
WAITS_ON_DENIED = False
STREAMED = "run_item_stream_event"
"""What a streamed run yields on its way to the tools."""


Script = list[Any]
"""Turn n of a thread (the model's answers so far) plays `script[n]`: a list of tool calls
``(name, args)``, or a text, to which the model adds the tool results it was given."""


def open_runs(database: str) -> ExternalRuns:
    return connect(POLICY, origin=ORIGIN, database=database)


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
          fresh_ids: bool = False, billing_filter: Any = None,
          more: Sequence[Callable[..., Any]] = ()) -> Agent[Any]:  # fmt: skip
    """The assistant, with the tools `more` beside the counting ones (and, with `billing`, a
    billing agent it can hand off to, through a handoff with `billing_filter` as its input
    filter when given)."""
    read_file, send_email, charge, read_secrets = tools(side_effects)

    @function_tool(failure_error_function=None)
    def flaky(note: str) -> str:
        """A tool whose failure ends the run (no error text for the model)."""
        with side_effects.open("a") as f:
            f.write(f"flaky {note}\n")
        raise RuntimeError("the printer is on fire")

    model = Played(script, calls, fresh_ids=fresh_ids)
    handoffs: Sequence[Any] = ()
    if billing:
        biller = Agent(name="billing", model=model,
                       tools=[function_tool(charge), function_tool(send_email)])  # fmt: skip
        handoffs = [
            biller if billing_filter is None else handoff(biller, input_filter=billing_filter)
        ]
    return Agent(
        name="assistant",
        model=model,
        tools=[
            *(function_tool(t) for t in (read_file, send_email, charge, *more)),
            function_tool(read_secrets, needs_approval=True),
            flaky,
        ],
        handoffs=list(handoffs),
    )


def agent(runs: ExternalRuns, folder: Path, script: Script = DEFAULT,
          **kwargs: Any) -> SignoffAgent:  # fmt: skip
    """`build`'s assistant behind signoff (`kwargs` for `build`, then for `SignoffAgent`); its
    `charge` is idempotent where `IDEMPOTENT` is set."""
    set_tracing_disabled(True)  # offline: the SDK would export traces to OpenAI
    built_with = ("billing", "fresh_ids", "billing_filter", "more")
    options = {k: kwargs.pop(k) for k in built_with if k in kwargs}
    built = build(script, side_effects_in(folder), turns_in(folder), **options)
    idempotent = ["charge"] if os.environ.get(IDEMPOTENT) else []
    return SignoffAgent(built, runs, requested_by="alice", idempotent=idempotent, **kwargs)


async def start(agent: SignoffAgent, thread: str, text: str = "go") -> Any:
    return await agent.run(text, thread=thread)


async def resume(agent: SignoffAgent, thread: str) -> Any:
    return await agent.resume(thread)


async def stream(agent: SignoffAgent, thread: str) -> list[str]:
    """The kinds of what a streamed run yields: the SDK's stream events."""
    return [event.type async for event in agent.stream("go", thread=thread)]


def asked(result: Any) -> list[str]:
    """The calls the run waits on: its interruptions."""
    return [i.call_id for i in result.interruptions]


def text(result: Any) -> str:
    return str(result.final_output)


async def last(agent: SignoffAgent, thread: str) -> dict[str, Any] | None:
    """What the model's final text listed, once the thread's kept entries end with it (not with
    a paused run's state)."""
    entries = await agent.runs.bridge.arun(agent.runs.store.history(ORIGIN, thread))
    kept = [json.loads(e) for e in entries]
    end = [e for e in kept if "state" in e or "item" in e or "conversation" in e][-1]
    if "state" in end:
        return None
    item = end["item"] if "item" in end else end["conversation"][-1]
    [part] = item["content"]
    return listed(part["text"])
