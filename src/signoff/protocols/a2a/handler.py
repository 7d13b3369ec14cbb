"""One signoff agent behind a2a-sdk's `RequestHandler`: the JSON-RPC and REST bindings of the SDK
call it, and it answers from signoff's own store — each request checked, and signoff's errors
said as A2A's.

A message without a task starts a run (the task); a message on a task that waits for input
decides its held calls (`messages`); everything a client reads — a task, a stream, a list — is
the run's log read by `reader`. A decision taken in the web inbox or the CLI moves the task on
for every A2A subscriber, because it is in the log they follow.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Iterator
from datetime import UTC
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import (
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

from signoff.errors import (
    ConflictError,
    ForbiddenError,
    InvalidDecisionError,
    InvalidEditError,
    NotFoundError,
)
from signoff.protocols.a2a.messages import Messages
from signoff.protocols.a2a.reader import Stale, TaskReader, check_id
from signoff.protocols.ids import id_problem
from signoff.server.service import Principal, Service
from signoff.store.runs import RunFilters

__all__ = ["PRINCIPAL", "SignoffRequestHandler", "state_filter_problem"]

PRINCIPAL = "signoff.principal"
"""Where the call context's state holds the request's authenticated principal."""
_PAGE = 50


class SignoffRequestHandler(RequestHandler):
    """The A2A server of one agent, over the service that runs it."""

    def __init__(self, service: Service, agent: str) -> None:
        self.service = service
        self.agent = agent
        self.store = service.store
        self.reader = TaskReader(service, agent)
        self.messages = Messages(service, self.reader)

    # -- messages ----------------------------------------------------------------------------

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        """Start or continue the task; answer once it waits for input or is done (or at once
        with ``returnImmediately``)."""
        with _translated():
            taken = await self._take(params, context)
            if isinstance(taken, Task):
                return taken
            if not params.configuration.return_immediately:
                async for _ in self.reader.events(taken, stop_at_input=True):
                    pass
            task, _ = await self.reader.task(taken)
            return apply_history_length(task, params.configuration)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        """Start or continue the task; stream it until it waits for input or is done."""
        with _translated():
            taken = await self._take(params, context)
        if isinstance(taken, Task):
            yield taken
            return
        async for event in self.reader.events(taken, stop_at_input=True):
            if isinstance(event, Task):
                event = apply_history_length(event, params.configuration)
            yield event

    async def _take(self, params: SendMessageRequest, context: ServerCallContext) -> str | Task:
        """Take the request's message: the id of the task it starts or continues — or, when it
        decided on a call that changed since, that task as it waits on (`Stale`)."""
        validate_proto_required_fields(params)
        validate_history_length(params.configuration)
        try:
            return await self.messages.accept(params.message, _principal(context))
        except Stale as stale:
            task, _ = await self.reader.task(stale.run_id, refused=stale)
            return apply_history_length(task, params.configuration)

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        """The task now, then what happens to it until it next waits for input or is done — a
        task waiting now streams on once a decision is taken, wherever it is taken."""
        with _translated():
            _principal(context)
            validate_proto_required_fields(params)
            check_id("id", params.id)
            run = await self.reader.run(params.id)
            if run.status in ("completed", "failed"):
                raise UnsupportedOperationError(
                    f"task {run.id} is {run.status}: nothing more will happen to it"
                )
        async for event in self.reader.events(run.id, stop_at_input=False):
            yield event

    # -- reading tasks -----------------------------------------------------------------------

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        with _translated():
            _principal(context)
            validate_proto_required_fields(params)
            validate_history_length(params)
            check_id("id", params.id)
            run = await self.reader.run(params.id)
            task, _ = await self.reader.task(run.id)
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
            check_id("contextId", params.context_id)
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
                    await self.reader.run(before)
                except (ValueError, TaskNotFoundError):
                    raise InvalidParamsError(
                        f"pageToken {params.page_token!r} is not one this server gave"
                    ) from None
            filters: RunFilters = {
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
                task, _ = await self.reader.task(record.id)
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
            check_id("id", params.id)
            run = await self.reader.run(params.id)
            raise TaskNotCancelableError(
                f"task {run.id} cannot be cancelled: signoff runs end by themselves. To stop "
                "one waiting for input, reject its calls (a message with "
                '{"decision_type": "deny", "reason": ...})'
            )

    # -- what this server does not offer -----------------------------------------------------

    async def _no_push_notifications(self, params: Any, context: ServerCallContext) -> Any:
        """Push notifications: none from this server (a client streams a task instead)."""
        raise PushNotificationNotSupportedError

    on_create_task_push_notification_config = _no_push_notifications
    on_get_task_push_notification_config = _no_push_notifications
    on_list_task_push_notification_configs = _no_push_notifications
    on_delete_task_push_notification_config = _no_push_notifications

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError


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
