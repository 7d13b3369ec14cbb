"""`SignoffHooks`: signoff on a Strands agent. Before each tool call it judges the call (or reads
how it was decided) and runs it once, answers it, or asks with Strands' interrupt; after an
invocation that stopped on signoff's interrupts it records the pause (once the session manager
saved the agent); an invocation that answers them goes on only once every call is decided and
nobody continued the pause already. `resumer` answers the interrupts once decided."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from strands import Agent
from strands.hooks import (
    AfterInvocationEvent,
    BeforeInvocationEvent,
    BeforeToolCallEvent,
    HookProvider,
    HookRegistry,
)
from strands.hooks.registry import HookOrder

from signoff.errors import ConflictError
from signoff.gate.external import ExternalRuns, Pause, Resumed, Resumer
from signoff.integrations._calls import Schemas
from signoff.integrations._hitl import MARK, resume_decisions
from signoff.integrations._pauses import RESUMING, Continuation
from signoff.integrations.strands.session import (
    NAME,
    answered,
    thread_of,
    transcript_of,
    turn_of,
    waiting,
)
from signoff.integrations.strands.tools import answered as answer_with
from signoff.integrations.strands.tools import ran_once
from signoff.types import Approval, ToolCall

__all__ = ["SignoffHooks"]

DECIDED = {MARK: "decided"}
"""The response signoff's resumer gives its interrupts: read the decisions from the store."""


class SignoffHooks(HookProvider):
    """signoff's policy, approvals, grants, ledger and audit for a Strands agent's tool calls."""

    def __init__(
        self, runs: ExternalRuns, *, requested_by: str | None = None, idempotent: Iterable[str] = ()
    ) -> None:
        """`runs` from `connect(policy, origin="strands", database=...)`; `requested_by` who
        starts the agent's invocations (default: the invocation's ``invocation_state["user_id"]``,
        which is also who sent the interrupt responses of a resuming invocation); `idempotent`
        the tools safe to run again when a worker died inside them."""
        self.runs = runs
        self.requested_by = requested_by
        self.idempotent = frozenset(idempotent)
        self._schemas = Schemas(runs)
        self._claims: dict[int, tuple[Continuation, str]] = {}
        """id(agent) → the claim of the pause its invocation continues, and the pause's id."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeInvocationEvent, self.continuing)
        registry.add_callback(BeforeToolCallEvent, self.before_tool)
        # Last: the session manager has saved the interrupted agent when the pause is recorded.
        registry.add_callback(AfterInvocationEvent, self.after_invocation, order=HookOrder.SDK_LAST)

    def _user(self, state: Mapping[str, Any]) -> str | None:
        user = state.get("user_id")
        return self.requested_by or (user if isinstance(user, str) else None)

    # -- the calls -------------------------------------------------------------------------

    async def before_tool(self, event: BeforeToolCallEvent) -> None:
        """Judge the call (or read how it was decided) and run it once, answer it, or ask."""
        tool, use, agent = event.selected_tool, event.tool_use, event.agent
        if tool is None:
            return  # no such tool: Strands tells the model so, nothing runs
        call_id, thread = str(use["toolUseId"]), thread_of(agent)
        turn = turn_of(agent.messages, call_id)
        args = use.get("input")
        if not isinstance(args, dict):
            event.cancel_tool = "signoff: the call's arguments are not a JSON object"
            return
        schema = tool.tool_spec.get("inputSchema", {}).get("json")
        schema = schema if isinstance(schema, dict) else None
        self._schemas.register(use["name"], schema, agent=agent.name)
        proposed = ToolCall(id=call_id, name=use["name"], args=args, agent=agent.name)
        interrupt_id = event._interrupt_id(NAME)
        state = agent._interrupt_state
        answer = state.interrupts.get(interrupt_id)
        resumed = answer is not None and answer.response is not None
        found = await self.runs.held_call(thread, proposed, turn) if resumed else None
        step = await self.runs.step_of(proposed, thread=thread, turn=turn, schema=schema,
                                       requested_by=self._user(event.invocation_state),
                                       found=found)  # fmt: skip
        if step.kind == "wait":
            assert step.approval is not None  # a call waits on its approval
            state.interrupts.pop(interrupt_id, None)  # answered, and still waiting: asked again
            event.interrupt(NAME, reason=_reason(step.approval, turn))
        if step.kind == "answer":
            if step.ok:
                event.selected_tool = answer_with(tool, step.text)
            else:
                event.cancel_tool = step.text
            return
        assert step.call is not None  # a call to run is named
        event.tool_use = {**use, "input": step.call.args}
        idempotent = use["name"] in self.idempotent
        event.selected_tool = ran_once(tool, self.runs, step, idempotent=idempotent)

    # -- pauses ----------------------------------------------------------------------------

    async def continuing(self, event: BeforeInvocationEvent) -> None:
        """An invocation that answers signoff's interrupts (the resumer's, or an app's own
        ``agent(responses)``) goes on only when each call of the pause is decided and nobody
        continued it already; else it is refused before it writes anything. An answer other than
        the resumer's is a decision (``{"type": "approve" | "edit" | "reject" | "respond", ...}``,
        with the ``version`` the interrupt showed), taken as the invocation's user's."""
        agent = event.agent
        found = answered(agent)
        if not found:
            return
        thread = thread_of(agent)
        approvals: dict[str, tuple[Approval, Any]] = {}
        for ours, response in found:
            held = await self.runs.held(thread, [ours["call"]], turn=ours.get("turn"))
            approval = held[ours["call"]].approval if ours["call"] in held else None
            if approval is not None and approval.id == ours["approval"]:  # signoff's, not forged
                approvals[approval.id] = (approval, response)
        if not approvals:
            raise ConflictError("signoff: the interrupts answered are none of the calls it holds")
        sent = {a.id: resume_decisions({"decisions": [r]}, [a]) for a, r in approvals.values()
                if not (isinstance(r, Mapping) and MARK in r)}  # fmt: skip
        if sent:
            await self.runs.decide(
                {i: s.decisions[i] for i, s in sent.items()},
                actor=self._user(event.invocation_state),
                versions={i: s.versions[i] for i, s in sent.items() if i in s.versions},
            )
        pause = await self.runs.open_pause(list(approvals))
        if pause is None or pause.thread_id != thread:
            raise ConflictError("signoff: this pause was continued already")
        continuation = Continuation(self.runs)
        await self.runs.bridge.arun(continuation.take(pause))  # refused: another continues it
        self._claims[id(agent)] = (continuation, pause.id)

    async def after_invocation(self, event: AfterInvocationEvent) -> None:
        """End the claim of the pause the invocation continued — done, unless it failed or
        stopped on the same calls again — and record the pause it stopped on."""
        agent, result = event.agent, event.result
        asked = waiting(result.interrupts or [] if result is not None else [])
        new = None
        if result is not None and result.stop_reason == "interrupt" and asked:
            new = self.runs.pause_of(
                thread=thread_of(agent), approvals=sorted(set(asked.values())),
                data={"session": agent.session_id, "user": self._user(event.invocation_state),
                      "interrupts": asked},
                agent=agent.name, conversation=transcript_of(agent.messages, agent.name),
            )  # fmt: skip
        claim = self._claims.pop(id(agent), None)
        if claim is not None:
            ok = result is not None and (new is None or new.id != claim[1])
            await self.runs.bridge.arun(claim[0].end(ok=ok))
        if new is not None:
            self.runs.paused(new, await self.runs.near(self.runs.store.save_pause(new)))

    def resumer(
        self,
        agent_of: Callable[[str], Agent | Awaitable[Agent]],
        *,
        on_resumed: Callable[[Resumed], Any] | None = None,
    ) -> Resumer:
        """A `Resumer` that answers a paused agent's interrupts once every call it waits on is
        decided — in any signoff channel. `agent_of(session_id)` gives the agent of that session
        (restored by its session manager, with these hooks); each resumed invocation's
        `AgentResult` reaches `on_resumed`, and ``wait(session_id)`` / ``await
        resumed(session_id)``."""

        async def resume(pause: Pause) -> Resumed | None:
            data = pause.data
            agent = agent_of(data["session"])
            agent = await agent if inspect.isawaitable(agent) else agent
            open_ = [i for i in data["interrupts"] if i in agent._interrupt_state.interrupts]
            if not open_ or not agent._interrupt_state.activated:
                return None  # the agent went on past the pause
            token = RESUMING.set((pause.id, pause.lease_owner or ""))
            try:
                responses: Any = [{"interruptResponse": {"interruptId": i, "response": DECIDED}}
                                  for i in open_]  # fmt: skip
                result = await agent.invoke_async(
                    responses,
                    invocation_state={"user_id": data["user"]} if data.get("user") else {},
                )
            finally:
                RESUMING.reset(token)
            return Resumed(data["session"], result)

        return Resumer(self.runs, resume, on_resumed=on_resumed)


def _reason(approval: Approval, turn: str | None) -> dict[str, Any]:
    """What an interrupt of signoff's carries: the call, and signoff's approval and its version
    (a client's decision sends the version back, and is refused if the call changed since)."""
    call = approval.call
    return {
        "message": f"signoff: {call.name} waits for a person's decision",
        "tool": call.name,
        "args": call.args,
        MARK: {"approval": approval.id, "version": approval.version, "call": call.id, "turn": turn},
    }
