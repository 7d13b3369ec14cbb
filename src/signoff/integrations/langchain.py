"""LangChain v1 agents behind signoff: one middleware for ``create_agent``.

    runs = connect("policy.yaml", origin="langgraph", database="sqlite:///signoff.db")
    agent = create_agent(model, tools, middleware=[SignoffMiddleware(runs)],
                         checkpointer=SqliteSaver(conn))

Where `HumanInTheLoopMiddleware` asks by exact tool name, signoff's policy decides every call
with its arguments, globs, servers and agent paths. After each model turn the calls are judged
together: denied ones get a blocked result (never run); allowed ones run in the tools step,
once, through signoff's ledger; asked ones become approvals in signoff's store (the web inbox,
the API, the terminal, Slack) and the agent interrupts once for all of them, after the allowed
siblings have run. The run resumes — from `resumer`, or a ``Command(resume=...)`` sent the
LangChain way — with the decisions read from signoff's store: approved and edited calls run
(an edit checked by the tool's schema and the policy), a response is the tool's result, a
rejection's reason reaches the model.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from signoff.gate.external import ExternalRuns, connect
from signoff.integrations._asking import ASK_DESCRIPTION, ASK_PARAMETERS, ASK_TOOL, never_run
from signoff.integrations._calls import Schemas
from signoff.integrations._extra import needs
from signoff.integrations._lines import acheck_line, check_line
from signoff.integrations.langgraph import ORIGIN, resumer
from signoff.integrations.langgraph.config import thread_of, tool_schema
from signoff.integrations.langgraph.gate import AsyncHandler, Handler, LangGraphGate
from signoff.integrations.langgraph.interrupt import adecide_turn, decide_turn
from signoff.integrations.langgraph.messages import answer, blocked

with needs(__name__, "langgraph"):
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, hook_config
    from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import StructuredTool
    from langgraph.config import get_config
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.types import Command

__all__ = ["ORIGIN", "SignoffMiddleware", "ask_person", "connect", "resumer"]


def ask_person(*, name: str = ASK_TOOL, description: str = ASK_DESCRIPTION) -> StructuredTool:
    """The ask tool as a LangChain tool, for a ``create_agent`` agent or an `ApprovalToolNode`:
    signoff holds each call of it as a question for a person, and the answer is its result
    (a `name` of your own: name it in ``connect(questions=[...])`` too)."""
    return StructuredTool.from_function(
        never_run, name=name, description=description, args_schema=dict(ASK_PARAMETERS)
    )


class SignoffMiddleware(AgentMiddleware):
    """signoff's policy, approvals, grants, ledger and audit for a ``create_agent`` agent."""

    def __init__(
        self,
        runs: ExternalRuns,
        *,
        agent: str | None = None,
        requested_by: str | Callable[[RunnableConfig], str | None] | None = None,
    ) -> None:
        """`runs` from `connect` (or an `ExternalRuns` over a gate of yours); `agent` the path
        the policy's ``agents:`` section judges this agent's calls by (a sub-agent's
        ``coordinator/researcher``); `requested_by` who starts its threads (default: the run
        config's ``configurable.user_id``)."""
        super().__init__()
        self.signoff = LangGraphGate(runs, agent=agent, requested_by=requested_by)
        self._schemas = Schemas(runs)

    @property
    def name(self) -> str:
        # Unique per agent in one graph, and a valid LangGraph node name: ":" and "|" are
        # LangGraph's namespace separators.
        agent = self.signoff.agent
        return f"signoff[{agent.replace(':', '_').replace('|', '_')}]" if agent else "signoff"

    # -- the model call: its tools' schemas check edits; past a pause, one line goes on ----

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        self._register_all(request.tools)
        message = _last_ai(request.state["messages"])
        if message is not None:
            check_line(self.signoff, message, get_config())
        return handler(request)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> Any:
        self._register_all(request.tools)
        message = _last_ai(request.state["messages"])
        if message is not None:
            await acheck_line(self.signoff, message, get_config())
        return await handler(request)

    # -- after the model: judge the turn ---------------------------------------------------

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        message = _last_ai(state["messages"])
        if message is None:
            return None
        config = get_config()
        held = self.signoff.runs.run_near(self.signoff.judge(message, config))
        if not _waits_alone(held, message):
            return _blocked(message, held, self.signoff, config)
        held, _ = decide_turn(self.signoff, message, set(), config, state["messages"])
        return _settle(message, set(), held, self.signoff, config, jump=False)

    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        message = _last_ai(state["messages"])
        if message is None:
            return None
        config = get_config()
        held = await self.signoff.judge(message, config)
        if not _waits_alone(held, message):
            return _blocked(message, held, self.signoff, config)
        held, _ = await adecide_turn(self.signoff, message, set(), config, state["messages"])
        return _settle(message, set(), held, self.signoff, config, jump=False)

    # -- the tools step: run once, or answer ----------------------------------------------

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Handler
    ) -> ToolMessage | Command[Any]:
        self._register_all([request.tool])
        return self.signoff.execute(request, handler)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: AsyncHandler
    ) -> ToolMessage | Command[Any]:
        self._register_all([request.tool])
        return await self.signoff.aexecute(request, handler)

    # -- before the next model turn: the turn's one interrupt ------------------------------

    @hook_config(can_jump_to=["tools"])
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        message = _last_ai(state["messages"])
        if message is None:
            return None
        config, answered = get_config(), _answered(state["messages"])
        held, _ = decide_turn(self.signoff, message, answered, config, state["messages"])
        return _settle(message, answered, held, self.signoff, config)

    @hook_config(can_jump_to=["tools"])
    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        message = _last_ai(state["messages"])
        if message is None:
            return None
        config, answered = get_config(), _answered(state["messages"])
        held, _ = await adecide_turn(self.signoff, message, answered, config, state["messages"])
        return _settle(message, answered, held, self.signoff, config)

    # -- small things ----------------------------------------------------------------------

    def _register_all(self, tools: Iterable[Any]) -> None:
        """The schemas of the tools the model is shown: an edit of a call is checked against
        its tool's schema when it is decided, before the call reaches the tools step."""
        self._schemas.register_all(tools, tool_schema, agent=self.signoff.agent)


def _last_ai(messages: list[AnyMessage]) -> AIMessage | None:
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return message if message.tool_calls else None
    return None


def _answered(messages: list[AnyMessage]) -> set[str]:
    """The ids of the calls that have a result after the last AI message."""
    ids: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            break
        if isinstance(message, ToolMessage):
            ids.add(message.tool_call_id)
    return ids


def _waits_alone(held: dict[str, Any], message: AIMessage) -> bool:
    """Whether the turn waits on a person and has nothing to run first: then it interrupts
    straight after the model (its calls settled on the resume), not after a tools step and
    before the next model turn, where a turn with allowed calls interrupts once they ran."""
    found = [held.get(call["id"] or "") for call in message.tool_calls]
    return all(h is not None and h.record.kind != "run" for h in found) and any(
        h is not None and h.approval is not None and h.approval.pending for h in found
    )


def _blocked(
    message: AIMessage, held: dict[str, Any], gate: LangGraphGate, config: RunnableConfig
) -> dict[str, Any] | None:
    """The results of the turn's denied calls: they never reach the tools step."""
    thread = thread_of(config)
    answers = [
        blocked(
            call,
            held[call["id"] or ""].record.reason,
            gate.runs.key(thread, call["id"] or "", message.id),
        )
        for call in message.tool_calls
        if (call["id"] or "") in held and held[call["id"] or ""].record.kind == "block"
    ]
    return {"messages": answers} if answers else None


def _settle(
    message: AIMessage,
    answered: set[str],
    held: dict[str, Any],
    gate: LangGraphGate,
    config: RunnableConfig,
    *,
    jump: bool = True,
) -> dict[str, Any] | None:
    """Every call of the turn decided: the results of those that do not run, and back to the
    tools step for those that do (approved, edited — or allowed ones a crash left unrun).
    Straight after the model (`jump` false) the tools step comes next anyway."""
    thread = thread_of(config)
    answers = []
    to_run = False
    for call in message.tool_calls:
        call_id = call["id"] or ""
        if call_id in answered:
            continue
        found = held.get(call_id)
        key = gate.runs.key(thread, call_id, message.id)
        if found is None or found.record.kind == "run":
            to_run = True
        elif found.record.kind == "block":
            answers.append(blocked(call, found.record.reason, key))
        elif found.approval is not None and found.approval.status in ("approved", "edited"):
            to_run = True
        elif found.approval is not None:
            answers.append(answer(call, found.approval, key))
    if not answers and not to_run:
        return None
    update: dict[str, Any] = {"messages": answers} if answers else {}
    if to_run and jump:
        update["jump_to"] = "tools"
    return update or None
