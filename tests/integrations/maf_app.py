"""One Microsoft Agent Framework agent behind signoff, the framework's `Rig`
(tests/integrations/harness.py): built the same way by its tests, the tests every framework
shares and the worker processes they start — the real `Agent`, a chat client of the framework's
own layers playing a script (offline), tools that count every real execution in a file."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from agent_framework import (
    Agent,
    AgentResponse,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    ResponseStream,
    tool,
)

from signoff import Policy
from signoff.errors import ConflictError
from signoff.gate.external import ExternalRuns
from signoff.integrations.agent_framework import ORIGIN, SignoffAgent, connect
from signoff.integrations.agent_framework.agent import read
from tests.integrations.harness import (
    DEFAULT,
    IDEMPOTENT,
    listed,
    side_effects_in,
    tools,
    turns_in,
)
from tests.integrations.harness import POLICY as RULES

__all__ = ["DEFAULT", "THREAD", "Scripted", "agent", "build", "open_runs", "tools"]

POLICY = Policy.from_dict(RULES)
THREAD = "t-1"
LOST_RACE = (ConflictError,)
WAITS_ON_DENIED = False
STREAMED = "AgentResponseUpdate"
"""What a streamed run yields on its way to the tools."""
Script = list[list[tuple[str, dict[str, Any]]] | str]


class Scripted(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """Turn n (the model's answers in the conversation so far) proposes `script[n]` — calls
    ``call_<n>_<i>`` — or a text that lists the tool results it was given. Every call of the
    model is noted in `turns`."""

    def __init__(self, script: Script, turns: Path) -> None:
        super().__init__()
        self.script, self.turns = script, turns

    def _inner_get_response(self, *, messages: Sequence[Message], stream: bool,
                            options: Any, **kwargs: Any) -> Any:  # fmt: skip
        turn = sum(m.role == "assistant" for m in messages)
        with self.turns.open("a") as f:
            f.write(f"{turn}\n")
        step = self.script[turn] if turn < len(self.script) else "done"
        if isinstance(step, str):
            results = {c.call_id: str(c.result) for m in messages for c in m.contents
                       if c.type == "function_result"}  # fmt: skip
            contents = [Content.from_text(f"{step} {json.dumps(results, sort_keys=True)}")]
        else:
            contents = [Content.from_function_call(call_id=f"call_{turn}_{i}", name=name,
                                                   arguments=args)
                        for i, (name, args) in enumerate(step)]  # fmt: skip

        if stream:  # the same answer, as one update

            async def updates() -> AsyncIterator[ChatResponseUpdate]:
                yield ChatResponseUpdate(role="assistant", contents=contents)

            return ResponseStream(updates(), finalizer=ChatResponse.from_updates)

        async def respond() -> ChatResponse:
            return ChatResponse(messages=[Message("assistant", contents)])

        return respond()


def build(script: Script, side_effects: Path, turns: Path, *,
          more: Sequence[Callable[..., Any]] = ()) -> Agent[Any]:  # fmt: skip
    """The assistant, with the tools `more` beside the counting ones; ``read_secrets`` is
    declared to ask for approval itself."""
    read_file, send_email, charge, read_secrets = tools(side_effects)
    secrets = tool(read_secrets, approval_mode="always_require")
    return Agent(client=Scripted(script, turns), name="assistant",
                 tools=[read_file, send_email, charge, secrets, *more])  # fmt: skip


def agent(runs: ExternalRuns, folder: Path, script: Script = DEFAULT, *,
          more: Sequence[Callable[..., Any]] = (), **options: Any) -> SignoffAgent:  # fmt: skip
    """`build`'s assistant behind signoff (`options` for `SignoffAgent`); its `charge` is
    idempotent where `IDEMPOTENT` is set."""
    built = build(script, side_effects_in(folder), turns_in(folder), more=more)
    idempotent = ["charge"] if os.environ.get(IDEMPOTENT) else []
    return SignoffAgent(built, runs, requested_by="alice", idempotent=idempotent, **options)


async def start(agent: SignoffAgent, thread: str, text: str = "go") -> AgentResponse:
    return await agent.run(text, thread=thread)


async def resume(agent: SignoffAgent, thread: str) -> AgentResponse | None:
    return await agent.resume(thread)


async def stream(agent: SignoffAgent, thread: str) -> list[str]:
    """The kinds of what a streamed run yields: the framework's updates."""
    return [type(update).__name__ async for update in agent.stream("go", thread=thread)]


def asked(result: AgentResponse) -> list[str]:
    """The calls the run waits on: its approval requests."""
    return sorted(str(r.function_call.call_id) for r in result.user_input_requests
                  if r.function_call is not None)  # fmt: skip


def text(result: AgentResponse) -> str:
    return result.text


async def last(agent: SignoffAgent, thread: str) -> dict[str, Any] | None:
    """What the model's final text listed, once the thread as kept waits on no request."""
    entries = await agent.runs.bridge.arun(agent.runs.store.history(ORIGIN, thread))
    messages, _, requests = read(entries)
    said = [c["text"] for c in messages[-1]["contents"] if c["type"] == "text"] if messages else []
    return listed(said[-1]) if said and not requests else None


def open_runs(database: str) -> ExternalRuns:
    return connect(POLICY, origin=ORIGIN, database=database)
