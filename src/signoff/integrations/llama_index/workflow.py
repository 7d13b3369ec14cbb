"""`SignoffWorkflow`: a LlamaIndex agent workflow whose tools (`Gated`) signoff judges, runs once or
holds, stopped where calls wait, its `Context` kept in signoff's store for any process to resume."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from llama_index.core.llms import ChatMessage
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.tools import AsyncBaseTool, BaseTool, FunctionTool, ToolMetadata, ToolOutput
from llama_index.core.tools import adapt_to_async_tool as asynchronous
from llama_index.core.workflow import Context, HumanResponseEvent, InputRequiredEvent, Workflow
from pydantic_core import to_jsonable_python
from workflows.context.serializers import JsonSerializer
from workflows.events import StepState, StepStateChanged, WorkflowIdleEvent
from workflows.handler import WorkflowHandler
from workflows.runtime.types.results import AddWaiter, StepWorkerStateContextVar, WaitingForEvent

from signoff.errors import ConflictError
from signoff.gate import transcript
from signoff.gate.answers import blocked_text, edited_text
from signoff.gate.external import LEASE, ExternalRuns, NewPause, Resumed, Resumer
from signoff.integrations._calls import Schemas, Unrun, run_once
from signoff.integrations._hitl import take_sent
from signoff.integrations._threads import Hold, busy, now, resumer, unmarked
from signoff.types import Approval, ToolCall

__all__ = ["ORIGIN", "Gated", "Ran", "SignoffWorkflow"]

ORIGIN = "llama-index"
WAITER = "signoff:"  # a held call waits under this, then its approval's id
THREAD = "signoff_thread"  # the run's signoff thread, in the workflow's store (its context)


class Gated(AsyncBaseTool):
    """`tool` of the agent at `path`, each call judged, run, answered or held by signoff."""

    def __init__(self, tool: BaseTool, runs: ExternalRuns, *, path: str,
                 requested_by: str | None, idempotent: bool) -> None:  # fmt: skip
        self.tool, self.runs, self.path = tool, runs, path
        self.requested_by, self.idempotent = requested_by, idempotent
        self.name, self.schema = tool.metadata.get_name(), tool.metadata.get_parameters_dict()

    @property
    def metadata(self) -> ToolMetadata:
        return self.tool.metadata

    def call(self, input: Any = None, **kwargs: Any) -> ToolOutput:
        raise NotImplementedError("signoff's tools run in an agent workflow (acall)")

    async def acall(self, input: Any = None, **kwargs: Any) -> ToolOutput:
        """Run the call once, answer it, or hold it: a held call's step waits first, each time
        it runs (a restored context runs it again), and reads its decision once woken."""
        ctx, worker = Context.get_step_context(), StepWorkerStateContextVar.get()
        thread = await ctx.store.get(THREAD, default=None)
        args = dict(kwargs if input is None else {"input": input, **kwargs})
        if not isinstance(thread, str):
            return self._output(blocked_text("run the agent through SignoffWorkflow"), True)
        proposed = ToolCall(id=str(getattr(worker.event, "tool_id", "")), name=self.name,
                            args=args, agent=self.path)  # fmt: skip
        # Its work item, kept by a re-run or a restore and counted on in the thread: its turn.
        turn = worker.state.work_item_id
        judge = functools.partial(self.runs.step_of, proposed, thread=thread, turn=turn,
                                  requested_by=self.requested_by, schema=self.schema)  # fmt: skip
        found = await self.runs.held_call(thread, proposed, turn)
        step = await judge() if found is None else None
        held = found.approval if found is not None else step.approval if step else None
        if held is not None and (step is None or step.kind == "wait"):
            waiter, wanted = WAITER + held.id, {"approval": held.id}
            await ctx.wait_for_event(HumanResponseEvent, waiter_id=waiter, timeout=None,
                                     waiter_event=asked(held), requirements=wanted)  # fmt: skip
            step = await judge(found=await self.runs.held_call(thread, proposed, turn))
            if step.kind == "wait":  # woken undecided (not by signoff): it waits on
                raise WaitingForEvent(AddWaiter[HumanResponseEvent](
                    waiter_id=waiter, requirements=wanted, timeout=None,
                    event_type=HumanResponseEvent))  # fmt: skip
        step = step or await judge(found=found)
        if step.kind != "run" or step.call is None:
            return self._output(step.text, not step.ok)
        given = dict(step.call.args)
        if isinstance(self.tool, FunctionTool) and self.tool.ctx_param_name:
            given[self.tool.ctx_param_name] = ctx

        async def execute() -> Any:
            output = await asynchronous(self.tool).acall(**given)
            raw = to_jsonable_python(output.raw_output, fallback=str)
            return {"content": output.content, "error": output.is_error, "raw": raw}

        result = await run_once(self.runs, step.key, step.call, execute,
                                idempotent=self.idempotent)  # fmt: skip
        if isinstance(result, Unrun):
            return self._output(result.text, True)
        text = str(result["content"])
        text = text if step.edited is None else edited_text(step.edited, text)
        return self._output(text, bool(result["error"]), result["raw"])

    def _output(self, text: str, error: bool, raw: Any = None) -> ToolOutput:
        return ToolOutput(content=text, tool_name=self.name, raw_input={},
                          raw_output=text if raw is None else raw, is_error=error)  # fmt: skip


def asked(approval: Approval) -> InputRequiredEvent:
    """The request for a held call on the workflow's stream: its approval as it stands."""
    call, said = approval.call, f"signoff: {approval.call.name} waits for a person's decision"
    return InputRequiredEvent.model_validate({"prefix": said, "approval": approval.id,
        "version": approval.version, "tool": call.name, "args": call.args,
        "call_id": call.id})  # fmt: skip


class _Serializer(JsonSerializer):
    """LlamaIndex's, a chat memory kept as its messages (its own fails under pydantic 2.14)."""

    def serialize_value(self, value: Any) -> Any:
        if isinstance(value, ChatMemoryBuffer):
            return {"signoff_memory": [m.model_dump(mode="json") for m in value.get_all()]}
        return super().serialize_value(value)

    def deserialize_value(self, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("signoff_memory"), list):
            kept = [ChatMessage.model_validate(m) for m in data["signoff_memory"]]
            return ChatMemoryBuffer.from_defaults(chat_history=kept)
        return super().deserialize_value(data)


@dataclass(frozen=True)
class Ran:
    """Where a run of the workflow on a thread stands."""

    thread: str
    output: Any = None
    """The workflow's result (an agent's `AgentOutput`) once it finished; None while it waits."""
    asked: list[InputRequiredEvent] = field(default_factory=list)
    """The requests of the calls it waits on, as they stand (the workflow's `InputRequiredEvent`):
    ``approval``, ``version``, ``tool``, ``args``, the model's ``call_id``."""
    waiting: list[str] = field(default_factory=list)
    """The approvals the run stopped on: it is resumed once they are decided."""


class SignoffWorkflow:
    """A LlamaIndex agent (`FunctionAgent`, `ReActAgent`, ...) or `AgentWorkflow`, its agents'
    tools behind signoff's policy, approvals, grants, ledger and audit."""

    def __init__(self, workflow: Workflow, runs: ExternalRuns, *, requested_by: str | None = None,
                 idempotent: Iterable[str] = (), lease: timedelta = LEASE) -> None:  # fmt: skip
        """Wraps the tools of each agent of `workflow` in place. `runs` from `connect(policy,
        origin="llama-index", database=...)`; `requested_by` who starts its threads (a rule may
        forbid them approving their own); `idempotent` the tools safe to run again when a
        worker died inside them; `lease` how long a resume holds its thread unrenewed."""
        self.workflow, self.runs, self.lease = workflow, runs, lease
        agents: dict[str, Any] = getattr(workflow, "agents", None) or {"": workflow}
        schemas, safe = Schemas(runs), frozenset(idempotent)
        for agent in agents.values():
            if getattr(agent, "tool_retriever", None) is not None:  # its tools would run unjudged
                raise ValueError(f"{agent.name}: signoff judges its tools, not a tool_retriever's")
            agent.tools = [t if isinstance(t, Gated) else Gated(
                t, runs, path=agent.name, requested_by=requested_by,
                idempotent=t.metadata.get_name() in safe) for t in agent.tools or []]  # fmt: skip
            for tool in agent.tools:
                schemas.register(tool.name, tool.schema, agent=agent.name)
        self.path = str(getattr(workflow, "root_agent", None) or getattr(workflow, "name", ""))

    async def run(self, user_msg: Any = None, *, thread: str, **kwargs: Any) -> Ran:
        """Run the workflow on `thread` (its context so far, then `user_msg`): it ends with its
        result, or stops where calls wait for a person. `kwargs` go to the workflow's ``run``."""
        entries, last = await self._thread(thread)
        if busy(entries, now(self.runs)) or (last is not None and last["waiting"]):
            raise ConflictError(f"thread {thread!r} waits on undecided calls: resume it first")
        ctx = self._context(last["ctx"] if last else None)
        await ctx.store.set(THREAD, thread)
        ran, entry, pause = await self._drive(self.workflow.run(user_msg=user_msg, ctx=ctx,
                                                                **kwargs), thread, [])  # fmt: skip
        if not await self.runs.append_history(ORIGIN, thread, [entry], after=len(entries),
                                              pause=pause):  # fmt: skip
            raise ConflictError(f"thread {thread!r} was extended by another run meanwhile")
        return ran

    async def resume(self, thread: str, responses: Sequence[Any] = ()) -> Ran | None:
        """Resume `thread` once its calls are decided, in signoff or by `responses` (each a
        ``HumanResponseEvent(approval=..., decision={"type": "approve"}, user=...)``: `take_sent`).
        A `Ran` that waits while one is undecided; None when nothing waits, or another resumes."""
        ran, _ = await self._resume(thread, responses)
        return ran

    async def _resume(self, thread: str, responses: Sequence[Any] = ()) -> tuple[Ran | None, bool]:
        """`resume`, and whether the thread's pause is over (False: it waits on)."""
        entries, last = await self._thread(thread)
        if last is None or not last["waiting"]:
            return None, True
        waiting: list[str] = last["waiting"]
        found = await self.runs.near(self.runs.store.get_approvals(waiting))
        if responses:  # the workflow's own events, checked: anything else names no approval
            await take_sent(self.runs, [(r.get("approval"), r.get("decision"), r.get("user"))
                                        if isinstance(r, HumanResponseEvent) else (None, None, None)
                                        for r in responses], found)  # fmt: skip
            found = await self.runs.near(self.runs.store.get_approvals(waiting))
        decided = [a.id for a in found if not a.pending]
        if not decided:  # it waits on, untouched
            return Ran(thread, None, [asked(a) for a in found], waiting), False
        hold = await Hold.take(self.runs, ORIGIN, thread, entries, lease=self.lease)
        if hold is None:  # another process resumes it
            return None, False
        try:
            wake = [HumanResponseEvent.model_validate({"approval": a}) for a in decided]
            handler = self.workflow.run(ctx=self._context(last["ctx"]))
            ran, entry, pause = await self._drive(handler, thread, wake)
            if not await hold.keep([entry], pause):
                raise ConflictError(f"thread {thread!r} was resumed by another process meanwhile")
        finally:
            await hold.release()  # a no-op once kept
        await self.runs.went_on([a for a in waiting if a not in ran.waiting])
        return ran, not set(waiting) & set(ran.waiting)

    async def _thread(self, thread: str) -> tuple[list[str], dict[str, Any] | None]:
        """The thread's kept entries, and the last (its context, the approvals it waits on)."""
        entries = await self.runs.near(self.runs.store.history(ORIGIN, thread))
        return entries, next((json.loads(e) for e in reversed(unmarked(entries))), None)

    def resumer(self, *, on_resumed: Callable[[Resumed], Any] | None = None) -> Resumer:
        """A `Resumer` of this workflow's threads once their calls are decided, in any channel
        (``.start()`` it next to the app); each resumed `Ran` reaches `on_resumed` and ``wait``."""
        return resumer(self.runs, self._resume, on_resumed)

    def _context(self, data: dict[str, Any] | None) -> Context:
        return Context.from_dict(self.workflow, data or {}, serializer=_Serializer())

    async def _drive(self, handler: WorkflowHandler, thread: str, wake: list[Any]
                     ) -> tuple[Ran, str, NewPause | None]:  # fmt: skip
        """Follow the run to its end, or to an idle (it waits on people): keep its context, stop it.
        `wake` is sent at its first idle; idles before a step runs again are not the run's."""
        woken = True
        async for event in handler.stream_events(expose_internal=True):
            if isinstance(event, StepStateChanged) and event.step_state == StepState.RUNNING:
                woken = True
            elif isinstance(event, WorkflowIdleEvent) and woken and wake:
                for response in wake:
                    handler.ctx.send_event(response)
                wake, woken = [], False
            elif isinstance(event, WorkflowIdleEvent) and woken:
                data = handler.ctx.to_dict(serializer=_Serializer())
                said = await _transcript(handler.ctx, self.path)
                await handler.cancel_run()
                waiting = sorted(_waiters(data))
                pause = self.runs.pause_of(thread=thread, approvals=waiting, agent=self.path,
                                           data={"thread": thread}, conversation=said)  # fmt: skip
                entry = json.dumps({"ctx": data, "waiting": waiting})
                found = await self.runs.near(self.runs.store.get_approvals(waiting))
                return Ran(thread, None, [asked(a) for a in found], waiting), entry, pause
        output = await handler
        entry = json.dumps({"ctx": handler.ctx.to_dict(serializer=_Serializer()), "waiting": []})
        return Ran(thread, output), entry, None


def _waiters(data: dict[str, Any]) -> set[str]:
    """The approvals a serialized context's held calls wait on (by their waiters' ids)."""
    return set(re.findall(r'"waiter_id": "' + WAITER + r'([\w.-]+)"', json.dumps(data)))


async def _transcript(ctx: Context, agent: str) -> list[dict[str, Any]]:
    """The conversation so far (the memory, then the agent's scratchpad), for the deciders."""
    memory = await ctx.store.get("memory", default=None)
    messages = [*(memory.get_all() if memory else []), *await ctx.store.get("scratchpad", [])]
    found = []
    for m in transcript.tail(messages):
        role = str(getattr(m.role, "value", m.role))
        calls = [transcript.call(b.tool_call_id, b.tool_name, b.tool_kwargs)
                 for b in m.blocks if getattr(b, "block_type", "") == "tool_call"]  # fmt: skip
        found.append(transcript.message(
            role if role in ("user", "assistant", "tool") else "system",  # type: ignore[arg-type]
            m.content or "", tool_calls=calls, agent=agent if role == "assistant" else None,
            tool_call_id=m.additional_kwargs.get("tool_call_id")))  # fmt: skip
    return found
