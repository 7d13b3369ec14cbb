"""The values every layer of signoff passes around.

They are frozen, keyword-only dataclasses: a `ToolCall` proposed by a model, the `Verdict` a
policy gives it, the `Decision` a person takes, and the `Grant` an "approve always" leaves behind.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypeAlias

from signoff.errors import InvalidArgumentsError

__all__ = [
    "Approve",
    "Cancelled",
    "Context",
    "Decision",
    "Edit",
    "Expired",
    "Grant",
    "Reject",
    "Respond",
    "Scope",
    "ScopeKind",
    "ToolCall",
    "Verdict",
    "VerdictKind",
    "canonical_json",
]

VerdictKind: TypeAlias = Literal["allow", "ask", "deny"]
ScopeKind: TypeAlias = Literal["run", "thread", "agent", "global"]


def canonical_json(value: Any) -> bytes:
    """Serialize `value` to one canonical UTF-8 JSON form: sorted keys, no spaces, no NaN.

    Equal values give equal bytes, whatever the order their keys were written in.
    """
    try:
        text = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentsError(f"value is not representable as JSON: {exc}") from exc
    return text.encode()


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """One tool call proposed by a model."""

    id: str
    """The call's id as the model or framework gave it (unique within a model turn)."""
    name: str
    """The tool's name."""
    args: dict[str, Any] = field(default_factory=dict)
    """The arguments. A model can produce anything here; a policy fails closed on non-objects."""
    server: str | None = None
    """The MCP server that provides the tool, when it comes from one."""
    agent: str | None = None
    """The path of the agent that made the call, like ``coordinator/researcher``."""

    @property
    def digest(self) -> str:
        """sha256 of the canonical JSON of ``[name, args, server]``: what an approval binds to."""
        return hashlib.sha256(canonical_json([self.name, self.args, self.server])).hexdigest()


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """What the policy says about one call."""

    kind: VerdictKind
    """``allow`` runs the call, ``ask`` holds it for a person, ``deny`` blocks it."""
    rule: str | None
    """The id of the rule that decided, or None when the policy's default did."""
    reason: str
    """Why, in words a person can read in an inbox or an audit log."""
    timeout: float | None = None
    """Seconds a held call waits before it expires; None waits for ever."""
    approvers: tuple[str, ...] = ()
    """Roles allowed to decide a held call; empty means anyone who may decide."""
    forbid_self_approval: bool = False
    """When true, the principal that started the run may not decide its calls."""


@dataclass(frozen=True, kw_only=True)
class Scope:
    """How far an "approve always" reaches."""

    kind: ScopeKind
    """``run``, ``thread``, ``agent`` (the calling agent's path) or ``global``."""
    with_args: bool = False
    """Narrow the grant to calls with exactly the approved arguments."""


@dataclass(frozen=True, kw_only=True)
class Approve:
    """Run the call as proposed, once, or always within a scope."""

    kind: Literal["approve"] = field(default="approve", init=False)
    always: Scope | None = None
    """When set, later identical calls within the scope run without asking (never past a deny)."""


@dataclass(frozen=True, kw_only=True)
class Edit:
    """Run the call with these arguments instead."""

    kind: Literal["edit"] = field(default="edit", init=False)
    args: dict[str, Any]
    """The replacement arguments, validated against the tool's schema and re-checked by policy."""


@dataclass(frozen=True, kw_only=True)
class Respond:
    """Do not run the call; give the agent this text as its result."""

    kind: Literal["respond"] = field(default="respond", init=False)
    content: str
    """The tool result the model will see."""


@dataclass(frozen=True, kw_only=True)
class Reject:
    """Do not run the call; tell the agent why and not to retry."""

    kind: Literal["reject"] = field(default="reject", init=False)
    reason: str = ""
    """Shown to the model in the rejection result and kept in the audit log."""


@dataclass(frozen=True, kw_only=True)
class Expired:
    """The approval's timeout passed before anyone decided; the call never runs."""

    kind: Literal["expired"] = field(default="expired", init=False)


@dataclass(frozen=True, kw_only=True)
class Cancelled:
    """The run was cancelled while the call waited; the call never runs."""

    kind: Literal["cancelled"] = field(default="cancelled", init=False)
    reason: str = ""


Decision: TypeAlias = Approve | Edit | Respond | Reject | Expired | Cancelled


@dataclass(frozen=True, kw_only=True)
class Context:
    """Where a call is evaluated: its run and thread, and the grants that may let it through."""

    run_id: str | None = None
    thread_id: str | None = None
    grants: tuple[Grant, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Grant:
    """A standing approval left by ``Approve(always=Scope(...))``. Never overrides a deny."""

    id: str
    tool: str
    """The exact tool name the grant covers."""
    server: str | None = None
    """The MCP server of the tool, when it came from one."""
    scope: ScopeKind
    subject: str | None = None
    """What the scope is bound to: the run id, the thread id or the agent path; None if global."""
    args_digest: str | None = None
    """When set, only a call with this digest is covered (``Scope.with_args``)."""
    created_by: str
    created_at: datetime

    def covers(self, call: ToolCall, context: Context) -> bool:
        """Whether this grant lets `call` through without asking, in `context`."""
        if call.name != self.tool or call.server != self.server:
            return False
        if self.args_digest is not None and self.args_digest != call.digest:
            return False
        match self.scope:
            case "global":
                return True
            case "agent":
                return call.agent == self.subject
            case "thread":
                return context.thread_id is not None and context.thread_id == self.subject
            case "run":
                return context.run_id is not None and context.run_id == self.subject
