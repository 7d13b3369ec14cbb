"""LangChain's `create_agent` with `SignoffMiddleware`, and a LangGraph graph with the drop-in
`ApprovalToolNode`, as the shared scenarios drive them: the real graphs and checkpointers
(SQLite or PostgreSQL), a chat model playing the script with the provider's call ids, and the
scenarios' tools."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition
from langgraph.types import Command

from signoff.gate.external import ExternalRuns, Resumed, Resumer
from signoff.integrations.langchain import SignoffMiddleware, ask_person, connect
from signoff.integrations.langgraph import MARK, ApprovalToolNode, resumer
from tests.integrations.adapters import _base
from tests.integrations.adapters._base import AdapterBase
from tests.integrations.lc_app import checkpointer
from tests.integrations.scenarios import (
    REQUESTER,
    Call,
    Outcome,
    Script,
    Seen,
    final_text,
    tools,
)


class _Model(BaseChatModel):
    """Turn n (the AI messages so far) proposes `script[n]`, with the script's call ids."""

    script: list[Any]
    turns: Any  # the adapter's own list (a pydantic list field would be a copy)

    @property
    def _llm_type(self) -> str:
        return "scenario"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> _Model:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        turn = sum(isinstance(m, AIMessage) for m in messages)
        self.turns.append(turn)
        step = _base.step(self.script, turn)
        if isinstance(step, str):
            results = [(m.tool_call_id, str(m.content)) for m in messages
                       if isinstance(m, ToolMessage)]  # fmt: skip
            return ChatResult(generations=[ChatGeneration(message=AIMessage(
                content=final_text(step, results)))])  # fmt: skip
        calls = [{"name": c.name, "args": c.args, "id": c.id, "type": "tool_call"} for c in step]
        message = AIMessage(content="", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=message)])


def _tools(side_effects: Path) -> list[StructuredTool]:
    return [*(StructuredTool.from_function(f) for f in tools(side_effects)), ask_person()]


class LangChainAdapter(AdapterBase):
    name = "langchain"
    no_ask = ""

    def __init__(self, runs: ExternalRuns, saver: Any, side_effects: Path) -> None:
        super().__init__(runs, side_effects)
        self.saver = saver
        self._agents: dict[str, Any] = {}

    def _agent(self, thread: str, script: Script | None = None) -> Any:
        if script is not None:
            model = _Model(script=list(script), turns=self._turns)
            self._agents[thread] = self._build(model)
        return self._agents[thread]

    def _build(self, model: _Model) -> Any:
        return create_agent(model, _tools(self.side_effects), name="assistant",
                            middleware=[SignoffMiddleware(self.runs)],
                            checkpointer=self.saver)  # fmt: skip

    @staticmethod
    def _config(thread: str, user: str | None = REQUESTER) -> dict[str, Any]:
        configurable: dict[str, Any] = {"thread_id": thread}
        if user is not None:
            configurable["user_id"] = user
        return {"configurable": configurable}

    @staticmethod
    def _outcome(result: dict[str, Any]) -> Outcome:
        if result.get("__interrupt__"):
            return Outcome(paused=True)
        last = result["messages"][-1]
        return Outcome(paused=False, text=str(last.content))

    async def start(self, thread: str, script: Script) -> Outcome:
        agent = self._agent(thread, script)
        result = await asyncio.to_thread(
            agent.invoke, {"messages": [{"role": "user", "content": "go"}]}, self._config(thread)
        )
        return self._outcome(result)

    async def resume(self, thread: str) -> Outcome:
        """What signoff's `resumer` does once the calls are decided (its own `Resumer`, claiming
        the pause) — or, for a thread whose state a person edited (which ends its interrupts),
        go on as LangGraph Studio's "continue" does."""
        agent, config = self._agent(thread), self._config(thread)
        state = await asyncio.to_thread(agent.get_state, config)
        interrupts = [i for i in state.interrupts if isinstance(i.value, dict) and MARK in i.value]
        if not interrupts and state.next:
            return self._outcome(await asyncio.to_thread(agent.invoke, None, config))
        for pause in {i.value[MARK]["pause"] for i in interrupts}:
            await self.runs.bridge.arun(resumer(agent, self.runs).resume_ready(pause))
        state = await asyncio.to_thread(agent.get_state, config)
        if state.interrupts:
            return Outcome(paused=True)
        return self._outcome(dict(state.values))

    def resumer(self, thread: str, *, on_resumed: Callable[[Resumed], Any]) -> Resumer:
        return resumer(self._agent(thread), self.runs, on_resumed=on_resumed)

    def text(self, output: Any) -> str | None:
        return self._outcome(output).text

    async def send(
        self, thread: str, approve: bool, *, user: str | None, seen: Seen = None
    ) -> Outcome:
        """LangChain's ``{"decisions": [...]}``, in the interrupt's order, each with the version
        of its call (signoff's key beside LangChain's)."""
        agent, config = self._agent(thread), self._config(thread, user)
        state = await asyncio.to_thread(agent.get_state, config)
        [interrupt] = state.interrupts
        ours = interrupt.value[MARK]
        versions = ours["versions"] if seen is None else seen
        decision = {"type": "approve"} if approve else {"type": "reject", "message": "no"}
        decisions = [{**decision, "version": versions[a]} for a in ours["approvals"]]
        command: Command[Any] = Command(resume={"decisions": decisions})
        return self._outcome(await asyncio.to_thread(agent.invoke, command, config))

    async def shown(self, thread: str) -> dict[str, int]:
        """The interrupt's value: signoff's part names each approval's version."""
        state = await asyncio.to_thread(self._agent(thread).get_state, self._config(thread))
        [interrupt] = state.interrupts
        versions: dict[str, int] = interrupt.value[MARK]["versions"]
        return versions

    async def tamper(self, thread: str, call: Call) -> None:
        """What LangGraph Studio's state editor does: the AI message, same id, other call."""
        agent, config = self._agent(thread), self._config(thread)
        state = await asyncio.to_thread(agent.get_state, config)
        message = next(m for m in reversed(state.values["messages"]) if isinstance(m, AIMessage))
        calls = [
            {"name": call.name, "args": call.args, "id": c["id"], "type": "tool_call"}
            if c["id"] == call.id else c
            for c in message.tool_calls
        ]  # fmt: skip
        changed = message.model_copy(update={"tool_calls": calls})
        await asyncio.to_thread(agent.update_state, config, {"messages": [changed]})


class ToolNodeAdapter(LangChainAdapter):
    """A model node and signoff's `ApprovalToolNode` in a `StateGraph` of the user's."""

    name = "langgraph"

    def _build(self, model: _Model) -> Any:
        def think(state: MessagesState) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        builder = StateGraph(MessagesState)
        builder.add_node("agent", think)
        builder.add_node("tools", ApprovalToolNode(_tools(self.side_effects), runs=self.runs,
                                                   agent="assistant"))  # fmt: skip
        builder.add_edge(START, "agent")
        builder.add_conditional_edges("agent", tools_condition)
        builder.add_edge("tools", "agent")
        return builder.compile(checkpointer=self.saver)


@contextlib.asynccontextmanager
async def tool_node(database: str, tmp_path: Path) -> AsyncIterator[LangChainAdapter]:
    async with opened(database, tmp_path, kind=ToolNodeAdapter) as adapter:
        yield adapter


@contextlib.asynccontextmanager
async def opened(
    database: str, tmp_path: Path, *, kind: type[LangChainAdapter] = LangChainAdapter
) -> AsyncIterator[LangChainAdapter]:
    if database.startswith("sqlite"):
        checkpoints = str(tmp_path / "checkpoints.db")
    else:
        checkpoints = database.replace("postgresql+asyncpg://", "postgresql://")
    async with _base.connected(connect, "langgraph", database) as runs:
        with checkpointer(checkpoints) as saver:
            yield kind(runs, saver, tmp_path / "side-effects.txt")
