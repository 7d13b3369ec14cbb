"""What a client's message to one agent does: a message without a task starts a run (the task);
a message on a task that waits for input decides its held calls (`decisions`). Each message is
kept as the client sent it (an edit's redacted values masked), for the task's history; the same
message sent again — a retry, even one sent while the first is still being taken — starts
nothing and decides nothing a second time.

A decision made on a version of a call that changed since is not taken (`Stale`): the answer is
the task, still waiting, saying what changed and showing the calls as they stand.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from a2a.types import Message, Role
from a2a.utils.errors import (
    ContentTypeNotSupportedError,
    InvalidParamsError,
    InvalidRequestError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict

from signoff.errors import (
    ConflictError,
    ForbiddenError,
    InvalidDecisionError,
    InvalidEditError,
    StaleDecisionError,
)
from signoff.gate.ids import new_id
from signoff.protocols.a2a.decisions import (
    LateDecision,
    PayloadError,
    is_decision,
    read_decisions,
)
from signoff.protocols.a2a.reader import CHANNEL, Stale, TaskReader, check_id
from signoff.protocols.a2a.tasks import DECISION, MARK
from signoff.server.service import Principal, Service
from signoff.types import Approval

__all__ = ["SENT", "Messages"]

SENT = "a2a.sent"
"""Notes of the task each client's first message (by sender and message id) starts: a retry of
the message starts none."""


class Messages:
    """Takes the messages clients send to the tasks of `reader`'s agent."""

    def __init__(self, service: Service, reader: TaskReader) -> None:
        self.service = service
        self.reader = reader
        self.agent = reader.agent
        self.store = service.store

    async def accept(self, message: Message, who: Principal) -> str:
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
            check_id(f"message.{name}", value)
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
        run = await self.reader.run(task_id)
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
                f"task {run.id} is {run.status}{await self._answered(run.id)}: it takes no more "
                "messages. A new request goes in a new message without taskId (same contextId "
                "to continue the conversation)"
            )
        pending = await self.store.list_approvals(status="pending", run_id=run.id, limit=500)
        if run.status != "paused" or not pending:
            raise InvalidRequestError(
                f"task {run.id} is working, not waiting for input{await self._answered(run.id)}: "
                "it takes a message only while it waits for a decision (its calls may have been "
                "decided elsewhere). A new request goes in a new message without taskId"
            )
        events = await self.store.run_events(run.id)
        view = self.reader.view(run)
        for event in events:
            view.see(event)
        shown = [self.reader.pending(a) for a in reversed(pending)]  # oldest first
        held = [i for i in view.requested if i not in {a.id for a in pending}]
        decided = {a.id: _status(a) for a in await self.store.get_approvals(held)}
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
            raise Stale(run.id, sent["messageId"], exc) from None
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

    async def _answered(self, run_id: str) -> str:
        """Who answered the task's last question, in words — a reply that comes after it is
        refused saying so — or nothing, when the task asked none."""
        for answered in await self.store.list_approvals(status="answered", run_id=run_id, limit=1):
            return f" (its question {answered.id} was answered by {answered.decided_by!r})"
        return ""


def _status(approval: Approval) -> str:
    """How a late decision's refusal names a call decided already: its status, and who."""
    if approval.decided_by is None:
        return approval.status
    return f"{approval.status} by {approval.decided_by!r}"


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
