"""Deciding in the Gate: a person's decisions taken all-or-nothing, each a compare-and-set on its
approval in one transaction — judged by the database's clock and the policy in force, held to
who may decide, to the version its sender saw and to what the policy allows now; an edit
re-validated against the tool's schema and re-checked by the policy; a vote where a rule needs
several people; a grant where a person approves always. An approval whose time ran out, or that
the policy in force changed, is written as such instead, and the decision refused."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from signoff import telemetry
from signoff.errors import (
    ConflictError,
    ForbiddenError,
    InvalidArgumentsError,
    InvalidDecisionError,
    StaleDecisionError,
)
from signoff.gate.base import ADOPTIONS
from signoff.gate.deciders import (
    already_decided,
    applied,
    check_approval_decider,
    check_decider,
    check_person,
    decision_kind,
    stricter,
    vote,
)
from signoff.gate.edits import check_edit
from signoff.gate.questions import check_answering
from signoff.gate.records import (
    decision_record,
    grant_for,
    grant_record,
    lapse_record,
    vote_record,
)
from signoff.gate.rejudge import rejudged
from signoff.gate.timing import Timing
from signoff.gate.versions import check_seen, describe
from signoff.store import AuditRecord, DecisionPlan
from signoff.store.base import Moment
from signoff.types import Answer, Approval, Approve, Decision, Edit, Grant

__all__ = ["Deciding"]

Ruled = dict[str, tuple[Approval, AuditRecord]]
"""Approvals the policy in force changed, by id, with the audit entry of each change."""


class _PolicyBehind(Exception):
    """The store has saved a newer policy than the gate judges by."""

    def __init__(self, version: str) -> None:
        super().__init__(version)
        self.version = version


@dataclass(kw_only=True)
class _Taking:
    """One try at a batch of decisions: the decisions as sent, and what its plan found as it
    last ran (the store may run it again: each run starts over)."""

    decisions: Mapping[str, Decision]
    actor: str
    roles: frozenset[str]
    versions: Mapping[str, int]
    results: dict[str, Approval] = field(default_factory=dict)
    overdue: list[Approval] = field(default_factory=list)
    """Approvals whose time ran out: they lapsed instead."""
    rejudged: list[Approval] = field(default_factory=list)
    """Approvals the policy in force changed: written so instead."""


class Deciding(Timing):
    """The Gate's deciding (the Gate is one)."""

    async def decide(
        self,
        approval_id: str,
        decision: Decision,
        *,
        actor: str,
        roles: Iterable[str] = (),
        version: int | None = None,
    ) -> Approval:
        """Take `decision` on one approval, as `actor` with `roles`, sent on the approval's
        `version` as its sender saw it (see `signoff.gate.versions`).

        The same decision taken again returns the stored approval; a different one raises
        `ConflictError`, and one sent on a version that changed since `StaleDecisionError`.
        """
        versions = None if version is None else {approval_id: version}
        [approval] = await self.decide_batch(
            {approval_id: decision}, actor=actor, roles=roles, versions=versions
        )
        return approval

    async def decide_batch(
        self,
        decisions: Mapping[str, Decision],
        *,
        actor: str,
        roles: Iterable[str] = (),
        versions: Mapping[str, int] | None = None,
    ) -> list[Approval]:
        """Take several decisions all-or-nothing ("Approve All" is every id with `Approve()`),
        each sent on the version of its approval in `versions` (an id missing there names no
        version). Judged by the database's clock and by the policy saved last: a replica that
        has not read that policy yet reads it (`adopt_policy`) and judges again."""
        roles = frozenset(roles)
        check_person(actor)
        for decision in decisions.values():
            self._check_decision(decision)
        for _ in range(ADOPTIONS):
            taking = _Taking(decisions=decisions, actor=actor, roles=roles,
                             versions=versions or {})  # fmt: skip
            try:
                return await self._decide_batch(taking)
            except _PolicyBehind:
                await self.catch_up()
        raise ConflictError(  # pragma: no cover - the policy changed at every try
            "the policy kept changing while this decision was judged; send it again"
        )

    async def _decide_batch(self, taking: _Taking) -> list[Approval]:
        plan = functools.partial(self._decision_plan, taking)
        with telemetry.span("signoff.decide", current=False) as span:
            written = await self.store.decide(list(taking.decisions), plan)
            telemetry.decided([approval for approval, _ in written.changes], span)
        for approval, _ in written.changes:
            self.notifier.notify(approval.id)
        if taking.overdue:
            names = ", ".join(f"{a.id!r} ({a.status})" for a in taking.overdue)
            raise ConflictError(
                f"approval {names} ran out of time before this decision; it was not taken"
            )
        if taking.rejudged:
            raise _changed_by_policy(taking.rejudged)
        return [taking.results[i] for i in taking.decisions]

    def _decision_plan(
        self, taking: _Taking, current: list[Approval], moment: Moment
    ) -> DecisionPlan:
        """What the decisions write over `current`, the approvals as locked."""
        # Runs inside the store's write transaction, with these approvals locked: what it
        # reads is what it writes over, and raising here writes nothing.
        now = self._at(moment.at)
        if (
            self.adopt_policy is not None
            and moment.policy is not None
            and moment.policy != self.engine.version
        ):
            raise _PolicyBehind(moment.policy)
        ruled = self._ruled(current, moment, now)
        seen = [ruled[a.id][0] if a.id in ruled else a for a in current]
        # Who may decide comes first: a request its sender may not make changes nothing,
        # a lapse that falls due included.
        for approval in seen:
            check_approval_decider(approval, actor=taking.actor, roles=taking.roles, now=now)
        late = {
            a.id: self._lapse(a, now)
            for a in seen
            if a.pending and a.expires_at is not None and a.expires_at <= now
        }
        taking.overdue[:] = list(late.values())
        taking.rejudged[:] = [found[0] for found in ruled.values()]
        if ruled or late:
            # Past its time an approval lapses (expires, or is decided as its rule says),
            # whoever decides first; what the policy says of it is written as it says.
            # Only that is written: this decision was made on something else.
            return _lapsed_or_ruled(current, ruled, late, now)
        return self._taken(taking, current, now)

    def _ruled(self, current: list[Approval], moment: Moment, now: datetime) -> Ruled:
        """The approvals as the policy in force has them, for a gate that follows the store's
        saved policy (a server's) and judges by it now: a change of policy not written to one
        yet (its replica read the policy after, or failed to judge them all) is written now."""
        if self.adopt_policy is None or moment.policy is None:
            return {}
        ruled: Ruled = {}
        for approval in current:
            if not approval.pending:
                continue
            lineage = self.judged_by(approval, saved=approval.id in moment.saved)
            found = rejudged(approval, self.engine, at=now, lineage=lineage)
            if found is not None:
                ruled[approval.id] = found
        return ruled

    def _taken(self, taking: _Taking, current: list[Approval], now: datetime) -> DecisionPlan:
        """Each decision taken on its approval: the changes, grants and audit entries."""
        actor, roles = taking.actor, taking.roles
        changes: list[tuple[Approval, int]] = []
        grants: list[Grant] = []
        audit: list[AuditRecord] = []
        for approval in current:
            decision = taking.decisions[approval.id]
            if not approval.pending:
                taking.results[approval.id] = already_decided(approval, decision, actor=actor)
                continue
            check_seen(approval, taking.versions.get(approval.id), decision, actor=actor,
                       redaction=self.redaction)  # fmt: skip
            self._authorize(approval, decision, actor=actor, roles=roles)
            if approval.quorum is not None and isinstance(decision, Approve | Edit):
                decided = vote(approval, decision, actor=actor, roles=roles, at=now)
                taking.results[approval.id] = decided
                if decided is not approval:  # the same person's same approval: no change
                    self._check_allowed_now(decided)
                    changes.append((decided, approval.version))
                    audit.append(vote_record(approval, decided, actor=actor, at=now))
                continue
            decided = applied(approval, decision, actor=actor, at=now)
            self._check_allowed_now(decided)
            changes.append((decided, approval.version))
            taking.results[approval.id] = decided
            audit.append(decision_record(approval, decided, actor=actor, at=now))
            if isinstance(decision, Approve) and decision.always is not None:
                grant = grant_for(decided, decision, actor=actor, roles=roles, at=now)
                grants.append(grant)
                audit.append(grant_record(grant, approval, actor=actor, at=now))
        return DecisionPlan(changes=changes, grants=grants, audit=audit)

    def _check_allowed_now(self, decided: Approval) -> None:
        """`ForbiddenError` when `decided` would run a call the policy in force denies: a
        person's approval never lets through what the policy now forbids (a new policy also
        rejects it, as it judges the waiting calls again: `rejudge`)."""
        if decided.status not in ("approved", "edited"):
            return
        denied = self.denied_now(decided)
        if denied is not None:
            raise ForbiddenError(f"{denied}: it cannot be approved")

    def _authorize(
        self, approval: Approval, decision: Decision, *, actor: str, roles: frozenset[str]
    ) -> None:
        """What a decision must satisfy beyond who may decide the approval (checked first)."""
        check_answering(approval, decision)
        if isinstance(decision, Approve) and decision.always is not None:
            _check_always(approval, decision)
        if isinstance(decision, Edit):
            self._check_edit(approval, decision, actor=actor, roles=roles)

    def _check_edit(
        self, approval: Approval, edit: Edit, *, actor: str, roles: frozenset[str]
    ) -> None:
        """An edit is checked against its tool's schema and judged by the policy in force: one
        it denies is refused, and one it moves under a stricter rule is `actor`'s to decide only
        if its deciders qualify — and it may not need more people than the call it replaces."""
        edited = replace(approval.call, args=edit.args)
        check_edit(edit.args, self.edit_schema(approval))
        verdict = self.engine.evaluate(edited)
        if verdict.kind == "deny":
            raise ForbiddenError(f"the policy denies the edited call: {verdict.reason}")
        check_decider(verdict.rule, verdict.approvers,
                      verdict.forbid_self_approval or verdict.quorum is not None,
                      approval.requested_by, actor=actor, roles=roles)  # fmt: skip
        if stricter(verdict.quorum, approval.quorum):
            assert verdict.quorum is not None  # only a quorum is stricter than another
            raise ForbiddenError(
                f"the edited call needs {verdict.quorum.count} people to approve (rule "
                f"{verdict.rule!r}), more than this approval asks for: reject it, and let "
                "the agent ask for that call"
            )

    def _check_decision(self, decision: object) -> Decision:
        """A person's decision: approve, edit, respond, reject or answer — expiry and cancelling
        are not theirs to take — and an edit's arguments, or an answer, within the gate's
        limits."""
        checked = decision_kind(decision)
        if isinstance(checked, Edit):
            if not isinstance(checked.args, dict):
                raise InvalidDecisionError("an edit's arguments are a JSON object")
            self._check_limits(checked.args, "the edit", "the edited arguments")
        if isinstance(checked, Answer):
            self._check_limits({"answer": checked.value}, "the answer", "the answer")
        return checked

    def _check_limits(self, value: object, what: str, whose: str) -> None:
        try:
            problem = self.limits.check(value)
        except InvalidArgumentsError as exc:
            problem = f"{whose} is not JSON: {exc}"
        if problem is not None:
            raise InvalidDecisionError(f"{what} is refused: {problem}")


def _check_always(approval: Approval, decision: Approve) -> None:
    """`InvalidDecisionError` unless `approval` can leave the grant "approve always" asks for:
    one person's, for a scope the approval has, bound to the rule that asked."""
    assert decision.always is not None  # only approve-always leaves a grant
    if approval.quorum is not None:
        raise InvalidDecisionError(
            f"approval {approval.id!r} needs {approval.quorum.count} people to approve: "
            "a grant is one person's, so approve it once"
        )
    scope = decision.always.kind
    bound = {"run": approval.run_id, "thread": approval.thread_id,
             "agent": approval.call.agent, "global": ""}  # fmt: skip
    if bound[scope] is None:
        raise InvalidDecisionError(
            f"approval {approval.id!r} belongs to no {scope}; approve always for a scope it has"
        )
    if scope in ("run", "thread") and approval.requested_by is None:
        # Such a grant covers only its requester's calls: with none, it would cover nothing.
        raise InvalidDecisionError(
            f"approval {approval.id!r} names no requester, and a {scope} grant covers "
            "only the calls of the one who requested it; approve always for its agent "
            "or everywhere, or approve it once"
        )
    if approval.rule_digest is None:
        raise InvalidDecisionError(
            f"approval {approval.id!r} was asked before grants were bound to the rule "
            "that asks; approve it once"
        )


def _lapsed_or_ruled(
    current: Sequence[Approval],
    ruled: Ruled,
    late: Mapping[str, Approval],
    now: datetime,
) -> DecisionPlan:
    """What a decision writes instead of itself: each approval as the policy in force rules it,
    then lapsed where its time is up."""
    changes: list[tuple[Approval, int]] = []
    audit: list[AuditRecord] = []
    for approval in current:
        after = approval
        if approval.id in ruled:
            after, record = ruled[approval.id]
            audit.append(record)
        if approval.id in late:
            audit.append(lapse_record(after, late[approval.id], at=now))
            after = late[approval.id]
        if after is not approval:
            changes.append((after, approval.version))
    return DecisionPlan(changes=changes, audit=audit)


def _changed_by_policy(approvals: Sequence[Approval]) -> ConflictError:
    """Why a decision was not taken: the policy in force had changed the approvals it named."""
    [first, *_] = approvals
    if not first.pending:
        assert first.decision is not None  # decided: rejected by the policy
        return ConflictError(
            f"approval {first.id!r} was rejected by signoff before this decision: "
            f"{getattr(first.decision, 'reason', '')}; it was not taken"
        )
    [change] = first.changes[-1:]
    return StaleDecisionError(
        f"approval {first.id!r} changed before this decision: {describe([change])}. It is at "
        f"version {first.version} now: look again",
        approval_id=first.id,
        seen=first.version - 1,
        version=first.version,
        changes=(change,),
    )
