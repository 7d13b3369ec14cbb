"""What callers hand the store to write, and what its writes read: the audit entries and notes
to append, the moment a decision is judged at, and the plans that deciding and holding write.
Every concern of the store speaks these; the `Store` protocol (`signoff.store.base`) names them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from signoff.types import Approval, Grant

if TYPE_CHECKING:
    from signoff.store.external import ExternalRecord
    from signoff.store.runs import RunWrite

__all__ = ["AuditRecord", "DecisionPlan", "HoldPlan", "Moment", "NoteRecord"]


@dataclass(frozen=True, kw_only=True)
class AuditRecord:
    """An audit entry to append: the store chains it and gives it its number."""

    actor: str
    action: str
    subject: str
    data: dict[str, Any] = field(default_factory=dict)
    at: datetime


@dataclass(frozen=True, kw_only=True)
class Moment:
    """What a decision's transaction reads beside its approvals: the time by the database's
    clock — one for every replica, whatever each one's own says — and the policy saved last —
    what every replica follows, whether or not it has read it yet."""

    at: datetime
    policy: str | None = None
    """The latest saved policy's version; None when none was ever saved."""
    saved: frozenset[str] = frozenset()
    """The approvals (of those read) that a saved version of the policy judged."""


@dataclass(frozen=True, kw_only=True)
class DecisionPlan:
    """What deciding writes: each changed approval with the version it must still have, the
    grants it leaves, and the audit entries that record it."""

    changes: Sequence[tuple[Approval, int]]
    grants: Sequence[Grant] = ()
    audit: Sequence[AuditRecord] = ()


@dataclass(frozen=True, kw_only=True)
class NoteRecord:
    """A channel's note to keep with a write (see `NoteStore.add_note`)."""

    channel: str
    subject: str
    key: str
    data: dict[str, Any]
    at: datetime


@dataclass(frozen=True, kw_only=True)
class HoldPlan:
    """What judging a batch of calls writes: the approvals of the held ones, the audit entries
    of every verdict, the records of other frameworks' calls, and (for the runtime) the run's
    step that goes with them."""

    approvals: Sequence[Approval] = ()
    audit: Sequence[AuditRecord] = ()
    write: RunWrite | None = None
    outcomes: Sequence[Any] = ()
    """What the judge made of each call, for its caller."""
    grants_used: Sequence[str] = ()
    """The grants that let calls through, each counted once per call. One revoked meanwhile
    makes the store judge the calls again, without it."""
    at: datetime | None = None
    """When the calls were judged: the grants' last use."""
    external: Sequence[ExternalRecord] = ()
    """Calls of another framework's run judged now, kept by key: one judged meanwhile by
    another transaction makes the store judge the calls again, with its record."""
    lossy: bool = False
    """Whether what it writes may be lost with the machine, its commit not waiting for the
    disk: asked for, and nothing in it that must be kept (`Gate.hold`'s ``durable``)."""
