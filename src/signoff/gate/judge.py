"""Judging a batch of calls: each call's digest — or why the gate cannot take its arguments —
then the policy's verdict with the grants in force, the approval a call the policy asks about is
held under, the audit entry of each verdict and, for a call of another framework's run, the
record its verdict is kept under; a call judged before keeps the verdict it had. Nothing here
reads or writes the store: `Gate.hold` writes what is judged, in the transaction that read the
grants."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Final

from signoff.errors import ConflictError, InvalidArgumentsError, InvalidDecisionError
from signoff.gate.ids import new_id
from signoff.gate.outcome import OUTCOME_OF, VERDICT_OF, CheckContext, Outcome, policy_context
from signoff.gate.questions import (
    held_question,
    question_assignment,
    question_verdict,
    unaskable,
)
from signoff.gate.records import assignment_record, verdict_record
from signoff.limits import ArgumentLimits
from signoff.policy import PolicyEngine
from signoff.store import AuditRecord
from signoff.store.external import ExternalRecord
from signoff.types import Approval, Context, Grant, Preview, ToolCall, Verdict, call_json
from signoff.types.fields import same_named

__all__ = ["RULE_SAYS", "Judge", "Judgement", "admit"]

RULE_SAYS: Final = (
    "rule",
    "rule_digest",
    "reason",
    "approvers",
    "forbid_self_approval",
    "destructive",
    "quorum",
    "escalate",
    "on_timeout",
)
"""What an approval takes from the verdict that holds the call: what the asking rule says of
it (a new policy's verdict changes them while it waits: `signoff.gate.rejudge`)."""

Admitted = tuple[str | None, str | None]
"""A call's digest, or why the gate cannot take its arguments."""


def admit(call: ToolCall, limits: ArgumentLimits) -> Admitted:
    """The call's digest, or why the gate cannot take its arguments: not JSON, nested too
    deep, too big."""
    problem = limits.problem(call.args)
    if problem is not None:
        return None, problem
    try:
        data = call_json(call)
    except InvalidArgumentsError as exc:
        return None, f"the arguments are not JSON: {exc}"
    problem = limits.size_problem(len(data))
    if problem is not None:
        return None, problem
    return hashlib.sha256(data).hexdigest(), None


@dataclass(kw_only=True)
class Judgement:
    """What a batch's judging makes, for one transaction to write."""

    outcomes: list[Outcome] = field(default_factory=list)
    held: list[Approval] = field(default_factory=list)
    """The approvals of the calls held now."""
    audit: list[AuditRecord] = field(default_factory=list)
    records: list[ExternalRecord] = field(default_factory=list)
    """The verdicts to keep under the calls' keys."""


@dataclass(frozen=True, kw_only=True)
class Judge:
    """Judges one batch: by `engine` with `grants`, at `now`, its held calls under `batch_id`."""

    engine: PolicyEngine
    context: CheckContext
    grants: tuple[Grant, ...]
    now: datetime
    batch_id: str
    kept_schema: Callable[[ToolCall], dict[str, Any] | None]
    """The schema a held call's approval keeps (`ToolSchemas.kept`)."""
    keys: Mapping[str, str] = field(default_factory=dict)
    """Each call's key, by call id, for a call of another framework's run."""
    previews: Mapping[str, Preview] = field(default_factory=dict)
    check_assignee: Callable[[Approval, str, datetime], None] | None = None
    """`InvalidDecisionError` when who a question is asked of (its ``to``) could not answer
    it, as far as the gate's directory knows (`GateBase._check_assignee`); None: unchecked."""

    @functools.cached_property
    def policy_context(self) -> Context:
        """What the policy is told of where the calls come from."""
        return policy_context(self.context, self.grants)

    def batch(
        self,
        calls: Sequence[ToolCall],
        admitted: Sequence[Admitted],
        found: Mapping[str, tuple[ExternalRecord, Approval | None]],
    ) -> Judgement:
        """Each call's outcome; `found` has the verdicts judged before, by key. What this batch
        judges joins them: a call id twice in one turn is one call."""
        found = dict(found)
        judged = Judgement()
        for call, (digest, problem) in zip(calls, admitted, strict=True):
            key = self.keys.get(call.id)
            if key is not None and key in found:
                before, approval = found[key]
                judged.outcomes.append(replace(recorded(call, digest, before, approval),
                                               record=before))  # fmt: skip
                continue
            outcome, record = self.one(call, digest, problem, key)
            judged.outcomes.append(outcome)
            if record is not None:
                judged.records.append(record)
                found[record.key] = (record, outcome.approval)
            if outcome.approval is not None:
                judged.held.append(outcome.approval)
            if outcome.kind != "run":
                subject = call.id if outcome.approval is None else outcome.approval.id
                judged.audit.append(verdict_record(
                    call, outcome.verdict, self.context, subject=subject, digest=digest,
                    policy=self.engine.version, keyed=key is not None, at=self.now,
                ))  # fmt: skip
            if outcome.approval is not None and outcome.approval.assigned is not None:
                # A question handed to its person: on the record as any assignment is.
                unassigned = replace(outcome.approval, assigned=None)
                judged.audit.append(assignment_record(unassigned, outcome.approval.assigned))
        return judged

    def one(
        self, call: ToolCall, digest: str | None, problem: str | None, key: str | None
    ) -> tuple[Outcome, ExternalRecord | None]:
        """A call judged now, and the record its verdict is kept under (with a `key`)."""
        if problem is None:
            verdict = self.engine.evaluate(call, self.policy_context)
            if call.kind == "question":
                verdict = question_verdict(call, verdict)
        else:
            # Nothing can be approved that cannot be written down exactly, nor stored in a
            # form that breaks whoever reads it.
            verdict = Verdict(kind="deny", rule=None, reason=problem)
        kind = OUTCOME_OF[verdict.kind]
        approval = self.approval(call, verdict) if kind == "hold" else None
        problem = None if approval is None else self.unassignable(approval)
        if problem is not None:
            verdict, kind, approval = unaskable(f"question.to: {problem}"), "block", None
        record = None
        if key is not None:
            record = ExternalRecord(
                key=key,
                origin=self.context.origin,
                thread_id=self.context.thread_id or "",
                call_id=call.id,
                agent=call.agent,
                digest=digest or "",
                kind=kind,
                rule=verdict.rule,
                reason=verdict.reason,
                approval_id=None if approval is None else approval.id,
                at=self.now,
            )
        outcome = Outcome(call=call, kind=kind, verdict=verdict, approval=approval, record=record)
        return outcome, record

    def unassignable(self, approval: Approval) -> str | None:
        """Why the person (or role) a question is asked of could not answer it, or None."""
        if approval.assigned is None or self.check_assignee is None:
            return None
        try:
            self.check_assignee(approval, approval.assigned.to, self.now)
        except InvalidDecisionError as exc:
            return str(exc)
        return None

    def approval(self, call: ToolCall, verdict: Verdict) -> Approval:
        """The pending approval a call the policy asks about is held under — a question's
        with its form's field order written down (`held_question`), while its verdict's digest
        stays that of the call as the agent wrote it, for the same call sent again to match."""
        context = self.context
        return Approval(
            id=new_id(),
            call=held_question(call),
            batch_id=self.batch_id,
            **same_named(context, ("run_id", "thread_id", "origin", "requested_by")),
            **same_named(verdict, RULE_SAYS),
            requested_at=self.now,
            expires_at=None
            if verdict.timeout is None
            else self.now + timedelta(seconds=verdict.timeout),
            args_schema=self.kept_schema(call),
            assigned=question_assignment(call, self.now),
            preview=self.previews.get(call.id),
            policy=self.engine.version,
        )


def recorded(
    call: ToolCall, digest: str | None, record: ExternalRecord, approval: Approval | None
) -> Outcome:
    """The outcome of a call judged before, as it stands now."""
    if record.digest != (digest or ""):
        reason = (
            f"call id {call.id!r} was judged before with other arguments; a call id names one "
            "call, so this one is blocked"
        )
        verdict = Verdict(kind="deny", rule=None, reason=reason)
        return Outcome(call=call, kind="block", verdict=verdict, recorded=True)
    verdict = Verdict(kind=VERDICT_OF[record.kind], rule=record.rule, reason=record.reason)
    if record.kind == "hold" and approval is None:  # pragma: no cover - written together
        raise ConflictError(f"the approval of call {call.id!r} is missing")
    return Outcome(call=call, kind=record.kind, verdict=verdict, approval=approval, recorded=True)
