"""The promise, kept once for every integration: `step` reads what to do with a call of the
framework's run — run it (as proposed, or as a person edited it), answer the model, or wait —
and `claim` / `once` run it, only the call exactly as allowed, approved or edited, exactly once
under its key. Whatever an integration, a tampered checkpoint or a forged resume payload hands
over, anything else is refused here and audited."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from signoff import telemetry
from signoff.errors import CallRefused, ClaimLost, InvalidArgumentsError, InvalidEditError
from signoff.gate.answers import answer_text, blocked_text
from signoff.gate.edits import check_edit
from signoff.gate.external.verdicts import Verdicts
from signoff.gate.once import Claim, Recorded
from signoff.gate.steps import Held, Step
from signoff.store.base import AuditRecord
from signoff.store.external import ExternalRecord, JudgedOtherwise
from signoff.types import Approval, ToolCall

__all__ = ["Promise"]

logger = logging.getLogger("signoff.external")


class Promise(Verdicts):
    """`ExternalRuns`' reading of what to do with a call, and its running of one."""

    def unfit(self, approval: Approval, schema: Mapping[str, Any] | None) -> str | None:
        """Why an edited call may not run now: its arguments break the tool's `schema`, or the
        policy denies it (both were checked when decided, where the decider knew them)."""
        try:
            check_edit(approval.call.args, schema)
        except InvalidEditError as exc:
            return f"the edited arguments do not fit the tool's schema: {exc}"
        return self.gate.denied_now(approval)

    async def step_of(
        self,
        call: ToolCall,
        *,
        thread: str,
        turn: str | None,
        requested_by: str | None,
        schema: Mapping[str, Any] | None = None,
        found: Held | None = None,
        resumed: bool = False,
    ) -> Step:
        """What to do with `call` of `thread`'s model response `turn` (`step`): as `found`
        stands — how it was judged before, when the framework resumes (`resumed`: read here,
        `held_call`; a confirmed call runs as signoff's store says) — else judged now."""
        if found is None and resumed:
            found = await self.held_call(thread, call, turn)
        if found is None:
            judged = await self.judged([call], thread=thread, requested_by=requested_by, turn=turn)
            found = judged[call.id]
        return await self.step(found, call, key=self.key(thread, call.id, turn), schema=schema)

    async def steps(
        self, calls: Sequence[ToolCall], *, thread: str, turn: str | None,
        requested_by: str | None,
    ) -> dict[str, Step]:  # fmt: skip
        """What to do with each call of `thread`'s model response `turn` (`step`), by call id:
        the calls judged together, or read as they were judged before."""
        held = await self.judged(calls, thread=thread, requested_by=requested_by, turn=turn)
        return {c.id: await self.step(held[c.id], c, key=self.key(thread, c.id, turn))
                for c in calls}  # fmt: skip

    async def held_call(self, thread: str, call: ToolCall, turn: str | None) -> Held | None:
        """How `call` of `thread`'s model response `turn` stands, when it was judged before (a
        confirmed or resumed call: what runs is what signoff's store says); else None."""
        return (await self.held(thread, [call.id], turn=turn)).get(call.id)

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
        proposed = self.kinded(proposed)
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

    async def claim(
        self, key: str, call: ToolCall, *, idempotent: bool = False
    ) -> Claim | Recorded:
        """Claim `key` to run `call` now — the call exactly as it is about to run — or get its
        recorded result (`Ledger.claim`). Refused (`CallRefused`, audited) unless `call` is
        what the policy allowed under `key`, or what a person approved, or their edit
        exactly: whatever an integration, a tampered checkpoint or a forged resume payload
        hands over, nothing else runs. A call the policy marks read-only or idempotent (a
        rule's ``idempotent: true``) is claimed as `idempotent` says: without waiting for the
        disk, and run again when a crash may have cut it short."""
        call = self.kinded(call)
        idempotent = idempotent or self.gate.idempotent(call)

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
                recorded = await self.ledger.claim(claim.key, idempotent=claim.idempotent)
                if isinstance(recorded, Recorded):
                    return recorded.value
                # Free again: an idempotent call's claim, lost with the database server's
                # crash before it reached the disk. It ran: its result is recorded now.
                await recorded.finish(value)
            return value

        return await self.near(record())

    async def fail(self, claim: Claim, exc: BaseException) -> None:
        """Record that the call raised `exc` (unless another worker took the key over: its
        record stands); the caller re-raises `exc` itself."""

        async def record() -> None:
            with contextlib.suppress(ClaimLost):
                await claim.fail(exc)

        await self.near(record())


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
