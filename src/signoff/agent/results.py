"""What the model and the run's log are told of each call: its result as a tool message, the
words for a rejection, an expiry or a block (ARCHITECTURE §3), for a tool the agent does not have
and for a sub-agent's run, and the data of its events."""

from __future__ import annotations

import json
from collections.abc import Sequence

from signoff.agent.agent import Agent
from signoff.agent.model import Message, message_to_dict
from signoff.agent.state import RunScope
from signoff.agent.tools import ToolResult
from signoff.gate.answers import rejected_text
from signoff.gate.questions import question_result
from signoff.types import Approval, Respond, ToolCall, Verdict
from signoff.types.fields import same_named

__all__ = [
    "answer",
    "approval_data",
    "blocked_result",
    "call_data",
    "status_result",
    "subagent_result",
    "tool_message",
    "unknown_tools",
]


def answer(approval: Approval) -> dict[str, object]:
    """The tool result for a call decided not to run: what the decision says (of a question:
    its outcome, `question_result`)."""
    decision = approval.decision
    if approval.call.kind == "question":
        return tool_message(
            approval.call, ToolResult(content=json.dumps(question_result(approval)))
        )
    match approval.status:
        case "responded":
            assert isinstance(decision, Respond)  # a responded approval carries its text
            return tool_message(approval.call, ToolResult(content=decision.content))
        case "rejected":
            return tool_message(approval.call, status_result("rejected", rejected_text(approval)))
        case "expired":
            text = "Nobody decided on this call in time; it did not run."
            return tool_message(approval.call, status_result("expired", text))
        case _:
            text = "This call was cancelled; it did not run."
            return tool_message(approval.call, status_result(approval.status, text))


def tool_message(call: ToolCall, result: ToolResult) -> dict[str, object]:
    message = Message(role="tool", content=result.content, tool_call_id=call.id, name=call.name)
    data = message_to_dict(message)
    if result.is_error:
        data["is_error"] = True
    return data


def status_result(status: str, message: str) -> ToolResult:
    return ToolResult(content=json.dumps({"status": status, "message": message}))


def blocked_result(verdict: Verdict) -> ToolResult:
    return status_result(
        "blocked", f"The policy blocked this call: {verdict.reason}. Do not retry it."
    )


def call_data(call: ToolCall) -> dict[str, object]:
    return same_named(call, ("id", "name", "args", "server", "agent"))


def approval_data(approval: Approval) -> dict[str, object]:
    return {
        "approval_id": approval.id,
        "call_id": approval.call.id,
        "tool": approval.call.name,
        "kind": approval.call.kind,
        "args": approval.call.args,
        "agent": approval.call.agent,
        "rule": approval.rule,
        "reason": approval.reason,
        "expires_at": None if approval.expires_at is None else approval.expires_at.isoformat(),
    }


def unknown_tools(agent: Agent, calls: Sequence[ToolCall]) -> dict[str, dict[str, object]]:
    """The results of the calls of tools the agent does not have: nothing to approve, they
    could never run."""
    results: dict[str, dict[str, object]] = {}
    for call in calls:
        if agent.tool(call.name) is None and agent.subagent(call.name) is None:
            names = sorted(s.name for s in agent.specs)
            text = f"unknown tool {call.name!r}; the tools are {names}"
            results[call.id] = tool_message(call, ToolResult(content=text, is_error=True))
    return results


def subagent_result(scope: RunScope) -> ToolResult:
    """What a sub-agent's finished run gives its parent: its last words, or why it failed."""
    if scope.failure is not None:
        return ToolResult(content=f"the agent {scope.path} failed: {scope.failure}", is_error=True)
    return ToolResult(content=scope.final)
