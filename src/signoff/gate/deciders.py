"""Who may decide a held call, how many people must approve it, and what a decision makes of it.

A rule's `approvers` name the roles that may decide its calls; its `escalate` steps widen them
as time passes without a decision; `forbid_self_approval` keeps the requester out. A rule's
`quorum` asks for several distinct people — never the requester — among them one of each role
it lists: each approval is a `Vote`, and the call is approved by the vote that completes it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from signoff.errors import ConflictError, ForbiddenError, InvalidDecisionError
from signoff.gate.versions import arg_changes, changed
from signoff.names import ROLE_PREFIX, name_key, name_refusal, same_person
from signoff.types import (
    AUTOMATIC,
    DECIDED_STATUS,
    Answer,
    Approval,
    Approve,
    Decision,
    Edit,
    Escalation,
    Quorum,
    Reject,
    Respond,
    Vote,
    canonical_json,
    decision_to_dict,
)

__all__ = [
    "MAX_NOTE",
    "Needed",
    "already_decided",
    "applied",
    "approval_of",
    "approvers_at",
    "assignee",
    "check_approval_decider",
    "check_decider",
    "check_person",
    "counts",
    "decision_kind",
    "escalations_due",
    "needed",
    "note_text",
    "stricter",
    "vote",
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


def check_person(actor: object) -> None:
    """`InvalidDecisionError` unless `actor` can name a person who decides — a name that could
    pass for another's (`signoff.names.name_refusal`) is refused however it came (a framework's
    payload, a command's option) — and `ForbiddenError` for signoff's own: nobody decides as
    signoff."""
    problem = name_refusal(actor) if isinstance(actor, str) else "a decider is named by text"
    if problem is not None:
        raise InvalidDecisionError(f"the decider's name is refused: {problem}")
    assert isinstance(actor, str)  # name_refusal took it
    if same_person(actor, AUTOMATIC):
        raise ForbiddenError(
            f"{actor!r} is the name signoff decides by itself (on timeout, by policy); no one "
            "decides as it"
        )


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
    if forbid_self_approval and same_person(actor, requested_by):
        spelt = "" if actor == requested_by else f" (as {requested_by!r})"
        raise ForbiddenError(
            f"{actor!r} started this run{spelt} and rule {rule!r} forbids self-approval; "
            "ask someone else"
        )


def check_approval_decider(
    approval: Approval, *, actor: str, roles: frozenset[str], now: datetime
) -> None:
    """`ForbiddenError` unless `actor` with `roles` may decide `approval` at `now`: its rule's
    approvers as escalation has widened them, and self-approval where the rule forbids it. A
    rule that needs several people never counts its requester among them."""
    if approval.quorum is not None and same_person(actor, approval.requested_by):
        raise ForbiddenError(
            f"{actor!r} asked for this call, and rule {approval.rule!r} needs "
            f"{approval.quorum.count} people other than the one who asked"
        )
    check_decider(
        approval.rule,
        approvers_at(approval, now),
        approval.forbid_self_approval or approval.quorum is not None,
        approval.requested_by,
        actor=actor,
        roles=roles,
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
    one role), and the people still needed — at least one per such role. Names that are one
    person's (`same_person`) are that person's one vote."""
    voters = list({name_key(v.by): v for v in votes}.values())
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


def applied(approval: Approval, decision: Decision, *, actor: str, at: datetime) -> Approval:
    """`approval` decided: `decision` taken by `actor` at `at` (an edit replaces the call's
    arguments, keeping those requested)."""
    call, requested = approval.call, approval.requested_args
    if isinstance(decision, Edit):
        call, requested = replace(call, args=decision.args), call.args
    return replace(
        approval,
        call=call,
        requested_args=requested,
        status=DECIDED_STATUS[decision.kind],
        decision=decision,
        decided_by=actor,
        decided_at=at,
        version=approval.version + 1,
    )


MAX_NOTE = 2000
"""The longest note that goes with an assignment, in characters."""
_MAX_ASSIGNEE = 200


def assignee(to: object) -> str:
    """A principal's name, or ``role:NAME``: printable, and not too long; a name that could
    pass for another's is refused (`name_refusal`), as at sign-in."""
    if not isinstance(to, str) or not to.strip() or to != to.strip():
        raise InvalidDecisionError("assign to a principal's name or role:NAME")
    problem = None if to.startswith(ROLE_PREFIX) else name_refusal(to)
    if problem is not None:
        raise InvalidDecisionError(f"assign to a principal's name or role:NAME: {problem}")
    if len(to) > _MAX_ASSIGNEE or not to.isprintable() or to == ROLE_PREFIX:
        raise InvalidDecisionError(
            f"assign to a principal's name or role:NAME of at most {_MAX_ASSIGNEE} printable "
            "characters"
        )
    return to


def note_text(note: object) -> str:
    """The note that goes with an assignment: text, not too long."""
    if not isinstance(note, str) or len(note) > MAX_NOTE:
        raise InvalidDecisionError(f"a note is text of at most {MAX_NOTE} characters")
    return note


def stricter(edited: Quorum | None, asked: Quorum | None) -> bool:
    """Whether an edited call's rule needs people the approval it replaces does not ask for."""
    if edited is None:
        return False
    if asked is None:
        return True
    return edited.count > asked.count or bool(Counter(edited.roles) - Counter(asked.roles))


def approval_of(approval: Approval) -> Approve | Edit:
    """The decision that approves `approval`'s call as it stands: an edit when its arguments
    were edited (every resumer runs an edited call's arguments, an approved one's as asked)."""
    if approval.requested_args is None:
        return Approve()
    return Edit(args=approval.call.args)


def vote(
    approval: Approval, decision: Approve | Edit, *, actor: str, roles: frozenset[str], at: datetime
) -> Approval:
    """`approval` with `actor`'s approval counted: approved by the vote that completes its
    quorum, else still pending with one more vote. An edit starts the count again on the
    edited call, with its editor's vote. The same person approving again changes nothing."""
    assert approval.quorum is not None  # only a call that needs several people is voted on
    mine = Vote(by=actor, roles=tuple(sorted(roles)), at=at)
    call, requested, votes = approval.call, approval.requested_args, approval.votes
    # An edit that changes nothing is an approval.
    if isinstance(decision, Edit) and decision.args != call.args:
        call, requested = replace(call, args=decision.args), approval.requested_call.args
        votes = (mine,) if counts(approval.quorum, (), mine) else ()
    elif any(same_person(v.by, actor) for v in votes):
        return approval
    elif not counts(approval.quorum, votes, mine):
        raise ForbiddenError(
            f"{actor!r} cannot approve this: it still needs "
            f"{needed(approval.quorum, votes)}, and {actor!r} has none of those roles"
        )
    else:
        votes = (*votes, mine)
    voted = replace(approval, call=call, requested_args=requested, votes=votes)
    if call is approval.call:
        voted = changed(voted, "vote", by=actor, at=at, base=approval)
    else:
        edits = arg_changes(approval.call.args, call.args)
        voted = changed(voted, "edit", by=actor, at=at, args=edits, base=approval)
    if needed(approval.quorum, votes).people:
        return voted
    final = approval_of(voted)
    return replace(
        voted, status=DECIDED_STATUS[final.kind], decision=final, decided_by=actor, decided_at=at
    )


def already_decided(approval: Approval, decision: Decision, *, actor: str) -> Approval:
    """`approval`, decided already, when `decision` is the one it was decided with (a retry;
    for an answer, by the one who answered: the same answer from another person is theirs, not
    taken); else `ConflictError`."""
    stored = approval.decision
    retried = not isinstance(decision, Answer) or approval.decided_by == actor
    if stored is not None and _same(stored, decision) and retried:
        return approval
    raise ConflictError(
        f"approval {approval.id!r} is already {approval.status} by {approval.decided_by!r}; "
        f"a different decision ({decision.kind}) cannot replace it"
    )


def _same(a: Decision, b: Decision) -> bool:
    """Equal as JSON: ``true`` is not ``1``, though Python says so."""
    return canonical_json(decision_to_dict(a)) == canonical_json(decision_to_dict(b))


def decision_kind(decision: object) -> Decision:
    """A person's decision: approve, edit, respond, reject or answer (a question) — expiry and
    cancelling are not theirs to take."""
    if not isinstance(decision, Approve | Edit | Respond | Reject | Answer):
        raise InvalidDecisionError(
            f"a decision is Approve, Edit, Respond, Reject or Answer, not {decision!r}"
        )
    scope = decision.always if isinstance(decision, Approve) else None
    if scope is not None and scope.kind not in ("run", "thread", "agent", "global"):
        raise InvalidDecisionError(
            f"unknown scope {scope.kind!r}; use run, thread, agent or global"
        )
    if isinstance(decision, Respond) and not decision.content.strip():
        raise InvalidDecisionError("a response needs text: it becomes the tool's result")
    return decision
