"""What changed a pending approval while it waited: each change is one version, so a decision
sent on an older version can be told what it did not see."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal, TypeAlias

__all__ = ["KEPT_CHANGES", "ArgChange", "Change", "ChangeKind", "change_to_dict"]

ChangeKind: TypeAlias = Literal["edit", "vote", "assign", "escalate", "policy"]
"""What changed a pending approval: an edit of its call, one person's approval of several
needed, its assignment, an escalation step reached, or a new policy's rule for it."""
KEPT_CHANGES: Final = 50
"""The most changes an approval keeps (`Approval.changes`): the oldest go first."""


@dataclass(frozen=True, kw_only=True)
class ArgChange:
    """One argument an edit changed: where, and its value before and after (long values cut;
    absent when the edit added or removed it)."""

    path: tuple[str, ...]
    """The keys (and list indices) down to the value."""
    before: Any = None
    after: Any = None
    added: bool = False
    """It was not there before the edit."""
    removed: bool = False
    """The edit took it away."""


@dataclass(frozen=True, kw_only=True)
class Change:
    """What made a pending approval's `version` what it is: each change while it waits is one
    version, so a decision sent on an older version can be told what it did not see."""

    version: int
    """The version this change made."""
    kind: ChangeKind
    by: str
    """Who made it: a person, or ``signoff`` (an escalation, a new policy)."""
    at: datetime
    args: tuple[ArgChange, ...] = ()
    """For an edit: the arguments it changed (the first of them, when it changed many)."""
    more: int = 0
    """For an edit: how many more arguments it changed than `args` keeps."""
    note: str = ""
    """For an assignment, to whom; for an escalation, who may decide now; for a new policy,
    what its rule says now."""


def change_to_dict(change: Change) -> dict[str, Any]:
    """A change as JSON-ready data, as it is stored and as the API shows it (the API masks
    the redacted arguments' values)."""
    data: dict[str, Any] = {
        "version": change.version,
        "kind": change.kind,
        "by": change.by,
        "at": change.at.isoformat(),
    }
    if change.args:
        data["edits"] = [
            {"path": list(a.path), "before": a.before, "after": a.after}
            | ({"added": True} if a.added else {})
            | ({"removed": True} if a.removed else {})
            for a in change.args
        ]
    if change.more:
        data["more_edits"] = change.more
    if change.note:
        data["note"] = change.note
    return data
