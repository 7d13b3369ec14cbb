"""How the gateway judges a request and answers it: a tool call, a resource read or a prompt
got is one call the policy allows, denies or asks a person about.

A call the policy allows is forwarded; one it denies is refused; one that asks becomes an
approval in the shared store (the web inbox, `signoff inbox`, the API) and waits for a decision
— while the client is told of progress, and, where the client can elicit and the rule lets the
asker decide, asked in the client too; the first decision wins. When its wait runs out the call
answers "pending", and the same call again (same asker, kind, name and arguments) waits on that
approval, not a new one.

The form in the client shows one version of the call, and its answer is a decision on that
version: when the call changes while the form is out (handed to someone in the inbox, escalated,
judged again by a new policy), the answer is not taken, and the person is shown the call again
as it stands, told what changed. (An edit decides a call one person decides; a call that needs
two people is never decided by its asker, so it is never asked in the client.)

The gateway is an origin of external calls like any framework's (ARCHITECTURE §6): an asker's
exact call is a thread, its approvals are held by `Gate.hold_external` under ids counting them,
and each approval is answered once through the `Ledger` (the server's answer, or the
rejection), so the approved call runs exactly once, and after it an identical call asks again
(unless an approve-always grant lets it through).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import anyio
from mcp import types
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from signoff import telemetry
from signoff.errors import (
    ApprovalTimeout,
    ClaimLost,
    ConflictError,
    ExecutionFailed,
    InvalidEditError,
    NotFoundError,
    OutcomeUnknown,
    StaleDecisionError,
)
from signoff.gate import CheckContext, Gate, Outcome
from signoff.gate.edits import check_edit
from signoff.gate.ids import external_key
from signoff.gate.once import Claim, Ledger, Recorded
from signoff.gate.preview import Previews
from signoff.gate.versions import describe, since
from signoff.protocols.mcp.answers import (
    DOING,
    Reply,
    clean,
    outcome,
    pending,
    running,
    shape_of,
    unknown,
)
from signoff.protocols.mcp.dialog import (
    INPUT,
    SCHEMA,
    decision_in,
    input_required,
    question,
    shown_in,
)
from signoff.protocols.mcp.peer import Peer
from signoff.protocols.mcp.screen import Screen
from signoff.protocols.mcp.settings import GatewaySettings
from signoff.protocols.mcp.upstream import Upstream, UpstreamError
from signoff.store import AuditRecord
from signoff.types import Approval, Decision, ToolCall

__all__ = ["ORIGIN", "Action", "Asked", "Asker", "Holding"]

logger = logging.getLogger("signoff.mcp.gateway")

ORIGIN = "mcp-gateway"
"""The origin of the approvals the gateway asks for; their thread is the asker's exact call."""
_ANSWER = "mcp:"
"""Ledger keys: `_ANSWER + approval id` keeps the answer given to an approval's call, and
that key + `_AGAIN` the one given instead when the approved call left none (cut off)."""
_AGAIN = ":again"
_BRACKETS = [2**k - 1 for k in range(48)]
"""The call ids a thread's first read looks for (`Holding._last_judged`)."""
_READ = 64
"""How many call ids each further read looks for."""


@dataclass(frozen=True)
class Asker:
    """Who makes the calls: a token's principal over HTTP, the configured user over stdio."""

    name: str
    roles: frozenset[str] = frozenset()


@dataclass(frozen=True, kw_only=True)
class Action:
    """What a client's request asks of a server behind, judged as one call."""

    call: ToolCall
    """The server's own name for it (a tool's or prompt's name, a resource's URI), its
    arguments, the server, the kind."""
    upstream: Upstream
    schema: Mapping[str, Any] | None = None
    """What an edit of the arguments must fit (a tool's input schema, a prompt's arguments);
    None: nothing to edit (a resource read)."""
    idempotent: bool = False
    """Whether it may run again after it was cut off midway (read-only tools, reads)."""


@dataclass(kw_only=True)
class Asked:
    """One request of a client, as the gateway answers it."""

    ctx: Any
    asker: Asker
    peer: Peer
    headers: Mapping[str, str]
    """The client's headers passed on to the server."""
    waited: float | None = None
    """The last progress the wait reported, if it reported any: the server's own progress is
    counted on from past it (progress only grows)."""


class Holding:
    """The gateway's judging, waiting and answering, over `gate`."""

    def __init__(
        self,
        gate: Gate,
        settings: GatewaySettings,
        *,
        show_args: Callable[[dict[str, Any]], Any],
    ) -> None:
        self.gate = gate
        self.store = gate.store
        self.settings = settings
        self.ledger = Ledger(gate.store)
        self.screen = Screen(lambda: gate.engine)
        self._show = show_args

    async def answer(self, asked: Asked, action: Action, params: Any) -> Any:
        """The reply to a request for `action` (`params` the request's, for a 2026-07-28
        retry's state and answers)."""
        shape = shape_of(action.call)
        subject = _subject(asked.asker, action.call)
        answers: Mapping[str, Any] | None = None
        seen: int | None = None
        if params.request_state:
            # A 2026-07-28 retry: the approval it names, the version of it its form showed,
            # and the answer to that form.
            approval, seen = await self._from_state(params.request_state, asked.asker, subject)
            answers = params.input_responses
        else:
            found = await self._approval_for(asked, action, subject)
            if not isinstance(found, Approval):
                return found
            approval = found
        if approval.pending and answers:
            approval, stale = await self._decide_in_client(approval, asked.asker, answers, seen)
            if stale and approval.pending and self._can_elicit(asked, approval):
                # Answered on a version that changed since: the call as it stands, asked anew.
                note = f"Your answer was not taken: {stale}"
                return input_required(approval, self._show, changed=note)
        if approval.pending:
            if self._can_elicit(asked, approval) and _modern(asked.ctx) and not answers:
                return input_required(approval, self._show)
            approval = await self._wait(asked, approval)
        if approval.pending:
            return pending(shape, approval)
        answer = await self._settle(asked, action, approval, late=False)
        assert answer is not None  # only a late call finds an approval answered before it
        return answer

    async def _approval_for(self, asked: Asked, action: Action, subject: str) -> Approval | Reply:
        """The approval the call waits on — the one asked before for the same call by the same
        asker and not answered yet, or a new one — or the call's answer: its result when the
        policy lets it run, why not when it blocks it, or the answer to an approval decided
        before the call came and not answered yet.

        An asker's exact call (`subject`) is a thread of external calls whose ids count its
        approvals: "0" is the first call's, and "n+1" is judged once the call judged "n" is
        answered (or was let through by a grant, or blocked). A retry finds the pending one
        under its id, and the gate keeps one verdict per id: two gateways asking at once ask
        once."""
        call = action.call
        judged = CheckContext(origin=ORIGIN, requested_by=asked.asker.name)
        forwarded = _forwarding(call, asked.asker)
        if self.gate.engine.evaluate(call).kind != "ask":
            # Only a call the policy asks for can wait on an approval (a grant only turns an
            # ask into an allow): the others are judged afresh, each time.
            [outcome], _ = await self.gate.hold([call], judged, also_audit=forwarded)
            return await self._judged(asked, action, outcome)
        thread = replace(judged, thread_id=subject)
        number = await self._last_judged(subject)
        while True:
            [outcome] = await self.gate.hold_external(
                [replace(call, id=str(number))],
                thread,
                also_audit=forwarded,
                previews=self.previews(asked, action),
            )
            if not outcome.recorded:
                return await self._judged(asked, action, outcome)
            if outcome.approval is not None:
                if outcome.approval.pending:
                    return outcome.approval
                answer = await self._settle(asked, action, outcome.approval, late=True)
                if answer is not None:
                    return answer
            number += 1  # that one is done with: this call is the next

    def previews(self, asked: Asked, action: Action) -> Previews | None:
        """The preview of `action`'s tool its server's config names, over the asker's own
        connection (`upstream_previews`)."""
        return upstream_previews(
            asked.peer, action.upstream, action.call, headers=asked.headers,
            timeout=self.settings.preview_timeout,
        )  # fmt: skip

    async def _judged(self, asked: Asked, action: Action, outcome: Outcome) -> Approval | Reply:
        """What a call judged now comes to: its approval, or run (audited with its verdict),
        or blocked."""
        if outcome.approval is not None:
            return outcome.approval
        if outcome.kind == "run":
            return await self.send(asked, action, action.call)
        doing = DOING[action.call.kind]
        return shape_of(action.call).refused(
            f"signoff blocked this {doing}: {outcome.verdict.reason}", "blocked"
        )

    async def _last_judged(self, subject: str) -> int:
        """The greatest call id judged in the subject's thread (0 when none). The ids are
        judged in order, so those judged are 0 to n: a read of the ids 2**k - 1 brackets n,
        and each further read narrows the bracket by `_READ`."""

        def key(number: int) -> str:
            return external_key(ORIGIN, subject, str(number))

        async def greatest(numbers: Iterable[int], default: int) -> int:
            keys = {key(n): n for n in numbers}
            judged = await self.store.external_calls(list(keys))
            return max((keys[k] for k in judged), default=default)

        low = await greatest(_BRACKETS, 0)
        high = 2 * low + 1  # the next of the 2**k - 1: not judged
        while high - low > 1:
            step = -(-(high - low) // _READ)
            found = await greatest(range(low + step, high, step), low)
            low, high = found, min(found + step, high)
        return low

    async def _from_state(
        self, state: str, asker: Asker, subject: str
    ) -> tuple[Approval, int | None]:
        """The approval a 2026-07-28 retry names in its (unsealed) request state, and the
        version of it the form showed; it must be one the gateway asked for this asker and this
        call."""
        try:
            shown = shown_in(state)
            approval = await self.store.get_approval(shown.approval_id)
            asked = (approval.origin, approval.thread_id, approval.requested_by)
        except (ValueError, NotFoundError):
            asked = None
        if asked != (ORIGIN, subject, asker.name):
            raise MCPError(INVALID_PARAMS, "requestState names no approval of this call")
        return approval, shown.version

    # -- asking the person at the client ---------------------------------------------------

    def _can_elicit(self, asked: Asked, approval: Approval) -> bool:
        """Whether to ask the person at the client: the client can show a form, and the
        asker may decide this approval."""
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

    # -- waiting ---------------------------------------------------------------------------

    async def _wait(self, asked: Asked, approval: Approval) -> Approval:
        """Wait for a decision up to the gateway's limit, reporting progress; over a
        2025-11-25 session that can elicit, ask the person at the client meanwhile."""
        stored = asyncio.create_task(self._stored_decision(approval, self.settings.wait))
        tasks = {stored, asyncio.create_task(self._report(asked, approval))}
        elicited = None
        if self._can_elicit(asked, approval) and not _modern(asked.ctx):
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

    # -- answering -------------------------------------------------------------------------

    async def _settle(
        self, asked: Asked, action: Action, approval: Approval, *, late: bool
    ) -> Reply | None:
        """The answer to a decided approval, given once through the ledger: the call that
        claims it gives it; the others get it, waiting up to the gateway's `wait` on one being
        given elsewhere. When the approved call left no answer — cut off midway, or its gateway
        gone — the answer is given under a second key: the call run again where it may be
        (read-only, idempotent, a read), else "outcome unknown".

        A `late` call found the approval decided when it came: None when the approval was
        answered before then (the call asks anew)."""
        key = _ANSWER + approval.id
        try:
            return await self._settle_under(key, asked, action, approval, late=late)
        except (OutcomeUnknown, ExecutionFailed):
            pass  # the approved call left no answer
        try:
            return await self._settle_under(
                key + _AGAIN, asked, action, approval, late=late, again=True
            )
        except ExecutionFailed:  # cut off again: the approval is answered, its outcome unknown
            return None if late else unknown(shape_of(approval.call), approval)

    async def _settle_under(
        self,
        key: str,
        asked: Asked,
        action: Action,
        approval: Approval,
        *,
        late: bool,
        again: bool = False,
    ) -> Reply | None:
        """The answer under one ledger key: given by this call when it claims the key, else
        the one given. `OutcomeUnknown` or `ExecutionFailed` when none was."""
        shape = shape_of(approval.call)
        try:
            found = await self._claim(key, again=again, late=late, call=approval.call)
        except TimeoutError:
            return running(shape, approval)
        if found is None:
            return None
        if isinstance(found, Recorded):
            return shape.kept(found.value)
        return await self._give(asked, action, approval, found, again=again)

    async def _claim(
        self, key: str, *, again: bool, late: bool, call: ToolCall
    ) -> Claim | Recorded | None:
        """Claim `key` to give the answer, or get the one given (waiting up to the gateway's
        `wait` on one being given); for a `late` call, None when it was given before. The
        second key's claim is taken over from a gateway gone: giving it again is safe."""
        if late:
            try:
                found = await self.ledger.claim(
                    key, idempotent=again, wait=0, tool=call.name, digest=call.digest
                )
            except TimeoutError:
                pass  # being given now: this call shares it
            else:
                return None if isinstance(found, Recorded) else found
        return await self.ledger.claim(
            key, idempotent=again, wait=self.settings.wait, tool=call.name, digest=call.digest
        )

    async def _give(
        self, asked: Asked, action: Action, approval: Approval, claim: Claim, *, again: bool
    ) -> Reply:
        """Give the answer under the claimed key: an approved call forwarded (audited first),
        or why not — and `again`, only where the call may run again."""
        call = approval.call
        shape = shape_of(call)
        try:
            result: Reply | None
            if approval.status in ("approved", "edited"):
                await self.gate.catch_up()
                result = self._unfit(action, approval)
            else:
                result = outcome(shape, approval)
            if result is None and again and not action.idempotent:
                result = unknown(shape, approval)
            elif result is None:
                forward = _forward_record(
                    call, asked.asker, approval=approval.id, rule=approval.rule
                )
                await self.store.append_audit([forward])
                result = await self.send(asked, action, call)
        except BaseException as exc:
            # Cut off midway (the client went away) or broken: whether the call ran is unknown,
            # and the next call to answer the approval says so at once (or runs it again).
            # A claim taken over meanwhile records nothing (the claim logs it): `exc` is still
            # what this call must raise.
            with anyio.CancelScope(shield=True), contextlib.suppress(ClaimLost):
                await claim.fail(exc)
            raise
        # Given: kept, even if the client goes now. Unless another gateway took this one for
        # gone and gave the answer again meanwhile: the ledger keeps that one (the claim logs
        # it), and this call still gets the answer it was given.
        with anyio.CancelScope(shield=True), contextlib.suppress(ClaimLost):
            await claim.finish(shape.keep(result))
        return result

    def _unfit(self, action: Action, approval: Approval) -> Reply | None:
        """Why the approved call may not run now (the policy denies it since, or an edit does
        not fit what the server takes), or None."""
        shape = shape_of(approval.call)
        doing = DOING[approval.call.kind]
        denied = self.gate.denied_now(approval)
        if denied is not None:
            return shape.refused(f"signoff blocked this {doing}: {denied}", "blocked")
        if approval.status == "edited":
            if action.schema is None:
                if approval.call.args:
                    return shape.refused("a resource read has no arguments to edit", "blocked")
                return None
            try:
                check_edit(approval.call.args, action.schema)
            except InvalidEditError as exc:
                what = "the tool's schema" if approval.call.kind == "tool" else "the prompt"
                return shape.refused(f"the edited arguments do not fit {what}: {exc}", "blocked")
        return None

    async def send(self, asked: Asked, action: Action, call: ToolCall) -> Reply:
        """Forward `call` to its server over the client's own connection: the server's
        answer, without its `_meta`."""
        shape = shape_of(call)
        link = await asked.peer.link(action.upstream)
        logs = asked.peer.logs(asked.ctx, action.upstream.name)
        try:
            if call.kind == "tool":
                result: Any = await link.call(
                    call.name, call.args, headers=asked.headers, progress=_progress(asked),
                    logs=logs,
                )  # fmt: skip
            elif call.kind == "resource":
                result = await link.ask(
                    lambda c: c.read_resource(call.name), headers=asked.headers, logs=logs
                )
            else:
                arguments = {k: str(v) for k, v in call.args.items()}
                result = await link.ask(
                    lambda c: c.get_prompt(call.name, arguments), headers=asked.headers, logs=logs
                )
        except UpstreamError as exc:
            if call.kind != "tool" and exc.answer is not None:
                return exc.answer.error  # the server's own error, as it said it
            return shape.refused(f"{exc}. The {DOING[call.kind]} may not have run.", "failed")
        read = call.name if call.kind == "resource" else None
        return shape.done(self.screen.answer(clean(result), call.server, read=read))


def upstream_previews(
    peer: Peer, upstream: Upstream, call: ToolCall, *, headers: Mapping[str, str], timeout: float
) -> Previews | None:
    """The preview of `call` the config of its server names (`PreviewSpec`), or None: a call,
    over `peer`'s connection, to a companion tool or to the tool itself as a dry run, with the
    call's arguments. What it answers in text is the preview (a unified diff shows as one)."""
    how = upstream.spec.previews.get(call.name) if call.kind == "tool" else None
    if how is None:
        return None

    async def preview(**args: Any) -> str:
        link = await peer.link(upstream)
        if how.tool is not None:
            result = await link.call(how.tool, args, headers=headers)
        else:
            assert how.argument is not None  # the settings give one or the other
            result = await link.call(call.name, args | {how.argument: True}, headers=headers)
        text = "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))
        if result.is_error:
            raise UpstreamError(text or f"MCP server {upstream.name!r} said the preview failed")
        return text

    return Previews({call.name: preview}, timeout=timeout)


# -- results -------------------------------------------------------------------------------


def _progress(asked: Asked) -> Any:
    """Passes the server's progress on to the client, counted on from the wait's (progress
    only grows); None when the client asked for none."""
    meta = asked.ctx.meta or {}
    if meta.get("progress_token", meta.get("progressToken")) is None:
        return None

    async def forward(progress: float, total: float | None, message: str | None) -> None:
        base = 0.0 if asked.waited is None else asked.waited + 1
        with contextlib.suppress(Exception):
            await asked.ctx.session.report_progress(
                base + progress, None if total is None else base + total, message
            )

    return forward


# -- small things --------------------------------------------------------------------------


def _subject(asker: Asker, call: ToolCall) -> str:
    """Who asked for which exact call: what a retry is recognized by."""
    return hashlib.sha256(f"{asker.name}\n{call.digest}".encode()).hexdigest()


def _forwarding(call: ToolCall, asker: Asker) -> Callable[[list[Outcome]], list[AuditRecord]]:
    """The `forward` entry of the call when the verdict judged now lets it run, audited with
    that verdict."""

    def forwarded(outcomes: list[Outcome]) -> list[AuditRecord]:
        return [
            _forward_record(call, asker, approval=None, rule=o.verdict.rule)
            for o in outcomes
            if o.kind == "run" and not o.recorded
        ]

    return forwarded


def _forward_record(
    call: ToolCall, asker: Asker, *, approval: str | None, rule: str | None
) -> AuditRecord:
    data = {
        "tool": call.name,
        "server": call.server,
        "digest": call.digest,
        "approval": approval,
        "rule": rule,
    }
    if call.kind != "tool":
        data["kind"] = call.kind
    return AuditRecord(
        actor=asker.name, action="forward", subject=approval or call.id, at=_now(), data=data
    )


def _modern(ctx: Any) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _now() -> datetime:
    return datetime.now(UTC)
