"""LlamaIndex: a `FunctionAgent` with LlamaIndex's own `MockFunctionCallingLLM`, scripted, plain
and through signoff's `SignoffWorkflow`. Its own held path (an `InputRequiredEvent` with the
workflow's `Context` kept) is not measured yet."""

from __future__ import annotations

import uuid
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM

from cases import Case
from frameworks import ARGS, QUESTION, REPLY, Kept, Sides, check, lookup
from signoff.gate.external import ExternalRuns
from signoff.integrations.llama_index import SignoffWorkflow


def scripted(messages: Any, **kwargs: Any) -> ChatMessage:
    """A call of ``lookup``, then `REPLY` once its result is in."""
    if any(m.role == "tool" for m in messages):
        return ChatMessage(role="assistant", content=REPLY)
    call = ToolCallBlock(
        tool_call_id=uuid.uuid4().hex, tool_name="lookup", tool_kwargs=ARGS["lookup"]
    )
    return ChatMessage(role="assistant", blocks=[call])


def llama_index_sides(kept: Kept, allow: ExternalRuns, ask: ExternalRuns) -> Sides:
    def agent() -> FunctionAgent:
        return FunctionAgent(
            name="assistant",
            tools=[lookup],
            llm=MockFunctionCallingLLM(response_generator=scripted),
        )

    plain, ours = agent(), SignoffWorkflow(agent(), allow)

    async def plain_allowed(thread: str) -> None:
        check((await plain.run(user_msg=QUESTION)).response.content, "lookup")  # type: ignore[attr-defined]

    async def run_allowed(thread: str) -> None:
        check((await ours.run(QUESTION, thread=thread)).output.response.content, "lookup")

    return Sides("LlamaIndex", plain_allowed, run_allowed, None, None, None, None, None, ask)


CASE = Case(
    name="LlamaIndex",
    build=llama_index_sides,
    unmeasured="its own path (InputRequiredEvent, the Context kept) has no case here yet",
)
