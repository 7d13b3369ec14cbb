"""A held call as an A2A task shows it: what the task's request parts (`hitl`) and its question
parts (`questions`) are drawn from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from signoff.types import CallKind

__all__ = ["Pending"]


@dataclass(frozen=True, kw_only=True)
class Pending:
    """A held call as the task shows it (arguments already masked where redacted)."""

    approval_id: str
    call_id: str
    tool: str
    args: Any
    agent: str | None
    rule: str | None
    reason: str
    expires_at: str | None
    version: int | None = None
    """The approval's version this request shows: a decision names it. None where it is not
    known (a request as the task's history kept it)."""
    requested_args: Any = None
    """The arguments the call was asked with, when an edit changed them (masked alike)."""
    changes: tuple[dict[str, Any], ...] = ()
    """What changed while it waited, oldest first, as the API shows changes (masked)."""
    changed: str = ""
    """The same in words."""
    kind: CallKind = "tool"
    """A ``question`` is answered, not approved (`signoff.protocols.a2a.questions`)."""
