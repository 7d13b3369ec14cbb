"""Microsoft Agent Framework: an `Agent` with a scripted chat client (a `BaseChatClient` with the
framework's function-calling layer, as the framework's own tests fake one), plain and through
signoff's `SignoffAgent`. Its own held path (a tool's ``approval_mode`` with the session kept) is
not measured yet."""

from __future__ import annotations

import uuid
from typing import Any

from agent_framework import (
    Agent,
    BaseChatClient,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    Message,
)

from cases import Case
from frameworks import ARGS, QUESTION, REPLY, Kept, Sides, check, lookup
from signoff.gate.external import ExternalRuns
from signoff.integrations.agent_framework import SignoffAgent


class Scripted(FunctionInvocationLayer, BaseChatClient):
    """A call of ``lookup``, then `REPLY` once its result is in."""

    def _inner_get_response(self, *, messages: Any, stream: Any, options: Any,
                            **kwargs: Any) -> Any:  # fmt: skip
        async def respond() -> ChatResponse:
            if any(c.type == "function_result" for m in messages for c in m.contents):
                return ChatResponse(messages=[Message("assistant", [REPLY])])
            call = Content.from_function_call(
                call_id=uuid.uuid4().hex, name="lookup", arguments=ARGS["lookup"]
            )
            return ChatResponse(messages=[Message("assistant", [call])])

        return respond()


def agent_framework_sides(kept: Kept, allow: ExternalRuns, ask: ExternalRuns) -> Sides:
    def agent() -> Agent:
        return Agent(client=Scripted(), name="assistant", tools=[lookup])

    plain, ours = agent(), SignoffAgent(agent(), allow)

    async def plain_allowed(thread: str) -> None:
        check((await plain.run(QUESTION)).text, "lookup")

    async def run_allowed(thread: str) -> None:
        check((await ours.run(QUESTION, thread=thread)).text, "lookup")

    return Sides(
        "Microsoft Agent Framework", plain_allowed, run_allowed, None, None, None, None, None, ask
    )


CASE = Case(
    name="Microsoft Agent Framework",
    build=agent_framework_sides,
    unmeasured="its own path (approval_mode, the session kept) has no case here yet",
)
