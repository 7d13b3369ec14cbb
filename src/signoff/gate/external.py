"""The machinery every framework integration shares (ARCHITECTURE §6, "External runs").

A framework keeps its own state (a checkpoint, a session, a run state); signoff keeps what it
owns. `ExternalRuns` is what an integration holds: the gate that judges each call of the
framework's run — kept by (origin, thread, model response, call id), so a re-run node, a retry
or another replica gets the same verdict and the same approval —, `step`, the one place an
integration reads what to do with a call, `claim`/`once`, the one way it runs one (only the call
as allowed, approved or edited, exactly once), the pauses to resume once their calls are
decided, and decisions taken the framework's way (a LangChain ``Command(resume=...)``) recorded
as whoever sent them, or the principal configured for that. It works from synchronous code and
from any event loop (`Bridge`). A `Resumer` resumes the framework's paused runs as decisions
arrive, on any number of replicas.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import inspect
import logging
import os
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Mapping,
    Sequence,
)
from dataclasses import replace
from datetime import timedelta
from typing import Any, TypeVar

from signoff import telemetry
from signoff.errors import (
    CallRefused,
    ClaimLost,
    ConflictError,
    ForbiddenError,
    InvalidArgumentsError,
    InvalidEditError,
    SignoffError,
    StaleDecisionError,
)
from signoff.gate.answers import answer_text, blocked_text
from signoff.gate.bridge import Bridge, run_here
from signoff.gate.core import CheckContext, Gate, Outcome, RolesOf, saved_policy
from signoff.gate.edits import check_edit
from signoff.gate.ids import external_key, new_id
from signoff.gate.once import Claim, Ledger, Recorded
from signoff.gate.preview import PreviewFunction, Previews
from signoff.gate.resumed import Outputs, Resumed
from signoff.gate.seen import Seen
from signoff.gate.steps import Held, Step
from signoff.gate.transcript import bounded
from signoff.gate.worker import work_ready
from signoff.policy import Policy
from signoff.store.base import AuditRecord
from signoff.store.external import ExternalRecord, JudgedOtherwise, NewPause, Pause
from signoff.types import Approval, Decision, ToolCall, canonical_json

__all__ = [
    "ExternalRuns",
    "Held",
    "Pause",
    "Resumed",
    "Resumer",
    "Step",
    "connect",
]

logger = logging.getLogger("signoff.external")
T = TypeVar("T")
V = TypeVar("V")

LEASE = timedelta(minutes=5)


class ExternalRuns:
    """signoff's gate, ledger and pauses for the runs of one framework (`origin`)."""

    def __init__(
        self,
        gate: Gate,
        *,
        origin: str,
        principal: str | None = None,
        roles: Iterable[str] = (),
        bridge: Bridge | None = None,
        ledger: Ledger | None = None,
        previews: Previews | Mapping[str, PreviewFunction] | None = None,
    ) -> None:
        """`principal` and `roles` are who decides when a decision arrives the framework's way
        (a resume payload) and the framework cannot say who sent it: the gate holds them to the
        same rules as anyone (approvers, self-approval). Without a principal such a decision is
        refused: nobody is taken to have decided on purpose. Built inside a running loop, the
        bridge is that loop; else give one. `previews` are the preview functions of the
        framework's tools by name (`signoff.gate.preview`): what a held call would change,
        computed here, in the app's process, when it is held."""
        self.gate = gate
        self.store = gate.store
        self.origin = origin
        self.principal = principal
        self.roles = frozenset(roles)
        if bridge is None:
            try:
                bridge = Bridge(asyncio.get_running_loop())
            except RuntimeError:
                raise SignoffError(
                    "ExternalRuns needs the event loop its store runs on: build it inside that "
                    "loop, pass bridge=, or use signoff.gate.external.connect()"
                ) from None
        self.bridge = bridge
        self._anywhere = bool(getattr(gate.store, "any_loop", False))
        self.ledger = ledger or Ledger(gate.store)
        if self.ledger.renew_on is None and self._anywhere:
            # The store's work may run on a caller's loop that stops (a thread's own, between
            # synchronous calls) or is kept busy by the call: the claims renew on the bridge's.
            self.ledger.renew_on = bridge.loop
        self.previews = previews if isinstance(previews, Previews) else Previews(previews)
        self._records: Seen[ExternalRecord] = Seen()
        self._decided: Seen[Approval] = Seen()
        self._unwritten: Seen[ExternalRecord] = Seen()
        self._closers: list[Callable[[], Coroutine[Any, Any, Any]]] = []

    async def near(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await `coro` — the store's work, which holds nothing of one loop's — on the caller's
        loop when the store serves any loop (SQLite, on threads of its own): one hop between
        threads fewer each way. Else on the bridge's, as `Bridge.arun`."""
        if self._anywhere:
            return await coro
        return await self.bridge.arun(coro)

    # -- judging ---------------------------------------------------------------------------

    async def judge(
        self,
        calls: Sequence[ToolCall],
        *,
        thread: str,
        requested_by: str | None = None,
        turn: str | None = None,
    ) -> list[Outcome]:
        """Judge the calls of one model turn (on the bridge's loop): run, block or hold — or, for
        calls judged before, the same outcome with their approval as it stands now. `turn`
        names the model response they came from, where the framework knows it: the same call
        id in another response is another call."""
        context = CheckContext(
            thread_id=thread, requested_by=requested_by, origin=self.origin, turn=turn
        )
        unwritten = self._unwritten.get_many(self.key(thread, c.id, turn) for c in calls)
        outcomes = await self.near(
            self.gate.hold_external(calls, context, unwritten=unwritten, previews=self.previews)
        )
        kept = [(o.record.key, o.record, o.written) for o in outcomes if o.record is not None]
        self._records.add((key, record) for key, record, _ in kept)
        # Verdicts to run, written with each call's claim (`claim`); one the store had stands.
        self._unwritten.drop(key for key, _, written in kept if written)
        self._unwritten.add((key, record) for key, record, written in kept if not written)
        return outcomes

    async def judged(
        self,
        calls: Sequence[ToolCall],
        *,
        thread: str,
        requested_by: str | None = None,
        turn: str | None = None,
    ) -> dict[str, Held]:
        """`judge` the turn's calls: how each stands, by call id (as `held` says it)."""
        seen = self._records.get_many({self.key(thread, c.id, turn) for c in calls})
        fresh = [c for c in calls if self.key(thread, c.id, turn) not in seen]
        if not fresh:
            return await self.held(thread, [c.id for c in calls], turn=turn)  # only read again
        outcomes = await self.judge(fresh, thread=thread, requested_by=requested_by, turn=turn)
        # The record a call is kept under, with its approval as the same transaction read it —
        # but for a held call proposed again with other arguments, blocked without it.
        found = {o.call.id: Held(record=o.record, approval=o.approval)
                 for o in outcomes if o.record is not None}  # fmt: skip
        again = [i for i, h in found.items() if h.record.kind == "hold" and h.approval is None]
        again += [c.id for c in calls if c.id not in found]  # judged before, by this process
        return found | (await self.held(thread, again, turn=turn) if again else {})

    async def held(
        self, thread: str, call_ids: Sequence[str], *, turn: str | None = None
    ) -> dict[str, Held]:
        """The calls of `thread` (and `turn`) judged before, by call id, with their approvals
        now."""
        known = self.known(thread, call_ids, turn=turn)
        if known is not None:
            return known

        async def read() -> dict[str, Held]:
            records = await self.records(thread, call_ids, turn=turn)
            ids = [r.approval_id for r in records.values() if r.approval_id is not None]
            approvals = await self._approvals(ids)
            return {
                call_id: Held(
                    record=r,
                    approval=None if r.approval_id is None else approvals.get(r.approval_id),
                )
                for call_id, r in records.items()
            }

        return await self.near(read())

    async def records(
        self, thread: str, call_ids: Sequence[str], *, turn: str | None = None
    ) -> dict[str, ExternalRecord]:
        """How the calls of `thread` (and `turn`) were judged, by call id: the verdicts alone,
        which never change (`held` adds the approvals as they stand)."""
        keys = {self.key(thread, i, turn): i for i in call_ids}
        records = self._unwritten.get_many(keys) | self._records.get_many(keys)
        missing = [k for k in keys if k not in records]
        if missing:
            found = await self.near(self.store.external_calls(missing))
            self._records.add(found.items())
            records.update(found)
        return {keys[k]: r for k, r in records.items()}

    async def _approvals(self, ids: Sequence[str]) -> dict[str, Approval]:
        """The approvals by id as they stand (read from the store unless decided: final). Each
        caller gets its own copy: a call's arguments are a dict it may change."""
        found = {i: copy.deepcopy(a) for i, a in self._decided.get_many(ids).items()}
        wanted = [i for i in ids if i not in found]
        if wanted:
            read = await self.store.get_approvals(wanted)
            self._decided.add((a.id, copy.deepcopy(a)) for a in read if not a.pending)
            found.update((a.id, a) for a in read)
        return found

    def known(
        self, thread: str, call_ids: Sequence[str], *, turn: str | None = None
    ) -> dict[str, Held] | None:
        """How the calls stand, without the store, when this process saw every one judged and
        none was held (a verdict to run or block never changes; an approval may): else None."""
        keys = {self.key(thread, i, turn): i for i in call_ids}
        records = self._unwritten.get_many(keys) | self._records.get_many(keys)
        if len(records) < len(keys) or any(r.kind == "hold" for r in records.values()):
            return None
        return {keys[k]: Held(record=r, approval=None) for k, r in records.items()}

    def unfit(self, approval: Approval, schema: Mapping[str, Any] | None) -> str | None:
        """Why an edited call may not run now: its arguments break the tool's `schema`, or the
        policy denies it (both were checked when decided, where the decider knew them)."""
        try:
            check_edit(approval.call.args, schema)
        except InvalidEditError as exc:
            return f"the edited arguments do not fit the tool's schema: {exc}"
        return self.gate.denied_now(approval)

    async def step(
        self,
        found: Held,
        proposed: ToolCall,
        *,
        key: str,
        schema: Mapping[str, Any] | None = None,
    ) -> Step:
        """What an integration does with `proposed` — the call as the framework's state holds
        it now — given how it was judged and decided (`found`): run a call (the proposed one,
        or a person's edit of it), answer the model, or wait. The one place every integration
        reads a verdict and a decision from; a call that is not the one let through is
        refused and audited here, and `claim` enforces the same when the call runs."""
        record, approval = found.record, found.approval
        if record.kind == "block":
            return Step(kind="answer", key=key, text=blocked_text(record.reason), ok=False)
        if record.kind == "run":
            problem = _mismatch(proposed, record.digest, "it was judged")
            if problem is not None:
                return await self._refused(key, proposed, record, problem)
            # Judged to run (by the policy, or a grant) before a policy that denies it: not now.
            denied = self.gate.denied_call(proposed)
            if denied is not None:
                await self.near(self._audit_refusal(key, proposed, record, denied))
                return Step(kind="answer", key=key, text=blocked_text(denied), ok=False)
            return Step(kind="run", key=key, call=proposed)
        if approval is None:  # pragma: no cover - a held call's record names its approval
            return await self._refused(key, proposed, record, "its approval is missing")
        if approval.pending:
            return Step(kind="wait", key=key, approval=approval)
        if approval.status not in ("approved", "edited"):
            text, ok = answer_text(approval)
            return Step(kind="answer", key=key, text=text, ok=ok, approval=approval)
        if approval.status == "approved":
            problem = _mismatch(proposed, approval.call.digest, "it was approved")
            if problem is not None:
                return await self._refused(key, proposed, record, problem, approval)
            await self.near(self.gate.catch_up())
            denied = self.gate.denied_now(approval)
            if denied is not None:
                await self.near(self._audit_refusal(key, proposed, record, denied))
                text = blocked_text(f"{proposed.name!r} was approved, but {denied}")
                return Step(kind="answer", key=key, text=text, ok=False, approval=approval)
            return Step(kind="run", key=key, call=proposed, approval=approval)
        # Edited. The framework holds the call as asked (LangGraph, the Agents SDK, ADK) or as
        # edited (Pydantic AI resumes with the edit): either is the call decided on.
        edited = replace(approval.call, agent=proposed.agent)
        if _digest(proposed) not in (record.digest, edited.digest):
            problem = "it is not the call a person edited (its tool or arguments changed since)"
            return await self._refused(key, proposed, record, problem, approval)
        await self.near(self.gate.catch_up())
        problem = self.unfit(
            approval, self.gate.edit_schema(approval) if schema is None else schema
        )
        if problem is not None:
            return await self._refused(key, proposed, record, problem, approval)
        return Step(kind="run", key=key, call=edited, edited=approval.call.args,
                    approval=approval)  # fmt: skip

    async def _refused(
        self,
        key: str,
        call: ToolCall,
        record: ExternalRecord | None,
        problem: str,
        approval: Approval | None = None,
    ) -> Step:
        """Audit that `call` is not run, and the answer that tells the model so."""
        await self.near(self._audit_refusal(key, call, record, problem))
        text = blocked_text(f"{call.name!r} is not the call signoff let through: {problem}")
        return Step(kind="answer", key=key, text=text, ok=False, approval=approval)

    async def _audit_refusal(
        self, key: str, call: ToolCall, record: ExternalRecord | None, problem: str
    ) -> None:
        await self.store.append_audit([
            AuditRecord(
                actor="signoff",
                action="refused",
                subject=(record.approval_id if record else None) or key,
                at=self.store.now(),
                data={"origin": self.origin, "tool": call.name[:200], "digest": _digest(call),
                      "judged_digest": record.digest if record else None,
                      "thread_id": record.thread_id if record else None,
                      "call_id": call.id[:200], "reason": problem},
            )
        ])  # fmt: skip
        logger.warning("signoff refused a %s call of %r: %s", self.origin, call.name, problem)

    def key(self, thread: str, call_id: str, turn: str | None = None) -> str:
        """The key a call of this origin's `thread` (and model response `turn`) is kept under,
        and run once under."""
        return external_key(self.origin, thread, call_id, turn)

    # -- deciding the framework's way ------------------------------------------------------

    async def decide(
        self,
        decisions: Mapping[str, Decision],
        *,
        actor: str | None = None,
        roles: Iterable[str] | None = None,
        versions: Mapping[str, int] | None = None,
    ) -> dict[str, Approval]:
        """Take decisions that arrived through the framework (a resume payload) as `actor` when
        the framework says who sent them (with `roles`, default none), else as the
        integration's principal with its roles — each compare-and-set: one taken elsewhere
        first stands, and one this decider may not take (approvers, their own call) is not
        taken, nor one sent on a version of its approval (`versions`, as the payload names
        them) that changed since. With neither an actor nor a principal nothing is taken.
        Returns every approval as it stands."""
        decider: str | None = actor or self.principal
        if actor is not None:
            held_roles = frozenset(roles or ())
        else:
            held_roles = self.roles if roles is None else frozenset(roles)

        async def take() -> dict[str, Approval]:
            if decider is None:
                logger.warning(
                    "decisions sent through %s were not taken: it cannot tell who sent them; "
                    "decide in signoff, or name the principal such decisions are taken as "
                    "(connect(principal=...))",
                    self.origin,
                )
            for approval_id, decision in decisions.items():
                if decider is None:
                    break
                try:
                    with telemetry.channel("framework"):
                        await self.gate.decide(
                            approval_id,
                            decision,
                            actor=decider,
                            roles=held_roles,
                            version=(versions or {}).get(approval_id),
                        )
                except StaleDecisionError as exc:
                    logger.warning("a decision sent through %s was not taken: %s",
                                   self.origin, exc)  # fmt: skip
                except ConflictError:
                    pass  # decided elsewhere first: that decision stands
                except ForbiddenError as exc:
                    logger.warning("a decision sent through %s was not taken: %s",
                                   self.origin, exc)  # fmt: skip
            found = await self.store.get_approvals(list(decisions))
            return {a.id: a for a in found}

        return await self.bridge.arun(take())

    # -- pauses ----------------------------------------------------------------------------

    def pause_of(
        self,
        *,
        thread: str,
        approvals: Sequence[str],
        data: Mapping[str, Any],
        agent: str | None = None,
        conversation: Sequence[Mapping[str, Any]] | None = None,
    ) -> NewPause:
        """The pause of the run of `thread` on `approvals`, with what resuming it needs and —
        for the people who decide — the thread's `conversation` so far (`transcript` messages,
        kept `bounded`): the same run paused on the same calls (a re-run, another process) is
        the same pause. Recorded by `pause`, or with the thread's new entries
        (`Store.append_paused`, then `paused`)."""
        if conversation is not None:
            data = {**data, "conversation": bounded(conversation)}
        pause_id = hashlib.sha256(
            canonical_json([self.origin, thread, sorted(approvals)])
        ).hexdigest()
        return NewPause(id=pause_id, origin=self.origin, thread_id=thread, agent=agent,
                        data=dict(data), approvals=list(approvals),
                        at=self.store.now())  # fmt: skip

    async def pause(
        self,
        *,
        thread: str,
        approvals: Sequence[str],
        data: Mapping[str, Any],
        agent: str | None = None,
        conversation: Sequence[Mapping[str, Any]] | None = None,
    ) -> Pause:
        """Record the run's pause (`pause_of`)."""
        new = self.pause_of(thread=thread, approvals=approvals, data=data, agent=agent,
                            conversation=conversation)  # fmt: skip
        return self.paused(new, await self.near(self.store.save_pause(new)))

    def paused(self, new: NewPause, saved: Pause) -> Pause:
        """`saved`, the pause `new` as recorded, counted unless recorded before."""
        if saved.created_at == new.at:
            telemetry.observer.paused("framework")
        return saved

    async def went_on(self, approvals: Sequence[str]) -> None:
        """The run went on past every pause on these approvals: no resumer needs to resume
        them."""
        await self.near(self.store.finish_pauses(approvals, now=self.store.now()))

    async def waiting(self, thread: str, *, limit: int = 100) -> list[Approval]:
        """The calls of `thread` (of this origin) that wait for a person now, newest first:
        what an app tells its user to decide (each approval's ``/approvals/{id}`` page)."""
        pending = self.store.list_approvals(
            status="pending", origin=self.origin, thread_id=thread, limit=limit
        )
        return await self.near(pending)

    async def open_pause(self, approvals: Sequence[str]) -> Pause | None:
        """The newest pause not done on any of these approvals (the run's last interrupt)."""
        return await self.near(self.store.open_pause(approvals))

    # -- running once ----------------------------------------------------------------------

    async def claim(
        self, key: str, call: ToolCall, *, idempotent: bool = False
    ) -> Claim | Recorded:
        """Claim `key` to run `call` now — the call exactly as it is about to run — or get its
        recorded result (`Ledger.claim`). Refused (`CallRefused`, audited) unless `call` is
        what the policy allowed under `key`, or what a person approved, or their edit
        exactly: whatever an integration, a tampered checkpoint or a forged resume payload
        hands over, nothing else runs."""

        async def checked() -> Claim | Recorded:
            judged = self._unwritten.get_many([key]).get(key)
            if judged is not None and judged.kind == "run" and _digest(call) == judged.digest:
                claim: Claim | Recorded | None = None
                try:
                    claim = await self.ledger.claim(
                        key, idempotent=idempotent, tool=call.name, digest=judged.digest,
                        judged=judged,
                    )  # fmt: skip
                except JudgedOtherwise as exc:
                    self._records.add([(key, exc.record)])  # that verdict stands: checked below
                self._unwritten.drop([key])  # written, or another's stands
                if claim is not None:
                    return claim
            await self._permit(key, call)
            return await self.ledger.claim(
                key, idempotent=idempotent, tool=call.name, digest=call.digest
            )

        return await self.near(checked())

    async def once(
        self,
        key: str,
        call: ToolCall,
        fn: Callable[[], Awaitable[Any]],
        *,
        idempotent: bool = False,
    ) -> Any:
        """Run `fn` — which runs `call` — (on the caller's loop, unlike `Ledger.once`) once
        under `key` and record what it returns (a JSON value); the recorded value when it ran
        before. Raises `CallRefused` as `claim` does, and `OutcomeUnknown` when a worker died
        inside it (unless `idempotent`)."""
        claim = await self.claim(key, call, idempotent=idempotent)
        if isinstance(claim, Recorded):
            return claim.value
        try:
            with telemetry.span("signoff.execute", telemetry.executing(call, self._held(key))):
                value = await fn()
        except Exception as exc:
            await self.fail(claim, exc)
            raise
        except BaseException:
            await self.near(claim.abandon())  # cancelled midway: whether it ran is unknown
            raise
        return await self.finish(claim, value)

    def _held(self, key: str) -> str | None:
        """The approval the call under `key` was held for, if it was (as `claim` read it)."""
        record = self._records.get_many([key]).get(key)
        return None if record is None else record.approval_id

    async def _permit(self, key: str, call: ToolCall) -> None:
        """Refuse `call` under `key` unless it is the call let through (see `claim`)."""
        records = self._records.get_many([key])
        if key not in records:
            records = await self.store.external_calls([key])
            self._records.add(records.items())
        record = records.get(key)
        problem: str | None
        if record is None:
            problem = "signoff's policy never judged it"
        elif record.kind == "block":
            problem = f"the policy blocked it ({record.reason})"
        elif record.kind == "run":
            problem = _mismatch(call, record.digest, "it was judged") or self.gate.denied_call(call)
        else:
            approval = (await self._approvals([record.approval_id or ""])).get(
                record.approval_id or ""
            )
            if approval is None or approval.status not in ("approved", "edited"):
                status = "missing" if approval is None else approval.status
                problem = f"it was not approved (its approval is {status})"
            else:
                await self.gate.catch_up()
                problem = _mismatch(call, approval.call.digest, f"it was {approval.status}")
                if problem is None and approval.status == "edited":
                    problem = self.unfit(approval, self.gate.edit_schema(approval))
                elif problem is None:
                    problem = self.gate.denied_now(approval)
        if problem is None:
            return
        await self._audit_refusal(key, call, record, problem)
        raise CallRefused(f"{call.name!r} is not the call signoff let through: {problem}")

    async def finish(self, claim: Claim, value: Any) -> Any:
        """Record `value` as the call's result and return the result that stands: `value`, or
        — when another worker took the key over while this one ran the call (its claim ran
        out) — the one that worker recorded, as every caller of the key gets it."""

        async def record() -> Any:
            try:
                await claim.finish(value)
            except ClaimLost:
                recorded = await self.ledger.claim(claim.key)
                if isinstance(recorded, Recorded):
                    return recorded.value
                await recorded.abandon()  # pragma: no cover - a lost claim's key is not free
                raise
            return value

        return await self.near(record())

    async def fail(self, claim: Claim, exc: BaseException) -> None:
        """Record that the call raised `exc` (unless another worker took the key over: its
        record stands); the caller re-raises `exc` itself."""

        async def record() -> None:
            with contextlib.suppress(ClaimLost):
                await claim.fail(exc)

        await self.near(record())

    # -- synchronous twins, for frameworks' sync paths -------------------------------------

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run one of this object's coroutines from synchronous code."""
        return self.bridge.run(coro)

    def run_near(self, coro: Coroutine[Any, Any, T]) -> T:
        """`run` for the store's work (as `near` awaits it): on a loop of the calling thread's
        own when the store serves any loop, with no hop to the bridge's thread and back."""
        if self._anywhere and not _in_loop():
            return run_here(coro)
        return self.bridge.run(coro)

    # -- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """Close what `connect` opened (the store, then the bridge's own loop, cancelling the
        work still on it). Stop a `Resumer` first: work cut off here cleans up against a store
        already closed, and its marks and claims run out with their leases."""
        closers, self._closers = self._closers, []
        for close in reversed(closers):
            self.bridge.run(close())
        self.bridge.close()


def connect(
    policy: Any,
    *,
    origin: str,
    database: str | None = None,
    principal: str | None = None,
    roles: Iterable[str] = (),
    schemas: Any = None,
    roles_of: RolesOf | None = None,
    previews: Previews | Mapping[str, PreviewFunction] | None = None,
    follow_saved_policy: bool = False,
) -> ExternalRuns:
    """Open signoff for a framework's synchronous or asynchronous code: the store at
    `database` (or ``SIGNOFF_DATABASE_URL``, or ``signoff.db``) on a loop of its own, a gate over
    `policy` (a `Policy`, a `PolicyEngine`, or a policy file's path). `roles_of` says each
    principal's roles now (None: no longer one), so a grant is judged by its granter's roles
    at the moment it is used in this process too; without it, the roles stored with the grant
    stand. `previews` are the tools' preview functions by name (see `ExternalRuns`).
    `follow_saved_policy`: judge by the policy a `signoff serve` on the same database saved last
    (`PUT /v1/policy`), read before each approved call runs and whenever a newer one is found
    deciding — `policy` only until one is saved. `close()` it when done."""
    from signoff.store import open_store

    if isinstance(policy, str | os.PathLike):
        policy = Policy.from_file(str(policy))
    bridge = Bridge()
    opened = open_store(database)
    try:
        store = bridge.run(opened.__aenter__())
    except BaseException:
        bridge.close()
        raise
    gate = Gate(policy, store, schemas=schemas, roles_of=roles_of)
    if follow_saved_policy:
        gate.adopt_policy = saved_policy(gate)
    runs = ExternalRuns(
        gate, origin=origin, principal=principal, roles=roles, bridge=bridge, previews=previews
    )
    runs._closers.append(lambda: opened.__aexit__(None, None, None))
    return runs


class Resumer:
    """Resumes one framework's paused runs once every held call of a pause is decided, like
    `Runner.work()` for signoff's own runs: woken by decisions (in this process at once, from
    others through PostgreSQL's NOTIFY, or by polling), each pause claimed by one worker
    (a lease) and handed to `resume`. Any number of replicas may work the same origin.

    What a resume returned reaches the app two ways, the same for every framework:
    `on_resumed` (called with each `Resumed`, sync or async, on the resumer's loop), and
    `wait(thread)` / ``await resumed(thread)`` for one thread's next resume. Both see the
    resumes of this process's resumer only: a thread another replica resumed is read from
    the framework (its checkpoint, its session)."""

    def __init__(
        self,
        runs: ExternalRuns,
        resume: Callable[[Pause], Awaitable[Resumed | bool | None]],
        *,
        lease: timedelta = LEASE,
        owner: str | None = None,
        on_resumed: Callable[[Resumed], Any] | None = None,
    ) -> None:
        self.runs = runs
        self.resume = resume
        """Resume the framework's run of this pause (it must not raise for a run that went on
        already: check, and return). A `Resumed` with what the run returned when this call
        ran it; False when it did not go on and the pause waits on (another process holds the
        run, or nothing it waits on is decided); None when the run is past the pause."""
        self.lease = lease
        self.owner = owner or f"{os.getpid()}-{new_id()[-8:]}"
        self.on_resumed = on_resumed
        """Called with each run this resumer resumed, once it is over (an exception it raises
        is logged: the pause stays done)."""
        self._outputs = Outputs()

    async def resumed(self, thread: str, *, timeout: float | None = None) -> Resumed:
        """The thread's next resume by this resumer (at once, if one came since the last was
        taken), from any event loop. `TimeoutError` after `timeout` seconds."""
        future = self._outputs.take(thread)
        if future.done():
            return future.result()
        try:
            async with asyncio.timeout(timeout):
                return await asyncio.wrap_future(future)
        except BaseException:  # a timeout, a cancel: what came meanwhile is kept
            self._outputs.forget(thread, future)
            raise

    def wait(self, thread: str, *, timeout: float | None = None) -> Resumed:
        """`resumed`, from synchronous code (while `start` works in the background)."""
        future = self._outputs.take(thread)
        try:
            return future.result(timeout)
        except BaseException:  # a timeout, Ctrl+C: what came meanwhile is kept
            self._outputs.forget(thread, future)
            raise

    async def work(self, *, poll_interval: float = 1.0, concurrency: int = 8) -> None:
        """Resume pauses as they become ready, until cancelled (on the bridge's loop)."""
        await self.runs.bridge.arun(self._work(poll_interval, concurrency))

    async def _work(self, poll_interval: float, concurrency: int) -> None:
        async def ready() -> list[str]:
            store = self.runs.store
            return await store.ready_pauses(self.runs.origin, now=await store.clock())

        await work_ready(self.runs.gate, ready, self.resume_ready, poll_interval=poll_interval,
                         concurrency=concurrency)  # fmt: skip

    async def resume_ready(self, pause_id: str) -> bool:
        """Claim the pause and resume its run, if it is ready and nobody else has it. Returns
        whether this worker resumed it. A resume that fails leaves the pause to be tried again."""
        store = self.runs.store
        pause = await store.claim_pause(
            pause_id, owner=self.owner, now=store.now(), lease=self.lease
        )
        if pause is None:
            return False
        try:
            with telemetry.span("signoff.resume", {"signoff.origin": pause.origin}):
                went_on = await self.resume(pause)
        except Exception:  # a worker outlives one run's trouble; the pause is tried again
            logger.exception("resuming %s pause %s failed", pause.origin, pause.id)
            await store.release_pause(pause.id, owner=self.owner, status="waiting", now=store.now())
            return False
        if went_on is False:  # never marked done with a call it waits on unanswered
            await store.release_pause(pause.id, owner=self.owner, status="waiting", now=store.now())
            return False
        await store.release_pause(pause.id, owner=self.owner, status="done", now=store.now())
        telemetry.observer.resumed("framework")
        self.runs.gate.notifier.notify(pause.id)
        if isinstance(went_on, Resumed):
            await self._deliver(replace(went_on, pause=pause.id, origin=pause.origin))
        return True

    async def _deliver(self, resumed: Resumed) -> None:
        self._outputs.put(resumed)
        if self.on_resumed is None:
            return
        try:
            called = self.on_resumed(resumed)
            if inspect.isawaitable(called):
                await called
        except Exception:  # the app's callback: the pause is done whatever it does
            logger.exception("on_resumed failed for %s thread %s", resumed.origin, resumed.thread)

    @contextlib.asynccontextmanager
    async def running(self, *, poll_interval: float = 1.0) -> AsyncIterator[Resumer]:
        """Work in the background while the block runs."""
        task = asyncio.ensure_future(self.work(poll_interval=poll_interval))
        try:
            yield self
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def start(self, *, poll_interval: float = 1.0) -> Callable[[], None]:
        """Work on the bridge's loop in the background, for synchronous apps; returns `stop`,
        which returns once the work — and any resume under way — has stopped (so the store can
        be closed after it)."""

        async def begin() -> asyncio.Task[None]:
            return asyncio.create_task(self._work(poll_interval, 8))

        task = self.runs.bridge.run(begin())

        async def halt() -> None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

        def stop() -> None:
            self.runs.bridge.run(halt())

        return stop


def _mismatch(call: ToolCall, digest: str, when: str) -> str | None:
    """Why `call` is not the call whose digest is `digest`, or None when it is."""
    found = _digest(call)
    if found == digest:
        return None
    return f"it is not the call as {when} (its tool or arguments changed since)"


def _digest(call: ToolCall) -> str | None:
    try:
        return call.digest
    except InvalidArgumentsError:
        return None


def _in_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
