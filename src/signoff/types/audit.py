"""One entry of the hash-chained audit log, as it is read back."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = ["AuditEntry"]


@dataclass(frozen=True, kw_only=True)
class AuditEntry:
    """One line of the hash-chained audit log, as stored. A row that cannot be shown as signoff
    wrote it (tampered with, or damaged) comes back with `problem` saying why."""

    seq: int
    at: datetime | None
    """When; None when the stored time is not one (see `problem`)."""
    actor: str
    action: str
    """``verdict``, ``decision``, ``grant``, ``grant_use`` (a call a grant let through),
    ``revoke``, ``expire``, ``policy``, ..."""
    subject: str
    """What the entry is about: an approval id, a grant id, a policy version."""
    data: dict[str, Any]
    """The entry's details; empty when the stored data cannot be shown (see `problem`)."""
    prev_hash: str
    hash: str
    problem: str | None = None
    """Why the stored row cannot be shown as written, in words ("its data is not JSON"), or
    None. Whether the log was tampered with is for ``Store.verify_audit`` to say."""
