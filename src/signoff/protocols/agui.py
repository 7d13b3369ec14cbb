"""AG-UI (``pip install 'signoff[ag-ui]'``): ``POST /agui/{agent}`` takes a ``RunAgentInput`` and
streams the run as AG-UI events over server-sent events — ADR 0012's projection of a task
(ARCHITECTURE §7; seed 001).

A thread is a signoff thread; each AG-UI run is mapped to the signoff run (the *task*) it starts
or resumes, ``{threadId, runId} → taskId``, kept as the store's notes. A held batch ends the AG-UI
run with ``RUN_FINISHED`` ``outcome: interrupt``: one interrupt per pending call, its id
``hitl-<taskId>-<n>`` (the n-th call the task held), after the assistant's words, one
``ACTIVITY_SNAPSHOT`` (``HITL_FORM``) per call and a ``STATE_DELTA``. The next AG-UI run on the
thread answers every open interrupt in ``resume[]``; its decisions go through the gate like any
other, and the task goes on in the same run log the web inbox and A2A read.

The shared state is ``{"view": {"tasks": {taskId: {status, lastRunId, lastInterruptId,
summaries}}, "pendingInterrupts": {interruptId: {...}}}}``: one ``STATE_SNAPSHOT`` per run, then
``STATE_DELTA`` JSON Patches, each computed against a fresh reading of the store, so the deltas
applied to the snapshot always give what a new snapshot would.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jsonpatch
from ag_ui.core import (
    ActivityDeltaEvent,
    ActivitySnapshotEvent,
    BaseEvent,
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from signoff.errors import (
    ConflictError,
    ForbiddenError,
    InvalidDecisionError,
    InvalidEditError,
    NotFoundError,
)
from signoff.protocols.a2a.hitl import Pending, request_parts
from signoff.protocols.a2a.tasks import TaskView, task_state
from signoff.server.auth import Auth
from signoff.server.service import Principal, Service
from signoff.store.runs import RunRecord, StoredEvent
from signoff.types import Approval, Approve, Decision, Edit, Reject, Respond

__all__ = ["ACTIVITY", "CHANNEL", "AguiAgent", "interrupt_id", "mount_agui", "response_schema"]

ACTIVITY = "HITL_FORM"
CHANNEL = "agui"
"""The store's notes of this channel: which task each AG-UI run of a thread started or resumed."""
_DECIDED = {"approved": "approved", "edited": "approved", "responded": "provided"}


def interrupt_id(task_id: str, n: int) -> str:
    """The id of the n-th call (from 1) the task held."""
    return f"hitl-{task_id}-{n}"


def response_schema(args_schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """What answers an interrupt: ``approved``, with ``editedArgs`` to run the call with other
    arguments, ``reason`` for a rejection, or ``response`` to answer in the tool's place."""
    return {
        "type": "object",
        "properties": {
            "approved": {"type": "boolean"},
            "editedArgs": args_schema or {"type": "object"},
            "reason": {"type": "string"},
            "response": {"type": "string"},
        },
        "required": ["approved"],
        "additionalProperties": False,
    }


class _Refused(Exception):
    """What ends an AG-UI run with RUN_ERROR, changing nothing."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(kw_only=True)
class _Task:
    """One task of the thread as the state shows it, with what the stream needs of it."""

    run: RunRecord
    view: TaskView
    ids: dict[str, str]
    """Interrupt id by approval id, in the order the task held them."""
    pending: list[Approval]
    decided: list[Approval]

    @property
    def open(self) -> dict[str, Approval]:
        """The pending calls by interrupt id, in the order the task held them."""
        waiting = {a.id: a for a in self.pending}
        return {i: waiting[a] for a, i in self.ids.items() if a in waiting}


class AguiAgent:
    """The AG-UI endpoint of one agent, over the service that runs it."""

    def __init__(self, service: Service, agent: str) -> None:
        self.service = service
        self.agent = agent
        self.store = service.store

    async def run(self, body: RunAgentInput, who: Principal) -> AsyncIterator[BaseEvent]:
        """The AG-UI events of one run: a new turn of the conversation, or the resume of the
        task its last run left waiting."""
        thread, run_id = body.thread_id, body.run_id
        yield RunStartedEvent(thread_id=thread, run_id=run_id)
        try:
            await self._check_thread(thread)
            # The state as the run finds it: what it changes comes as deltas.
            state = await self._state(thread)
            if body.resume:
                task, decisions = await self._resumable(thread, body.resume)
            else:
                task, decisions = await self._start(thread, body, who), {}
        except _Refused as refused:
            yield RunErrorEvent(message=str(refused), code=refused.code)
            return
        yield StateSnapshotEvent(snapshot=state)
        after = task.view.last_seq if body.resume else 0
        if decisions:
            try:
                await self.service.decide_batch(
                    {task.open[i].id: d for i, d in decisions.items()},
                    actor=who.name,
                    roles=who.roles,
                )
            except (InvalidEditError, InvalidDecisionError, ConflictError, ForbiddenError) as exc:
                where = f" at {exc.path}" if isinstance(exc, InvalidEditError) else ""
                yield RunErrorEvent(message=f"{exc}{where}; nothing changed", code="refused")
                return
            for interrupt, decision in decisions.items():
                yield ActivityDeltaEvent(
                    message_id=interrupt, activity_type=ACTIVITY, patch=_ops(_decided(decision))
                )
        await self.store.add_note(
            CHANNEL, thread, run_id, {"task": task.run.id}, at=datetime.now(UTC)
        )
        if body.resume:  # the interrupts answered, the task going on
            state, delta = await self._delta(thread, state)
            if delta:
                yield StateDeltaEvent(delta=_ops(delta))
        async for event in self._follow(task, after=after, run_id=run_id, resolved=decisions):
            if isinstance(event, StateDeltaEvent):
                state, delta = await self._delta(thread, state)
                if delta:
                    yield StateDeltaEvent(delta=_ops(delta))
            else:
                yield event

    # -- starting and resuming ---------------------------------------------------------------

    async def _start(self, thread: str, body: RunAgentInput, who: Principal) -> _Task:
        latest = await self._latest(thread)
        if latest is not None and latest.open:
            raise _Refused(
                "the thread's last run ended on interrupts that are still open: "
                f"{', '.join(latest.open)}; answer each of them in resume[]",
                "open_interrupts",
            )
        text = _last_user_text(body.messages)
        if not text:
            raise _Refused("the input has no user message to run on", "no_input")
        try:
            run_id = await self.service.start_run(self.agent, thread, text, started_by=who.name)
        except ConflictError as exc:
            raise _Refused(f"the thread has a run still going: {exc}", "busy") from None
        return await self._read(run_id)

    async def _resumable(
        self, thread: str, resume: Sequence[ResumeEntry]
    ) -> tuple[_Task, dict[str, Decision]]:
        """The task `resume` answers and the decision for each of its open interrupts; or, for
        a resume taken already (the same answers again), the task and no decisions."""
        task = await self._latest(thread)
        if task is None:
            raise _Refused("the thread has no run to resume", "nothing_to_resume")
        named = [entry.interrupt_id for entry in resume]
        twice = sorted({i for i in named if named.count(i) > 1})
        unknown = [i for i in named if i not in task.ids.values()]
        if twice or unknown:
            problems = [f"answered twice: {', '.join(twice)}"] if twice else []
            problems += [f"not interrupts of this thread: {', '.join(unknown)}"] if unknown else []
            raise _Refused("; ".join(problems) + "; nothing changed", "invalid_resume")
        opened = task.open
        if not opened:
            return task, {}  # replayed: its decisions were taken; the run goes on as it did
        late = [i for i in named if i not in opened]
        missing = [i for i in opened if i not in named]
        if late or missing:
            problems = [f"decided already: {', '.join(late)}"] if late else []
            problems += [f"not answered: {', '.join(missing)}"] if missing else []
            raise _Refused(
                "resume[] must answer every open interrupt exactly once — "
                + "; ".join(problems)
                + "; nothing changed",
                "invalid_resume",
            )
        return task, {entry.interrupt_id: _decision(entry) for entry in resume}

    async def _check_thread(self, thread: str) -> None:
        for latest in await self.store.list_runs(thread_id=thread, limit=1):
            if latest.agent != self.agent or latest.parent_id is not None:
                raise _Refused(
                    f"thread {thread!r} is a conversation of another agent", "wrong_thread"
                )

    # -- the stream --------------------------------------------------------------------------

    async def _follow(
        self, task: _Task, *, after: int, run_id: str, resolved: dict[str, Decision]
    ) -> AsyncIterator[BaseEvent]:
        """The task's events after `after` as AG-UI events, until it waits or ends. A
        `StateDeltaEvent` with no delta marks where the state may have changed."""
        view = TaskView(run_id=task.run.id, agent=task.run.agent, context_id=task.run.thread_id)
        async for event in self.service.follow(task.run.id, after=0):
            view.see(event)
            if event.seq <= after:
                continue
            for out in self._project(task.run.id, event, view):
                yield out
            if event.type == "paused":
                current = await self._read(task.run.id)
                if not current.open:
                    continue  # decided meanwhile: the run goes on
                yield TextMessageStartEvent(message_id=f"{task.run.id}-{event.seq}-ask")
                words = _request_words(current, self.service)
                yield TextMessageContentEvent(
                    message_id=f"{task.run.id}-{event.seq}-ask", delta=words
                )
                yield TextMessageEndEvent(message_id=f"{task.run.id}-{event.seq}-ask")
                for interrupt, approval in current.open.items():
                    yield ActivitySnapshotEvent(
                        message_id=interrupt,
                        activity_type=ACTIVITY,
                        content=self._activity(current, interrupt, approval, words),
                    )
                yield StateDeltaEvent(delta=[])
                yield RunFinishedEvent(
                    thread_id=task.run.thread_id,
                    run_id=run_id,
                    outcome=RunFinishedInterruptOutcome(
                        interrupts=[self._interrupt(current, i, a) for i, a in current.open.items()]
                    ),
                )
                return
            if event.type in ("completed", "failed"):
                for out in self._ending(task, view, run_id=run_id, resolved=resolved):
                    yield out
                return
        # The log had ended before `after` (a resume sent again): the run ends as the task did.
        for out in self._ending(task, view, run_id=run_id, resolved={}):
            yield out

    def _ending(
        self, task: _Task, view: TaskView, *, run_id: str, resolved: dict[str, Decision]
    ) -> Iterable[BaseEvent]:
        for interrupt in resolved:
            yield ActivityDeltaEvent(
                message_id=interrupt,
                activity_type=ACTIVITY,
                patch=_ops([{"op": "replace", "path": "/stage", "value": "completed"}]),
            )
        yield StateDeltaEvent(delta=[])
        if view.state == "failed":
            reason = "".join(p.get("text", "") for p in (view.failure or {}).get("parts", []))
            yield RunErrorEvent(message=reason or "the run failed", code="run_failed")
            return
        answer = view.answer
        text = "".join(p.get("text", "") for p in answer["parts"]) if answer else ""
        yield RunFinishedEvent(thread_id=task.run.thread_id, run_id=run_id, result=text or None)

    def _project(self, task_id: str, event: StoredEvent, view: TaskView) -> Iterable[BaseEvent]:
        """The AG-UI events of one log event: words, tool calls and their results."""
        data = event.data
        match event.type:
            case "text":
                message_id = f"{task_id}-{event.seq}"
                yield TextMessageStartEvent(message_id=message_id)
                yield TextMessageContentEvent(message_id=message_id, delta=data["text"])
                yield TextMessageEndEvent(message_id=message_id)
            case "tool_call":
                call_id = f"{task_id}-{data['id']}"
                args = self.service.redaction.call_args(data["args"])
                yield ToolCallStartEvent(tool_call_id=call_id, tool_call_name=data["name"])
                yield ToolCallArgsEvent(tool_call_id=call_id, delta=json.dumps(args))
                yield ToolCallEndEvent(tool_call_id=call_id)
            case "tool_result":
                yield ToolCallResultEvent(
                    message_id=f"{task_id}-{event.seq}",
                    tool_call_id=f"{task_id}-{data.get('tool_call_id')}",
                    content=str(data.get("content", "")),
                )

    def _activity(
        self, task: _Task, interrupt: str, approval: Approval, words: str
    ) -> dict[str, Any]:
        return {
            "stage": "awaiting_input",
            "taskId": task.run.id,
            "interruptId": interrupt,
            "toolCallId": f"{task.run.id}-{approval.call.id}",
            "tool": approval.call.name,
            "args": self.service.redaction.call_args(approval.call.args),
            "agent": approval.call.agent,
            "reason": approval.reason,
            "expiresAt": None if approval.expires_at is None else approval.expires_at.isoformat(),
            "schema": response_schema(self._args_schema(approval)),
            "text": words,
        }

    def _interrupt(self, task: _Task, interrupt: str, approval: Approval) -> Interrupt:
        return Interrupt(
            id=interrupt,
            reason="tool_approval",
            message=f"{approval.call.name}: {approval.reason}",
            tool_call_id=f"{task.run.id}-{approval.call.id}",
            response_schema=response_schema(self._args_schema(approval)),
            expires_at=None if approval.expires_at is None else approval.expires_at.isoformat(),
            metadata={
                "taskId": task.run.id,
                "approvalId": approval.id,
                "tool": approval.call.name,
                "args": self.service.redaction.call_args(approval.call.args),
                "agent": approval.call.agent,
                "rule": approval.rule,
            },
        )

    def _args_schema(self, approval: Approval) -> dict[str, Any] | None:
        schema = self.service.gate.tool_schema(approval.call)
        return None if schema is None else dict(schema)

    # -- reading the store -------------------------------------------------------------------

    async def _read(self, run_id: str) -> _Task:
        run = await self.store.get_run(run_id)
        view = TaskView(
            run_id=run.id,
            agent=run.agent,
            context_id=run.thread_id,
            redaction=self.service.redaction,
        )
        for event in await self.store.run_events(run.id):
            view.see(event)
        ids = {a: interrupt_id(run.id, n) for n, a in enumerate(view.requested, 1)}
        pending = await self.store.list_approvals(status="pending", run_id=run.id, limit=500)
        waiting = {a.id for a in pending}
        decided = await self.store.get_approvals([a for a in view.requested if a not in waiting])
        return _Task(run=run, view=view, ids=ids, pending=pending, decided=decided)

    async def _latest(self, thread: str) -> _Task | None:
        for run in await self.store.list_runs(
            thread_id=thread, agent=self.agent, roots=True, limit=1
        ):
            return await self._read(run.id)
        return None

    async def _state(self, thread: str) -> dict[str, Any]:
        """The thread's shared state, read afresh."""
        last_runs: dict[str, str] = {}
        for note in await self.store.notes(CHANNEL, thread):
            last_runs[str(note.data["task"])] = note.key
        tasks: dict[str, Any] = {}
        pending: dict[str, Any] = {}
        runs = await self.store.list_runs(thread_id=thread, agent=self.agent, roots=True)
        for run in reversed(runs):
            task = await self._read(run.id)
            status = task_state(task.view.state, run.status, bool(task.pending))
            tasks[run.id] = {
                "status": status,
                "lastRunId": last_runs.get(run.id),
                "lastInterruptId": next(reversed(task.ids.values()), None),
                "summaries": [_summary(a) for a in task.decided],
            }
            for interrupt, approval in task.open.items():
                pending[interrupt] = {
                    "interruptId": interrupt,
                    "taskId": run.id,
                    "toolCallId": f"{run.id}-{approval.call.id}",
                    "tool": approval.call.name,
                    "reason": approval.reason,
                }
        return {"view": {"tasks": tasks, "pendingInterrupts": pending}}

    async def _delta(
        self, thread: str, before: dict[str, Any]
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        after = await self._state(thread)
        return after, list(jsonpatch.make_patch(before, after))


def mount_agui(app: FastAPI, service: Service, auth: Auth) -> None:
    """``POST /agui/{agent}`` for each of the service's agents."""
    endpoints = {agent.name: AguiAgent(service, agent.name) for agent in service.agents}
    encoder = EventEncoder()

    @app.post("/agui/{agent}", tags=["AG-UI"])
    async def agui(agent: str, body: RunAgentInput, request: Request) -> StreamingResponse:
        """Run the agent (AG-UI ``RunAgentInput``); its events as server-sent events."""
        who = await auth.principal(request)
        endpoint = endpoints.get(agent)
        if endpoint is None:
            raise NotFoundError(f"no agent named {agent!r}; the agents are {sorted(endpoints)}")

        async def stream() -> AsyncIterator[str]:
            async for event in endpoint.run(body, who):
                yield encoder.encode(event)

        return StreamingResponse(stream(), media_type=encoder.get_content_type())


def _ops(patch: list[dict[str, Any]]) -> Any:
    """A JSON Patch as plain operations (the event models validate them)."""
    return patch


def _decision(entry: ResumeEntry) -> Decision:
    """A resume entry as a decision, or `_Refused` naming what is wrong with it."""
    where = f"resume entry {entry.interrupt_id}"
    if entry.status == "cancelled":
        return Reject(reason="the interrupt was cancelled")
    payload = entry.payload
    if not isinstance(payload, dict) or not isinstance(payload.get("approved"), bool):
        raise _Refused(f"{where}: payload needs 'approved': true or false", "invalid_resume")
    extra = sorted(set(payload) - {"approved", "editedArgs", "reason", "response"})
    if extra:
        raise _Refused(f"{where}: unknown payload fields {extra}", "invalid_resume")
    reason = payload.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise _Refused(f"{where}: 'reason' must be a string", "invalid_resume")
    if not payload["approved"]:
        return Reject(reason=reason or "")
    if "response" in payload:
        if not isinstance(payload["response"], str):
            raise _Refused(f"{where}: 'response' must be a string", "invalid_resume")
        return Respond(content=payload["response"])
    if "editedArgs" in payload:
        if not isinstance(payload["editedArgs"], dict):
            raise _Refused(f"{where}: 'editedArgs' must be an object", "invalid_resume")
        return Edit(args=payload["editedArgs"])
    return Approve()


def _decided(decision: Decision) -> list[dict[str, Any]]:
    """The activity's patch once its call is decided: working, with the decision and what was
    given (a summary: edited arguments, a reason, a response)."""
    values: dict[str, Any] = {}
    match decision:
        case Edit(args=args):
            kind, values = "approved", {"editedArgs": sorted(args)}
        case Respond(content=content):
            kind, values = "provided", {"response": content[:200]}
        case Reject(reason=reason):
            kind, values = "rejected", {"reason": reason}
        case _:
            kind = "approved"
    return [
        {"op": "replace", "path": "/stage", "value": "working"},
        {"op": "add", "path": "/decision", "value": kind},
        {"op": "add", "path": "/values", "value": values},
    ]


def _summary(approval: Approval) -> str:
    by = f" by {approval.decided_by}" if approval.decided_by else ""
    return f"{approval.call.name}: {_DECIDED.get(approval.status, approval.status)}{by}"


def _request_words(task: _Task, service: Service) -> str:
    held = [
        Pending(
            approval_id=a.id,
            call_id=a.call.id,
            tool=a.call.name,
            args=service.redaction.call_args(a.call.args),
            agent=a.call.agent,
            rule=a.rule,
            reason=a.reason,
            expires_at=None if a.expires_at is None else a.expires_at.isoformat(),
        )
        for a in task.open.values()
    ]
    first = request_parts(held, agent=task.run.agent, form_id="")[0]
    text = str(first["text"])
    return text.rsplit("\n", 1)[0]  # without the A2A reply instructions


def _last_user_text(messages: Sequence[Any]) -> str:
    for message in reversed(messages):
        if getattr(message, "role", None) != "user":
            continue
        content = message.content
        if isinstance(content, str):
            return content.strip()
        return " ".join(getattr(p, "text", "") for p in content if getattr(p, "text", None))
    return ""
