"""LangChain: ``create_agent`` with a checkpointer (``SqliteSaver`` on a file of the SDK's
own), with ``HumanInTheLoopMiddleware`` asking nothing and with ``SignoffMiddleware``; a held call
through LangChain's own ``HumanInTheLoopMiddleware``, resumed with ``Command(resume={"decisions":
[approve]})``, against ``SignoffMiddleware`` resumed with what signoff's resumer sends.
``invoke`` is synchronous: each step runs it on a thread of its own, as an app's worker would."""

from __future__ import annotations

import asyncio
import random
import sqlite3
import uuid
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from cases import Case
from frameworks import ARGS, QUESTION, REPLY, Kept, Sides, check, filler, lookup, send_report
from signoff.gate.external import ExternalRuns
from signoff.integrations.langchain import SignoffMiddleware


class Scripted(BaseChatModel):
    """Answers a user's message with one call of `tool`, anything else with `REPLY`."""

    tool: str

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Scripted:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if isinstance(messages[-1], HumanMessage):
            call = {"name": self.tool, "args": ARGS[self.tool], "id": uuid.uuid4().hex,
                    "type": "tool_call"}  # fmt: skip
            reply = AIMessage(content="", tool_calls=[call])
        else:
            reply = AIMessage(content=REPLY)
        return ChatResult(generations=[ChatGeneration(message=reply)])


SETTLED = {"own": "HumanInTheLoopMiddleware.after_model", "signoff": "signoff.after_model"}
"""The node a thread's history is written as, so that the graph waits for new input."""


def langchain_sides(kept: Kept, allow: ExternalRuns, ask: ExternalRuns) -> Sides:
    connection = sqlite3.connect(kept.path.with_name("checkpoints.db"), check_same_thread=False)
    saver = SqliteSaver(connection)
    reads, held = Scripted(tool="lookup"), Scripted(tool="send_report")
    # The agent without signoff has LangChain's own hook, asking nothing (issue 49's peer): what
    # a middleware's node costs LangGraph (a checkpoint more) is the framework's, not signoff's.
    quiet = HumanInTheLoopMiddleware(interrupt_on={"lookup": False})
    plain = create_agent(reads, [lookup], middleware=[quiet], checkpointer=saver)
    allowed = create_agent(reads, [lookup], middleware=[SignoffMiddleware(allow)],
                           checkpointer=saver)  # fmt: skip
    asking = HumanInTheLoopMiddleware(interrupt_on={"send_report": True})
    own = create_agent(held, [send_report], middleware=[asking], checkpointer=saver)
    ours = create_agent(held, [send_report], middleware=[SignoffMiddleware(ask)],
                        checkpointer=saver)  # fmt: skip
    asked: dict[str, Any] = {}

    def config(thread: str) -> RunnableConfig:
        return {"configurable": {"thread_id": thread}}

    async def invoke(agent: Any, given: Any, thread: str) -> Any:
        return await asyncio.to_thread(agent.invoke, given, config(thread))

    def said(result: Any) -> Any:
        return result["messages"][-1].content

    async def plain_allowed(thread: str) -> None:
        check(said(await invoke(plain, {"messages": [HumanMessage(QUESTION)]}, thread)), "lookup")

    async def run_allowed(thread: str) -> None:
        check(said(await invoke(allowed, {"messages": [HumanMessage(QUESTION)]}, thread)),
              "lookup")  # fmt: skip

    async def pause(agent: Any, thread: str) -> None:
        result = await invoke(agent, {"messages": [HumanMessage(QUESTION)]}, thread)
        [asked[thread]] = result["__interrupt__"]

    async def own_pause(thread: str) -> None:
        await pause(own, thread)

    async def own_resume(thread: str) -> None:
        asked.pop(thread)
        command: Command[Any] = Command(resume={"decisions": [{"type": "approve"}]})
        check(said(await invoke(own, command, thread)), "send_report")

    async def signoff_pause(thread: str) -> None:
        await pause(ours, thread)

    async def signoff_resume(thread: str) -> None:
        command: Command[Any] = Command(resume={"signoff": asked.pop(thread).value["signoff"]})
        check(said(await invoke(ours, command, thread)), "send_report")

    async def fill(thread: str, size: int, rng: random.Random) -> None:
        messages = [(HumanMessage if i % 2 == 0 else AIMessage)(content=filler(rng))
                    for i in range(size)]  # fmt: skip
        agent, node = (own, SETTLED["own"]) if thread.startswith("own-") else (
            ours, SETTLED["signoff"])  # fmt: skip
        await asyncio.to_thread(agent.update_state, config(thread), {"messages": messages},
                                as_node=node)  # fmt: skip

    return Sides("LangChain", plain_allowed, run_allowed, own_pause, own_resume,
                 signoff_pause, signoff_resume, fill, ask)  # fmt: skip


CASE = Case(name="LangChain", build=langchain_sides)
