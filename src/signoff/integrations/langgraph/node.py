"""`ApprovalToolNode`: LangGraph's `ToolNode` with signoff in front. The node judges the calls of
the last AI message together, runs each through `LangGraphGate` (allowed ones at once, decided
ones on the re-run after the turn's one interrupt) and leaves no placeholder of a held call in
its output."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.prebuilt import ToolNode

from signoff.gate.external import ExternalRuns
from signoff.integrations._calls import Schemas
from signoff.integrations._pauses import acontinuing, continuing
from signoff.integrations.langgraph.config import tool_schema
from signoff.integrations.langgraph.gate import DEFERRED, LangGraphGate
from signoff.integrations.langgraph.interrupt import adecide_turn, decide_turn

__all__ = ["ApprovalToolNode"]


class ApprovalToolNode(ToolNode):
    """`ToolNode` with signoff in front: seed 002's approval node between agent and tools.

    Judges all calls of the last AI message; runs the allowed ones (once, through the ledger);
    answers the denied ones; holds the asked ones and interrupts once for all of them. On
    resume the node re-runs: nothing runs twice, and decided calls run (approved, edited) or
    are answered (responded, rejected)."""

    def __init__(
        self,
        tools: Sequence[Any],
        *,
        runs: ExternalRuns,
        agent: str | None = None,
        requested_by: str | Callable[[RunnableConfig], str | None] | None = None,
        name: str = "tools",
        handle_tool_errors: Any = True,
    ) -> None:
        self.signoff = LangGraphGate(runs, agent=agent, requested_by=requested_by)
        super().__init__(
            list(tools),
            name=name,
            handle_tool_errors=handle_tool_errors,
            wrap_tool_call=self.signoff.execute,
            awrap_tool_call=self.signoff.aexecute,
        )
        Schemas(runs).register_all(self.tools_by_name.values(), tool_schema, agent=agent)

    def _func(self, input: Any, config: RunnableConfig, runtime: Any) -> Any:
        message, gate = _last_ai(input), self.signoff
        if message is not None:
            gate.runs.run_near(gate.judge(message, config))
        # The pause this run goes on past stays claimed while the decided calls run.
        with continuing(gate.runs):
            # Allowed calls run (and decided ones, on a resume); held ones wait for the
            # interrupt, and run once decided: by the payload, or meanwhile by anyone.
            output = super()._func(input, config, runtime)
            if message is not None and (
                decide_turn(gate, message, set(), config, _messages(input))[1] or _waited(output)
            ):
                output = super()._func(input, config, runtime)
        return _settled(output)

    async def _afunc(self, input: Any, config: RunnableConfig, runtime: Any) -> Any:
        message, gate = _last_ai(input), self.signoff
        if message is not None:
            await gate.judge(message, config)
        async with acontinuing(gate.runs):
            output = await super()._afunc(input, config, runtime)
            if message is not None and (
                (await adecide_turn(gate, message, set(), config, _messages(input)))[1]
                or _waited(output)
            ):
                output = await super()._afunc(input, config, runtime)
        return _settled(output)


def _messages(input: Any) -> list[Any]:
    """The graph's messages in a tool node's input."""
    messages = input.get("messages") if isinstance(input, dict) else input
    if not isinstance(messages, list):
        messages = getattr(input, "messages", None) or []
    return list(messages)


def _last_ai(input: Any) -> AIMessage | None:
    for message in reversed(_messages(input)):
        if isinstance(message, AIMessage):
            return message if message.tool_calls else None
    return None


def _waited(output: Any) -> bool:
    """Whether a tools step left a held call waiting (its placeholder in the output)."""
    return isinstance(output, list) and any(o is DEFERRED for o in output)


def _settled(output: Any) -> Any:
    """The node's output without held calls' placeholders (none are left once decided)."""
    if isinstance(output, list):
        return [o for o in output if o is not DEFERRED]
    return output
