"""AG-UI (``pip install 'signoff[ag-ui]'``): ``POST /agui/{agent}`` takes a ``RunAgentInput`` and
streams the run as AG-UI events over server-sent events — ADR 0012's projection of a task
(ARCHITECTURE §7; seed 001).

A thread is a signoff thread; each AG-UI run is mapped to the signoff run (the *task*) it starts
or resumes, ``{threadId, runId} → taskId``, kept as the store's notes. A held batch ends the AG-UI
run with ``RUN_FINISHED`` ``outcome: interrupt``: one interrupt per pending call, its id
``hitl-<taskId>-<n>`` (the n-th call the task held), after the assistant's words, one
``ACTIVITY_SNAPSHOT`` (``HITL_FORM``) per call and a ``STATE_DELTA``. The next AG-UI run on the
thread answers every open interrupt in ``resume[]``; its decisions go through the gate like any
other, and the task goes on in the same run log the web inbox and A2A read. That run opens with a
``MESSAGES_SNAPSHOT`` of the conversation so far: the results it streams answer calls an earlier
run streamed.

Each interrupt shows its call at a version (``metadata.version``, and ``version`` in its
``responseSchema``), which its answer sends back: an answer made on a version that changed since
(edited, voted on, in the inbox or anywhere) takes nothing, and the run ends on the open
interrupts again, each with its call as it stands, saying what changed.

The shared state is ``{"view": {"tasks": {taskId: {status, lastRunId, lastInterruptId,
summaries}}, "pendingInterrupts": {interruptId: {...}}}}``: one ``STATE_SNAPSHOT`` per run, then
``STATE_DELTA`` JSON Patches, each computed against a fresh reading of the store, so the deltas
applied to the snapshot always give what a new snapshot would.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jsonpatch
from ag_ui.core import (
    ActivityDeltaEvent,
    ActivitySnapshotEvent,
    AssistantMessage,
    BaseEvent,
    FunctionCall,
    Interrupt,
    Message,
    MessagesSnapshotEvent,
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
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
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
    StaleDecisionError,
)
from signoff.gate.ids import new_id
from signoff.gate.versions import version_of
from signoff.protocols.a2a.hitl import Pending, pending_of, request_parts
from signoff.protocols.a2a.tasks import TaskView, task_state
from signoff.protocols.ids import id_problem
from signoff.redaction import Redaction
from signoff.server.auth import Auth
from signoff.server.service import Principal, Service
from signoff.store.runs import RunRecord, StoredEvent
from signoff.types import Approval, Approve, Decision, Edit, Reject, Respond

__all__ = ["ACTIVITY", "CHANNEL", "AguiAgent", "interrupt_id", "mount_agui", "response_schema"]

logger = logging.getLogger(__name__)

KEEP_ALIVE = 15.0
"""Seconds without an event after which the stream sends a comment, to stay open."""
ACTIVITY = "HITL_FORM"
CHANNEL = "agui"
"""The store's notes of this channel: which task each AG-UI run of a thread started or resumed."""
_DECIDED = {"approved": "approved", "edited": "approved", "responded": "provided"}


def interrupt_id(task_id: str, n: int) -> str:
    """The id of the n-th call (from 1) the task held."""
    return f"hitl-{task_id}-{n}"


def response_schema(
    args_schema: dict[str, Any] | None = None, version: int | None = None
) -> dict[str, Any]:
    """What answers an interrupt: ``approved``, with ``editedArgs`` to run the call with other
    arguments, ``reason`` for a rejection, or ``response`` to answer in the tool's place; and
    ``version``, the version of the call it was made on, sent back as the interrupt gave it."""
    properties: dict[str, Any] = {
        "approved": {"type": "boolean"},
        "editedArgs": args_schema or {"type": "object"},
        "reason": {"type": "string"},
        "response": {"type": "string"},
    }
    if version is not None:
        properties["version"] = {
            "type": "integer",
            "const": version,
            "description": "The version of the call this answer was made on: send it back as "
            "it is. An answer on a version that changed since is not taken.",
        }
    return {
        "type": "object",
        "properties": properties,
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
        task its last run left waiting. Whatever goes wrong ends it with RUN_ERROR."""
        yield RunStartedEvent(thread_id=body.thread_id, run_id=body.run_id)
        try:
            async for event in self._run(body, who):
                yield event
        except _Refused as refused:  # raised before anything changed
            yield RunErrorEvent(message=str(refused), code=refused.code)
        except Exception:
            logger.exception("AG-UI run %s of thread %s failed", body.run_id, body.thread_id)
            yield RunErrorEvent(message="the server failed on this run", code="internal_error")

    async def _run(self, body: RunAgentInput, who: Principal) -> AsyncIterator[BaseEvent]:
        thread, run_id = body.thread_id, body.run_id
        for name, value in (("threadId", thread), ("runId", run_id)):
            problem = id_problem(name, value, required=True)
            if problem is not None:  # before the store reads anything with them
                raise _Refused(problem, "invalid_input")
        await self._check_thread(thread)
        state = await self._state(thread)  # as the run finds it: what it changes comes as deltas
        yield StateSnapshotEvent(snapshot=state)
        message_id, text = _last_user(body.messages)
        planned: str | None = None
        # This very turn sent again (a retry; a resume sent again is taken as a resume).
        retries = [] if body.resume else await self.store.notes(CHANNEL, thread, key=run_id)
        for taken in retries:
            planned = str(taken.data["task"])
            if await self.store.run_exists(planned):
                retried = await self._read(planned)
                async for event in self._stream(thread, state, retried, run_id=run_id, after=0):
                    yield event
                return
        resolved: dict[str, Decision] = {}
        task: _Task | None = None
        after = 0
        if body.resume:
            try:
                task, resolved, settled = await self._resume(thread, body.resume, message_id, who)
            except StaleDecisionError as stale:
                async for event in self._asked_again(thread, run_id, stale):
                    yield event
                return
            after = task.view.last_seq
            counted = await self._counted(task, resolved)
            if counted is not None:
                # Approvals counted toward calls that need more people: the task waits on, and
                # this run tells its pause again, at once.
                after = counted
                resolved = {}
            done = task.view.state in ("completed", "failed")
            # The interrupts were decided elsewhere and the task is over: the new words go on.
            moves_on = not task.open and done and self._new(message_id, await self._said(thread))
            if not moves_on:
                # This run streams the results of calls an earlier run started: it opens with
                # the conversation so far, those calls in it, so that the run read alone (a
                # validator's view, a client that joins now) knows what the results answer.
                yield MessagesSnapshotEvent(messages=await self._conversation(thread, task))
            for interrupt, decision in resolved.items():
                yield _activity_delta(interrupt, _decided(decision))
            for interrupt, approval in settled.items():
                yield _activity_delta(interrupt, _settled(approval, done=done))
            if moves_on:
                task = None
        if task is None:
            task = await self._start(thread, run_id, planned, message_id, text, who)
            after = 0
        else:
            await self.store.add_note(
                CHANNEL, thread, run_id, {"task": task.run.id, "message": message_id},
                at=datetime.now(UTC),
            )  # fmt: skip
            state, delta = await self._delta(thread, state)
            if delta:
                yield StateDeltaEvent(delta=_ops(delta))
        async for event in self._stream(
            thread, state, task, run_id=run_id, after=after, resolved=resolved
        ):
            yield event

    async def _stream(
        self,
        thread: str,
        state: dict[str, Any],
        task: _Task,
        *,
        run_id: str,
        after: int,
        resolved: dict[str, Decision] | None = None,
    ) -> AsyncIterator[BaseEvent]:
        async for event in self._follow(task, after=after, run_id=run_id, resolved=resolved or {}):
            if isinstance(event, StateDeltaEvent):
                state, delta = await self._delta(thread, state)
                if delta:
                    yield StateDeltaEvent(delta=_ops(delta))
            else:
                yield event

    # -- starting and resuming ---------------------------------------------------------------

    async def _start(
        self,
        thread: str,
        run_id: str,
        planned: str | None,
        message_id: str | None,
        text: str,
        who: Principal,
    ) -> _Task:
        """A new turn: the task started, its id reserved for this AG-UI run first (a retry of
        the run streams the same task instead of starting another)."""
        latest = await self._latest(thread)
        if latest is not None and latest.open:
            raise _Refused(
                "the thread's last run ended on interrupts that are still open: "
                f"{', '.join(latest.open)}; answer each of them in resume[]",
                "open_interrupts",
            )
        if not text:
            raise _Refused("the input has no user message to run on", "no_input")
        if planned is None:
            planned = new_id()
            mapping = {"task": planned, "message": message_id}
            if not await self.store.add_note(
                CHANNEL, thread, run_id, mapping, at=datetime.now(UTC)
            ):
                [taken] = await self.store.notes(CHANNEL, thread, key=run_id)
                planned = str(taken.data["task"])  # a retry running beside this one
        try:
            await self.service.start_run(
                self.agent, thread, text, started_by=who.name, run_id=planned
            )
        except ConflictError as exc:
            if not await self.store.run_exists(planned):
                raise _Refused(f"the thread has a run still going: {exc}", "busy") from None
        return await self._read(planned)

    async def _resume(
        self,
        thread: str,
        resume: Sequence[ResumeEntry],
        message_id: str | None,
        who: Principal,
    ) -> tuple[_Task, dict[str, Decision], dict[str, Approval]]:
        """Take `resume`: the task it answers (as it was before), the decisions taken on its
        open interrupts, and the interrupts it names that were decided already (elsewhere, or
        by this same resume sent before) — those it leaves as they were."""
        task = await self._latest(thread)
        if task is None:
            raise _Refused("the thread has no run to resume", "nothing_to_resume")
        named = [entry.interrupt_id for entry in resume]
        twice = sorted({i for i in named if named.count(i) > 1})
        unknown = [i for i in named if i not in task.ids.values()]
        opened = task.open
        missing = [i for i in opened if i not in named]
        problems = [f"answered twice: {', '.join(twice)}"] if twice else []
        if unknown:
            problems.append(f"not interrupts of the thread's last task: {', '.join(unknown)}")
        if missing:
            problems.append(f"not answered: {', '.join(missing)}")
        if problems:
            raise _Refused(
                "resume[] must answer every open interrupt exactly once — "
                + "; ".join(problems)
                + "; nothing changed",
                "invalid_resume",
            )
        answers = {entry.interrupt_id: _decision(entry) for entry in resume}
        decisions = {interrupt: decision for interrupt, (decision, _) in answers.items()}
        if (
            not opened
            and task.view.state == "working"
            and self._new(message_id, await self._said(thread))
        ):
            raise _Refused(
                "the thread's task is still going (its interrupts were decided elsewhere): "
                "send the new message once it has finished; nothing changed",
                "busy",
            )
        by_id = {interrupt: approval for approval, interrupt in task.ids.items()}
        settled = {i: a for a in task.decided for i in named if by_id.get(i) == a.id}
        taking = {i: d for i, d in decisions.items() if i in opened}
        if taking:
            seen = {
                opened[i].id: v for i, (_, v) in answers.items() if i in taking and v is not None
            }
            try:
                await self.service.decide_batch(
                    {opened[i].id: d for i, d in taking.items()},
                    actor=who.name,
                    roles=who.roles,
                    versions=seen,
                )
            except StaleDecisionError:
                raise  # nothing taken: the run asks again (`_asked_again`)
            except InvalidEditError as exc:
                raise _Refused(
                    f"{exc} (at {exc.path or '/'}); nothing changed", "invalid_edit"
                ) from None
            except (InvalidDecisionError, ForbiddenError) as exc:
                raise _Refused(f"{exc}; nothing changed", "refused") from None
            except ConflictError:
                # Decided meanwhile (the inbox, or this same resume sent twice at once).
                now = await self._read(task.run.id)
                if any(i in now.open for i in taking):
                    raise
                settled |= {i: a for a in now.decided for i in taking if by_id.get(i) == a.id}
                taking = {}
        return task, taking, settled

    async def _asked_again(
        self, thread: str, run_id: str, stale: StaleDecisionError
    ) -> AsyncIterator[BaseEvent]:
        """The run's end when its resume was made on a version of a call that changed since:
        nothing was taken, and the open interrupts come again, each with its call as it stands
        now (its activity too), the changed one saying what changed — the next run answers
        them. (AG-UI lets a run whose answers leave interrupts open end on them again.)"""
        task = await self._latest(thread)
        if task is None or not task.open:  # decided meanwhile after all: nothing to answer
            raise _Refused(f"{stale}; nothing was decided by this resume", "stale_decision")
        refusal = f"Nothing was decided: {stale}."
        words = f"{refusal}\n\n{_request_words(task, self.service)}"
        for interrupt, approval in task.open.items():
            yield ActivitySnapshotEvent(
                message_id=interrupt,
                activity_type=ACTIVITY,
                content=self._activity(task, interrupt, approval, words),
            )
        yield RunFinishedEvent(
            thread_id=thread,
            run_id=run_id,
            outcome=RunFinishedInterruptOutcome(
                interrupts=[
                    self._interrupt(
                        task, i, a, refusal=refusal if a.id == stale.approval_id else None
                    )
                    for i, a in task.open.items()
                ]
            ),
        )

    async def _counted(self, task: _Task, resolved: Mapping[str, Decision]) -> int | None:
        """When this resume's decisions left some of them open — approvals counted toward a
        call that needs several people — the number of the event before the task's last
        pause; else None."""
        opened = task.open
        if not any(opened[i].quorum is not None for i in resolved if i in opened):
            return None  # no call that needs several people: each decision decided it
        now = await self._read(task.run.id)
        if not any(i in now.open for i in resolved):
            return None
        paused = [e.seq for e in await self.store.run_events(task.run.id) if e.type == "paused"]
        return paused[-1] - 1 if paused else None

    def _new(self, message_id: str | None, said: set[str]) -> bool:
        """Whether the input's last user message is one no earlier run was given."""
        return message_id is not None and message_id not in said

    async def _said(self, thread: str) -> set[str]:
        return {str(n.data.get("message")) for n in await self.store.notes(CHANNEL, thread)}

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
                own = set(event.data["approvals"])
                if not any(a.id in own for a in current.pending):
                    continue  # decided meanwhile: the run went on (to this pause's end, or on)
                for interrupt in resolved:  # what this run resumed is done with
                    yield _activity_delta(interrupt, _COMPLETED)
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
            yield _activity_delta(interrupt, _COMPLETED)
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
            "schema": response_schema(self._args_schema(approval), approval.version),
            "text": words,
        } | self._version_of(approval)

    def _interrupt(
        self, task: _Task, interrupt: str, approval: Approval, *, refusal: str | None = None
    ) -> Interrupt:
        asks = f"{approval.call.name}: {approval.reason}"
        return Interrupt(
            id=interrupt,
            reason="tool_approval",
            message=asks if refusal is None else f"{refusal} {asks}",
            tool_call_id=f"{task.run.id}-{approval.call.id}",
            response_schema=response_schema(self._args_schema(approval), approval.version),
            expires_at=None if approval.expires_at is None else approval.expires_at.isoformat(),
            metadata={
                "taskId": task.run.id,
                "approvalId": approval.id,
                "tool": approval.call.name,
                "args": self.service.redaction.call_args(approval.call.args),
                "agent": approval.call.agent,
                "rule": approval.rule,
            }
            | self._version_of(approval),
        )

    def _version_of(self, approval: Approval) -> dict[str, Any]:
        """The version of the call an interrupt shows (its answer sends it back), and — once it
        changed while it waited — the arguments it was asked with and what changed."""
        shown = pending_of(approval, self.service.redaction)
        version: dict[str, Any] = {"version": approval.version}
        if shown.requested_args is not None:
            version["requestedArgs"] = shown.requested_args
        if shown.changes:
            version["changes"] = list(shown.changes)
        return version

    def _args_schema(self, approval: Approval) -> dict[str, Any] | None:
        schema = self.service.gate.edit_schema(approval)
        return None if schema is None else dict(schema)

    # -- reading the store -------------------------------------------------------------------

    async def _read(self, run_id: str, record: RunRecord | None = None) -> _Task:
        run = record or await self.store.get_run(run_id)
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
            return await self._read(run.id, run)
        return None

    async def _conversation(self, thread: str, resumed: _Task) -> list[Message]:
        """The thread's conversation as its streams showed it, over the tasks the state covers
        (the 50 most recent); the resumed task's up to where this run takes it on."""
        started: dict[str, str | None] = {}
        for note in await self.store.notes(CHANNEL, thread):  # the first: the run that started it
            started.setdefault(str(note.data["task"]), note.data.get("message"))
        messages: list[Message] = []
        runs = await self.store.list_runs(thread_id=thread, agent=self.agent, roots=True)
        for run in reversed(runs):
            events = await self.store.run_events(run.id)
            if run.id == resumed.run.id:
                events = [e for e in events if e.seq <= resumed.view.last_seq]
            user = started.get(run.id)
            if user in {m.id for m in messages}:
                user = None  # a resume's last user message, which another task started with
            messages += _task_messages(run, events, user, self.service.redaction)
        return messages

    async def _state(self, thread: str) -> dict[str, Any]:
        """The thread's shared state, read afresh."""
        last_runs: dict[str, str] = {}
        for note in await self.store.notes(CHANNEL, thread):
            last_runs[str(note.data["task"])] = note.key
        tasks: dict[str, Any] = {}
        pending: dict[str, Any] = {}
        runs = await self.store.list_runs(thread_id=thread, agent=self.agent, roots=True)
        for run in reversed(runs):
            task = await self._read(run.id, run)
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
                    "version": approval.version,
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

        encoded = (encoder.encode(event) async for event in endpoint.run(body, who))
        return StreamingResponse(
            _kept_alive(encoded, every=KEEP_ALIVE), media_type=encoder.get_content_type()
        )


async def _kept_alive(lines: AsyncIterator[str], *, every: float) -> AsyncIterator[str]:
    """`lines`, with an SSE comment whenever `every` seconds pass without one (a long tool call):
    proxies that cut idle connections keep the stream, and clients ignore comments."""
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for line in lines:
                await queue.put(line)
        finally:
            queue.put_nowait(None)

    pumping = asyncio.create_task(pump())
    getting: asyncio.Future[str | None] | None = None
    try:
        while True:
            getting = getting or asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getting}, timeout=every)
            if not done:
                yield ": keep-alive\n\n"
                continue
            line, getting = getting.result(), None
            if line is None:
                break
            yield line
        await pumping  # its failure, if it failed
    finally:
        for task in (pumping, getting):
            if task is not None and not task.done():
                task.cancel()


_COMPLETED = [{"op": "replace", "path": "/stage", "value": "completed"}]


def _activity_delta(interrupt: str, patch: list[dict[str, Any]]) -> ActivityDeltaEvent:
    return ActivityDeltaEvent(message_id=interrupt, activity_type=ACTIVITY, patch=_ops(patch))


def _settled(approval: Approval, *, done: bool) -> list[dict[str, Any]]:
    """The activity's patch for a call decided before this run (elsewhere, or by the same
    resume sent before): the decision as it was taken, and by whom."""
    decision = approval.decision
    values: dict[str, Any] = {"decidedBy": approval.decided_by}
    if isinstance(decision, Reject):
        values["reason"] = decision.reason
    return [
        {"op": "replace", "path": "/stage", "value": "completed" if done else "working"},
        {"op": "add", "path": "/decision", "value": _DECIDED.get(approval.status, "rejected")},
        {"op": "add", "path": "/values", "value": values},
    ]


def _ops(patch: list[dict[str, Any]]) -> Any:
    """A JSON Patch as plain operations (the event models validate them)."""
    return patch


def _decision(entry: ResumeEntry) -> tuple[Decision, int | None]:
    """A resume entry as a decision, with the version of the call it was made on (None when it
    names none), or `_Refused` naming what is wrong with it."""
    where = f"resume entry {entry.interrupt_id}"
    payload = entry.payload
    named = payload.get("version") if isinstance(payload, dict) else None
    version = version_of(named)
    if named is not None and version is None:
        raise _Refused(
            f"{where}: 'version' must be the interrupt's version (a whole number from 1)",
            "invalid_resume",
        )
    return _answered(entry, where), version


def _answered(entry: ResumeEntry, where: str) -> Decision:
    if entry.status == "cancelled":
        return Reject(reason="the interrupt was cancelled")
    payload = entry.payload
    if not isinstance(payload, dict) or not isinstance(payload.get("approved"), bool):
        raise _Refused(f"{where}: payload needs 'approved': true or false", "invalid_resume")
    extra = sorted(set(payload) - {"approved", "editedArgs", "reason", "response", "version"})
    if extra:
        raise _Refused(f"{where}: unknown payload fields {extra}", "invalid_resume")
    reason = payload.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise _Refused(f"{where}: 'reason' must be a string", "invalid_resume")
    if not payload["approved"]:
        if "editedArgs" in payload or "response" in payload:
            raise _Refused(
                f"{where}: editedArgs and response go with approved: true", "invalid_resume"
            )
        return Reject(reason=reason or "")
    if "response" in payload and "editedArgs" in payload:
        raise _Refused(f"{where}: give editedArgs or response, not both", "invalid_resume")
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
    held = [pending_of(a, service.redaction) for a in task.open.values()]
    return _asking(held, agent=task.run.agent)


def _asking(held: Sequence[Pending], *, agent: str) -> str:
    """The words that ask for the held calls (the A2A request's, without its reply line)."""
    first = request_parts(held, agent=agent, form_id="")[0]
    return str(first["text"]).rsplit("\n", 1)[0]


def _task_messages(
    run: RunRecord, events: Iterable[StoredEvent], user: str | None, redaction: Redaction
) -> list[Message]:
    """One task's part of the conversation, as a client that saw its streams holds it: the ids
    the stream gave, each call its own assistant message (TOOL_CALL_START names no parent),
    each result right after its call and the results before it, and the words of each pause.
    `user` is the id the client gave the words that started the task."""
    task = run.id
    view = TaskView(run_id=task, agent=run.agent, context_id=run.thread_id, redaction=redaction)
    messages: list[Message] = []
    for event in events:
        view.see(event)
        data = event.data
        match event.type:
            case "run_started":
                content = str(data.get("input", ""))
                messages.append(UserMessage(id=user or f"{task}-{event.seq}", content=content))
            case "text":
                messages.append(AssistantMessage(id=f"{task}-{event.seq}", content=data["text"]))
            case "tool_call":
                call = f"{task}-{data['id']}"
                args = json.dumps(redaction.call_args(data["args"]))
                function = FunctionCall(name=data["name"], arguments=args)
                messages.append(
                    AssistantMessage(id=call, tool_calls=[ToolCall(id=call, function=function)])
                )
            case "tool_result":
                call = f"{task}-{data.get('tool_call_id')}"
                at = next((n + 1 for n, m in enumerate(messages) if m.id == call), len(messages))
                while at < len(messages) and messages[at].role == "tool":
                    at += 1
                content = str(data.get("content", ""))
                result = ToolMessage(id=f"{task}-{event.seq}", tool_call_id=call, content=content)
                messages.insert(at, result)
            case "paused":
                held = [view.requested[a] for a in data["approvals"] if a in view.requested]
                words = _asking(held, agent=run.agent)
                messages.append(AssistantMessage(id=f"{task}-{event.seq}-ask", content=words))
    return messages


def _last_user(messages: Sequence[Any]) -> tuple[str | None, str]:
    """The id and the words of the input's last user message (None and "" without one)."""
    for message in reversed(messages):
        if getattr(message, "role", None) != "user":
            continue
        content = message.content
        if isinstance(content, str):
            return message.id, content.strip()
        words = " ".join(getattr(p, "text", "") for p in content if getattr(p, "text", None))
        return message.id, words.strip()
    return None, ""
