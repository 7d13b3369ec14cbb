"""One agent's tasks as the SDK's protobuf types, read from the store: a task as it stands now
(`TaskReader.task`) — the run's log read through `TaskView`, with the messages clients sent — and
the updates a client streams as the log grows (`TaskReader.events`). Nothing lives only in
memory: after a restart, or on another replica, the same task is read from the same database.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import datetime
from typing import Any

from a2a.server.events.event_queue import Event
from a2a.types import (
    Artifact,
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from google.protobuf.json_format import ParseDict
from google.protobuf.timestamp_pb2 import Timestamp

from signoff.errors import NotFoundError, StaleDecisionError
from signoff.protocols.a2a.hitl import Pending, pending_of, stale_parts
from signoff.protocols.a2a.tasks import State, TaskView, Update, answer_artifact, task_state
from signoff.protocols.ids import id_problem
from signoff.server.service import Service
from signoff.store.runs import RunRecord
from signoff.types import Approval

__all__ = ["CHANNEL", "Stale", "TaskReader", "check_id"]

CHANNEL = "a2a"
"""The store's notes of this channel: the messages clients sent to each task, as sent."""
_STATES: dict[State, TaskState] = {
    "working": TaskState.TASK_STATE_WORKING,
    "input-required": TaskState.TASK_STATE_INPUT_REQUIRED,
    "completed": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
}


class Stale(Exception):
    """A decision message not taken, because a call it decides changed since the version the
    decision was made on: nothing was written, and the task still waits."""

    def __init__(self, run_id: str, message_id: str, error: StaleDecisionError) -> None:
        super().__init__(str(error))
        self.run_id = run_id
        self.message_id = message_id
        self.error = error


class TaskReader:
    """The tasks of `agent`, over the service that runs it."""

    def __init__(self, service: Service, agent: str) -> None:
        self.service = service
        self.agent = agent
        self.store = service.store

    async def run(self, task_id: str) -> RunRecord:
        """The run of one of this agent's tasks, or `TaskNotFoundError`."""
        try:
            run = await self.store.get_run(task_id)
        except NotFoundError:
            raise TaskNotFoundError(f"no task {task_id!r}") from None
        if run.agent != self.agent or run.parent_id is not None:
            raise TaskNotFoundError(f"no task {task_id!r} of agent {self.agent!r}")
        return run

    async def events(self, run_id: str, *, stop_at_input: bool) -> AsyncIterator[Event]:
        """The task now, then its updates as the run's log grows, until it is done — or, with
        `stop_at_input`, waits for input."""
        task, view = await self.task(run_id)
        yield task
        state = task.status.state
        if state in (TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED) or (
            stop_at_input and state == TaskState.TASK_STATE_INPUT_REQUIRED
        ):
            return
        async for event in self.service.follow(run_id, after=view.last_seq):
            update = view.see(event)
            if update is None:
                continue
            if event.type == "paused":
                # The calls as they stand now, each at its version (the log's event knows
                # them as they were held).
                now = await self.pending_now(run_id)
                if now:
                    update = replace(update, message=view.request_for(now))
            if event.type == "decision" and await self._waiting(run_id):
                # Part of the batch decided elsewhere: the task still waits for the rest.
                update = replace(update, state="input-required")
            if update.state == "completed" and view.answer is not None:
                yield TaskArtifactUpdateEvent(
                    task_id=run_id,
                    context_id=view.context_id,
                    artifact=ParseDict(answer_artifact(run_id, view.answer), Artifact()),
                    last_chunk=True,
                )
            yield TaskStatusUpdateEvent(
                task_id=run_id, context_id=view.context_id, status=_status(update, event.at)
            )
            if update.ends:
                return

    async def task(self, run_id: str, refused: Stale | None = None) -> tuple[Task, TaskView]:
        """The task as stored now: the run's log read through, and the messages clients sent.
        A task that waits on after a decision `refused` says first why it was not taken."""
        run = await self.store.get_run(run_id)
        view = self.view(run)
        # The clients' messages, then each event's: in time order, a client's first at a tie.
        history = [(note.at, -1, note.data["message"]) for note in await self.store.notes(
            CHANNEL, run.id
        )]  # fmt: skip
        for event in await self.store.run_events(run.id):
            update = view.see(event)
            if update is not None and update.message is not None and not update.repeats:
                history.append((event.at, event.seq, update.message))
        # The state is the log's, read with the history (the run's row may be ahead of it),
        # and the approvals': part of a batch decided elsewhere leaves the rest waiting.
        state, message = view.state, None
        if state in ("working", "input-required"):
            pending = await self.pending_now(run.id)
            state = task_state(state, run.status, bool(pending))
            if state == "input-required":
                message = view.request_for(pending)
                if refused is not None:
                    message = self._told(message, refused)
        elif state == "completed":
            message = view.answer
        elif state == "failed":
            message = view.failure
        ordered = [m for _, _, m in sorted(history, key=lambda item: item[:2])]
        task: dict[str, Any] = {
            "id": run.id,
            "contextId": run.thread_id,
            "history": ordered,
            "metadata": {"agent": run.agent, "startedBy": run.started_by},
        }
        if state == "completed" and view.answer is not None:
            task["artifacts"] = [answer_artifact(run.id, view.answer)]
        built = ParseDict(task, Task())
        built.status.CopyFrom(_status(Update(state=state, message=message), run.updated_at))
        return built, view

    async def _waiting(self, run_id: str) -> bool:
        return bool(await self.store.list_approvals(status="pending", run_id=run_id, limit=1))

    async def pending_now(self, run_id: str) -> list[Pending]:
        """The task's calls that wait now, oldest first, as its request shows them."""
        pending = await self.store.list_approvals(status="pending", run_id=run_id, limit=500)
        return [self.pending(a) for a in reversed(pending)]

    def pending(self, approval: Approval) -> Pending:
        """A held call as the task shows it."""
        return pending_of(approval, self.service.redaction)

    def _told(self, request: dict[str, Any], refused: Stale) -> dict[str, Any]:
        """The task's request, saying first why the decision `refused` was not taken (a message
        of its own: the history keeps the request as it was made)."""
        said, data = stale_parts(refused.error, self.service.redaction)
        words, *rest = request["parts"]
        return request | {
            "messageId": f"{request['messageId']}-refused-{refused.message_id}",
            "parts": [{"text": f"{said['text']}\n\n{words['text']}"}, data, *rest],
        }

    def view(self, run: RunRecord) -> TaskView:
        return TaskView(
            run_id=run.id,
            agent=run.agent,
            context_id=run.thread_id,
            redaction=self.service.redaction,
        )


def _status(update: Update, at: datetime | None) -> TaskStatus:
    status = TaskStatus(state=_STATES[update.state])
    if update.message is not None:
        status.message.CopyFrom(ParseDict(update.message, Message()))
    if at is not None:
        stamp = Timestamp()
        stamp.FromDatetime(at)
        status.timestamp.CopyFrom(stamp)
    return status


def check_id(name: str, value: str) -> None:
    """`InvalidParamsError` for an id the store cannot take (see `signoff.protocols.ids`)."""
    problem = id_problem(name, value)
    if problem is not None:
        raise InvalidParamsError(problem)
