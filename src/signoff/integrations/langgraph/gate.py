"""What the LangGraph and LangChain integrations share: `LangGraphGate`, which judges a model
turn's calls together and runs each of them through signoff's core and ledger — exactly once,
only as allowed, approved or edited — or answers it; a held call waits for the turn's interrupt
(`signoff.integrations.langgraph.interrupt`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from signoff.errors import CallRefused, OutcomeUnknown
from signoff.gate.external import ExternalRuns, Held
from signoff.gate.once import Claim, Recorded
from signoff.integrations.langgraph.config import invoker, thread_of, tool_schema, turn_of
from signoff.integrations.langgraph.messages import blocked, record, reply, restored, unknown
from signoff.limits import ArgumentLimits
from signoff.types import ToolCall

__all__ = ["DEFERRED", "AsyncHandler", "Handler", "LangGraphGate"]

_LIMITS = ArgumentLimits()

Handler = Callable[[ToolCallRequest], "ToolMessage | Command[Any]"]
AsyncHandler = Callable[[ToolCallRequest], "Awaitable[ToolMessage | Command[Any]]"]


class LangGraphGate:
    """What the LangGraph and LangChain integrations share: judging a model turn's calls,
    running each through the ledger, answering decided ones (the turn's one interrupt:
    `signoff.integrations.langgraph.interrupt`)."""

    def __init__(
        self,
        runs: ExternalRuns,
        *,
        agent: str | None = None,
        requested_by: str | Callable[[RunnableConfig], str | None] | None = None,
    ) -> None:
        """`agent` is the path the policy's ``agents:`` section judges these calls by
        (``coordinator/researcher``); `requested_by` who started the thread (for rules that
        forbid self-approval): a name, or read from the run's config."""
        self.runs = runs
        self.agent = agent
        self._requested_by = requested_by

    # -- judging ---------------------------------------------------------------------------

    def requested_by(self, config: RunnableConfig) -> str | None:
        """Who runs the graph with `config`: the app's `requested_by` (a name, or a function of
        the config), else the user LangGraph Platform authenticated
        (``configurable.langgraph_auth_user_id``), else ``configurable.user_id`` — as the
        invoker says it. The same person is who sends a resume the LangChain way."""
        if callable(self._requested_by):
            return self._requested_by(config)
        if self._requested_by is not None:
            return self._requested_by
        return invoker(config)

    def agent_of(self, config: RunnableConfig) -> str | None:
        """The path the calls are judged by and shown with: the app's `agent`, else the name
        of the ``create_agent`` agent that makes them (``create_agent(name=...)``)."""
        named = (config.get("metadata") or {}).get("lc_agent_name")
        return self.agent or (named if isinstance(named, str) and named else None)

    def calls(self, message: AIMessage, config: RunnableConfig) -> list[ToolCall]:
        agent = self.agent_of(config)
        return [
            ToolCall(id=c["id"] or "", name=c["name"], args=_LIMITS.admit(c["args"]), agent=agent)
            for c in message.tool_calls
        ]

    async def judge(self, message: AIMessage, config: RunnableConfig) -> dict[str, Held]:
        """Judge the turn's calls (the same verdicts and approvals when judged before) and
        return how each stands, by call id."""
        return await self.runs.judged(
            self.calls(message, config),
            thread=thread_of(config),
            requested_by=self.requested_by(config),
            turn=message.id,
        )

    def key_of(self, request: ToolCallRequest) -> str:
        """The key the call of `request` is kept and run once under."""
        call_id = request.tool_call["id"] or ""
        return self.runs.key(thread_of(request.runtime.config), call_id,
                             turn_of(request.state, call_id))  # fmt: skip

    # -- one call --------------------------------------------------------------------------

    def execute(self, request: ToolCallRequest, handler: Handler) -> ToolMessage | Command[Any]:
        """Run (or answer) one call of the turn, synchronously: exactly once per call (a call
        a worker died inside is answered: whether it ran is not known)."""
        runs = self.runs
        try:
            started = runs.run_near(self._start(request))
            if not isinstance(started, tuple):
                return started
            plan, claim = started
            try:
                result = handler(plan.request)
            except BaseException as exc:
                runs.run_near(runs.fail(claim, exc))
                raise
            value = runs.run_near(runs.finish(claim, record(result)))
        except OutcomeUnknown as exc:
            return unknown(request.tool_call, self.key_of(request), exc)
        return restored(value, plan.key, plan.edited)

    async def aexecute(
        self, request: ToolCallRequest, handler: AsyncHandler
    ) -> ToolMessage | Command[Any]:
        """`execute` for async graphs."""
        runs = self.runs
        try:
            started = await runs.near(self._start(request))
            if not isinstance(started, tuple):
                return started
            plan, claim = started
            try:
                result = await handler(plan.request)
            except BaseException as exc:
                await runs.fail(claim, exc)
                raise
            value = await runs.finish(claim, record(result))
        except OutcomeUnknown as exc:
            return unknown(request.tool_call, self.key_of(request), exc)
        return restored(value, plan.key, plan.edited)

    async def _start(
        self, request: ToolCallRequest
    ) -> ToolMessage | Command[Any] | tuple[_Run, Claim]:
        """`_plan`, and for a call to run, its claim (on the bridge's loop: one hop for both).
        A call signoff refuses to run is answered, never run; one that ran before, by its
        recorded result."""
        plan = await self._plan(request)
        if not isinstance(plan, _Run):
            return plan
        try:
            claim = await self.runs.claim(plan.key, plan.call, idempotent=plan.idempotent)
        except CallRefused as exc:
            return blocked(request.tool_call, str(exc), plan.key)
        if isinstance(claim, Recorded):
            return restored(claim.value, plan.key, plan.edited)
        return plan, claim

    async def _plan(self, request: ToolCallRequest) -> _Run | ToolMessage | Command[Any]:
        """What to do with one call: run it (as approved) or the message that answers it."""
        config = request.runtime.config
        thread = thread_of(config)
        tool_call = request.tool_call
        call_id = tool_call["id"] or ""
        turn = turn_of(request.state, call_id)
        [proposed] = self.calls(AIMessage(content="", tool_calls=[tool_call]), config)
        # Not judged with its turn (another middleware's call, a state edited by hand): judged
        # now, alone.
        step = await self.runs.step_of(
            proposed,
            thread=thread,
            turn=turn,
            requested_by=self.requested_by(config),
            schema=tool_schema(request.tool),
            resumed=True,
        )
        if step.kind == "wait":
            return DEFERRED
        if step.kind == "answer":
            return reply(tool_call, step.text, step.ok, step.key)
        assert step.call is not None  # a call to run is named
        if step.edited is not None:
            request = request.override(tool_call={**tool_call, "args": step.edited})
        return _Run(request=request, key=step.key, call=step.call, edited=step.edited,
                    idempotent=_idempotent(request))  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class _Run:
    request: ToolCallRequest
    key: str
    call: ToolCall
    edited: dict[str, Any] | None
    idempotent: bool


DEFERRED: Command[Any] = Command(update={})
"""A held call's placeholder in the tools step: its result comes after the decision."""


def _idempotent(request: ToolCallRequest) -> bool:
    metadata = getattr(request.tool, "metadata", None) or {}
    return bool(metadata.get("idempotent") or metadata.get("read_only"))
