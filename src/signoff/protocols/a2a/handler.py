"""One signoff agent behind a2a-sdk's `RequestHandler`: the JSON-RPC and REST bindings of the SDK
call it, and it answers from signoff's own store.

A message without a task starts a run (the task); a message on a task that waits for input
decides its held calls (see `hitl`); everything a client reads — a task, a stream, a list — is
the run's log read by `TaskView`. Nothing lives only in memory: after a restart, or on another
replica, the same task is read from the same database, and a decision taken in the web inbox
or the CLI moves the task on for every A2A subscriber, because it is in the log they follow.

A decision made on a version of a call that changed since is not taken: the answer is the task,
still waiting, saying what changed and showing the calls as they stand.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import (
    AgentCard,
    Artifact,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    ContentTypeNotSupportedError,
    ExtendedAgentCardNotConfiguredError,
    InvalidParamsError,
    InvalidRequestError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.utils.proto_utils import validate_proto_required_fields
from a2a.utils.task import (
    apply_history_length,
    decode_page_token,
    encode_page_token,
    validate_history_length,
    validate_page_size,
)
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.timestamp_pb2 import Timestamp

from signoff.errors import (
    ConflictError,
    ForbiddenError,
    InvalidDecisionError,
    InvalidEditError,
    NotFoundError,
    StaleDecisionError,
)
from signoff.gate.ids import new_id
from signoff.protocols.a2a.hitl import (
    LateDecision,
    PayloadError,
    Pending,
    is_decision,
    pending_of,
    read_decisions,
    stale_parts,
)
from signoff.protocols.a2a.tasks import (
    DECISION,
    MARK,
    State,
    TaskView,
    Update,
    answer_artifact,
    task_state,
)
from signoff.protocols.ids import id_problem
from signoff.server.service import Principal, Service
from signoff.store.runs import RunRecord
from signoff.types import Approval

__all__ = ["PRINCIPAL", "SignoffRequestHandler", "state_filter_problem"]

PRINCIPAL = "signoff.principal"
"""Where the call context's state holds the request's authenticated principal."""
CHANNEL = "a2a"
"""The store's notes of this channel: the messages clients sent to each task, as sent."""
SENT = "a2a.sent"
"""Notes of the task each client's first message (by sender and message id) starts: a retry of
the message starts none."""
_PAGE = 50
_STATES: dict[State, TaskState] = {
    "working": TaskState.TASK_STATE_WORKING,
    "input-required": TaskState.TASK_STATE_INPUT_REQUIRED,
    "completed": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
}

logger = logging.getLogger(__name__)


class _Stale(Exception):
    """A decision message not taken, because a call it decides changed since the version the
    decision was made on: nothing was written, and the task still waits."""

    def __init__(self, run_id: str, message_id: str, error: StaleDecisionError) -> None:
        super().__init__(str(error))
        self.run_id = run_id
        self.message_id = message_id
        self.error = error


class SignoffRequestHandler(RequestHandler):
    """The A2A server of one agent, over the service that runs it."""

    def __init__(self, service: Service, agent: str) -> None:
        self.service = service
        self.agent = agent
        self.store = service.store

    # -- messages ----------------------------------------------------------------------------

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        """Start or continue the task; answer once it waits for input or is done (or at once
        with ``returnImmediately``)."""
        with _translated():
            validate_proto_required_fields(params)
            validate_history_length(params.configuration)
            try:
                run_id = await self._accept(params.message, _principal(context))
            except _Stale as stale:
                task, _ = await self._task(stale.run_id, refused=stale)
                return apply_history_length(task, params.configuration)
            if not params.configuration.return_immediately:
                async for _ in self._events(run_id, stop_at_input=True):
                    pass
            task, _ = await self._task(run_id)
            return apply_history_length(task, params.configuration)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        """Start or continue the task; stream it until it waits for input or is done."""
        with _translated():
            validate_proto_required_fields(params)
            validate_history_length(params.configuration)
            try:
                run_id = await self._accept(params.message, _principal(context))
            except _Stale as stale:
                task, _ = await self._task(stale.run_id, refused=stale)
                yield apply_history_length(task, params.configuration)
                return
        async for event in self._events(run_id, stop_at_input=True):
            if isinstance(event, Task):
                event = apply_history_length(event, params.configuration)
            yield event

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        """The task now, then what happens to it until it next waits for input or is done — a
        task waiting now streams on once a decision is taken, wherever it is taken."""
        with _translated():
            _principal(context)
            validate_proto_required_fields(params)
            _check_id("id", params.id)
            run = await self._run(params.id)
            if run.status in ("completed", "failed"):
                raise UnsupportedOperationError(
                    f"task {run.id} is {run.status}: nothing more will happen to it"
                )
        async for event in self._events(run.id, stop_at_input=False):
            yield event

    # -- reading tasks -----------------------------------------------------------------------

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        with _translated():
            _principal(context)
            validate_proto_required_fields(params)
            validate_history_length(params)
            _check_id("id", params.id)
            run = await self._run(params.id)
            task, _ = await self._task(run.id)
            return apply_history_length(task, params)

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        """The agent's tasks, newest first; filtered by context (thread) and state."""
        with _translated():
            _principal(context)
            validate_history_length(params)
            size = params.page_size if params.HasField("page_size") else _PAGE
            validate_page_size(size)
            _check_id("contextId", params.context_id)
            status = _RUN_STATUS.get(params.status) if params.status else None
            if params.status and status is None:
                if params.status in TaskState.DESCRIPTOR.values_by_number:
                    problem = f"tasks are never {TaskState.Name(params.status)} here"
                else:  # the enum is open: the parser keeps any number, named or not
                    problem = f"status {params.status} is not a task state"
                raise InvalidParamsError(f"{problem}; {_FILTERABLE}")
            before = None
            if params.page_token:
                try:
                    before = decode_page_token(params.page_token)
                    if id_problem("pageToken", before) is not None:
                        raise ValueError(before)  # no token of ours: not for the store
                    await self._run(before)
                except (ValueError, TaskNotFoundError):
                    raise InvalidParamsError(
                        f"pageToken {params.page_token!r} is not one this server gave"
                    ) from None
            filters: dict[str, Any] = {
                "agent": self.agent,
                "status": status,
                "thread_id": params.context_id or None,
                "roots": True,
                "updated_after": params.status_timestamp_after.ToDatetime(UTC)
                if params.HasField("status_timestamp_after")
                else None,
            }
            runs = await self.store.list_runs(**filters, before=before, limit=size + 1)
            tasks = []
            for record in runs[:size]:
                task, _ = await self._task(record.id)
                if not params.include_artifacts:
                    task.ClearField("artifacts")
                tasks.append(apply_history_length(task, params))
            return ListTasksResponse(
                tasks=tasks,
                next_page_token=encode_page_token(runs[size - 1].id) if len(runs) > size else "",
                page_size=size,
                total_size=await self.store.count_runs(**filters),
            )

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        with _translated():
            _principal(context)
            _check_id("id", params.id)
            run = await self._run(params.id)
            raise TaskNotCancelableError(
                f"task {run.id} cannot be cancelled: signoff runs end by themselves. To stop "
                "one waiting for input, reject its calls (a message with "
                '{"decision_type": "deny", "reason": ...})'
            )

    # -- what this server does not offer -----------------------------------------------------

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError

    # -- the work ----------------------------------------------------------------------------

    async def _accept(self, message: Message, who: Principal) -> str:
        """Take a client's message: a new task's input, or the decision a task waits for.
        Returns the task's (run's) id."""
        sent = MessageToDict(message)
        parts: list[dict[str, Any]] = sent.get("parts", [])
        if message.role != Role.ROLE_USER:
            raise InvalidParamsError("message.role must be ROLE_USER")
        if not parts:
            raise InvalidParamsError("message.parts is empty: say something")
        for name, value in (
            ("messageId", message.message_id),
            ("contextId", message.context_id),
            ("taskId", message.task_id),
        ):
            _check_id(f"message.{name}", value)
        if message.task_id:
            return await self._continue(message.task_id, sent, who)
        if any(is_decision(p.get("data")) for p in parts):
            raise InvalidParamsError(
                "a decision goes to the task that waits for it: set message.taskId"
            )
        text = _input(parts)
        thread = message.context_id or new_id()
        await self._check_context(thread)
        # The message's id, reserved for the task it starts before the task exists: a retry of
        # the same message (even one sent while the first is still being taken) finds it.
        task_id = new_id()
        sender = hashlib.sha256(f"{who.name}\n{message.message_id}".encode()).hexdigest()
        at = datetime.now(UTC)
        reserved = {"task": task_id, "parts": parts, "contextId": message.context_id}
        if not await self.store.add_note(SENT, self.agent, sender, reserved, at=at):
            [first] = await self.store.notes(SENT, self.agent, key=sender)
            if first.data["parts"] != parts or first.data["contextId"] != message.context_id:
                raise InvalidParamsError(
                    f"messageId {message.message_id!r} was already used for another message: "
                    "give each message its own id"
                )
            task_id = str(first.data["task"])
            if await self.store.run_exists(task_id):
                return task_id  # the same message again: its task, not a second one
        try:
            await self.service.start_run(
                self.agent, thread, text, started_by=who.name, run_id=task_id
            )
        except ConflictError as exc:
            if await self.store.run_exists(task_id):
                return task_id  # a retry running beside the first started it meanwhile
            raise InvalidRequestError(
                f"context {thread!r} has a task still going: {exc}. Decide or wait for it, "
                "or start a new context"
            ) from None
        run = await self.store.get_run(task_id)
        sent |= {"taskId": task_id, "contextId": thread}
        await self.store.add_note(
            CHANNEL, task_id, message.message_id, {"message": sent}, at=run.created_at or at
        )
        return task_id

    async def _check_context(self, thread: str) -> None:
        """A context is one agent's: another agent's conversation (or a sub-agent's) is not
        continued from here."""
        for latest in await self.store.list_runs(thread_id=thread, limit=1):
            if latest.agent == self.agent and latest.parent_id is None:
                return
            raise InvalidParamsError(
                f"contextId {thread!r} is a conversation of another agent; use another contextId"
            )

    async def _continue(self, task_id: str, sent: dict[str, Any], who: Principal) -> str:
        """A message on an existing task: the decision on the calls it holds."""
        run = await self._run(task_id)
        if sent.get("contextId") not in (None, "", run.thread_id):
            raise InvalidParamsError(
                f"message.contextId {sent['contextId']!r} is not task {run.id}'s "
                f"context ({run.thread_id!r})"
            )
        for earlier in await self.store.notes(CHANNEL, run.id, key=sent["messageId"]):
            if earlier.data["message"]["parts"] != _shown_parts(sent["parts"], self.service):
                raise InvalidParamsError(
                    f"messageId {sent['messageId']!r} was already used on this task for another "
                    "message: give each message its own id"
                )
            return run.id  # the same message again (a retry): taken already
        if run.status in ("completed", "failed"):
            # A2A 1.0 §3.1.1: a task in a terminal state takes no more messages.
            raise UnsupportedOperationError(
                f"task {run.id} is {run.status}: it takes no more messages. A new request goes "
                "in a new message without taskId (same contextId to continue the conversation)"
            )
        pending = await self.store.list_approvals(status="pending", run_id=run.id, limit=500)
        if run.status != "paused" or not pending:
            raise InvalidRequestError(
                f"task {run.id} is working, not waiting for input: it takes a message only "
                "while it waits for a decision (its calls may have been decided elsewhere). A "
                "new request goes in a new message without taskId"
            )
        events = await self.store.run_events(run.id)
        view = self._view(run)
        for event in events:
            view.see(event)
        shown = [self._pending(a) for a in reversed(pending)]  # oldest first
        held = [i for i in view.requested if i not in {a.id for a in pending}]
        decided = {a.id: a.status for a in await self.store.get_approvals(held)}
        try:
            answer = read_decisions(
                sent["parts"], shown, decided=decided, form_id=view.form_id or ""
            )
        except LateDecision as exc:
            raise InvalidRequestError(str(exc), data=exc.data) from None
        except PayloadError as exc:
            raise InvalidParamsError(str(exc), data=exc.data or None) from None
        at = datetime.now(UTC)
        try:
            await self.service.decide_batch(
                answer.decisions, actor=who.name, roles=who.roles, versions=answer.versions
            )
        except StaleDecisionError as exc:
            # Not an error of the request: the person decided on what no longer stands. The
            # task, still waiting, shows what changed and the calls as they are now.
            raise _Stale(run.id, sent["messageId"], exc) from None
        except InvalidEditError as exc:
            raise InvalidParamsError(
                f"the edited arguments do not fit the tool's schema at {exc.path or '/'}: {exc}",
                data={"path": exc.path, "schemaPath": exc.schema_path},
            ) from None
        except InvalidDecisionError as exc:
            raise InvalidParamsError(f"{exc}; nothing changed") from None
        except (ConflictError, ForbiddenError) as exc:
            raise InvalidRequestError(f"{exc}; nothing changed") from None
        # Kept as the history shows it to everyone: an edit's redacted values masked.
        sent["parts"] = _shown_parts(sent["parts"], self.service)
        sent.setdefault("metadata", {})[MARK] = DECISION
        sent["contextId"] = run.thread_id
        await self.store.add_note(CHANNEL, run.id, sent["messageId"], {"message": sent}, at=at)
        return run.id

    async def _events(self, run_id: str, *, stop_at_input: bool) -> AsyncIterator[Event]:
        """The task now, then its updates as the run's log grows, until it is done — or, with
        `stop_at_input`, waits for input."""
        task, view = await self._task(run_id)
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
                now = await self._pending_now(run_id)
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

    async def _task(self, run_id: str, refused: _Stale | None = None) -> tuple[Task, TaskView]:
        """The task as stored now: the run's log read through, and the messages clients sent.
        A task that waits on after a decision `refused` says first why it was not taken."""
        run = await self.store.get_run(run_id)
        view = self._view(run)
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
            pending = await self._pending_now(run.id)
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

    async def _run(self, task_id: str) -> RunRecord:
        """The run of one of this agent's tasks, or `TaskNotFoundError`."""
        try:
            run = await self.store.get_run(task_id)
        except NotFoundError:
            raise TaskNotFoundError(f"no task {task_id!r}") from None
        if run.agent != self.agent or run.parent_id is not None:
            raise TaskNotFoundError(f"no task {task_id!r} of agent {self.agent!r}")
        return run

    async def _waiting(self, run_id: str) -> bool:
        return bool(await self.store.list_approvals(status="pending", run_id=run_id, limit=1))

    async def _pending_now(self, run_id: str) -> list[Pending]:
        """The task's calls that wait now, oldest first, as its request shows them."""
        pending = await self.store.list_approvals(status="pending", run_id=run_id, limit=500)
        return [self._pending(a) for a in reversed(pending)]

    def _pending(self, approval: Approval) -> Pending:
        """A held call as the task shows it."""
        return pending_of(approval, self.service.redaction)

    def _told(self, request: dict[str, Any], refused: _Stale) -> dict[str, Any]:
        """The task's request, saying first why the decision `refused` was not taken (a message
        of its own: the history keeps the request as it was made)."""
        said, data = stale_parts(refused.error, self.service.redaction)
        words, *rest = request["parts"]
        return request | {
            "messageId": f"{request['messageId']}-refused-{refused.message_id}",
            "parts": [{"text": f"{said['text']}\n\n{words['text']}"}, data, *rest],
        }

    def _view(self, run: RunRecord) -> TaskView:
        return TaskView(
            run_id=run.id,
            agent=run.agent,
            context_id=run.thread_id,
            redaction=self.service.redaction,
        )


_RUN_STATUS: dict[int, str] = {
    TaskState.TASK_STATE_WORKING: "running",
    TaskState.TASK_STATE_INPUT_REQUIRED: "paused",
    TaskState.TASK_STATE_COMPLETED: "completed",
    TaskState.TASK_STATE_FAILED: "failed",
}
_FILTERABLE = "filter by " + ", ".join(TaskState.Name(state) for state in _RUN_STATUS)


def state_filter_problem(value: object) -> str | None:
    """What is wrong with a ListTasks ``status`` filter as a client sent it, or None.

    To be asked before the SDK parses the request: its parser reads a name that is no task
    state as no filter at all (it ignores unknown values), so the listing would quietly hold
    every task. An empty value is no filter; a number goes on, for `on_list_tasks` to judge."""
    if not isinstance(value, str) or value == "" or value in TaskState.DESCRIPTOR.values_by_name:
        return None
    try:
        int(value)  # as the SDK's parser reads a number sent as text
    except ValueError:
        return f"status {value!r} is not a task state; {_FILTERABLE}"
    return None


def _status(update: Update, at: datetime | None) -> TaskStatus:
    status = TaskStatus(state=_STATES[update.state])
    if update.message is not None:
        status.message.CopyFrom(ParseDict(update.message, Message()))
    if at is not None:
        stamp = Timestamp()
        stamp.FromDatetime(at)
        status.timestamp.CopyFrom(stamp)
    return status


def _shown_parts(parts: list[dict[str, Any]], service: Service) -> list[dict[str, Any]]:
    """A decision message's parts with the arguments of its edits masked where redacted."""
    return [
        part | {"data": service.redaction.tree(part["data"])}
        if is_decision(part.get("data"))
        else part
        for part in parts
    ]


def _input(parts: list[dict[str, Any]]) -> str:
    """The run's input from a message's parts: its texts, and its data parts as JSON."""
    pieces: list[str] = []
    for part in parts:
        if "text" in part:
            pieces.append(part["text"])
        elif "data" in part:
            pieces.append(json.dumps(part["data"], ensure_ascii=False))
        else:
            raise ContentTypeNotSupportedError(
                "signoff agents read text and data parts; a file or URL part is not read"
            )
    text = "\n".join(pieces).strip()
    if not text:
        raise InvalidParamsError("the message says nothing: its text parts are empty")
    return text


def _check_id(name: str, value: str) -> None:
    """`InvalidParamsError` for an id the store cannot take (see `signoff.protocols.ids`)."""
    problem = id_problem(name, value)
    if problem is not None:
        raise InvalidParamsError(problem)


def _principal(context: ServerCallContext) -> Principal:
    principal = context.state.get(PRINCIPAL)
    if not isinstance(principal, Principal):  # the routes authenticate every request first
        raise InvalidRequestError("the request is not authenticated")
    return principal


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    """signoff's errors as A2A's."""
    try:
        yield
    except NotFoundError as exc:
        raise TaskNotFoundError(str(exc)) from None
    except ForbiddenError as exc:
        raise InvalidRequestError(f"not allowed: {exc}") from None
    except InvalidEditError as exc:
        raise InvalidParamsError(str(exc), data={"path": exc.path}) from None
    except InvalidDecisionError as exc:
        raise InvalidParamsError(str(exc)) from None
    except ConflictError as exc:
        raise InvalidRequestError(str(exc)) from None
