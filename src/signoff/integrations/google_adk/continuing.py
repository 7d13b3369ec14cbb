"""Confirmations that reach ADK from its clients, not from signoff's resumer: a message answering
signoff's confirmations goes on only when it answers every call of the pause, each is decided,
and nobody continued (or continues) the pause already — then its invocation claims the pause
until it ends. With `client_decisions`, a client's answer is first taken as the session's
user's decision."""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from google.adk.agents.invocation_context import InvocationContext
from google.genai import types

from signoff.errors import ConflictError
from signoff.gate.external import LEASE, ExternalRuns, Pause
from signoff.integrations.google_adk.confirmation import (
    CONFIRMATION,
    confirmation_calls,
    confirmed,
    decision,
)
from signoff.integrations.google_adk.session import thread_of, turn_of

__all__ = ["RESUMING", "Continuations"]

RESUMING: ContextVar[str | None] = ContextVar("signoff_adk_resuming", default=None)
"""The pause a `SignoffPlugin.resumer` continues in this task (it holds the pause's claim)."""


class Continuations:
    """The pauses the invocations of this process continue."""

    def __init__(self, runs: ExternalRuns, *, client_decisions: bool) -> None:
        self.runs = runs
        self.client_decisions = client_decisions
        self._claims: dict[str, tuple[str, str, Sequence[str]]] = {}
        """Invocation id → (pause, claim owner, approvals)."""

    async def answered(
        self, invocation_context: InvocationContext, user_message: types.Content
    ) -> types.Content | None:
        """A message that answers signoff's confirmations goes on only when it answers every
        call of the pause, each is decided, and nobody continued (or continues) the pause
        already — else ADK would spend the confirmations (a call left waiting could never
        run), call the model while calls wait, or call it once per client that sends the same
        answer. With `client_decisions`, a client's answer (kagent's UI, ``adk web``) is first
        taken as the session's user's decision, held to the policy's rules like anyone's — and
        not taken if the version its payload sends back (the request's ``signoff.version``)
        changed since."""
        sent = {
            p.function_response.id: p.function_response.response or {}
            for p in user_message.parts or []
            if p.function_response
            and p.function_response.name == CONFIRMATION
            and p.function_response.id
        }
        asked = await self._asked(invocation_context, set(sent)) if sent else {}
        if not asked:
            return None
        session = invocation_context.session
        pause = await self.runs.open_pause(list(asked.values()))
        if pause is None:
            raise ConflictError("signoff: this pause was continued already")
        missing = set(pause.data["confirmations"]) - set(asked)
        if missing:
            raise ConflictError(
                f"signoff: answer every call of the pause at once ({len(missing)} more)"
            )
        found = {a.id: a for a in await self.runs.near(
            self.runs.store.get_approvals(list(asked.values())))}  # fmt: skip
        undecided = [a for a in asked.values() if a not in found or found[a].pending]
        if undecided and self.client_decisions:
            answers = {approval: decision(sent[call_id])
                       for call_id, approval in asked.items() if approval in undecided}  # fmt: skip
            taken_as = {approval: found for approval, found in answers.items() if found}
            decisions = {approval: decision for approval, (decision, _) in taken_as.items()}
            versions = {approval: version for approval, (_, version) in taken_as.items()
                        if version is not None}  # fmt: skip
            taken = await self.runs.decide(decisions, actor=session.user_id, versions=versions)
            undecided = [a for a in undecided if a not in taken or taken[a].pending]
        if undecided:
            raise ConflictError(
                f"signoff: {len(undecided)} of the calls answered here wait for a person's "
                f"decision ({', '.join(undecided)}); answer them once they are decided"
            )
        if RESUMING.get() != pause.id:  # the resumer holds the pause's claim itself
            await self._claim(pause, invocation_context.invocation_id)
        # ADK runs the calls again only where confirmed; signoff's callback then runs, answers
        # or refuses each as decided (a rejection with its reason, not ADK's own words).
        return types.Content(
            role=user_message.role,
            parts=[
                confirmed(p) if p.function_response and p.function_response.id in asked else p
                for p in user_message.parts or []
            ],
        )

    async def _claim(self, pause: Pause, invocation: str) -> None:
        """Take the pause for this invocation, as the resumer takes one: a pause is continued
        once, whoever sends its confirmations. The claim's lease fences a process that died
        holding it; the invocation gives it back when it ends (`done`, `failed`)."""
        owner = f"{self.runs.ledger.owner}/{invocation}"
        store = self.runs.store
        claimed = await self.runs.near(
            store.claim_pause(pause.id, owner=owner, now=store.now(), lease=LEASE)
        )
        if claimed is None:
            raise ConflictError("signoff: this pause is being continued, or was continued already")
        self._claims[invocation] = (pause.id, owner, pause.approvals)

    async def done(self, invocation: str) -> None:
        """The invocation that continued a pause went on past it: the pause is done."""
        claim = self._claims.pop(invocation, None)
        if claim is not None:
            pause_id, owner, approvals = claim
            await self.runs.near(self.runs.store.release_pause(
                pause_id, owner=owner, status="done", now=self.runs.store.now()))  # fmt: skip
            await self.runs.went_on(list(approvals))

    async def failed(self, invocation: str) -> None:
        """The invocation that continued a pause failed: the pause may be continued again."""
        claim = self._claims.pop(invocation, None)
        if claim is not None:
            pause_id, owner, _ = claim
            await self.runs.near(self.runs.store.release_pause(
                pause_id, owner=owner, status="waiting",
                now=self.runs.store.now()))  # fmt: skip

    async def _asked(
        self, invocation_context: InvocationContext, call_ids: set[str]
    ) -> dict[str, str]:
        """The signoff approvals that the session's confirmation calls `call_ids` ask about:
        only calls ADK made for signoff's `request_confirmation` (never one a model wrote)."""
        session = invocation_context.session
        claimed: dict[str, tuple[str, str]] = {}
        for event in session.events:
            for call_id, (approval, original) in confirmation_calls(event).items():
                if call_id in call_ids:
                    claimed[call_id] = (approval, original)
        return await self.verified(session, claimed)

    async def verified(self, session: Any, claimed: dict[str, tuple[str, str]]) -> dict[str, str]:
        """Of confirmation calls and the (approval, original call) each names, those whose
        original call — of its model response in the session — signoff holds under that
        approval."""
        verified: dict[str, str] = {}
        for call_id, (approval, original) in claimed.items():
            turn = turn_of(session.events, original)
            held = await self.runs.held(thread_of(session), [original], turn=turn)
            if original in held and held[original].record.approval_id == approval:
                verified[call_id] = approval
        return verified
