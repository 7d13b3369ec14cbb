"""The Gate: judge calls, hold the asked ones, take decisions, wake whoever waits.

gate = Gate(policy, store)
[outcome] = await gate.check([call])            # run / block / hold (with a pending approval)
await gate.decide(outcome.approval.id, Approve(), actor="alice")
decision = await gate.ask(call, timeout=30)     # in-process: hold, then wait for a person

The Gate is built of its parts, each a module: what they all stand on (`signoff.gate.base`:
the policy in force, the store, the clock), judging and holding (`holding`, `judge`), the
grants (`grants`), deciding (`deciding`), waiting and what falls due (`timing`), and handing
a held call to someone (`assign`). Here they come together, with the policy's changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from signoff import telemetry
from signoff.errors import ApprovalTimeout
from signoff.gate.assign import Assigning
from signoff.gate.base import ADOPTIONS, AdoptPolicy, RolesOf, saved_policy
from signoff.gate.deciding import Deciding
from signoff.gate.edits import SchemaLookup
from signoff.gate.holding import Holding
from signoff.gate.outcome import CheckContext, Outcome
from signoff.gate.rejudge import rejudged
from signoff.policy import Policy, PolicyEngine
from signoff.store import Store
from signoff.types import Approval, Approve, Decision, Reject, ToolCall

__all__ = ["AdoptPolicy", "CheckContext", "Gate", "Outcome", "RolesOf", "saved_policy"]

_PAGE = 500
"""Waiting calls read at a time when they are judged again."""


class Gate(Holding, Deciding, Assigning):
    """The heart of signoff: policy in front, store behind, people in between."""

    @classmethod
    async def following_saved(
        cls,
        store: Store,
        *,
        fallback: Policy | PolicyEngine | None = None,
        schemas: SchemaLookup | Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Gate:
        """A gate that judges by the policy the store saved last (a server's: `PUT
        /v1/policy`), read now and again before whatever must be judged by the policy of now;
        `fallback` (none: the empty policy) until one is saved. For a tool that decides on a
        server's database without the server: a command, a notebook, a Streamlit app."""
        gate = cls(fallback or Policy.from_dict({}), store, schemas=schemas)
        gate.adopt_policy = saved_policy(gate)
        await gate.catch_up()
        return gate

    async def ask(
        self, call: ToolCall, *, timeout: float | None = None, context: CheckContext | None = None
    ) -> Decision:
        """Judge one call and, when it asks, wait for a person (seed 004's in-process channel).

        Allowed → `Approve()`; denied → `Reject` with the policy's reason; held → the decision.
        Raises `ApprovalTimeout` when nobody decides within `timeout` or the rule's timeout.
        """
        [outcome] = await self.check([call], context)
        if outcome.kind == "run":
            return Approve()
        if outcome.kind == "block":
            return Reject(reason=outcome.verdict.reason)
        assert outcome.approval is not None  # a hold always carries its approval
        approval = await self.wait(outcome.approval.id, timeout)
        if approval.status == "expired":
            raise ApprovalTimeout(f"approval {approval.id!r} expired before anyone decided")
        assert approval.decision is not None  # decided approvals carry their decision
        if approval.status in ("approved", "edited"):
            # The caller runs it now: by the policy of now, as every runtime does.
            await self.catch_up()
            denied = self.denied_now(approval)
            if denied is not None:
                return Reject(reason=f"it was approved, but {denied}")
        return approval.decision

    async def use_policy(self, policy: Policy | PolicyEngine) -> list[Approval]:
        """Judge by `policy` from now on — the calls that wait included: each is judged again
        by it (`rejudge`). Returns the approvals that changed."""
        self.engine = policy if isinstance(policy, PolicyEngine) else PolicyEngine(policy)
        return await self.rejudge()

    async def rejudge(self) -> list[Approval]:
        """Judge every waiting call again by the policy in force (`signoff.gate.rejudge`): one
        it now denies is rejected, one asked about under a changed rule follows it — when a
        version of the policy saved in the store judged it (another lineage's rules, a
        framework app's own, are its own). Each
        change a compare-and-set: a call decided or changed meanwhile is read and judged again,
        and a replica that judges the same calls at the same time changes nothing twice.
        Returns the approvals it changed."""
        now = await self.time()
        out: list[Approval] = []
        cursor: str | None = None
        while True:
            page = await self.store.list_approvals(status="pending", before=cursor, limit=_PAGE)
            saved = await self.store.saved_policies({a.policy for a in page if a.policy})
            for approval in page:
                for _ in range(ADOPTIONS):
                    lineage = self.judged_by(approval, saved=approval.policy in saved)
                    found = rejudged(approval, self.engine, at=now, lineage=lineage)
                    if found is None:
                        break
                    after, record = found
                    if await self.store.save_decisions([(after, approval.version)], audit=[record]):
                        self.notifier.notify(approval.id)
                        out.append(after)
                        break
                    approval = await self.store.get_approval(approval.id)
                    if not approval.pending:
                        break
            if len(page) < _PAGE:
                break
            cursor = page[-1].id
        telemetry.decided([a for a in out if not a.pending])
        return out
