"""`SignoffAgent`: a Pydantic AI agent run, deferred and resumed behind signoff — its thread's
history kept in signoff's store (`history`), resumed by one process at a time with the decisions
read from the store — and `SignoffCapability`, the hooks that judge each call of a run and run
it once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pydantic_ai import Agent, ApprovalRequired, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ToolCallPart
from pydantic_ai.tools import (
    DeferredToolRequests,
    DeferredToolResults,
    ToolApproved,
    ToolDefinition,
    ToolDenied,
)
from pydantic_core import to_json

from signoff.gate.answers import answer_text, blocked_text, edited_text
from signoff.gate.external import LEASE, ExternalRuns, Held
from signoff.integrations._calls import Tools, Unrun
from signoff.integrations._kept import KeptThreads, extended, waits
from signoff.integrations._threads import Append
from signoff.integrations.pydantic_ai.history import messages_of, open_calls, transcript_of, turn_of
from signoff.types import ToolCall

__all__ = ["ORIGIN", "SignoffAgent", "SignoffCapability"]

ORIGIN = "pydantic-ai"

Handler = Callable[[Any], Awaitable[Any]]


class SignoffAgent(KeptThreads[Any], Tools):
    """A Pydantic AI `Agent` with signoff's policy, approvals, grants, ledger and audit, and
    its threads' histories kept in signoff's store. A resume asks a call still undecided
    again; each resumed run's `AgentRunResult` reaches a `resumer`'s ``on_resumed``."""

    origin = ORIGIN

    def __init__(
        self,
        agent: Agent[Any, Any],
        runs: ExternalRuns,
        *,
        path: str | None = None,
        requested_by: str | None = None,
        lease: timedelta = LEASE,
    ) -> None:
        """`runs` from `connect(policy, origin="pydantic-ai", database=...)`; `path` the agent
        path the policy's ``agents:`` section judges its calls by (default: the agent's name);
        `requested_by` who starts its threads (a rule may forbid them approving their own) —
        recorded on each approval; `lease` how long a resume holds its thread unrenewed (it
        renews it every third of that while it runs)."""
        Tools.__init__(self, runs, path=path, requested_by=requested_by)
        self.agent = agent
        self.lease = lease

    # -- running ---------------------------------------------------------------------------

    async def run(self, prompt: str | None = None, *, thread: str, **kwargs: Any) -> Any:
        """Run the agent on `thread`, with the thread's history so far; the new messages are
        appended to it. Ends with the agent's output, or `DeferredToolRequests` while calls
        wait for a person. `kwargs` go to `Agent.run` (deps, model_settings, ...)."""
        items, history = await self._history(thread)
        result = await self.agent.run(
            prompt,
            message_history=history or None,
            capabilities=[SignoffCapability(self, thread)],
            output_type=_with_deferred(self.agent.output_type),
            **kwargs,
        )
        await self._keep(thread, result, self._appender(thread, len(items)))
        return result

    async def stream(
        self, prompt: str | None = None, *, thread: str, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """`run`, node by node (`Agent.iter`: model requests and responses, tool calls as they
        come; stream a node's tokens with its ``.stream(run.ctx)``); the thread is kept once the
        run ends, as `run` keeps it."""
        items, history = await self._history(thread)
        async with self.agent.iter(
            prompt,
            message_history=history or None,
            capabilities=[SignoffCapability(self, thread)],
            output_type=_with_deferred(self.agent.output_type),
            **kwargs,
        ) as run:
            async for node in run:
                yield node
            assert run.result is not None  # the run ended
            await self._keep(thread, run.result, self._appender(thread, len(items)))

    async def _resume(self, thread: str, **kwargs: Any) -> tuple[Any | None, bool]:
        """`resume`, and whether the thread's pause is over (False: it waits on)."""
        items = await self._entries(thread, resuming=True)
        history = messages_of(items)
        waiting = open_calls(history)
        if not waiting:
            return None, True  # nothing waits: the run went on already
        turn = turn_of(history, waiting[0].tool_call_id)
        held = await self.runs.held(thread, [c.tool_call_id for c in waiting], turn=turn)
        decided = [h.approval.id for h in held.values() if h.approval and not h.approval.pending]
        if not decided:
            # Going on would only ask the same calls again: the pause waits on, untouched.
            return None, False
        results = DeferredToolResults(
            approvals={c.tool_call_id: _resume_value(held.get(c.tool_call_id)) for c in waiting}
        )

        async def go(append: Append) -> Any:
            result = await self.agent.run(
                message_history=history,
                deferred_tool_results=results,
                capabilities=[SignoffCapability(self, thread)],
                output_type=_with_deferred(self.agent.output_type),
                **kwargs,
            )
            await self._keep(thread, result, append)
            return result

        return await self._held(thread, items, go, decided)

    async def _history(self, thread: str) -> tuple[list[str], list[ModelMessage]]:
        """The thread's history (kept items and messages), refused while it waits on people:
        it takes no new prompt until it is resumed."""
        items = await self._entries(thread)
        history = messages_of(items)
        if open_calls(history):
            raise waits(thread)
        return items, history

    def run_sync(self, prompt: str | None = None, *, thread: str, **kwargs: Any) -> Any:
        """`run` from synchronous code (not inside a running event loop)."""
        return asyncio.run(self.run(prompt, thread=thread, **kwargs))

    async def _keep(self, thread: str, result: Any, append: Append) -> None:
        """Append the run's new messages to the thread's history, with the pause when the run
        ended waiting on people (one transaction)."""
        new = [to_json(m).decode() for m in result.new_messages()]
        output, pause = result.output, None
        if isinstance(output, DeferredToolRequests) and output.approvals:
            turn = turn_of(result.all_messages(), output.approvals[0].tool_call_id)
            records = await self.runs.records(
                thread, [c.tool_call_id for c in output.approvals], turn=turn
            )
            asked = [r.approval_id for r in records.values() if r.approval_id is not None]
            if asked:
                agent = self.path or self.agent.name
                conversation = transcript_of(result.all_messages(), agent)
                pause = self._pause_of(thread, asked, agent, conversation)
        if not await append(new, pause):
            raise extended(thread)

    # -- one call --------------------------------------------------------------------------

    async def execute(
        self,
        thread: str,
        ctx: RunContext[Any],
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: Any,
        handler: Handler,
    ) -> Any:
        """Judge one call (or read how it was judged) and run it, answer it, or defer it."""
        path = self._path(ctx)
        # Edits of this agent's calls are checked against its tools' schemas when decided.
        self._schemas.register(tool_def.name, tool_def.parameters_json_schema, agent=path)
        proposed = ToolCall(
            id=call.tool_call_id, name=call.tool_name, args=call.args_as_dict(), agent=path
        )
        turn = turn_of(ctx.messages, proposed.id)
        # Resumed: the call was judged when it was proposed (its arguments may be edited).
        step = await self.runs.step_of(
            proposed,
            thread=thread,
            turn=turn,
            requested_by=self.requested_by,
            schema=tool_def.parameters_json_schema,
            resumed=ctx.tool_call_approved,
        )
        if step.kind == "wait":
            assert step.approval is not None  # a call that waits has its approval
            # What `DeferredToolRequests.metadata` shows of the call: its approval, and the
            # version of the call as it stands (a decision in signoff sends it back).
            shown = {"approval": step.approval.id, "version": step.approval.version}
            raise ApprovalRequired(metadata={"signoff": shown})
        if step.kind == "answer":
            return step.text if step.ok else ToolDenied(step.text)
        assert step.call is not None  # a call to run is named
        if step.edited is not None and proposed.args != step.edited:
            # The handler's `args` were validated from the call as resumed: only a resume that
            # carried the edit (`ToolApproved(override_args=...)`) runs it.
            return ToolDenied(blocked_text("the resume did not carry the edited arguments"))
        ran = await self.once(step.key, step.call, lambda: handler(args), json=True)
        if isinstance(ran, Unrun):
            return ToolDenied(ran.text)
        if step.edited is not None and isinstance(ran, str):
            return edited_text(step.edited, ran)
        return ran

    async def settle(
        self, thread: str, ctx: RunContext[Any], requests: DeferredToolRequests
    ) -> DeferredToolResults | None:
        """Judge the calls a tool deferred itself (``requires_approval=True``): allowed ones
        go on to run (through `execute`), denied ones are answered, asked ones wait."""
        path = self._path(ctx)
        calls = [
            ToolCall(id=c.tool_call_id, name=c.tool_name, args=c.args_as_dict(), agent=path)
            for c in requests.approvals
        ]
        if not calls:
            return None
        turn = turn_of(ctx.messages, calls[0].id)
        held = await self.runs.judged(
            calls, thread=thread, requested_by=self.requested_by, turn=turn
        )
        answers = {
            call.id: _resume_value(found)
            for call in calls
            if (found := held[call.id]).record.kind != "hold"
            or (found.approval is not None and not found.approval.pending)
        }
        return DeferredToolResults(approvals=answers) if answers else None

    def _path(self, ctx: RunContext[Any]) -> str | None:
        """The agent path its calls are judged by: the one given, else the agent's name."""
        return self.path or (ctx.agent.name if ctx.agent is not None else None)


@dataclass
class SignoffCapability(AbstractCapability[Any]):
    """The hooks `SignoffAgent` adds to each run of its agent, for one thread."""

    signoff: SignoffAgent
    thread: str

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: Any,
        handler: Handler,
    ) -> Any:
        return await self.signoff.execute(self.thread, ctx, call, tool_def, args, handler)

    async def handle_deferred_tool_calls(
        self, ctx: RunContext[Any], *, requests: DeferredToolRequests
    ) -> DeferredToolResults | None:
        return await self.signoff.settle(self.thread, ctx, requests)


# -- small things ------------------------------------------------------------------------------


def _resume_value(found: Held | None) -> bool | ToolApproved | ToolDenied:
    """What a waiting call is resumed with. The hook reads the decision from the store again
    and acts on that, so this only spares a tool call a rejection already answers."""
    if found is None:
        return ToolDenied(blocked_text("signoff holds no decision on this call"))
    approval = found.approval
    if found.record.kind == "block":
        return ToolDenied(blocked_text(found.record.reason))
    if found.record.kind == "run" or approval is None or approval.pending:
        return True  # allowed; or undecided: asked again
    if approval.status in ("approved", "responded"):
        return True
    if approval.status == "edited":
        return ToolApproved(override_args=approval.call.args)
    text, _ = answer_text(approval)
    return ToolDenied(text)


def _with_deferred(output_type: Any) -> Any:
    """The agent's output type, with `DeferredToolRequests` (a run ends with it while calls
    wait for a person)."""
    types = list(output_type) if isinstance(output_type, Sequence) else [output_type]
    return types if DeferredToolRequests in types else [*types, DeferredToolRequests]
