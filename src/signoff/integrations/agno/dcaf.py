"""DCAF's wire format for an Agno agent behind signoff: a client's request (its messages, the last
of which may carry decisions: ``data.tool_calls[{id, execute, rejection_reason}]``) and the
answer (``AgentResponse``: ``has_pending_approvals``, ``is_complete``,
``pending_requirements[{requirement_id, tool_name, tool_args}]``), where signoff adds each held
call's ``approval_id`` and ``version``."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from agno.run.agent import RunOutput
from agno.run.base import RunStatus
from agno.run.requirement import RunRequirement
from pydantic import BaseModel, ConfigDict, Field

from signoff.types import Approval, Approve, Decision, Reject

__all__ = ["DcafRequest", "dcaf_answer"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", str_max_length=65_536)


class DcafToolCall(_Strict):
    id: str = Field(max_length=256)
    execute: bool = False
    rejection_reason: str | None = Field(default=None, max_length=4_096)
    version: int | None = Field(default=None, ge=1, strict=True)
    """signoff's: the version of the call the decision was made on (as the answer listed it)."""

    def decision(self) -> Decision | None:
        """``execute: true`` approves; ``false`` with a reason rejects; else none."""
        if self.execute:
            return Approve()
        if self.rejection_reason:
            return Reject(reason=self.rejection_reason)
        return None


class DcafData(_Strict):
    tool_calls: list[DcafToolCall] = Field(default_factory=list, max_length=256)


class DcafMessage(_Strict):
    role: str = Field(default="user", max_length=32)
    content: str = ""
    data: DcafData | None = None


class DcafRequest(_Strict):
    """A DCAF client's request: its messages, the last of which may carry decisions."""

    messages: list[DcafMessage] = Field(min_length=1, max_length=1_024)

    def decisions(self) -> dict[str, Decision]:
        """The decisions of the newest message that carries any, by requirement id."""
        return {call.id: decision for call, decision in self._decided()}

    def versions(self) -> dict[str, int]:
        """The version each of those decisions was made on, where it names one, by requirement
        id."""
        return {call.id: call.version for call, _ in self._decided() if call.version is not None}

    def _decided(self) -> list[tuple[DcafToolCall, Decision]]:
        for message in reversed(self.messages):
            calls = message.data.tool_calls if message.data is not None else []
            found = [(call, decision) for call in calls
                     if (decision := call.decision()) is not None]  # fmt: skip
            if found:
                return found
        return []


def dcaf_answer(
    out: RunOutput,
    conversation_id: str,
    *,
    waiting: Collection[str] | None = None,
    approvals: Mapping[str, Approval] | None = None,
) -> dict[str, Any]:
    """A run as DCAF's ``AgentResponse``: its text, the calls that wait (``data.tool_calls``
    with ``execute: false``, and ``pending_requirements``; those of the requirement ids
    `waiting`, or every one that asks for a confirmation), whether any waits, whether it is
    complete. A call held under one of `approvals` (by requirement id) is listed as it stands
    there — its arguments as edited, if they were — with the approval's id and version: what
    a decision on it sends back."""
    asked = [
        r
        for r in out.active_requirements
        if r.needs_confirmation
        and r.tool_execution is not None
        and (waiting is None or r.id in waiting)
    ]
    pending = [_pending(r, (approvals or {}).get(r.id)) for r in asked]
    has_pending = out.is_paused
    return {
        "conversation_id": conversation_id,
        "text": out.content if isinstance(out.content, str) else None,
        "data": {
            "tool_calls": [
                {
                    "id": p["requirement_id"],
                    "name": p["tool_name"],
                    "input": p["tool_args"],
                    "execute": False,
                    **{k: p[k] for k in ("approval_id", "version") if k in p},
                }
                for p in pending
            ]
        },
        "has_pending_approvals": has_pending,
        "is_complete": out.status == RunStatus.completed and not has_pending,
        "pending_requirements": pending,
    }


def _pending(requirement: RunRequirement, approval: Approval | None) -> dict[str, Any]:
    """One waiting call as DCAF lists it (as signoff holds it, where it does)."""
    execution = requirement.tool_execution
    assert execution is not None  # a confirmation is about a tool call
    listed: dict[str, Any] = {
        "requirement_id": requirement.id,
        "tool_name": execution.tool_name,
        "tool_args": execution.tool_args or {},
    }
    if approval is not None:
        listed.update(tool_args=approval.call.args, approval_id=approval.id,
                      version=approval.version)  # fmt: skip
    return listed
