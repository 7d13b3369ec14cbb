"""What the gateway answers a request with, for each kind of call it holds: a tool's result
(a refusal is a result with ``isError``, as a tool's own failure is), or a resource's contents
and a prompt's messages (a refusal is a JSON-RPC error: those results have no error flag).

A `Shape` turns each outcome — the server's result, a refusal, a wait that ran out, a person's
words — into the reply of its kind, and keeps a reply in the ledger and reads it back.
"""

from __future__ import annotations

import json
from typing import Any, Literal, TypeAlias

from mcp import types
from mcp_types import INVALID_PARAMS

from signoff.gate.questions import question_result
from signoff.types import Approval, ToolCall

__all__ = [
    "DOING",
    "REFUSED",
    "RESOURCE_NOT_FOUND",
    "Reply",
    "Shape",
    "clean",
    "not_offered",
    "outcome",
    "pending",
    "running",
    "shape_of",
    "unknown",
]

REFUSED = -32080
"""The JSON-RPC error code of a read or prompt signoff did not let through (its ``data.status``
says why: ``blocked``, ``rejected``, ``expired``, ``pending_approval``, ...)."""
RESOURCE_NOT_FOUND = -32002
"""MCP's code for a resource no server behind offers."""

Reply: TypeAlias = (
    types.CallToolResult
    | types.ReadResourceResult
    | types.GetPromptResult
    | types.InputRequiredResult
    | types.ErrorData
)
Status: TypeAlias = Literal["blocked", "rejected", "expired", "unknown", "running", "failed"]


class Shape:
    """The replies of one kind of call."""

    kind: str

    def done(self, value: dict[str, Any]) -> Reply:
        """The server's own result (its wire form, `_meta` dropped)."""
        raise NotImplementedError

    def said(self, call: ToolCall, text: str) -> Reply:
        """A person's words instead of the server's answer (a `respond` decision)."""
        raise NotImplementedError

    def refused(self, text: str, status: Status) -> Reply:
        return types.ErrorData(code=REFUSED, message=text, data={"status": status})

    def pending(self, approval: Approval, text: str) -> Reply:
        data = {"status": "pending_approval", "approval_id": approval.id}
        return types.ErrorData(code=REFUSED, message=text, data=data)

    def keep(self, reply: Reply) -> dict[str, Any]:
        """The reply as the ledger keeps it."""
        if isinstance(reply, types.ErrorData):
            return {"error": _wire(reply)}
        return {"result": _wire(reply)}

    def kept(self, value: dict[str, Any]) -> Reply:
        """The reply the ledger kept."""
        if "error" in value:
            return types.ErrorData.model_validate(value["error"])
        return self._result(value["result"])

    def _result(self, value: dict[str, Any]) -> Reply:
        if value.get("resultType") == "input_required":  # what the server asked for first
            return types.InputRequiredResult.model_validate(value)
        return self.done(value)


class _Tool(Shape):
    kind = "tool"

    def done(self, value: dict[str, Any]) -> Reply:
        return types.CallToolResult.model_validate(value)

    def said(self, call: ToolCall, text: str) -> Reply:
        return _text(text, error=False)

    def refused(self, text: str, status: Status) -> Reply:
        return _text(text, error=True)

    def pending(self, approval: Approval, text: str) -> Reply:
        structured = {"status": "pending_approval", "approval_id": approval.id}
        return _text(text, error=False, structured=structured)

    def keep(self, reply: Reply) -> dict[str, Any]:
        if isinstance(reply, types.ErrorData):  # a server's error that is passed on as one
            return super().keep(reply)
        return _wire(reply)  # a tool's other replies are results (as signoff always kept them)

    def kept(self, value: dict[str, Any]) -> Reply:
        if set(value) == {"error"}:
            return super().kept(value)
        return self._result(value)


class _Resource(Shape):
    kind = "resource"

    def done(self, value: dict[str, Any]) -> Reply:
        return types.ReadResourceResult.model_validate(value)

    def said(self, call: ToolCall, text: str) -> Reply:
        contents = types.TextResourceContents(uri=call.name, mime_type="text/plain", text=text)
        return types.ReadResourceResult(contents=[contents])


class _Prompt(Shape):
    kind = "prompt"

    def done(self, value: dict[str, Any]) -> Reply:
        return types.GetPromptResult.model_validate(value)

    def said(self, call: ToolCall, text: str) -> Reply:
        message = types.PromptMessage(
            role="user", content=types.TextContent(type="text", text=text)
        )
        return types.GetPromptResult(messages=[message])


_SHAPES: dict[str, Shape] = {shape.kind: shape for shape in (_Tool(), _Resource(), _Prompt())}
_SHAPES["question"] = _SHAPES["tool"]  # the ask tool's call: a tool call's replies


def shape_of(call: ToolCall) -> Shape:
    return _SHAPES[call.kind]


DOING = {"tool": "call", "resource": "read", "prompt": "prompt", "question": "question"}
"""What an answer calls each kind of call."""


_NOT_RUN: dict[Status, str] = {
    "unknown": "was started before and cut off midway (its client went away or its gateway "
    "stopped): its outcome is unknown, and it was not run again. Calling it again asks for a "
    "new approval.",
    "running": "is running for an identical call and has not finished within the gateway's "
    "wait; its result goes to that call. Calling it again waits on it while it runs, and asks "
    "anew once it has finished.",
}
"""Why an approved call is not run for this request, by the status its answer carries."""


def unknown(shape: Shape, approval: Approval) -> Reply:
    """The approved call was started and cut off midway, and may not run again."""
    return _not_run(shape, approval, "unknown")


def running(shape: Shape, approval: Approval) -> Reply:
    """The approved call runs for another request, longer than the gateway waits."""
    return _not_run(shape, approval, "running")


def _not_run(shape: Shape, approval: Approval, status: Status) -> Reply:
    return shape.refused(f"the call approved by {approval.id} {_NOT_RUN[status]}", status)


def pending(shape: Shape, approval: Approval) -> Reply:
    """Nobody decided within the gateway's wait: ask again to pick up the decision."""
    again = {"tool": "Call the tool", "resource": "Read it", "prompt": "Get the prompt",
             "question": "Ask it"}  # fmt: skip
    asks = approval.call.kind == "question"
    lead, waits = ("Nobody answered yet", "answer") if asks else ("Nothing ran yet", "approval")
    text = (
        f"{lead}: this {DOING[approval.call.kind]} waits for a person's {waits} "
        f"({approval.id}"
        + (f", rule {approval.rule}" if approval.rule else "")
        + f": {approval.reason}). {again[approval.call.kind]} again with the same arguments "
        "to pick up the decision; it will not be asked for twice."
    )
    return shape.pending(approval, text)


def outcome(shape: Shape, approval: Approval) -> Reply:
    """The answer to an approval that did not let the call run (a question's outcome, for
    the ask tool's)."""
    if approval.call.kind == "question":
        told = question_result(approval)
        block = types.TextContent(type="text", text=json.dumps(told))
        return types.CallToolResult(content=[block], structured_content=told)
    decision = approval.decision
    by = approval.decided_by or "signoff"
    doing = DOING[approval.call.kind]
    if approval.status == "responded":
        return shape.said(approval.call, getattr(decision, "content", ""))
    if approval.status == "rejected":
        reason = getattr(decision, "reason", None) or "no reason given"
        text = f"The user {by} rejected this {doing}: {reason}. Do not retry it."
        return shape.refused(text, "rejected")
    if approval.status == "expired":
        return shape.refused(
            f"Nobody approved this {doing} in time; it expired and did not run.", "expired"
        )
    return shape.refused(f"This {doing} was {approval.status} and did not run.", "rejected")


def clean(result: Any) -> dict[str, Any]:
    """A server's result without its `_meta`: of the result, of its blocks and contents, and of
    what they embed (a resource, an annotation). A tool's structured content is its own data:
    as it is."""
    wire = _wire(result)
    structured = wire.pop("structuredContent", None)
    cleaned: dict[str, Any] = _without_meta(wire)
    if structured is not None:
        cleaned["structuredContent"] = structured
    return cleaned


def not_offered(what: str, name: str) -> types.ErrorData:
    return types.ErrorData(code=INVALID_PARAMS, message=f"Unknown {what}: {name}")


def _without_meta(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_meta(v) for k, v in value.items() if k != "_meta"}
    if isinstance(value, list):
        return [_without_meta(v) for v in value]
    return value


def _wire(model: Any) -> dict[str, Any]:
    wire: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return wire


def _text(
    text: str, *, error: bool, structured: dict[str, Any] | None = None
) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=error,
    )
