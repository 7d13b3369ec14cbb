"""`SignoffHooks`: each tool call judged (or read as decided) and run once in the tool's place,
answered, or asked with Strands' interrupt; an invocation answering them takes the decisions it
sends and claims the pause; one stopped on them records it. `resumer` answers them once decided."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from strands import Agent, hooks
from strands.tools.tools import PythonAgentTool
from strands.types._events import ToolResultEvent
from strands.types.tools import AgentTool, ToolResult, ToolUse

from signoff.errors import ConflictError
from signoff.gate.answers import edited_text
from signoff.gate.external import ExternalRuns, Pause, Resumed, Resumer, Step
from signoff.integrations._calls import Schemas, Unrun, result_once
from signoff.integrations._hitl import MARK, resume_decisions
from signoff.integrations._pauses import RESUMING, Continuation
from signoff.integrations.strands import session
from signoff.integrations.strands.session import NAME, thread_of
from signoff.types import Approval, ToolCall

__all__ = ["DECIDED", "NAME", "SignoffHooks"]

logger = logging.getLogger("signoff.strands")
DECIDED = {MARK: "decided"}
"""The response signoff's resumer gives its interrupts: the decisions are in signoff's store."""


class SignoffHooks(hooks.HookProvider):
    """signoff's policy, approvals, grants, ledger and audit for a Strands agent's tool calls."""

    def __init__(
        self, runs: ExternalRuns, *, requested_by: str | None = None, idempotent: Iterable[str] = ()
    ) -> None:
        """`runs` from `connect(policy, origin="strands", ...)`; `requested_by` who starts the
        invocations (default: ``invocation_state["user_id"]``, also who sent a resuming
        invocation's answers); `idempotent` the tools safe to run again after a crash."""
        self.runs = runs
        self.requested_by = requested_by
        self.idempotent = frozenset(idempotent)
        self._schemas = Schemas(runs)
        self._claims: dict[int, tuple[Continuation, str]] = {}  # id(agent) → claim, pause id

    def register_hooks(self, registry: hooks.HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(hooks.BeforeInvocationEvent, self.continuing)
        registry.add_callback(hooks.BeforeToolCallEvent, self.before_tool)
        # Last: the session manager has saved the interrupted agent when the pause is recorded.
        last = hooks.HookOrder.SDK_LAST
        registry.add_callback(hooks.AfterInvocationEvent, self.after_invocation, order=last)

    def _user(self, state: Mapping[str, Any]) -> str | None:
        return self.requested_by or (u if isinstance(u := state.get("user_id"), str) else None)

    async def before_tool(self, event: hooks.BeforeToolCallEvent) -> None:
        """Judge the call (or read how it was decided) and run it once, answer it, or ask."""
        tool, use, agent = event.selected_tool, event.tool_use, event.agent
        if tool is None:
            return  # no such tool: Strands tells the model so, nothing runs
        if not isinstance(args := use.get("input"), dict):
            event.cancel_tool = "signoff: the call's arguments are not a JSON object"
            return
        call_id, thread = str(use["toolUseId"]), thread_of(agent)
        turn = session.turn_of(agent.messages, call_id)  # the model response it came from
        spec = tool.tool_spec.get("inputSchema", {}).get("json")
        schema = spec if isinstance(spec, dict) else None
        self._schemas.register(use["name"], schema, agent=agent.name)
        proposed = ToolCall(id=call_id, name=use["name"], args=args, agent=agent.name)
        interrupts, interrupt_id = agent._interrupt_state.interrupts, event._interrupt_id(NAME)
        # Answered: judged when asked. What runs is what signoff's store says, not the answer.
        resumed = getattr(interrupts.get(interrupt_id), "response", None) is not None
        found = await self.runs.held_call(thread, proposed, turn) if resumed else None
        step = await self.runs.step_of(proposed, thread=thread, turn=turn, schema=schema,
                                       requested_by=self._user(event.invocation_state),
                                       found=found)  # fmt: skip
        if step.kind == "wait":
            assert step.approval is not None  # a call waits on its approval
            interrupts.pop(interrupt_id, None)  # asked again, as it stands now
            # The version a client's decision sends back: refused if the call changed since.
            a = step.approval
            ours = {"approval": a.id, "version": a.version, "call": call_id, "turn": turn}
            event.interrupt(NAME, reason={"tool": a.call.name, "args": a.call.args, MARK: ours})
        if step.kind == "answer" and step.ok:
            event.selected_tool = _tool(tool, lambda use, _: _text(use, step.text, ok=True))
        elif step.kind == "answer":
            event.cancel_tool = step.text
        else:
            assert step.call is not None  # a call to run is named
            event.tool_use = {**use, "input": step.call.args}
            once = use["name"] in self.idempotent
            event.selected_tool = _tool(tool, self._once(tool, step, once))

    def _once(self, tool: AgentTool, step: Step, idempotent: bool) -> Any:
        """The result of `tool` run once under the step's key, as the call the step names (as
        proposed, or as a person edited it); a call signoff refuses is answered, never run."""
        call = step.call
        assert call is not None  # a call to run is named

        async def result(tool_use: ToolUse, state: dict[str, Any]) -> Any:
            async def execute() -> Any:  # as judged: Strands' middleware may rewrite the input
                judged: Any = {**tool_use, "input": call.args}
                return [e.tool_result async for e in tool.stream(judged, state)
                        if isinstance(e, ToolResultEvent)][-1]  # fmt: skip

            value = await result_once(self.runs, step.key, call, execute, idempotent=idempotent)
            if isinstance(value, Unrun):
                return _text(tool_use, value.text, ok=False)
            notes = [] if step.edited is None else [{"text": edited_text(step.edited, "").rstrip()}]
            return {**value, "toolUseId": tool_use["toolUseId"],
                    "content": [*notes, *value["content"]]}  # fmt: skip

        return result

    async def continuing(self, event: hooks.BeforeInvocationEvent) -> None:
        """An invocation that answers signoff's interrupts continues their pause, claimed so
        that it is continued once (else refused before anything is written). An answer other
        than `DECIDED` is a decision by the invocation's user, as `_hitl` reads one."""
        agent, thread = event.agent, thread_of(event.agent)
        approvals: dict[str, tuple[Approval, Any]] = {}
        if not (answers := session.answered(agent)):
            return
        for ours, response in answers:
            held = await self.runs.held(thread, [ours["call"]], turn=ours.get("turn"))
            approval = held[ours["call"]].approval if ours["call"] in held else None
            if approval is not None and approval.id == ours["approval"]:  # signoff's, not forged
                approvals[approval.id] = (approval, response)
        if not approvals:  # its interrupts, as the saved state has them, are not signoff's
            raise ConflictError("signoff: the interrupts answered are not the calls it holds")
        sent = resume_decisions({i: r for i, (_, r) in approvals.items() if r != DECIDED},
                                [a for a, _ in approvals.values()])  # fmt: skip
        if sent.decisions:  # sent the framework's way: the invocation's user decided
            actor = self._user(event.invocation_state)
            await self.runs.decide(sent.decisions, actor=actor, versions=sent.versions)
        pause = await self.runs.open_pause(list(approvals))
        if pause is None or pause.thread_id != thread:
            raise ConflictError("signoff: this pause was continued already")
        continuation = Continuation(self.runs)
        await self.runs.bridge.arun(continuation.take(pause))  # refused: another continues it
        self._claims[id(agent)] = (continuation, pause.id)

    async def after_invocation(self, event: hooks.AfterInvocationEvent) -> None:
        """End the claim on the pause the invocation continued — done, unless it failed or
        stopped on the same calls again — and record the pause it stopped on."""
        agent, result = event.agent, event.result
        asked = session.waiting(result.interrupts or [] if result is not None else [])
        new = None
        if result is not None and result.stop_reason == "interrupt" and asked:
            user = self._user(event.invocation_state)
            new = self.runs.pause_of(
                thread=thread_of(agent), approvals=sorted(set(asked.values())), agent=agent.name,
                data={"session": agent.session_id, "user": user, "interrupts": asked},
                conversation=session.transcript_of(agent.messages, agent.name),
            )  # fmt: skip
        if (claim := self._claims.pop(id(agent), None)) is not None:
            ok = result is not None and (new is None or new.id != claim[1])
            await self.runs.bridge.arun(claim[0].end(ok=ok))
        if new is not None:
            self.runs.paused(new, await self.runs.near(self.runs.store.save_pause(new)))

    def resumer(self, agent_of: Callable[[str], Agent], *,
                on_resumed: Callable[[Resumed], Any] | None = None) -> Resumer:  # fmt: skip
        """A `Resumer` that answers a paused agent's interrupts once every call it waits on is
        decided, in any channel. `agent_of(session_id)` gives the session's agent (restored by
        its session manager, with these hooks); each resumed `AgentResult` reaches
        `on_resumed`, and ``wait(session_id)`` / ``await resumed(session_id)``."""

        async def resume(pause: Pause) -> Resumed | None:
            data = pause.data
            state = (agent := agent_of(data["session"]))._interrupt_state
            open_ = [i for i in data["interrupts"] if i in state.interrupts and state.activated]
            if not open_:  # it went on past the pause; or `agent_of` restored no saved state
                logger.warning("session %s waits on no interrupt of the pause", data["session"])
                return None
            answers: Any = [{"interruptResponse": {"interruptId": i, "response": DECIDED}}
                            for i in open_]  # fmt: skip
            token = RESUMING.set((pause.id, pause.lease_owner or ""))
            try:
                user = {"user_id": data["user"]} if data.get("user") else {}
                result = await agent.invoke_async(answers, invocation_state=user)
            finally:
                RESUMING.reset(token)
            return Resumed(data["session"], result)

        return Resumer(self.runs, resume, on_resumed=on_resumed)


def _tool(tool: AgentTool, result: Callable[..., Any]) -> AgentTool:
    """`tool` (its name and spec) giving what `result(tool_use, invocation_state)` gives."""

    async def give(tool_use: ToolUse, **state: Any) -> ToolResult:
        found = result(tool_use, state)
        return cast(ToolResult, await found if inspect.isawaitable(found) else found)

    return PythonAgentTool(tool.tool_name, tool.tool_spec, give)


def _text(tool_use: ToolUse, text: str, *, ok: bool) -> ToolResult:
    return {"toolUseId": tool_use["toolUseId"], "status": "success" if ok else "error",
            "content": [{"text": text}]}  # fmt: skip
