"""A held call's wait for its decision: the store's — taken anywhere, the inbox, the API, another
gateway — while the client is told of progress, and, where the client can show a form and the
rule lets the asker decide, the person's at the client too; the first decision wins.

The form shows one version of the call, and its answer is a decision on that version: when the
call changes while the form is out (handed to someone in the inbox, escalated, judged again by a
new policy), the answer is not taken, and the person is shown the call again as it stands, told
what changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Any

from mcp import types
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from signoff import telemetry
from signoff.errors import ApprovalTimeout, ConflictError, StaleDecisionError
from signoff.gate import Gate
from signoff.gate.versions import describe, since
from signoff.protocols.mcp.dialog import (
    INPUT,
    SCHEMA,
    ShowArgs,
    decision_in,
    input_required,
    question,
)
from signoff.protocols.mcp.request import Asked, Asker, modern
from signoff.protocols.mcp.settings import GatewaySettings
from signoff.types import Approval, Decision

__all__ = ["Waiting"]

logger = logging.getLogger("signoff.mcp.gateway")


class Waiting:
    """The gateway's waits for decisions, over `gate`."""

    def __init__(self, gate: Gate, settings: GatewaySettings, *, show_args: ShowArgs) -> None:
        self.gate = gate
        self.store = gate.store
        self.settings = settings
        self._show = show_args

    async def decided(
        self,
        asked: Asked,
        approval: Approval,
        answers: Mapping[str, Any] | None,
        seen: int | None,
    ) -> Approval | types.InputRequiredResult:
        """The approval decided — by the `answers` a 2026-07-28 retry brings to the form that
        showed version `seen` of it, or while the call waits — or as it stands when the wait
        runs out; or, where the person at the client is to be asked over 2026-07-28, the form
        to ask with."""
        if approval.pending and answers:
            approval, stale = await self._decide_in_client(approval, asked.asker, answers, seen)
            if stale and approval.pending and self._can_elicit(asked, approval):
                # Answered on a version that changed since: the call as it stands, asked anew.
                note = f"Your answer was not taken: {stale}"
                return input_required(approval, self._show, changed=note)
        if approval.pending:
            if self._can_elicit(asked, approval) and modern(asked.ctx) and not answers:
                return input_required(approval, self._show)
            approval = await self._wait(asked, approval)
        return approval

    def _can_elicit(self, asked: Asked, approval: Approval) -> bool:
        """Whether to ask the person at the client: the client can show a form, and the
        asker may decide this approval. A question of the ask tool's is not asked there (its
        form is the question's, not the approval form's): the inbox answers it."""
        if approval.call.kind == "question":
            return False
        capabilities = asked.ctx.session.client_capabilities
        elicitation = None if capabilities is None else capabilities.elicitation
        if elicitation is None or (elicitation.form is None and elicitation.url is not None):
            return False  # no elicitation, or URL mode only
        return self._may_answer(approval, asked.asker)

    def _may_answer(self, approval: Approval, asker: Asker) -> bool:
        """Whether the gateway takes the asker's own decision (the config allows it, and the
        rule lets the asker decide)."""
        return self.settings.elicitation and self.gate.may_decide(
            approval, actor=asker.name, roles=asker.roles
        )

    async def _decide_in_client(
        self, approval: Approval, asker: Asker, responses: Mapping[str, Any], seen: int | None
    ) -> tuple[Approval, str]:
        """Take the answer a 2026-07-28 client sent with its retry, on the version `seen` its
        form showed: only with the sealed state of a form the gateway showed it (a first
        call's answers are never taken). Returns the approval as it stands, and why the answer
        was not taken if the call changed since (else "")."""
        answer = responses.get(INPUT)
        if answer is None:
            return approval, ""
        if not self._may_answer(approval, asker):
            raise MCPError(INVALID_PARAMS, "this approval is not decided through the client")
        return await self._take(approval, decision_in(answer), asker, seen=seen)

    async def _take(
        self, approval: Approval, decision: Decision | None, asker: Asker, *, seen: int | None
    ) -> tuple[Approval, str]:
        """Take the client's decision (None: it made none), made on version `seen` of the
        approval; a decision taken elsewhere first stands. Returns the approval as it stands,
        and what changed since `seen` when that is why the decision was not taken (else "")."""
        if decision is None:
            return approval, ""
        try:
            with telemetry.channel("mcp"):
                decided = await self.gate.decide(
                    approval.id, decision, actor=asker.name, roles=asker.roles, version=seen
                )
            return decided, ""
        except StaleDecisionError as exc:
            return await self.store.get_approval(approval.id), str(exc)
        except ConflictError:
            return await self.store.get_approval(approval.id), ""

    async def _wait(self, asked: Asked, approval: Approval) -> Approval:
        """Wait for a decision up to the gateway's limit, reporting progress; over a
        2025-11-25 session that can elicit, ask the person at the client meanwhile."""
        stored = asyncio.create_task(self._stored_decision(approval, self.settings.wait))
        tasks = {stored, asyncio.create_task(self._report(asked, approval))}
        elicited = None
        if self._can_elicit(asked, approval) and not modern(asked.ctx):
            elicited = asyncio.create_task(self._elicit(asked, approval))
            tasks.add(elicited)
        try:
            while True:
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                if elicited in done:
                    return elicited.result()
                if stored in done:
                    return stored.result() or await self.store.get_approval(approval.id)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _stored_decision(self, approval: Approval, limit: float) -> Approval | None:
        try:
            return await self.gate.wait(approval.id, timeout=limit)
        except ApprovalTimeout:
            return None

    async def _elicit(self, asked: Asked, approval: Approval) -> Approval:
        """The person at the client's decision on the version of the call their form shows;
        never returns if they make none (the inbox may still decide). When the call changes
        while the form is out, or the answer comes on a version that changed since, the form
        is shown again with the call as it stands, saying what changed."""
        changed = ""
        while True:
            form = asyncio.create_task(self._ask(asked, approval, changed))
            moved = asyncio.create_task(self.gate.wait(approval.id, past=approval.version))
            try:
                await asyncio.wait({form, moved}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (form, moved):
                    if not task.done():
                        task.cancel()  # a form withdrawn: the client closes it
                await asyncio.gather(form, moved, return_exceptions=True)
            if form.done() and not form.cancelled() and form.exception() is None:
                decision = form.result()
                if decision is None:
                    await asyncio.Event().wait()  # dismissed: the inbox may still decide
                now, stale = await self._take(
                    approval, decision, asked.asker, seen=approval.version
                )
                if not stale:
                    return now
                changed = f"Your answer was not taken: {stale}"
            else:
                now = moved.result()
                what = describe(since(now, approval.version), self.gate.redaction)
                changed = f"The call changed while you were asked: {what}."
            if not now.pending:
                return now
            if not self._may_answer(now, asked.asker):
                await asyncio.Event().wait()  # no longer theirs to decide: the inbox decides
            approval = now

    async def _ask(self, asked: Asked, approval: Approval, changed: str) -> Decision | None:
        """The decision in the person's answer to the form (None: none made)."""
        ctx = asked.ctx
        try:
            answer = await ctx.session.elicit_form(
                question(approval, self._show, changed=changed),
                SCHEMA,
                related_request_id=ctx.request_id,
            )
            return decision_in(answer)
        except Exception as exc:  # the client's failure or odd answer: the inbox still decides
            logger.info("asking through the client failed (%s); waiting on the inbox", exc)
            return None

    async def _report(self, asked: Asked, approval: Approval) -> None:
        started = time.monotonic()
        every, limit = self.settings.progress_every, self.settings.wait
        message = f"waiting for a person to decide approval {approval.id} (signoff inbox)"
        while True:
            asked.waited = waited = round(time.monotonic() - started, 1)
            with contextlib.suppress(Exception):  # progress is a courtesy: never fail the call
                await asked.ctx.session.report_progress(waited, limit, message)
            await asyncio.sleep(every)
