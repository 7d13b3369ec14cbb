"""Who may decide a held call, and how many people must approve it.

A rule's `approvers` name the roles that may decide its calls; its `escalate` steps widen them
as time passes without a decision; `forbid_self_approval` keeps the requester out. A rule's
`quorum` asks for several distinct people — never the requester — among them one of each role
it lists: each approval is a `Vote`, and the call is approved by the vote that completes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from signoff.errors import ForbiddenError
from signoff.types import Approval, Escalation, Quorum, Vote

__all__ = [
    "Needed",
    "approvers_at",
    "check_decider",
    "counts",
    "escalations_due",
    "needed",
]


def approvers_at(approval: Approval, now: datetime) -> tuple[str, ...]:
    """The roles that may decide `approval` at `now`: its rule's approvers and those of each
    escalation step whose time has come. Empty when anyone who may decide may (escalation then
    only tells more people)."""
    if not approval.approvers:
        return ()
    widened = [r for step in _reached(approval.escalate, approval, now) for r in step.to]
    return tuple(dict.fromkeys((*approval.approvers, *widened)))


def escalations_due(approval: Approval, now: datetime) -> int:
    """How many of `approval`'s escalation steps have come by `now` (announced or not)."""
    return len(_reached(approval.escalate, approval, now))


def _reached(steps: Sequence[Escalation], approval: Approval, now: datetime) -> list[Escalation]:
    waited = (now - approval.requested_at).total_seconds()
    return [step for step in steps if step.after <= waited]


def check_decider(
    rule: str | None,
    approvers: tuple[str, ...],
    forbid_self_approval: bool,
    requested_by: str | None,
    *,
    actor: str,
    roles: frozenset[str],
) -> None:
    """`ForbiddenError` unless `actor` with `roles` may decide a call asked by `requested_by`
    under a rule with these `approvers` (as they stand now) and self-approval setting."""
    if approvers and not roles.intersection(approvers):
        raise ForbiddenError(
            f"{actor!r} may not decide this: rule {rule!r} needs one of the roles "
            f"{list(approvers)!r}"
        )
    if forbid_self_approval and actor == requested_by:
        raise ForbiddenError(
            f"{actor!r} started this run and rule {rule!r} forbids self-approval; ask someone else"
        )


@dataclass(frozen=True)
class Needed:
    """What a call that needs several approvals still lacks: `people` more approvals, among
    whom one with each of `roles`."""

    people: int
    roles: tuple[str, ...]

    def __str__(self) -> str:
        if not self.people:
            return "nobody more"
        more = f"{self.people} more {'approval' if self.people == 1 else 'approvals'}"
        if not self.roles:
            return more
        return f"{more}, among them one each with the roles {', '.join(self.roles)}"


def needed(quorum: Quorum, votes: Iterable[Vote]) -> Needed:
    """What `votes` leave to approve: the roles no voter can stand for (each voter stands for
    one role), and the people still needed — at least one per such role."""
    voters = list({v.by: v for v in votes}.values())
    matched = _matched_roles(quorum.roles, [frozenset(v.roles) for v in voters])
    missing = list(quorum.roles)
    for role in matched:
        missing.remove(role)
    return Needed(people=max(quorum.count - len(voters), len(missing), 0), roles=tuple(missing))


def counts(quorum: Quorum, votes: Sequence[Vote], vote: Vote) -> bool:
    """Whether `vote` brings the approval nearer: someone who cannot stand for a role still
    needed does not, once only such roles are left."""
    return needed(quorum, (*votes, vote)).people < needed(quorum, votes).people


def _matched_roles(roles: Sequence[str], voters: Sequence[frozenset[str]]) -> list[str]:
    """The roles of `roles` (a role twice is two places) that distinct voters fill at most:
    a maximum matching of places to voters, by augmenting paths (a handful of each)."""
    holder: dict[int, int] = {}  # voter -> the place they fill

    def place(slot: int, seen: set[int]) -> bool:
        for voter, has in enumerate(voters):
            if roles[slot] in has and voter not in seen:
                seen.add(voter)
                if voter not in holder or place(holder[voter], seen):
                    holder[voter] = slot
                    return True
        return False

    for slot in range(len(roles)):
        place(slot, set())
    return [roles[slot] for slot in holder.values()]
