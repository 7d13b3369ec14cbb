"""What signoff answers a coding agent's hook, on the same `ExternalRuns` core as every
framework: the call is judged (its session the thread, its call id the key), a call that asks
is held and waits for a person's decision from any channel up to a bound, and the answer is the
decision's — allow (with a person's edit as the new input), or deny with the reason the model
reads. A call let through is recorded in the ledger as handed to the agent, once: the same call
id is never let through twice. After it ran, what it returned is audited beside its decision.
Claude Code's ``AskUserQuestion`` is held as a question (`asking`), and allowed with the
person's answer as its input.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import KW_ONLY, InitVar, dataclass, replace
from typing import Any, Literal

from signoff.errors import ApprovalTimeout, CallRefused
from signoff.gate import Gate
from signoff.gate.answers import blocked_text
from signoff.gate.bridge import Bridge
from signoff.gate.external import ExternalRuns, Step
from signoff.gate.once import Recorded
from signoff.gate.questions import question_result
from signoff.protocols.hooks.asking import answered_input
from signoff.protocols.hooks.calls import AGENTS, Agent, HookCall, tail
from signoff.protocols.hooks.files import previews
from signoff.store.records import AuditRecord
from signoff.types import Answer as AnswerDecision
from signoff.types import Approval, canonical_json

__all__ = ["Answer", "Hooks", "OnTimeout"]

logger = logging.getLogger("signoff.hooks")

OnTimeout = Literal["ask", "deny", "defer"]
Decision = Literal["allow", "deny", "ask", "defer"]


@dataclass(frozen=True, kw_only=True)
class Answer:
    """What the hook tells the agent: run the call (`updated_input`, a person's edit of it), do
    not (the `reason` is what the model reads), ask the person at the terminal, or stop the run
    with the call kept for a resume (Claude Code's ``defer``, honoured only without a
    terminal)."""

    decision: Decision
    reason: str
    updated_input: dict[str, Any] | None = None
    approval_id: str | None = None
    result: dict[str, Any] | None = None
    """Of a call of the ask tool whose question is done with: its outcome
    (`question_result`), for an agent whose hook can hand it to the tool (the Claude Agent
    SDK's in-process ask tool); the `reason` says it to the model otherwise."""


@dataclass
class Hooks:
    """signoff's answers to the hooks of coding agents, over `gate`. `wait` is how long a held
    call waits for a decision (seconds; keep it below the hook's own timeout); `on_timeout`
    what the agent is told when nobody decided by then: ``ask`` (its own prompt at the
    terminal), ``deny``, or ``defer`` (Claude Code without a terminal stops the run, the call
    kept; resumed, it asks the hook again). `runs`: one app's runs that every call is judged
    on (the Claude Agent SDK's, under the app's origin), else one per agent on `gate`;
    `on_hold` is told of each call that begins to wait for a person."""

    gate: Gate
    _: KW_ONLY
    wait: float
    on_timeout: OnTimeout = "ask"
    inbox: str | None = None
    """The web inbox's address, for the words an agent shows while a call waits."""
    on_hold: Callable[[Approval], object] | None = None
    per_principal: bool = False
    """Each principal's calls apart (a server's, where many run agents)."""
    bridge: InitVar[Bridge | None] = None
    from_disk: InitVar[bool] = False
    """A write's preview shows the file as it is on this machine (only where the hook runs as
    the agent's own user, never in a server)."""
    runs: InitVar[ExternalRuns | None] = None

    def __post_init__(
        self, bridge: Bridge | None, from_disk: bool, runs: ExternalRuns | None
    ) -> None:
        shown = previews(from_disk=from_disk)
        self._runs: dict[Agent, ExternalRuns] = {
            agent: runs or ExternalRuns(self.gate, origin=agent, bridge=bridge, previews=shown)
            for agent in AGENTS
        }
        self._unnamed = _LetThrough()

    async def answer(
        self, call: HookCall, *, requested_by: str | None, wait: float | None = None
    ) -> Answer | None:
        """The answer to a hook's report of `call` by the agent run by `requested_by`: for a
        call about to run, whether it may (waiting at most `wait`, when the hook says less
        than `Hooks.wait`); after one ran, None (its result is audited)."""
        if call.before:
            return await self.before(call, requested_by=requested_by, wait=wait)
        await self.after(call, requested_by=requested_by)
        return None

    async def before(
        self, call: HookCall, *, requested_by: str | None, wait: float | None = None
    ) -> Answer:
        """Whether `call` may run: judged, and — held for a person — decided within `wait`."""
        wait = self.wait if wait is None else min(wait, self.wait)
        runs = self._runs[call.agent]
        proposed, thread = call.call(), self._thread(call, requested_by)

        async def standing() -> Step:
            return await runs.step_of(proposed, thread=thread, turn=None, requested_by=requested_by)

        step = await standing()
        if step.kind == "wait":
            assert step.approval is not None
            await self._paused(runs, call, step.approval.id, requested_by)
            if self.on_hold is not None:
                self.on_hold(step.approval)
            try:
                await runs.bridge.arun(runs.gate.wait(step.approval.id, timeout=wait))
            except ApprovalTimeout:
                return self._unanswered(step, wait)
            step = await standing()
            if step.kind == "wait":  # pragma: no cover - a wait returns once decided
                return self._unanswered(step, wait)
        approval_id = None if step.approval is None else step.approval.id
        if step.kind == "answer" and call.kind == "question" and step.approval is not None:
            return self._answered(step.approval, call)
        if step.kind == "answer":
            outcome = _outcome(step.approval)
            return Answer(decision="deny", reason=_told(step), approval_id=approval_id,
                          result=outcome)  # fmt: skip
        assert step.call is not None
        return await self._let_through(runs, step, approval_id, call)

    async def _let_through(
        self, runs: ExternalRuns, step: Step, approval_id: str | None, call: HookCall
    ) -> Answer:
        """Allow the call — recorded in the ledger as handed to the agent, once — as it was
        judged: a person's edit, or the arguments resolved, in place of what the agent sent."""
        assert step.call is not None
        try:
            claim = await runs.claim(step.key, step.call)
        except CallRefused as exc:
            return Answer(decision="deny", reason=blocked_text(str(exc)), approval_id=approval_id)
        if isinstance(claim, Recorded):
            reason = "signoff let this call through once already; it does not run twice"
            return Answer(decision="deny", reason=reason, approval_id=approval_id)
        await runs.finish(claim, {"handed_to": runs.origin})
        if not call.named:
            self._unnamed.add(call, step.call.args)
        if step.approval is None:
            reason = "signoff: the policy allows this call"
        else:
            reason = f"signoff: {step.approval.status} by {step.approval.decided_by}"
        updated = step.edited
        if updated is None and call.args != call.asked:
            updated = call.args
        return Answer(decision="allow", reason=reason, updated_input=updated,
                      approval_id=approval_id)  # fmt: skip

    async def _paused(
        self, runs: ExternalRuns, call: HookCall, approval_id: str, requested_by: str | None
    ) -> None:
        """Keep the session's conversation with the held call, for the people who decide (the
        same call held again is the same pause)."""
        data = {"cwd": call.cwd, "repository": call.repository, "session": call.session}
        thread = self._thread(call, requested_by)
        await runs.pause(thread=thread, approvals=[approval_id], data=data, agent=call.path,
                         conversation=call.conversation)  # fmt: skip

    def _thread(self, call: HookCall, requested_by: str | None) -> str:
        """The thread a call is kept in: its session — on a server, as the principal running
        the agent has it, so that one who reads another's session and call ids in the inbox
        reaches none of its calls (lets none through, takes none's place, ends no approval)."""
        if not self.per_principal or requested_by is None:
            return call.session
        return f"{requested_by}:{call.session}"

    def _answered(self, approval: Approval, call: HookCall) -> Answer:
        """The hook's answer to Claude Code's ``AskUserQuestion`` once its question is done
        with: the person's answer as the input the tool reads it from (so the tool's result is
        the answer), their reason for declining, or — nobody answered in the question's time —
        what the hook says when nobody decides in time."""
        decision = approval.decision
        if isinstance(decision, AnswerDecision):
            return Answer(
                decision="allow", reason=f"signoff: answered by {approval.decided_by}",
                updated_input=answered_input(call.asked, decision.value), approval_id=approval.id,
            )  # fmt: skip
        said = question_result(approval)
        if said["status"] == "declined":
            reason = f"A person declined to answer this in signoff: {said['reason']}"
            return Answer(decision="deny", reason=reason, approval_id=approval.id)
        reason = f"Nobody answered this question in signoff in time (question {approval.id})"
        return Answer(decision=self.on_timeout, reason=reason, approval_id=approval.id)

    def _unanswered(self, step: Step, wait: float) -> Answer:
        assert step.approval is not None
        where = f" ({self.inbox}/#/approvals/{step.approval.id})" if self.inbox else ""
        held = "question" if step.approval.call.kind == "question" else "approval"
        what = "answered this question" if held == "question" else "decided this call"
        reason = (
            f"Nobody {what} in signoff within {wait:g} s; it waits there as "
            f"{held} {step.approval.id}{where}"
        )
        return Answer(decision=self.on_timeout, reason=reason, approval_id=step.approval.id)

    async def after(self, call: HookCall, *, requested_by: str | None) -> None:
        """Audit what `call` returned, next to how it was judged and decided."""
        runs = self._runs[call.agent]
        paired = call.named
        if not call.named:  # the call this process let through with these arguments, if it did
            found = self._unnamed.pop(call)
            paired = found is not None
            call = replace(call, call_id=found or call.call_id)
        thread = self._thread(call, requested_by)
        held = (await runs.held(thread, [call.call_id])).get(call.call_id)
        record = None if held is None else held.record
        if held is not None and held.approval is not None and held.approval.pending:
            # Let through at the agent's own prompt after nobody decided here in time: what
            # waits in the inbox is done with (it lapses, and never runs).
            await runs.near(runs.gate.expire([held.approval]))
        subject = (record.approval_id if record else None) or runs.key(thread, call.call_id)
        data: dict[str, Any] = {
            "origin": call.agent, "tool": call.tool[:200], "server": call.server,
            "thread_id": call.session, "call_id": call.call_id, "judged": record is not None,
            "result": tail(call.response),
        }  # fmt: skip
        if not paired:  # judged, maybe, by another process (a command hook is one per call)
            data["judged"] = None
        actor = requested_by or call.agent
        entry = AuditRecord(actor=actor, action="ran", subject=subject, at=runs.store.now(),
                            data=data)  # fmt: skip
        await runs.near(runs.store.append_audit([entry]))


class _LetThrough:
    """The calls let through that the agent did not name, by what they run — so that what one
    returned is audited beside its decision. The oldest first; a bounded number."""

    LIMIT = 4096

    def __init__(self) -> None:
        self._ids: dict[str, list[str]] = {}
        self._count = 0

    def add(self, call: HookCall, args: dict[str, Any]) -> None:
        self._ids.setdefault(self._key(call, args), []).append(call.call_id)
        self._count += 1
        while self._count > self.LIMIT:
            oldest = next(iter(self._ids))
            self._count -= len(self._ids.pop(oldest))

    def pop(self, call: HookCall) -> str | None:
        """The id of the oldest call let through that ran as `call` did, now it ran."""
        key = self._key(call, call.args)
        ids = self._ids.get(key)
        if not ids:
            return None
        self._count -= 1
        found = ids.pop(0)
        if not ids:
            del self._ids[key]
        return found

    @staticmethod
    def _key(call: HookCall, args: dict[str, Any]) -> str:
        return canonical_json([call.agent, call.session, call.server, call.tool, args]).decode()


def _outcome(approval: Approval | None) -> dict[str, Any] | None:
    """The outcome of a question done with, as the tool's result (None: not a question)."""
    if approval is None or approval.call.kind != "question":
        return None
    return question_result(approval)


def _told(step: Step) -> str:
    """What the model reads of a call that does not run: a question's outcome (the agent's own
    ask tool, held as a question, never runs), a person's response, or why not."""
    if step.approval is not None and step.approval.call.kind == "question":
        return f"signoff asked a person this question; the outcome: {step.text}"
    if step.ok and step.approval is not None:
        return f"A person answered instead of running this call: {step.text}"
    return step.text
