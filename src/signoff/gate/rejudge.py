"""The policy of now reaches waiting calls: when the policy changes, each pending approval is
judged again by it (`Gate.rejudge`).

- A call the policy now denies is rejected by signoff, with the policy's reason: the agent is
  told as of any rejection, the audit log says which policy did it.
- A call the policy still asks about, under another rule or a rule that changed — who may
  decide, how many people, its time, its escalation, what happens on timeout — follows the new
  rule from then on. Approvals given under the old rule are dropped when who may approve or how
  many must changed: they were given for another rule. Its time counts from when it was held,
  but a rule that approves on timeout gives people its whole time from the change.
- A call the policy now allows keeps waiting for its person: a change of policy approves nothing
  that nobody approved.

Whatever the order things happen in, an approval (a person's, or the rule's on timeout) never
runs a call the policy in force denies: the gate checks that too, when it is decided and when it
runs.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from signoff.gate.deciders import applied
from signoff.gate.judge import RULE_SAYS
from signoff.gate.outcome import approval_context
from signoff.gate.records import approval_record, decision_record
from signoff.gate.versions import changed
from signoff.policy import PolicyEngine
from signoff.store import AuditRecord
from signoff.types import AUTOMATIC, Approval, Reject, Verdict
from signoff.types.fields import same_named

__all__ = ["rejudged"]


def rejudged(
    approval: Approval, engine: PolicyEngine, *, at: datetime, lineage: bool = True
) -> tuple[Approval, AuditRecord] | None:
    """`approval` as the policy of `engine` judges it at `at`, with the audit entry that
    records the change; None when nothing changes. Unless `lineage` — a version of this policy
    judged the approval — only a denial applies: a call held under another policy (a framework
    app's own) keeps the rule that asked, who may decide and how many, and is rejected only
    when this policy denies it."""
    verdict = engine.evaluate(approval.call, approval_context(approval))
    if verdict.kind == "deny":
        decided = applied(
            replace(approval, policy=engine.version),
            Reject(reason=f"the policy now denies this call: {verdict.reason}"),
            actor=AUTOMATIC,
            at=at,
        )
        record = decision_record(approval, decided, actor=AUTOMATIC, at=at)
        record.data.update(automatic=True, rule=verdict.rule, policy=engine.version)
        return decided, record
    if not lineage or verdict.kind == "allow" or verdict.rule_digest == approval.rule_digest:
        return None
    ruled = _ruled(approval, verdict, at, engine.version)
    note = _note(approval, ruled, verdict)
    after = changed(ruled, "policy", by=AUTOMATIC, at=at, note=note, base=approval)
    record = approval_record(
        approval,
        "rejudge",
        actor=AUTOMATIC,
        at=at,
        data={
            "policy": engine.version,
            "rule": verdict.rule,
            "previous_rule": approval.rule,
            "approvers": list(ruled.approvers),
            "quorum": None if ruled.quorum is None else ruled.quorum.count,
            "votes_dropped": len(approval.votes) - len(ruled.votes),
            "run_id": approval.run_id,
        },
    )
    return after, record


def _ruled(approval: Approval, verdict: Verdict, at: datetime, engine_version: str) -> Approval:
    """`approval` under the rule that asks about its call now, from `at`. Its time counts from
    when it was held — but a rule that approves on timeout gives people its whole time from
    when it came into force: a change of policy never approves at once what waited longer."""
    same_deciders = (
        verdict.quorum == approval.quorum
        and verdict.approvers == approval.approvers
        and verdict.forbid_self_approval == approval.forbid_self_approval
    )
    return replace(
        approval,
        **same_named(verdict, RULE_SAYS),
        votes=approval.votes if same_deciders else (),
        escalated=0 if verdict.escalate != approval.escalate else approval.escalated,
        expires_at=None if verdict.timeout is None else _until(approval, verdict, at),
        policy=engine_version,
    )


def _until(approval: Approval, verdict: Verdict, at: datetime) -> datetime:
    assert verdict.timeout is not None  # only a rule with a timeout has an end
    start = approval.requested_at
    if verdict.on_timeout is not None and verdict.on_timeout.decide == "approve":
        start = max(start, at)
    return start + timedelta(seconds=verdict.timeout)


def _note(before: Approval, after: Approval, verdict: Verdict) -> str:
    """What the new rule changed, in words."""
    said = [f"rule {verdict.rule!r} asks about it" if verdict.rule else "the default asks"]
    if after.approvers != before.approvers:
        said.append(f"decided by {', '.join(after.approvers) or 'anyone who may decide'}")
    if after.quorum != before.quorum:
        people = 1 if after.quorum is None else after.quorum.count
        said.append(f"{people} {'person' if people == 1 else 'people'} must approve")
    if len(after.votes) < len(before.votes):
        said.append("the approvals given so far no longer count")
    if after.expires_at != before.expires_at:
        until = (
            "with no time limit"
            if after.expires_at is None
            else (f"until {after.expires_at:%Y-%m-%d %H:%M:%S} UTC")
        )
        said.append(f"it waits {until}")
    if after.on_timeout != before.on_timeout and after.on_timeout is not None:
        said.append(f"then signoff {after.on_timeout.decide}s it")
    return "; ".join(said)
