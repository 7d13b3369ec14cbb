"""What a policy says about one call: allow, ask or deny, and how an asked call is decided
(by how many people, escalated to whom, and what happens when nobody decides in time)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = ["Escalation", "OnTimeout", "Quorum", "Verdict", "VerdictKind"]

VerdictKind: TypeAlias = Literal["allow", "ask", "deny"]


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
    destructive: bool = False
    """When true, the rule marks the call as one that cannot be undone: a person confirms
    before approving it."""
    idempotent: bool = False
    """When true, the rule marks the call as read-only or idempotent: run again, not shown to
    a person, when a crash may have cut it short, and claimed without waiting for the disk."""
    rule_digest: str | None = None
    """A hash of what the deciding rule (or default) says, wherever it stands: a grant left
    under an asked call binds to it, so an edited or replaced rule never inherits the grant."""
    quorum: Quorum | None = None
    """How many people must approve a held call, when more than one."""
    escalate: tuple[Escalation, ...] = ()
    """Who else may decide a held call, and is told, as time passes without a decision."""
    on_timeout: OnTimeout | None = None
    """The decision signoff takes itself when nobody decides within `timeout`; None lets the
    call expire."""


@dataclass(frozen=True, kw_only=True)
class Quorum:
    """A held call runs only once `count` distinct people have approved it, none of them its
    requester, and among them one person with each of `roles` (a role listed twice needs two)."""

    count: int
    roles: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Escalation:
    """`after` seconds from the request with no decision, people with the roles `to` may
    decide the call too, and are told."""

    after: float
    to: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class OnTimeout:
    """What signoff decides itself when nobody decides in time: approve the call, or reject it
    with `reason` (what the model is told)."""

    decide: Literal["approve", "reject"]
    reason: str | None = None
    despite_approvers: bool = False
    """Approve even though the rule names who may decide (approvers, more than one person, or
    no self-approval): said explicitly, or the policy refuses the rule."""
