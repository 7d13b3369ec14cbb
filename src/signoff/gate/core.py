"""The Gate: judge calls, hold the asked ones, take decisions, wake whoever waits.

gate = Gate(policy, store)
[outcome] = await gate.check([call])            # run / block / hold (with a pending approval)
await gate.decide(outcome.approval.id, Approve(), actor="alice")
decision = await gate.ask(call, timeout=30)     # in-process: hold, then wait for a person
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from signoff import telemetry
from signoff.errors import (
    ApprovalTimeout,
    ConflictError,
    ForbiddenError,
    InvalidArgumentsError,
    InvalidDecisionError,
    StaleDecisionError,
)
from signoff.gate.deciders import (
    already_decided,
    applied,
    approvers_at,
    assignee,
    check_decider,
    check_person,
    decision_kind,
    note_text,
    stricter,
    vote,
)
from signoff.gate.edits import SchemaLookup, check_edit, schema_lookup, usable_schema
from signoff.gate.ids import external_key, new_id
from signoff.gate.notifier import Notifier
from signoff.gate.preview import Previews
from signoff.gate.records import (
    assignment_record,
    decision_record,
    grant_for,
    grant_record,
    lapse_record,
    use_record,
    vote_record,
)
from signoff.gate.rejudge import rejudged
from signoff.gate.timing import Timing
from signoff.gate.versions import changed, check_seen, describe
from signoff.limits import ArgumentLimits
from signoff.names import same_person
from signoff.policy import Policy, PolicyEngine
from signoff.policy.engine import GRANTED
from signoff.redaction import Redaction
from signoff.store import AuditRecord, DecisionPlan, Store
from signoff.store.base import HoldPlan, Moment
from signoff.store.external import ExternalRecord
from signoff.store.runs import RunWrite, StoredEvent
from signoff.types import (
    Approval,
    Approve,
    Assignment,
    Context,
    Decision,
    Edit,
    Grant,
    Preview,
    Reject,
    ToolCall,
    Verdict,
    call_json,
    canonical_json,
)

__all__ = ["AdoptPolicy", "CheckContext", "Gate", "Outcome", "RolesOf", "saved_policy"]

logger = logging.getLogger("signoff.gate")

_KEPT_SCHEMA_BYTES = 64 * 1024
"""A tool schema larger than this is not kept with each approval of its tool: an edit of such a
call is checked where the schema is known (the asker's process, and before it runs)."""
RolesOf = Callable[[str], frozenset[str] | None]
"""A directory of principals: the roles a principal has now, or None when it is not (or no
longer) known. The server builds one from its tokens."""
AdoptPolicy = Callable[[], Awaitable[None]]
"""Put in force the policy the store saved last, if it is not: a gate that follows the store's
policy (a server's) is given one, and judges decisions, lapses and what runs by that policy."""
_ADOPTIONS = 5
"""How many times a decision is judged again after its replica read a newer policy (and a
waiting call after it changed meanwhile)."""
_PAGE = 500
"""Waiting calls read at a time when they are judged again."""


class _PolicyBehind(Exception):
    """The store has saved a newer policy than the gate judges by."""

    def __init__(self, version: str) -> None:
        super().__init__(version)
        self.version = version


@dataclass(frozen=True, kw_only=True)
class CheckContext:
    """Where the calls come from."""

    run_id: str | None = None
    thread_id: str | None = None
    requested_by: str | None = None
    """The principal that started the run (for rules that forbid self-approval)."""
    origin: str = "gate"
    turn: str | None = None
    """For another framework's run: the model response the calls came from (a message id, a
    response's timestamp), so a provider that numbers every response's calls ``call_0`` gets
    new calls, while the same response judged again is the same calls."""


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What happens to one call: it runs, it is blocked, or it is held for a person."""

    call: ToolCall
    kind: Literal["run", "block", "hold"]
    verdict: Verdict
    approval: Approval | None = None
    """The pending approval, for a held call (decided already, when `recorded`)."""
    recorded: bool = False
    """For a call of another framework's run: it was judged before (a re-run, a retry,
    another replica), and this is that verdict — its approval as it stands now."""
    record: ExternalRecord | None = None
    """For a call of another framework's run: the record its verdict is kept under."""
    written: bool = True
    """False: a verdict to run, left to `hold`'s caller to write (`unwritten`)."""


class Gate(Timing):
    """The heart of signoff: policy in front, store behind, people in between."""

    def __init__(
        self,
        policy: Policy | PolicyEngine,
        store: Store,
        *,
        schemas: SchemaLookup | Mapping[str, Mapping[str, Any]] | None = None,
        notifier: Notifier | None = None,
        clock: Callable[[], datetime] | None = None,
        poll_interval: float = 0.5,
        limits: ArgumentLimits | None = None,
        roles_of: RolesOf | None = None,
        redaction: Redaction | None = None,
        adopt_policy: AdoptPolicy | None = None,
    ) -> None:
        self._judged_by: set[str] = set()
        self.engine = policy if isinstance(policy, PolicyEngine) else PolicyEngine(policy)
        self.store = store
        self.redaction = redaction or Redaction()
        """The arguments never shown (the config's ``redact:``): masked in what the gate
        words itself — a refused decision naming an edit's values."""
        self.adopt_policy = adopt_policy
        """How this gate reads the policy the store saved last, when it follows the store's
        (a server's gate); None: its policy is the one it was given (a library's)."""
        self.roles_of = roles_of
        """Who the principals are now: a grant is judged by its granter's roles at the moment
        of use, and one whose granter is unknown lets nothing through. None (a library's gate)
        judges each grant by the roles it stores, those its granter had when granting."""
        self.principals_from = ""
        """Where the principals `roles_of` knows come from, in words (a server's: its config's
        tokens), said when a call is handed to a name that is none of them."""
        self.limits = limits or ArgumentLimits()
        """How deep and big a call's arguments (and an edit's) may be: a call past them is
        blocked, an edit past them refused."""
        self.notifier = notifier or Notifier()
        self._lookup_schema = schema_lookup(schemas)
        self._registered: dict[tuple[str | None, str | None, str], Mapping[str, Any]] = {}
        self._now = clock or (lambda: datetime.now(UTC))
        self._clock_given = clock is not None
        # Without cross-process notifications a waiter polls; with them, polling is a safety net.
        self._poll = (
            poll_interval if not store.notifies_across_processes else max(poll_interval, 5.0)
        )
        self._listening = False

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

    @property
    def engine(self) -> PolicyEngine:
        """The policy this gate judges by now (set it, or `use_policy`, to change it)."""
        return self._engine

    @engine.setter
    def engine(self, engine: PolicyEngine) -> None:
        self._engine = engine
        self._judged_by.add(engine.version)

    def judged_by(self, approval: Approval, *, saved: bool = False) -> bool:
        """Whether a version of this gate's policy judged `approval`: one it judged by itself,
        or (`saved`) one saved in the store, a server's lineage. Only then does a new version
        rule it — another policy's approvals (a framework app's own) keep their rule."""
        return saved or (approval.policy is not None and approval.policy in self._judged_by)

    def register_schemas(
        self,
        schemas: Mapping[str, Mapping[str, Any]],
        *,
        agent: str | None = None,
        server: str | None = None,
    ) -> None:
        """Tool schemas to check edits against, by tool name: for the calls of the agent at
        path `agent`, or of any agent (a runner registers each of its agents' tools'), to the
        MCP `server` that serves them (two servers may name a tool alike). A held call keeps its
        tool's schema with its approval, so an edit decided in another process is checked too."""
        self._registered.update({(agent, server, name): schema for name, schema in schemas.items()})

    def tool_schema(self, call: ToolCall) -> Mapping[str, Any] | None:
        """The JSON schema an edit of `call` is checked against, if its tool has one."""
        return self._schema(call)

    def _schema(self, call: ToolCall) -> Mapping[str, Any] | None:
        if call.kind != "tool":
            return None  # a resource or prompt: whoever serves it checks an edit (the gateway)
        found = self._lookup_schema(call)
        if found is not None:
            return found
        # The most specific registration first: this agent's, at this server; a registration
        # that names no server covers the tool at any (a runner's own MCP tools).
        for key in ((call.agent, call.server, call.name), (None, call.server, call.name),
                    (call.agent, None, call.name), (None, None, call.name)):  # fmt: skip
            found = self._registered.get(key)
            if found is not None:
                return found
        return None

    def _kept_schema(self, call: ToolCall) -> dict[str, Any] | None:
        """The schema a held call's approval keeps: its tool's, when one is known and small
        enough to keep with every approval of it."""
        schema = self._schema(call)
        if schema is None or not usable_schema(schema):
            return None  # not a schema an edit can be checked against anywhere
        try:
            if len(canonical_json(schema)) > _KEPT_SCHEMA_BYTES:
                return None
        except (TypeError, ValueError, RecursionError):
            return None  # not JSON: it cannot be kept, nor checked anywhere else
        return dict(schema)

    def edit_schema(self, approval: Approval) -> Mapping[str, Any] | None:
        """The schema an edit of `approval`'s call is checked against: the one kept with it,
        else the one this gate knows for its tool."""
        return (
            approval.args_schema
            if approval.args_schema is not None
            else self._schema(approval.call)
        )

    # -- judging ---------------------------------------------------------------------------

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
        for the calls the policy asks about: it is kept with their approvals.
        Returns the outcomes and the run's new events."""
        context = context or CheckContext()
        now = await self.time()  # for calls judged without a transaction (all allowed)
        batch_id = new_id()
        keys = (
            {
                c.id: external_key(context.origin, context.thread_id, c.id, context.turn)
                for c in calls
            }
            if keyed
            else {}
        )
        shown = {} if not previews else await self._previews(calls, context, previews, keys)
        admitted = [self._admit(c) for c in calls]  # (digest, problem) of each call
        known = {key: (record, None) for key, record in (unwritten or {}).items()}
        stored: dict[str, tuple[ExternalRecord, Approval | None]] = {}  # as the store had them

        def plan(
            grants: list[Grant],
            found: dict[str, tuple[ExternalRecord, Approval | None]],
            at: datetime,
        ) -> HoldPlan:
            # Judged at the database's time, read in the transaction that writes what it judges
            # (when the call was held, until when it waits); or by the clock this gate was given.
            now = self._now() if self._clock_given else at
            current = tuple(g for g in map(self.grant_now, grants) if g is not None)
            stored.clear()
            stored.update(found)
            found = known | found  # the store's verdict stands over one not written yet
            outcomes, held, audit, records = self._judge(
                calls, admitted, context, current, now, batch_id, keys=keys, found=found,
                previews=shown,
            )  # fmt: skip
            write = None if then is None else then(outcomes)
            if also_audit is not None:
                audit += also_audit(outcomes)
            used = [
                (o.verdict.rule.removeprefix(GRANTED), o.call)
                for o in outcomes
                if o.verdict.rule is not None
                and o.verdict.rule.startswith(GRANTED)
                and not o.recorded
            ]
            # Each call a grant lets through is on the record, as each asked one is.
            audit += [use_record(g, call, context, at=now) for g, call in used]
            return HoldPlan(
                approvals=held,
                audit=audit,
                write=write,
                outcomes=outcomes,
                grants_used=[g for g, _ in used],
                at=now,
                external=records,
            )

        # Allowed calls write only their records: the claim each needs to run writes them too.
        allowed = Context(run_id=context.run_id, thread_id=context.thread_id,
                          requested_by=context.requested_by)  # fmt: skip
        later = keyed and unwritten is not None and then is None and also_audit is None and all(
            problem is None and self.engine.evaluate(c, allowed).kind == "allow"
            for c, (_, problem) in zip(calls, admitted, strict=True)
        )  # fmt: skip
        with telemetry.span("signoff.judge", current=False) as span:
            events: list[StoredEvent] = []
            if later:  # what was judged before is read, not locked: nothing else is written
                decided = plan([], await self.store.external_verdicts(list(keys.values())), now)
                later = all(o.kind == "run" for o in decided.outcomes if not o.recorded)
            if not later:
                decided, events = await self.store.hold(
                    {call.name for call in calls}, plan, keys=list(keys.values())
                )
            outcomes = [
                replace(o, written=o.record.key in stored if o.recorded else not later)
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

    async def _previews(
        self,
        calls: Sequence[ToolCall],
        context: CheckContext,
        previews: Previews,
        keys: Mapping[str, str],
    ) -> dict[str, Preview]:
        """The previews of the calls the policy would hold (a grant may yet let one through:
        its preview is then not kept), leaving out those judged before, by call id."""
        policy_context = Context(
            run_id=context.run_id, thread_id=context.thread_id, requested_by=context.requested_by
        )
        wanted = [
            c
            for c in calls
            if previews.covers(c)
            and self._admit(c)[1] is None
            and self.engine.evaluate(c, policy_context).kind == "ask"
        ]
        if keys and wanted:
            judged = await self.store.external_calls([keys[c.id] for c in wanted])
            wanted = [c for c in wanted if keys[c.id] not in judged]
        return await previews.of_many(wanted)

    def _judge(
        self,
        calls: Sequence[ToolCall],
        admitted: Sequence[tuple[str | None, str | None]],
        context: CheckContext,
        grants: tuple[Grant, ...],
        now: datetime,
        batch_id: str,
        *,
        keys: Mapping[str, str] | None = None,
        found: Mapping[str, tuple[ExternalRecord, Approval | None]] | None = None,
        previews: Mapping[str, Preview] | None = None,
    ) -> tuple[list[Outcome], list[Approval], list[AuditRecord], list[ExternalRecord]]:
        # What this batch judges joins what was judged before: a call id twice in one turn
        # is one call.
        keys, found = keys or {}, dict(found or {})
        policy_context = Context(
            run_id=context.run_id,
            thread_id=context.thread_id,
            requested_by=context.requested_by,
            grants=grants,
        )
        outcomes: list[Outcome] = []
        held: list[Approval] = []
        audit: list[AuditRecord] = []
        records: list[ExternalRecord] = []
        for call, (digest, problem) in zip(calls, admitted, strict=True):
            key = keys.get(call.id)
            if key is not None and key in found:
                outcomes.append(replace(_recorded(call, digest, *found[key]), record=found[key][0]))
                continue
            if problem is None:
                verdict = self.engine.evaluate(call, policy_context)
            else:
                # Nothing can be approved that cannot be written down exactly, nor stored in a
                # form that breaks whoever reads it.
                verdict = Verdict(kind="deny", rule=None, reason=problem)
            if key is not None:
                kind = {"allow": "run", "deny": "block", "ask": "hold"}[verdict.kind]
                records.append(
                    ExternalRecord(
                        key=key,
                        origin=context.origin,
                        thread_id=context.thread_id or "",
                        call_id=call.id,
                        agent=call.agent,
                        digest=digest or "",
                        kind=kind,  # type: ignore[arg-type]
                        rule=verdict.rule,
                        reason=verdict.reason,
                        approval_id=None,
                        at=now,
                    )
                )
                found[key] = (records[-1], None)
            record = records[-1] if key is not None else None
            if verdict.kind == "allow":
                outcomes.append(Outcome(call=call, kind="run", verdict=verdict, record=record))
                continue
            if verdict.kind == "deny":
                outcomes.append(Outcome(call=call, kind="block", verdict=verdict, record=record))
                subject = call.id
            else:
                approval = Approval(
                    id=new_id(),
                    call=call,
                    batch_id=batch_id,
                    run_id=context.run_id,
                    thread_id=context.thread_id,
                    origin=context.origin,
                    rule=verdict.rule,
                    rule_digest=verdict.rule_digest,
                    reason=verdict.reason,
                    requested_at=now,
                    requested_by=context.requested_by,
                    expires_at=None
                    if verdict.timeout is None
                    else now + timedelta(seconds=verdict.timeout),
                    approvers=verdict.approvers,
                    forbid_self_approval=verdict.forbid_self_approval,
                    destructive=verdict.destructive,
                    args_schema=self._kept_schema(call),
                    quorum=verdict.quorum,
                    escalate=verdict.escalate,
                    on_timeout=verdict.on_timeout,
                    preview=(previews or {}).get(call.id),
                    policy=self.engine.version,
                )
                held.append(approval)
                if key is not None:
                    records[-1] = record = replace(records[-1], approval_id=approval.id)
                    found[key] = (record, approval)
                outcomes.append(Outcome(call=call, kind="hold", verdict=verdict,
                                        approval=approval, record=record))  # fmt: skip
                subject = approval.id
            audit.append(
                AuditRecord(
                    actor=context.requested_by or "agent",
                    action="verdict",
                    subject=subject,
                    at=now,
                    data={
                        "verdict": verdict.kind,
                        "rule": verdict.rule,
                        "reason": verdict.reason,
                        "tool": call.name,
                        "server": call.server,
                        "agent": call.agent,
                        "digest": digest,
                        "run_id": context.run_id,
                        "policy": self.engine.version,
                    }
                    | ({} if call.kind == "tool" else {"kind": call.kind})
                    | (
                        {}
                        if key is None
                        else {
                            "origin": context.origin,
                            "thread_id": context.thread_id,
                            "call_id": call.id,
                        }
                    ),
                )
            )
        return outcomes, held, audit, records

    def _admit(self, call: ToolCall) -> tuple[str | None, str | None]:
        """The call's digest, or why the gate cannot take its arguments: not JSON, nested too
        deep, too big."""
        problem = self.limits.problem(call.args)
        if problem is not None:
            return None, problem
        try:
            data = call_json(call)
        except InvalidArgumentsError as exc:
            return None, f"the arguments are not JSON: {exc}"
        problem = self.limits.size_problem(len(data))
        if problem is not None:
            return None, problem
        return hashlib.sha256(data).hexdigest(), None

    # -- deciding --------------------------------------------------------------------------

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
        for _ in range(_ADOPTIONS):
            try:
                return await self._decide_batch(decisions, actor, roles, versions or {})
            except _PolicyBehind:
                await self.catch_up()
        raise ConflictError(  # pragma: no cover - the policy changed at every try
            "the policy kept changing while this decision was judged; send it again"
        )

    async def _decide_batch(
        self,
        decisions: Mapping[str, Decision],
        actor: str,
        roles: frozenset[str],
        versions: Mapping[str, int],
    ) -> list[Approval]:
        results: dict[str, Approval] = {}
        overdue: list[Approval] = []
        rejudged_now: list[Approval] = []  # (assigned, not extended: the plan may run again)

        def plan(current: list[Approval], moment: Moment) -> DecisionPlan:
            # Runs inside the store's write transaction, with these approvals locked: what it
            # reads is what it writes over, and raising here writes nothing.
            now = self._now() if self._clock_given else moment.at
            if (
                self.adopt_policy is not None
                and moment.policy is not None
                and moment.policy != self.engine.version
            ):
                raise _PolicyBehind(moment.policy)
            # The approvals as the policy in force has them, for a gate that follows the
            # store's saved policy (a server's) and judges by it now (checked above): a change
            # of policy not written to one yet (its replica read the policy after, or failed to
            # judge them all) is written now.
            ruled = {
                a.id: found
                for a in current
                if self.adopt_policy is not None
                and moment.policy is not None
                and a.pending
                and (
                    found := rejudged(
                        a,
                        self.engine,
                        at=now,
                        lineage=self.judged_by(a, saved=a.id in moment.saved),
                    )
                )
                is not None
            }
            seen = [ruled[a.id][0] if a.id in ruled else a for a in current]
            # Who may decide comes first: a request its sender may not make changes nothing,
            # a lapse that falls due included.
            for approval in seen:
                self._check_decider(approval, actor=actor, roles=roles, now=now)
            late = {
                a.id: self._lapse(a, now)
                for a in seen
                if a.pending and a.expires_at is not None and a.expires_at <= now
            }
            if ruled or late:
                # Past its time an approval lapses (expires, or is decided as its rule says),
                # whoever decides first; what the policy says of it is written as it says.
                # Only that is written: this decision was made on something else.
                overdue[:] = list(late.values())
                rejudged_now[:] = [found[0] for found in ruled.values()]
                return _lapsed_or_ruled(current, ruled, late, now)
            changes: list[tuple[Approval, int]] = []
            grants: list[Grant] = []
            audit: list[AuditRecord] = []
            for approval in current:
                decision = decisions[approval.id]
                if not approval.pending:
                    results[approval.id] = already_decided(approval, decision)
                    continue
                check_seen(approval, versions.get(approval.id), decision, actor=actor,
                           redaction=self.redaction)  # fmt: skip
                self._authorize(approval, decision, actor=actor, roles=roles)
                if approval.quorum is not None and isinstance(decision, Approve | Edit):
                    decided = vote(approval, decision, actor=actor, roles=roles, at=now)
                    results[approval.id] = decided
                    if decided is not approval:  # the same person's same approval: no change
                        self._check_allowed_now(decided)
                        changes.append((decided, approval.version))
                        audit.append(vote_record(approval, decided, actor=actor, at=now))
                    continue
                decided = applied(approval, decision, actor=actor, at=now)
                self._check_allowed_now(decided)
                changes.append((decided, approval.version))
                results[approval.id] = decided
                audit.append(decision_record(approval, decided, actor=actor, at=now))
                if isinstance(decision, Approve) and decision.always is not None:
                    grant = grant_for(decided, decision, actor=actor, roles=roles, at=now)
                    grants.append(grant)
                    audit.append(grant_record(grant, approval, actor=actor, at=now))
            return DecisionPlan(changes=changes, grants=grants, audit=audit)

        with telemetry.span("signoff.decide", current=False) as span:
            written = await self.store.decide(list(decisions), plan)
            telemetry.decided([approval for approval, _ in written.changes], span)
        for approval, _ in written.changes:
            self.notifier.notify(approval.id)
        if overdue:
            names = ", ".join(f"{a.id!r} ({a.status})" for a in overdue)
            raise ConflictError(
                f"approval {names} ran out of time before this decision; it was not taken"
            )
        if rejudged_now:
            raise _changed_by_policy(rejudged_now)
        return [results[i] for i in decisions]

    def _check_allowed_now(self, decided: Approval) -> None:
        """`ForbiddenError` when `decided` would run a call the policy in force denies: a
        person's approval never lets through what the policy now forbids (a new policy also
        rejects it, as it judges the waiting calls again: `rejudge`)."""
        if decided.status not in ("approved", "edited"):
            return
        denied = self.denied_now(decided)
        if denied is not None:
            raise ForbiddenError(f"{denied}: it cannot be approved")

    def denied_now(self, approval: Approval) -> str | None:
        """Why `approval`'s call may not run now although a person (or its rule, on timeout)
        approved it: the policy in force denies it — changed since. Checked where it is
        decided and again where it runs, by every runtime and integration."""
        return self.denied_call(approval.call, _context_of(approval))

    def denied_call(self, call: ToolCall, context: Context | None = None) -> str | None:
        """Why `call` may not run now, whatever let it through before (a verdict to run judged
        earlier, a grant, an approval): the policy in force denies it."""
        verdict = self.engine.evaluate(call, context)
        if verdict.kind == "deny":
            return f"the policy in force denies this call now ({verdict.reason})"
        return None

    async def catch_up(self) -> None:
        """Read the policy the store saved last, when this gate follows the store's (a
        server's: `adopt_policy`), before a judgement that must be by the policy of now — an
        approval about to run, a lapse. A library's gate judges by the policy it was given."""
        if self.adopt_policy is not None:
            await self.adopt_policy()

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
                for _ in range(_ADOPTIONS):
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

    def may_decide(self, approval: Approval, *, actor: str, roles: Iterable[str] = ()) -> bool:
        """Whether `actor` with `roles` may decide `approval` now: its rule's approvers (as
        escalation has widened them), and self-approval where the rule forbids it."""
        try:
            self._check_decider(approval, actor=actor, roles=frozenset(roles), now=self.now())
        except ForbiddenError:
            return False
        return True

    async def assign(
        self,
        approval_id: str,
        to: str,
        *,
        actor: str,
        roles: Iterable[str] = (),
        note: str = "",
    ) -> Approval:
        """Hand a pending approval to a person, or to a role (``role:NAME``), with a note: as
        someone who may decide it, to someone who may too (as far as this gate's directory,
        `roles_of`, can tell). It widens nothing: whoever it is handed to is held to the rule's
        approvers and to self-approval like anyone."""
        to, note = assignee(to), note_text(note)
        check_person(actor)
        approval = await self.store.get_approval(approval_id)
        now = await self.time()
        if not approval.pending:
            raise ConflictError(f"approval {approval_id!r} is already {approval.status}")
        self._check_decider(approval, actor=actor, roles=frozenset(roles), now=now)
        self._checkassignee(approval, to, now)
        assigned = Assignment(to=to, by=actor, note=note, at=now)
        handed = changed(replace(approval, assigned=assigned), "assign", by=actor, at=now,
                         note=f"to {to}", base=approval)  # fmt: skip
        record = assignment_record(approval, assigned)
        if not await self.store.save_decisions([(handed, approval.version)], audit=[record]):
            raise ConflictError(f"approval {approval_id!r} changed meanwhile; look again")
        self.notifier.notify(approval.id)
        return handed

    def _checkassignee(self, approval: Approval, to: str, now: datetime) -> None:
        """`InvalidDecisionError` when `to` could not decide `approval` as far as is known."""
        role = to.removeprefix("role:") if to.startswith("role:") else None
        approvers = approvers_at(approval, now)
        if role is not None:
            if approvers and role not in approvers:
                raise InvalidDecisionError(
                    f"role {role!r} may not decide this approval: rule {approval.rule!r} needs "
                    f"one of the roles {list(approvers)!r}"
                )
            return
        if self.roles_of is None:
            return  # no directory: whoever it is must qualify when deciding
        their_roles = self.roles_of(to)
        if their_roles is None:
            known = f": {self.principals_from}" if self.principals_from else ""
            raise InvalidDecisionError(f"{to!r} is not a known principal{known}")
        try:
            self._check_decider(approval, actor=to, roles=their_roles, now=now)
        except ForbiddenError as exc:
            raise InvalidDecisionError(f"it cannot be assigned to {to!r}: {exc}") from None

    @staticmethod
    def _check_decider(
        approval: Approval, *, actor: str, roles: frozenset[str], now: datetime
    ) -> None:
        """A rule that needs several people never counts its requester among them."""
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

    def _authorize(
        self, approval: Approval, decision: Decision, *, actor: str, roles: frozenset[str]
    ) -> None:
        """What a decision must satisfy beyond who may decide the approval (checked first)."""
        if isinstance(decision, Approve) and decision.always is not None:
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
                    f"approval {approval.id!r} belongs to no {scope}; approve always for "
                    "a scope it has"
                )
            if scope in ("run", "thread") and approval.requested_by is None:
                # Such a grant covers only its requester's calls: with none, it would cover
                # nothing.
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
        if isinstance(decision, Edit):
            edited = replace(approval.call, args=decision.args)
            check_edit(decision.args, self.edit_schema(approval))
            verdict = self.engine.evaluate(edited)
            if verdict.kind == "deny":
                raise ForbiddenError(f"the policy denies the edited call: {verdict.reason}")
            # An edit may move the call under a stricter rule: its deciders must qualify too,
            # and it may not need more people than the call it replaces.
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
        """A person's decision: approve, edit, respond or reject — expiry and cancelling are
        not theirs to take — and an edit's arguments within the gate's limits."""
        checked = decision_kind(decision)
        if isinstance(checked, Edit):
            if not isinstance(checked.args, dict):
                raise InvalidDecisionError("an edit's arguments are a JSON object")
            try:
                problem = self.limits.check(checked.args)
            except InvalidArgumentsError as exc:
                problem = f"the edited arguments are not JSON: {exc}"
            if problem is not None:
                raise InvalidDecisionError(f"the edit is refused: {problem}")
        return checked

    # -- waiting ---------------------------------------------------------------------------

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

    # -- grants ----------------------------------------------------------------------------

    async def grants(self, *, tool: str | None = None) -> list[Grant]:
        """The grants in force, oldest first."""
        return await self.store.list_grants(tool=tool)

    def grant_now(self, grant: Grant) -> Grant | None:
        """`grant` with its granter's roles as the directory (`roles_of`) says they are now,
        or None when the directory no longer knows the granter: it lets nothing through.
        Without a directory, the grant as stored."""
        if self.roles_of is None:
            return grant
        roles = self.roles_of(grant.created_by)
        if roles is None:
            return None
        return replace(grant, roles=tuple(sorted(roles)))

    def grant_inactive(self, grant: Grant) -> str | None:
        """Why `grant` lets no call through now, whatever the call, on account of its granter:
        no longer known to the directory, or without any of the roles its rule needs now;
        None when its granter could still approve what it covers (or it is revoked, or its
        rule gone from the policy: `grant_to_dict` says those)."""
        current = self.grant_now(grant)
        if current is None:
            return f"its granter {grant.created_by!r} is no longer a known principal"
        needed = self.engine.approvers(grant.rule_digest)
        if needed and not set(current.roles) & set(needed):
            return (
                f"its granter {grant.created_by!r} no longer has any of the roles "
                f"{list(needed)!r} its rule needs"
            )
        return None

    async def revoke_grant(self, grant_id: str, *, actor: str) -> None:
        now = await self.time()
        record = AuditRecord(actor=actor, action="revoke", subject=grant_id, at=now)
        await self.store.revoke_grant(grant_id, actor=actor, at=now, audit=[record])


def _recorded(
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
    kind = {"run": "allow", "block": "deny", "hold": "ask"}[record.kind]
    verdict = Verdict(kind=kind, rule=record.rule, reason=record.reason)  # type: ignore[arg-type]
    if record.kind == "hold" and approval is None:  # pragma: no cover - written together
        raise ConflictError(f"the approval of call {call.id!r} is missing")
    return Outcome(call=call, kind=record.kind, verdict=verdict, approval=approval, recorded=True)


def _lapsed_or_ruled(
    current: Sequence[Approval],
    ruled: Mapping[str, tuple[Approval, AuditRecord]],
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


def _context_of(approval: Approval) -> Context:
    """Where `approval`'s call is judged: its run, thread and requester."""
    return Context(
        run_id=approval.run_id, thread_id=approval.thread_id, requested_by=approval.requested_by
    )


def saved_policy(gate: Gate) -> AdoptPolicy:
    """An `adopt_policy` for `gate`: put in force the policy the store saved last, when it is
    not the gate's (the version read first; the document only when it is new here). The server
    that saved it judged the waiting calls by it already."""

    async def adopt() -> None:
        version = await gate.store.latest_policy_version()
        if version is None or version == gate.engine.version:
            return
        latest = await gate.store.latest_policy()
        if latest is not None:
            saved, document = latest
            gate.engine = PolicyEngine(Policy.from_dict(document, source=f"policy version {saved}"))

    return adopt
