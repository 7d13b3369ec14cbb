"""A run's log read as an A2A task (ARCHITECTURE §7: a channel is a projection of the log).

The task is the run: its id is the run's, its context the run's thread. `TaskView` reads the
log's events in order and says, for each, what an A2A client sees — a status change, the
message that comes with it, the answer as an artifact — as plain A2A 1.0 JSON. The same reading
streams a live task and rebuilds a stored one, so a reload shows what the stream showed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from signoff.protocols.a2a.hitl import Pending, decision_part, request_parts
from signoff.redaction import Redaction
from signoff.store.runs import StoredEvent

__all__ = [
    "DECISION",
    "MARK",
    "REQUEST",
    "State",
    "TaskView",
    "Update",
    "agent_message",
    "answer_artifact",
    "task_state",
]

State = Literal["working", "input-required", "completed", "failed"]

MARK = "signoff.hitl"
"""The message metadata key that marks the approval requests and the decisions of a task's
history — ``request`` or ``decision`` — so a chat UI can show them as cards, not bubbles."""
REQUEST = "request"
DECISION = "decision"


@dataclass(frozen=True, kw_only=True)
class Update:
    """What one event changes of the task: its state, with a message (or none)."""

    state: State
    message: dict[str, Any] | None = None
    ends: bool = False
    """The stream of a request stops here: the task waits for input, or is done."""
    repeats: bool = False
    """The message was said before (a completed task's answer is the model's last words): the
    status shows it again, the history holds it once."""


@dataclass(kw_only=True)
class TaskView:
    """Reads one run's events in order, as a client of the A2A task sees them."""

    run_id: str
    agent: str
    context_id: str
    redaction: Redaction = field(default_factory=Redaction)
    requested: dict[str, Pending] = field(default_factory=dict)
    """Every call the run has held, by approval id."""
    request: dict[str, Any] | None = None
    """The latest input-required message."""
    form_id: str | None = None
    """The form of the latest pause: a form response must name it."""
    answer: dict[str, Any] | None = None
    """The model's last words: the task's answer once it completes."""
    failure: dict[str, Any] | None = None
    state: State = "working"
    """The task's state as the events read so far leave it."""
    last_seq: int = 0

    def see(self, event: StoredEvent) -> Update | None:
        """The event's effect on the task, if it has one a client sees."""
        self.last_seq = event.seq
        update = self._see(event)
        if update is not None:
            self.state = update.state
        elif event.type == "resumed":
            self.state = "working"
        return update

    def _see(self, event: StoredEvent) -> Update | None:
        match event.type:
            case "text":
                self.answer = self._message(event, [{"text": event.data["text"]}])
                return Update(state="working", message=self.answer)
            case "tool_call":
                call = {
                    "id": event.data["id"],
                    "name": event.data["name"],
                    "args": self.redaction.call_args(event.data["args"]),
                }
                part = {"data": call, "metadata": {"type": "function_call"}}
                return Update(state="working", message=self._message(event, [part]))
            case "tool_result":
                return Update(state="working", message=self._message(event, [_result(event)]))
            case "approval_requested":
                pending = _pending(event.data, self.redaction)
                self.requested[pending.approval_id] = pending
                return None
            case "paused":
                held = [self.requested[i] for i in event.data["approvals"] if i in self.requested]
                self.form_id = f"{self.run_id}.{event.seq}"
                self.request = self._request(event.seq, held)
                return Update(state="input-required", message=self.request, ends=True)
            case "decision":
                data = event.data
                words = _decided(data)
                part = decision_part(
                    approval_id=data["approval_id"],
                    call_id=data["call_id"],
                    tool=data["tool"],
                    status=data["status"],
                    decision=self.redaction.tree(data["decision"]),
                    decided_by=data.get("decided_by"),
                )
                message = self._message(event, [{"text": words}, part], mark=DECISION)
                return Update(state="working", message=message)
            case "completed":
                return Update(state="completed", message=self.answer, ends=True, repeats=True)
            case "failed":
                reason = str(event.data.get("reason", "unknown"))
                self.failure = self._message(event, [{"text": f"The run failed: {reason}"}])
                return Update(state="failed", message=self.failure, ends=True)
            case _:  # run_started, resumed, tool_started, tool_finished: nothing new to show
                return None

    def request_for(self, pending: list[Pending]) -> dict[str, Any]:
        """The latest pause's request, listing only the calls still pending (some may have
        been decided elsewhere since)."""
        seq = int(self.form_id.rpartition(".")[2]) if self.form_id else self.last_seq
        self.form_id = f"{self.run_id}.{seq}"
        return self._request(seq, pending)

    def _request(self, seq: int, pending: list[Pending]) -> dict[str, Any]:
        assert self.form_id is not None
        parts = request_parts(pending, agent=self.agent, form_id=self.form_id)
        return self._message(seq, parts, mark=REQUEST)

    def _message(
        self, event: StoredEvent | int, parts: list[dict[str, Any]], *, mark: str | None = None
    ) -> dict[str, Any]:
        seq = event if isinstance(event, int) else event.seq
        return agent_message(
            f"{self.run_id}-{seq}",
            task_id=self.run_id,
            context_id=self.context_id,
            parts=parts,
            metadata=None if mark is None else {MARK: mark},
        )


def task_state(logged: State, run_status: str, waiting: bool) -> State:
    """A task's state from its log's (`logged`), its run's status row and whether any of its
    calls still waits: the log may lag the row, and part of a batch decided elsewhere leaves
    the task waiting for the rest."""
    if logged not in ("working", "input-required"):
        return logged
    if waiting and (logged == "input-required" or run_status == "paused"):
        return "input-required"
    return "working"


def agent_message(
    message_id: str,
    *,
    task_id: str,
    context_id: str,
    parts: list[dict[str, Any]],
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "messageId": message_id,
        "taskId": task_id,
        "contextId": context_id,
        "role": "ROLE_AGENT",
        "parts": parts,
    }
    if metadata:
        message["metadata"] = metadata
    return message


def answer_artifact(run_id: str, answer: dict[str, Any]) -> dict[str, Any]:
    """The answer of a completed task, as its one artifact."""
    return {"artifactId": f"{run_id}-answer", "name": "answer", "parts": answer["parts"]}


def _pending(data: dict[str, Any], redaction: Redaction) -> Pending:
    return Pending(
        approval_id=data["approval_id"],
        call_id=data["call_id"],
        tool=data["tool"],
        args=redaction.call_args(data["args"]),
        agent=data.get("agent"),
        rule=data.get("rule"),
        reason=data.get("reason") or "",
        expires_at=data.get("expires_at"),
        kind=data.get("kind", "tool"),
    )


def _result(event: StoredEvent) -> dict[str, Any]:
    """A tool's result as kagent shows one: a function response whose ``response.result`` is
    the result's JSON when it is JSON (``{"status": "rejected", ...}`` for a rejection)."""
    data = event.data
    content = data.get("content")
    try:
        result = json.loads(content) if isinstance(content, str) else content
    except ValueError:
        result = content
    response: dict[str, Any] = {"result": result}
    if data.get("is_error"):
        response["isError"] = True
    body = {"id": data.get("tool_call_id"), "name": data.get("name"), "response": response}
    return {"data": body, "metadata": {"type": "function_response"}}


def _decided(data: dict[str, Any]) -> str:
    by = f" by {data['decided_by']}" if data.get("decided_by") else ""
    decision = data.get("decision") or {}
    match data["status"]:
        case "approved":
            return f"{data['tool']} was approved{by}."
        case "edited":
            return f"{data['tool']} was approved{by} with edited arguments."
        case "responded":
            return f"{data['tool']} was answered{by} instead of run."
        case "answered":
            return f"The question was answered{by}: {json.dumps(decision.get('value'))}."
        case "rejected":
            reason = decision.get("reason") or "no reason given"
            return f"{data['tool']} was rejected{by}: {reason}."
        case status:
            return f"{data['tool']} was {status}; it did not run."
