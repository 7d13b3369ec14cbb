"""AG-UI's words for signoff's, both ways: a run's log events as AG-UI events, a held call as an
interrupt and its ``HITL_FORM`` activity, a decision as the activity's patch, a task's log as the
conversation a client holds — and a ``resume[]`` entry as a decision. Pure: it reads no store and
serves nothing; `agent` does both.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ag_ui.core import (
    ActivityDeltaEvent,
    AssistantMessage,
    BaseEvent,
    FunctionCall,
    Interrupt,
    Message,
    ResumeEntry,
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

from signoff.gate.versions import version_of
from signoff.protocols.a2a.hitl import Pending, pending_of, request_parts
from signoff.protocols.a2a.tasks import TaskView
from signoff.protocols.agui.questions import (
    REASON,
    answer_of,
    asked,
    question_fields,
    question_schema,
)
from signoff.redaction import Redaction
from signoff.store.runs import RunRecord, StoredEvent
from signoff.types import Answer, Approval, Approve, Decision, Edit, Reject, Respond

__all__ = [
    "ACTIVITY",
    "COMPLETED",
    "Projection",
    "Refused",
    "activity_delta",
    "decided_patch",
    "decision_of",
    "interrupt_id",
    "last_user",
    "ops",
    "response_schema",
    "said",
    "settled_patch",
    "summary",
    "task_messages",
]

ACTIVITY = "HITL_FORM"
COMPLETED = [{"op": "replace", "path": "/stage", "value": "completed"}]
"""The activity's patch once the run that resumed its call is done with it."""
_DECIDED = {
    "approved": "approved",
    "edited": "approved",
    "responded": "provided",
    "answered": "answered",
}


class Refused(Exception):
    """What ends an AG-UI run with RUN_ERROR, changing nothing."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


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


class Projection:
    """A task's log and held calls as AG-UI shows them: arguments masked by `redaction`, an
    edit's schema from `edit_schema`."""

    def __init__(
        self, redaction: Redaction, edit_schema: Callable[[Approval], Mapping[str, Any] | None]
    ) -> None:
        self.redaction = redaction
        self._edit_schema = edit_schema

    def events(self, task_id: str, event: StoredEvent) -> Iterable[BaseEvent]:
        """The AG-UI events of one log event: words, tool calls and their results."""
        data = event.data
        match event.type:
            case "text":
                yield from said(f"{task_id}-{event.seq}", data["text"])
            case "tool_call":
                call_id = f"{task_id}-{data['id']}"
                args = self.redaction.call_args(data["args"])
                yield ToolCallStartEvent(tool_call_id=call_id, tool_call_name=data["name"])
                yield ToolCallArgsEvent(tool_call_id=call_id, delta=json.dumps(args))
                yield ToolCallEndEvent(tool_call_id=call_id)
            case "tool_result":
                yield ToolCallResultEvent(
                    message_id=f"{task_id}-{event.seq}",
                    tool_call_id=f"{task_id}-{data.get('tool_call_id')}",
                    content=str(data.get("content", "")),
                )

    def request_words(self, held: Iterable[Approval], *, agent: str) -> str:
        """The words that ask for the held calls, each as it stands now."""
        return asking([pending_of(a, self.redaction) for a in held], agent=agent)

    def activity(
        self, task_id: str, interrupt: str, approval: Approval, words: str
    ) -> dict[str, Any]:
        """The content of the call's ``HITL_FORM`` activity."""
        return (
            {
                "stage": "awaiting_input",
                "taskId": task_id,
                "interruptId": interrupt,
                "toolCallId": f"{task_id}-{approval.call.id}",
                "tool": approval.call.name,
                "args": self.redaction.call_args(approval.call.args),
                "agent": approval.call.agent,
                "reason": approval.reason,
                "expiresAt": _expiry(approval),
                "schema": self._schema(approval),
                "text": words,
            }
            | self._version_of(approval)
            | self._asks(approval)
        )

    def interrupt(
        self, task_id: str, interrupt: str, approval: Approval, *, refusal: str | None = None
    ) -> Interrupt:
        """The call's interrupt; `refusal` says first why an answer to it was not taken."""
        asks = f"{approval.call.name}: {approval.reason}"
        if asked(approval):
            asks = str(question_fields(approval)["question"])
        return Interrupt(
            id=interrupt,
            reason=REASON if asked(approval) else "tool_approval",
            message=asks if refusal is None else f"{refusal} {asks}",
            tool_call_id=f"{task_id}-{approval.call.id}",
            response_schema=self._schema(approval),
            expires_at=_expiry(approval),
            metadata={
                "taskId": task_id,
                "approvalId": approval.id,
                "tool": approval.call.name,
                "args": self.redaction.call_args(approval.call.args),
                "agent": approval.call.agent,
                "rule": approval.rule,
            }
            | self._version_of(approval)
            | self._asks(approval),
        )

    def _schema(self, approval: Approval) -> dict[str, Any]:
        """What answers the call's interrupt: an answer to a question, a decision on a call."""
        if asked(approval):
            return question_schema(approval)
        return response_schema(self._args_schema(approval), approval.version)

    def _asks(self, approval: Approval) -> dict[str, Any]:
        """What a question asks, for its interrupt and activity (nothing for a call)."""
        return {"kind": "question"} | question_fields(approval) if asked(approval) else {}

    def _version_of(self, approval: Approval) -> dict[str, Any]:
        """The version of the call an interrupt shows (its answer sends it back), and — once it
        changed while it waited — the arguments it was asked with and what changed."""
        shown = pending_of(approval, self.redaction)
        version: dict[str, Any] = {"version": approval.version}
        if shown.requested_args is not None:
            version["requestedArgs"] = shown.requested_args
        if shown.changes:
            version["changes"] = list(shown.changes)
        return version

    def _args_schema(self, approval: Approval) -> dict[str, Any] | None:
        schema = self._edit_schema(approval)
        return None if schema is None else dict(schema)


def said(message_id: str, words: str) -> Iterable[BaseEvent]:
    """Words of the assistant's, as one message."""
    yield TextMessageStartEvent(message_id=message_id)
    yield TextMessageContentEvent(message_id=message_id, delta=words)
    yield TextMessageEndEvent(message_id=message_id)


def _expiry(approval: Approval) -> str | None:
    return None if approval.expires_at is None else approval.expires_at.isoformat()


# -- the activity's patches ------------------------------------------------------------------


def activity_delta(interrupt: str, patch: list[dict[str, Any]]) -> ActivityDeltaEvent:
    return ActivityDeltaEvent(message_id=interrupt, activity_type=ACTIVITY, patch=ops(patch))


def ops(patch: list[dict[str, Any]]) -> Any:
    """A JSON Patch as plain operations (the event models validate them)."""
    return patch


def decided_patch(decision: Decision) -> list[dict[str, Any]]:
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
        case Answer(value=value):
            kind, values = "answered", {"answer": value}
        case _:
            kind = "approved"
    return _patch("working", kind, values)


def settled_patch(approval: Approval, *, done: bool) -> list[dict[str, Any]]:
    """The activity's patch for a call decided before this run (elsewhere, or by the same
    resume sent before): the decision as it was taken, and by whom."""
    values: dict[str, Any] = {"decidedBy": approval.decided_by}
    if isinstance(approval.decision, Reject):
        values["reason"] = approval.decision.reason
    if isinstance(approval.decision, Answer):
        values["answer"] = approval.decision.value
    kind = _DECIDED.get(approval.status, "rejected")
    return _patch("completed" if done else "working", kind, values)


def _patch(stage: str, kind: str, values: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"op": "replace", "path": "/stage", "value": stage},
        {"op": "add", "path": "/decision", "value": kind},
        {"op": "add", "path": "/values", "value": values},
    ]


def summary(approval: Approval) -> str:
    """A decided call as the shared state lists it."""
    by = f" by {approval.decided_by}" if approval.decided_by else ""
    return f"{approval.call.name}: {_DECIDED.get(approval.status, approval.status)}{by}"


# -- resume entries as decisions -------------------------------------------------------------


def decision_of(entry: ResumeEntry, *, question: bool = False) -> tuple[Decision, int | None]:
    """A resume entry as a decision — an answer, when it answers a `question` — with the version
    of the call it was made on (None when it names none), or `Refused` naming what is wrong
    with it."""
    where = f"resume entry {entry.interrupt_id}"
    payload = entry.payload
    named = payload.get("version") if isinstance(payload, dict) else None
    version = version_of(named)
    if named is not None and version is None:
        raise Refused(
            f"{where}: 'version' must be the interrupt's version (a whole number from 1)",
            "invalid_resume",
        )
    if question:
        try:
            return answer_of(entry, where), version
        except ValueError as exc:
            raise Refused(str(exc), "invalid_resume") from None
    return _answered(entry, where), version


def _answered(entry: ResumeEntry, where: str) -> Decision:
    if entry.status == "cancelled":
        return Reject(reason="the interrupt was cancelled")
    payload = entry.payload
    if not isinstance(payload, dict) or not isinstance(payload.get("approved"), bool):
        raise Refused(f"{where}: payload needs 'approved': true or false", "invalid_resume")
    extra = sorted(set(payload) - {"approved", "editedArgs", "reason", "response", "version"})
    if extra:
        raise Refused(f"{where}: unknown payload fields {extra}", "invalid_resume")
    reason = payload.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise Refused(f"{where}: 'reason' must be a string", "invalid_resume")
    if not payload["approved"]:
        if "editedArgs" in payload or "response" in payload:
            raise Refused(
                f"{where}: editedArgs and response go with approved: true", "invalid_resume"
            )
        return Reject(reason=reason or "")
    if "response" in payload and "editedArgs" in payload:
        raise Refused(f"{where}: give editedArgs or response, not both", "invalid_resume")
    if "response" in payload:
        if not isinstance(payload["response"], str):
            raise Refused(f"{where}: 'response' must be a string", "invalid_resume")
        return Respond(content=payload["response"])
    if "editedArgs" in payload:
        if not isinstance(payload["editedArgs"], dict):
            raise Refused(f"{where}: 'editedArgs' must be an object", "invalid_resume")
        return Edit(args=payload["editedArgs"])
    return Approve()


def last_user(messages: Sequence[Any]) -> tuple[str | None, str]:
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


# -- the conversation ------------------------------------------------------------------------


def asking(held: Sequence[Pending], *, agent: str) -> str:
    """The words that ask for the held calls (the A2A request's, without its reply line)."""
    first = request_parts(held, agent=agent, form_id="")[0]
    return str(first["text"]).rsplit("\n", 1)[0]


def task_messages(
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
                content = str(data.get("content", ""))
                call = f"{task}-{data.get('tool_call_id')}"
                result = ToolMessage(id=f"{task}-{event.seq}", tool_call_id=call, content=content)
                _after_call(messages, result)
            case "paused":
                held = [view.requested[a] for a in data["approvals"] if a in view.requested]
                words = asking(held, agent=run.agent)
                messages.append(AssistantMessage(id=f"{task}-{event.seq}-ask", content=words))
    return messages


def _after_call(messages: list[Message], result: ToolMessage) -> None:
    """Put `result` right after its call and the results before it."""
    call = result.tool_call_id
    at = next((n + 1 for n, m in enumerate(messages) if m.id == call), len(messages))
    while at < len(messages) and messages[at].role == "tool":
        at += 1
    messages.insert(at, result)
