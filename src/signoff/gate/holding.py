"""Holding in the Gate: a batch of calls judged in one transaction with the grants it reads —
the verdicts audited, each call a grant lets through on the record, the approvals of the calls
the policy asks about created as one batch (with their previews) and the run's step that goes
with them written in the same commit. For another framework's run each verdict is kept under the
call's key, so the same call judged again gets the same outcome."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from signoff import telemetry
from signoff.errors import InvalidDecisionError
from signoff.gate.grants import Grants
from signoff.gate.ids import external_key, new_id
from signoff.gate.judge import Admitted, Judge, Judgement, admit
from signoff.gate.outcome import CheckContext, Outcome, policy_context
from signoff.gate.preview import Previews
from signoff.gate.records import use_record
from signoff.policy.engine import GRANTED
from signoff.store import AuditRecord
from signoff.store.base import HoldPlan
from signoff.store.external import ExternalRecord
from signoff.store.runs import RunWrite, StoredEvent
from signoff.types import Approval, Grant, Preview, ToolCall

__all__ = ["Holding"]

Found = dict[str, tuple[ExternalRecord, Approval | None]]
"""Verdicts judged before, by key, with their approvals."""


@dataclass(frozen=True, kw_only=True)
class _Batch:
    """The calls one `hold` judges, and what goes with them into its transaction."""

    calls: Sequence[ToolCall]
    admitted: list[Admitted]
    context: CheckContext
    batch_id: str
    keys: dict[str, str]
    previews: dict[str, Preview]
    known: Found
    """The verdicts the caller judged before and has yet to write, by key."""
    then: Callable[[list[Outcome]], RunWrite | None] | None
    also_audit: Callable[[list[Outcome]], list[AuditRecord]] | None
    durable: bool
    stored: Found = field(default_factory=dict)
    """The verdicts judged before as the store had them, at the last read."""


class Holding(Grants):
    """The Gate's judging and holding (the Gate is one)."""

    async def check(
        self, calls: Sequence[ToolCall], context: CheckContext | None = None
    ) -> list[Outcome]:
        """One outcome per call. The held calls are created in one transaction, one batch."""
        outcomes, _ = await self.hold(calls, context)
        return outcomes

    async def hold(
        self,
        calls: Sequence[ToolCall],
        context: CheckContext | None = None,
        *,
        then: Callable[[list[Outcome]], RunWrite | None] | None = None,
        also_audit: Callable[[list[Outcome]], list[AuditRecord]] | None = None,
        keyed: bool = False,
        unwritten: Mapping[str, ExternalRecord] | None = None,
        previews: Previews | None = None,
        durable: bool = True,
    ) -> tuple[list[Outcome], list[StoredEvent]]:
        """`check`, with the run's step that goes with the outcomes (`then` makes it of them; it
        runs on the store's thread and must only compute) written in the same transaction:
        the grants read, the verdicts audited, the approvals created and the run's log
        appended, for one commit — and the audit entries `also_audit` makes of the outcomes
        (the MCP gateway's record of the calls it forwards at once). `keyed` keeps each
        verdict under the call's key (`hold_external`). With `unwritten` (the verdicts by key
        that the caller judged before and has yet to write), a batch the policy allows whole,
        with nothing else to write, is judged without the store: its records are the caller's
        to write with each call's claim (`Outcome.written`). `previews` computes what each
        call it has a preview for would change, before the transaction and within its bounds,
        for the calls the policy asks about: it is kept with their approvals. Not `durable`:
        the commit does not wait for the disk, unless it holds a call, spends a grant or writes
        a run's step (`HoldStore.hold`) — for what may be lost with the machine (the MCP
        gateway's forward of a call that may run again).
        Returns the outcomes and the run's new events."""
        context = context or CheckContext()
        now = await self.time()  # for calls judged without a transaction (all allowed)
        keys = {c.id: external_key(context.origin, context.thread_id, c.id, context.turn)
                for c in calls} if keyed else {}  # fmt: skip
        batch = _Batch(
            calls=calls, admitted=[admit(c, self.limits) for c in calls], context=context,
            batch_id=new_id(), keys=keys,
            previews={} if not previews else await self._previews(calls, context, previews, keys),
            known={key: (record, None) for key, record in (unwritten or {}).items()},
            then=then, also_audit=also_audit, durable=durable,
        )  # fmt: skip
        plan = functools.partial(self._hold_plan, batch)
        # Allowed calls write only their records: the claim each needs to run writes them too.
        later = keyed and unwritten is not None and then is None and also_audit is None and (
            self._all_allowed(batch)
        )  # fmt: skip
        with telemetry.span("signoff.judge", current=False) as span:
            events: list[StoredEvent] = []
            if later:  # what was judged before is read, not locked: nothing else is written
                decided = plan([], await self.store.external_verdicts(list(keys.values())), now)
                later = all(o.kind == "run" for o in decided.outcomes if not o.recorded)
            if not later:
                decided, events = await self.store.hold(
                    {call.name for call in calls}, plan, keys=list(keys.values()), durable=durable
                )
            outcomes = [
                replace(o, written=o.record.key in batch.stored if o.recorded else not later)
                if o.record is not None else o
                for o in decided.outcomes
            ]  # fmt: skip
            telemetry.judged(outcomes, len(decided.grants_used), span)
        return outcomes, events

    async def hold_external(
        self,
        calls: Sequence[ToolCall],
        context: CheckContext,
        *,
        also_audit: Callable[[list[Outcome]], list[AuditRecord]] | None = None,
        unwritten: Mapping[str, ExternalRecord] | None = None,
        previews: Previews | None = None,
    ) -> list[Outcome]:
        """`check` for the calls of another framework's run (`context.origin`, its thread in
        `context.thread_id`, each call's own id): each verdict is kept under the call's key, so
        judging the same call again — a re-run node, a retry, another process — returns the
        same outcome and the same approval, decided or not. A call id judged before with other
        arguments is blocked: an approval covers the call it was asked for, never another.
        `also_audit`, `unwritten` and `previews` as for `hold` (`also_audit` sees the recorded
        outcomes too: `Outcome.recorded`; a call judged before is not previewed again)."""
        if context.thread_id is None:
            raise InvalidDecisionError("an external call is judged within a thread: name it")
        outcomes, _ = await self.hold(
            calls, context, also_audit=also_audit, keyed=True, unwritten=unwritten,
            previews=previews,
        )  # fmt: skip
        return outcomes

    def _hold_plan(
        self, batch: _Batch, grants: list[Grant], found: Found, at: datetime
    ) -> HoldPlan:
        """What `batch` writes, judged with the `grants` and the verdicts judged before
        (`found`) read in the transaction that writes it, at its time `at`."""
        # Judged at the database's time, read in the transaction that writes what it judges
        # (when the call was held, until when it waits); or by the clock this gate was given.
        now = self._at(at)
        current = tuple(g for g in map(self.grant_now, grants) if g is not None)
        batch.stored.clear()
        batch.stored.update(found)
        # The store's verdict stands over one not written yet.
        judged = self._judge(batch, current, now, found=batch.known | found)
        write = None if batch.then is None else batch.then(judged.outcomes)
        audit = judged.audit
        if batch.also_audit is not None:
            audit += batch.also_audit(judged.outcomes)
        used = [
            (o.verdict.rule.removeprefix(GRANTED), o.call)
            for o in judged.outcomes
            if o.verdict.rule is not None and o.verdict.rule.startswith(GRANTED) and not o.recorded
        ]
        # Each call a grant lets through is on the record, as each asked one is.
        audit += [use_record(g, call, batch.context, at=now) for g, call in used]
        return HoldPlan(
            approvals=judged.held,
            audit=audit,
            write=write,
            outcomes=judged.outcomes,
            grants_used=[g for g, _ in used],
            at=now,
            external=judged.records,
            # Only calls the policy itself lets run may go unsynced: a verdict that blocks or
            # holds, a grant's use and a run's step always wait for the disk.
            lossy=not batch.durable
            and write is None
            and not used
            and all(o.kind == "run" for o in judged.outcomes),
        )

    def _judge(
        self, batch: _Batch, grants: tuple[Grant, ...], now: datetime, *, found: Found
    ) -> Judgement:
        """The batch judged by the policy in force with `grants` (`signoff.gate.judge`)."""
        judge = Judge(
            engine=self.engine,
            context=batch.context,
            grants=grants,
            now=now,
            batch_id=batch.batch_id,
            kept_schema=self._schemas.kept,
            keys=batch.keys,
            previews=batch.previews,
            # Who a question is asked of is checked as an assignment is: a role against the
            # rule's approvers always, a person against the directory when there is one.
            check_assignee=self._check_assignee,
        )
        return judge.batch(batch.calls, batch.admitted, found)

    def _all_allowed(self, batch: _Batch) -> bool:
        """Whether the policy allows every call of `batch` without a grant."""
        allowed = policy_context(batch.context)
        return all(
            problem is None and self.engine.evaluate(c, allowed).kind == "allow"
            for c, (_, problem) in zip(batch.calls, batch.admitted, strict=True)
        )

    async def _previews(
        self,
        calls: Sequence[ToolCall],
        context: CheckContext,
        previews: Previews,
        keys: Mapping[str, str],
    ) -> dict[str, Preview]:
        """The previews of the calls the policy would hold (a grant may yet let one through:
        its preview is then not kept), leaving out those judged before, by call id."""
        asked = policy_context(context)
        wanted = [
            c
            for c in calls
            if previews.covers(c)
            and admit(c, self.limits)[1] is None
            and self.engine.evaluate(c, asked).kind == "ask"
        ]
        if keys and wanted:
            judged = await self.store.external_calls([keys[c.id] for c in wanted])
            wanted = [c for c in wanted if keys[c.id] not in judged]
        return await previews.of_many(wanted)
