"""The MCP gateway: any MCP client in front, the config's MCP servers behind, the policy and a
person in between (ARCHITECTURE §7; `signoff mcp-gateway`).

The gateway lists the servers' tools (prefixed ``<server>_`` when it fronts several), without
those the policy denies whatever their arguments. A call the policy allows is forwarded; one it
denies is answered with an error result; one that asks becomes an approval in the shared store
(the web inbox, `signoff inbox`, the API) and waits for a decision — while the client is told
of progress, and, where the client can elicit and the rule lets the asker decide, asked in the
client too; the first decision wins. When its wait runs out the call answers "pending", and
the same call again (same asker, tool and arguments) waits on that approval, not a new one.

The gateway is an origin of external calls like any framework's (ARCHITECTURE §6): an asker's
exact call is a thread, its approvals are held by `Gate.hold_external` under ids counting them,
and each approval is answered once through the `Ledger` (the upstream's result, or the
rejection), so the approved call runs exactly once, and after it an identical call asks again
(unless an approve-always grant lets it through).
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import hashlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from signoff.errors import (
    ApprovalTimeout,
    ConflictError,
    ExecutionFailed,
    InvalidEditError,
    NotFoundError,
    OutcomeUnknown,
)
from signoff.gate import CheckContext, Gate, Outcome
from signoff.gate.core import external_key
from signoff.gate.edits import check_edit
from signoff.gate.ids import new_id
from signoff.gate.once import Claim, Ledger, Recorded
from signoff.protocols.mcp.settings import GatewaySettings
from signoff.protocols.mcp.upstream import Upstream, UpstreamError
from signoff.store import AuditRecord, Store
from signoff.types import Approval, Approve, Decision, Reject, ToolCall, canonical_json

__all__ = ["ORIGIN", "Asker", "Gateway"]

logger = logging.getLogger("signoff.mcp.gateway")

ORIGIN = "mcp-gateway"
"""The origin of the approvals the gateway asks for; their thread is the asker's exact call."""
_ANSWER = "mcp:"
"""Ledger keys: `_ANSWER + approval id` keeps the answer given to an approval's call, and
that key + `_AGAIN` the one given instead when the approved call left none (cut off)."""
_AGAIN = ":again"
_BRACKETS = [2**k - 1 for k in range(48)]
"""The call ids a thread's first read looks for (`Gateway._last_judged`)."""
_READ = 64
"""How many call ids each further read looks for."""
_INPUT = "approval"
"""The key of the elicitation in a 2026-07-28 input-required result."""
_DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Decision",
            "oneOf": [
                {"const": "approve", "title": "Approve: run the call"},
                {"const": "reject", "title": "Reject: do not run it"},
            ],
        },
        "reason": {
            "type": "string",
            "title": "Reason",
            "description": "Why not (passed on to the agent when you reject)",
        },
    },
    "required": ["decision"],
}


@dataclass(frozen=True)
class Asker:
    """Who makes the calls: a token's principal over HTTP, the configured user over stdio."""

    name: str
    roles: frozenset[str] = frozenset()


@dataclass(frozen=True)
class _Route:
    upstream: Upstream
    tool: types.Tool

    @property
    def idempotent(self) -> bool:
        hints = self.tool.annotations
        return bool(hints is not None and (hints.idempotent_hint or hints.read_only_hint))


class Gateway:
    """The gateway's MCP server (`server`), over `upstreams`, judged by `gate`."""

    def __init__(
        self,
        gate: Gate,
        upstreams: list[Upstream],
        *,
        settings: GatewaySettings | None = None,
        asker: Callable[[Any], Asker] | None = None,
        forwarded: Callable[[Any, Upstream], Mapping[str, str]] | None = None,
        show_args: Callable[[dict[str, Any]], Any] = lambda args: args,
        state_keys: list[str] | None = None,
    ) -> None:
        """`asker` tells who sent a request (default: the configured principal, or the OS
        user); `forwarded` which of its headers go upstream; `show_args` masks what the client's
        dialog shows; `state_keys` seal 2026-07-28 request state (default: a key per process)."""
        self.gate = gate
        self.store: Store = gate.store
        self.upstreams = {u.name: u for u in upstreams}
        self.settings = settings or GatewaySettings()
        local = Asker(self.settings.principal or _os_user(), frozenset(self.settings.roles))
        self._asker = asker or (lambda _request: local)
        self._forwarded = forwarded or (lambda _request, _upstream: {})
        self._show = show_args
        self.ledger = Ledger(gate.store)
        self._routes: dict[str, _Route] = {}
        self.server: Server[Any] = Server(
            self.settings.name,
            version=_version(),
            instructions=(
                "Tools of other MCP servers, behind signoff: a call may wait for a person's "
                "approval. A result with structuredContent.status 'pending_approval' did not "
                "run; call the tool again with the same arguments to pick up the decision."
            ),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        security = (
            RequestStateSecurity(keys=list(state_keys), ttl=3600.0)
            if state_keys
            else RequestStateSecurity.ephemeral(ttl=3600.0)
        )
        security.bind_principal = None  # the approval names its asker: checked on every retry
        self.server.middleware.append(
            RequestStateBoundary(security, default_audience=self.settings.name)
        )

    # -- the servers behind ----------------------------------------------------------------

    async def start(self) -> None:
        """Connect to every server; one that cannot be reached is logged and tried again
        whenever the tools are listed or one of its tools is called."""
        results = await asyncio.gather(
            *(u.connect() for u in self.upstreams.values()), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException):
                logger.warning("%s; its tools are offered once it answers", result)
        self._route()

    async def close(self) -> None:
        await asyncio.gather(*(u.close() for u in self.upstreams.values()))

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        await self.start()
        try:
            yield self
        finally:
            await self.close()

    def _route(self) -> None:
        """The offered names of the tools the policy does not always deny."""
        several = len(self.upstreams) > 1
        routes: dict[str, _Route] = {}
        for upstream in self.upstreams.values():
            prefix = upstream.spec.prefix or (upstream.name if several else None)
            for tool in upstream.tools:
                if self.gate.engine.fixed_kind(tool.name, server=upstream.name) == "deny":
                    continue
                name = f"{prefix}_{tool.name}" if prefix else tool.name
                if name in routes:
                    logger.warning("two servers offer a tool %r: %r's is not offered", name,
                                   upstream.name)  # fmt: skip
                    continue
                routes[name] = _Route(upstream, tool)
        self._routes = routes

    async def _refresh(self) -> None:
        upstreams = list(self.upstreams.values())
        results = await asyncio.gather(*(u.refresh() for u in upstreams), return_exceptions=True)
        for result in results:
            if isinstance(result, UpstreamError):
                logger.warning("%s; its tools are listed as it last listed them", result)
            elif isinstance(result, BaseException):
                raise result
        self._route()

    # -- listing ---------------------------------------------------------------------------

    async def _list_tools(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        await self._refresh()
        return types.ListToolsResult(tools=[self._offered(n, r) for n, r in self._routes.items()])

    def _offered(self, name: str, route: _Route) -> types.Tool:
        """The tool as the client sees it: its name here, none of the server's `_meta`, and
        no output schema when the gateway may answer for it (pending, a person's words)."""
        tool = route.tool
        allowed = self.gate.engine.fixed_kind(tool.name, server=route.upstream.name) == "allow"
        return types.Tool(
            name=name,
            title=tool.title,
            description=tool.description,
            input_schema=tool.input_schema,
            output_schema=tool.output_schema if allowed else None,
            annotations=tool.annotations,
            icons=tool.icons,
        )

    # -- calling ---------------------------------------------------------------------------

    async def _call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        route = self._routes.get(params.name)
        if route is None:
            await self._refresh()
            route = self._routes.get(params.name)
        if route is None:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}")
        asker = self._asker(ctx.request)
        call = ToolCall(
            id=new_id(),
            name=route.tool.name,
            args=dict(params.arguments or {}),
            server=route.upstream.name,
        )
        subject = _subject(asker, call)
        answers: Mapping[str, Any] | None = None
        if params.request_state:
            # A 2026-07-28 retry: the approval it names, and the answer to the form it was shown.
            approval = await self._from_state(params.request_state, asker, subject)
            answers = params.input_responses
        else:
            found = await self._approval_for(ctx, route, call, asker, subject)
            if isinstance(found, types.CallToolResult):
                return found
            approval = found
        if approval.pending and answers:
            approval = await self._decide_in_client(approval, asker, answers)
        if approval.pending:
            if self._can_elicit(ctx, approval, asker) and _modern(ctx) and not answers:
                return self._input_required(approval)
            approval = await self._wait(ctx, approval, asker)
        if approval.pending:
            return _pending(approval)
        return await self._answer(ctx, route, approval, asker)

    async def _approval_for(
        self, ctx: Any, route: _Route, call: ToolCall, asker: Asker, subject: str
    ) -> Approval | types.CallToolResult:
        """The approval the call waits on — the one asked before for the same call by the same
        asker and not answered yet, or a new one — or the call's answer: its result when the
        policy lets it run, why not when it blocks it, or the answer to an approval decided
        before the call came and not answered yet.

        An asker's exact call (`subject`) is a thread of external calls whose ids count its
        approvals: "0" is the first call's, and "n+1" is judged once the call judged "n" is
        answered (or was let through by a grant, or blocked). A retry finds the pending one
        under its id, and the gate keeps one verdict per id: two gateways asking at once ask
        once."""
        judged = CheckContext(origin=ORIGIN, requested_by=asker.name)
        forwarded = _forwarding(call, asker)
        if self.gate.engine.evaluate(call).kind != "ask":
            # Only a call the policy asks for can wait on an approval (a grant only turns an
            # ask into an allow): the others are judged afresh, each time.
            [outcome], _ = await self.gate.hold([call], judged, also_audit=forwarded)
            return await self._judged(ctx, route, call, outcome)
        thread = replace(judged, thread_id=subject)
        number = await self._last_judged(subject)
        while True:
            [outcome] = await self.gate.hold_external(
                [replace(call, id=str(number))], thread, also_audit=forwarded
            )
            if not outcome.recorded:
                return await self._judged(ctx, route, call, outcome)
            if outcome.approval is not None:
                if outcome.approval.pending:
                    return outcome.approval
                answer = await self._settle(ctx, route, outcome.approval, asker, late=True)
                if answer is not None:
                    return answer
            number += 1  # that one is done with: this call is the next

    async def _judged(
        self, ctx: Any, route: _Route, call: ToolCall, outcome: Outcome
    ) -> Approval | types.CallToolResult:
        """What a call judged now comes to: its approval, or run (audited with its verdict),
        or blocked."""
        if outcome.approval is not None:
            return outcome.approval
        if outcome.kind == "run":
            return await self._send(ctx, route, call)
        return _refused(f"signoff blocked this call: {outcome.verdict.reason}")

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

    async def _from_state(self, state: str, asker: Asker, subject: str) -> Approval:
        """The approval a 2026-07-28 retry names in its (unsealed) request state; it must be
        one the gateway asked for this asker and this call."""
        try:
            approval = await self.store.get_approval(str(json.loads(state)["approval"]))
            asked = (approval.origin, approval.thread_id, approval.requested_by)
        except (ValueError, KeyError, TypeError, NotFoundError):
            asked = None
        if asked != (ORIGIN, subject, asker.name):
            raise MCPError(INVALID_PARAMS, "requestState names no approval of this call")
        return approval

    # -- asking the person at the client ---------------------------------------------------

    def _can_elicit(self, ctx: Any, approval: Approval, asker: Asker) -> bool:
        """Whether to ask the person at the client: the client can show a form, and the
        asker may decide this approval."""
        capabilities = ctx.session.client_capabilities
        elicitation = None if capabilities is None else capabilities.elicitation
        if elicitation is None or (elicitation.form is None and elicitation.url is not None):
            return False  # no elicitation, or URL mode only
        return self._may_answer(approval, asker)

    def _may_answer(self, approval: Approval, asker: Asker) -> bool:
        """Whether the gateway takes the asker's own decision (the config allows it, and the
        rule lets the asker decide)."""
        return self.settings.elicitation and self.gate.may_decide(
            approval, actor=asker.name, roles=asker.roles
        )

    def _question(self, approval: Approval) -> str:
        call = approval.call
        shown = canonical_json(self._show(call.args)).decode()
        lines = [
            f"Allow {call.name} on {call.server}?",
            f"Arguments: {shown}",
            f"Why it asks: {approval.reason}"
            + (f" (rule {approval.rule})" if approval.rule else ""),
            f"Approval {approval.id}: it can also be decided in the signoff inbox.",
        ]
        return "\n".join(lines)

    def _input_required(self, approval: Approval) -> types.InputRequiredResult:
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=self._question(approval), requested_schema=_DECISION_SCHEMA
            )
        )
        return types.InputRequiredResult(
            input_requests={_INPUT: request},
            request_state=json.dumps({"approval": approval.id}),
        )

    async def _decide_in_client(
        self, approval: Approval, asker: Asker, responses: Mapping[str, Any]
    ) -> Approval:
        """Take the answer a 2026-07-28 client sent with its retry: only with the sealed state
        of a form the gateway showed it (a first call's answers are never taken)."""
        answer = responses.get(_INPUT)
        if answer is None:
            return approval
        if not self._may_answer(approval, asker):
            raise MCPError(INVALID_PARAMS, "this approval is not decided through the client")
        return await self._take(approval, _elicited(answer), asker)

    async def _take(self, approval: Approval, decision: Decision | None, asker: Asker) -> Approval:
        """Take the client's decision (None: it made none); a decision taken elsewhere first
        stands."""
        if decision is None:
            return approval
        try:
            return await self.gate.decide(
                approval.id, decision, actor=asker.name, roles=asker.roles
            )
        except ConflictError:
            return await self.store.get_approval(approval.id)

    # -- waiting ---------------------------------------------------------------------------

    async def _wait(self, ctx: Any, approval: Approval, asker: Asker) -> Approval:
        """Wait for a decision up to the gateway's limit, reporting progress; over a
        2025-11-25 session that can elicit, ask the person at the client meanwhile."""
        stored = asyncio.create_task(self._stored_decision(approval, self.settings.wait))
        tasks = {stored, asyncio.create_task(self._report(ctx, approval))}
        elicited = None
        if self._can_elicit(ctx, approval, asker) and not _modern(ctx):
            elicited = asyncio.create_task(self._elicit(ctx, approval, asker))
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

    async def _elicit(self, ctx: Any, approval: Approval, asker: Asker) -> Approval:
        """The person at the client's decision; never returns if they make none (the inbox
        may still decide)."""
        try:
            answer = await ctx.session.elicit_form(
                self._question(approval), _DECISION_SCHEMA, related_request_id=ctx.request_id
            )
            decision = _elicited(answer)
        except Exception as exc:  # the client's failure or odd answer: the inbox still decides
            logger.info("asking through the client failed (%s); waiting on the inbox", exc)
            decision = None
        if decision is None:
            await asyncio.Event().wait()  # dismissed: the inbox may still decide
        return await self._take(approval, decision, asker)

    async def _report(self, ctx: Any, approval: Approval) -> None:
        started = time.monotonic()
        every, limit = self.settings.progress_every, self.settings.wait
        message = f"waiting for a person to decide approval {approval.id} (signoff inbox)"
        while True:
            elapsed = time.monotonic() - started
            with contextlib.suppress(Exception):  # progress is a courtesy: never fail the call
                await ctx.session.report_progress(round(elapsed, 1), limit, message)
            await asyncio.sleep(every)

    # -- answering -------------------------------------------------------------------------

    async def _answer(
        self, ctx: Any, route: _Route, approval: Approval, asker: Asker
    ) -> types.CallToolResult:
        """The one answer to a decided approval this call waited on: the approved call run
        once, or the reason it was not. Every call waiting on the approval gets the same."""
        answer = await self._settle(ctx, route, approval, asker, late=False)
        assert answer is not None  # only a late call finds an approval answered before it
        return answer

    async def _settle(
        self, ctx: Any, route: _Route, approval: Approval, asker: Asker, *, late: bool
    ) -> types.CallToolResult | None:
        """The answer to a decided approval, given once through the ledger: the call that
        claims it gives it; the others get it, waiting up to the gateway's `wait` on one being
        given elsewhere. When the approved call left no answer — cut off midway, or its gateway
        gone — the answer is given under a second key: the call run again where the tool is
        read-only or idempotent, else "outcome unknown".

        A `late` call found the approval decided when it came: None when the approval was
        answered before then (the call asks anew)."""
        key = _ANSWER + approval.id
        try:
            return await self._settle_under(key, ctx, route, approval, asker, late=late)
        except (OutcomeUnknown, ExecutionFailed):
            pass  # the approved call left no answer
        try:
            return await self._settle_under(
                key + _AGAIN, ctx, route, approval, asker, late=late, again=True
            )
        except ExecutionFailed:  # cut off again: the approval is answered, its outcome unknown
            return None if late else _unknown(approval)

    async def _settle_under(
        self,
        key: str,
        ctx: Any,
        route: _Route,
        approval: Approval,
        asker: Asker,
        *,
        late: bool,
        again: bool = False,
    ) -> types.CallToolResult | None:
        """The answer under one ledger key: given by this call when it claims the key, else
        the one given. `OutcomeUnknown` or `ExecutionFailed` when none was."""
        try:
            found = await self._claim(key, again=again, late=late, call=approval.call)
        except TimeoutError:
            return _running(approval)
        if found is None:
            return None
        if isinstance(found, Recorded):
            return types.CallToolResult.model_validate(found.value)
        return await self._give(ctx, route, approval, asker, found, again=again)

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
        self,
        ctx: Any,
        route: _Route,
        approval: Approval,
        asker: Asker,
        claim: Claim,
        *,
        again: bool,
    ) -> types.CallToolResult:
        """Give the answer under the claimed key: an approved call forwarded (audited first),
        or why not — and `again`, only where the tool is read-only or idempotent."""
        call = approval.call
        try:
            if approval.status in ("approved", "edited"):
                result = self._unfit(route, approval)
            else:
                result = _outcome(approval)
            if result is None and again and not route.idempotent:
                result = _unknown(approval)
            elif result is None:
                forward = _forward_record(call, asker, approval=approval.id, rule=approval.rule)
                await self.store.append_audit([forward])
                result = await self._send(ctx, route, call)
        except BaseException as exc:
            # Cut off midway (the client went away) or broken: whether the call ran is unknown,
            # and the next call to answer the approval says so at once (or runs it again).
            with anyio.CancelScope(shield=True):
                await claim.fail(exc)
            raise
        with anyio.CancelScope(shield=True):  # given: kept, even if the client goes now
            await claim.finish(_wire(result))
        return result

    def _unfit(self, route: _Route, approval: Approval) -> types.CallToolResult | None:
        """Why the approved call may not run now (the policy denies it since, or an edit does
        not fit the tool's schema), or None."""
        verdict = self.gate.engine.evaluate(approval.call)
        if verdict.kind == "deny":
            return _refused(f"signoff blocked this call: {verdict.reason}")
        if approval.status == "edited":
            try:
                check_edit(approval.call.args, route.tool.input_schema)
            except InvalidEditError as exc:
                return _refused(f"the edited arguments do not fit the tool's schema: {exc}")
        return None

    async def _send(self, ctx: Any, route: _Route, call: ToolCall) -> types.CallToolResult:
        headers = self._forwarded(ctx.request, route.upstream)
        try:
            result = await route.upstream.call(route.tool.name, call.args, headers=headers)
        except UpstreamError as exc:
            return _refused(f"{exc}. The call may not have run.")
        return _clean(result)


# -- results -------------------------------------------------------------------------------


def _clean(result: types.CallToolResult) -> types.CallToolResult:
    """The upstream's result without its `_meta`: of the result, of its blocks, and of what
    they embed (a resource, an annotation). Structured content is the tool's own data: as is."""
    content = [_without_meta(block.model_dump(mode="json", by_alias=True, exclude_none=True))
               for block in result.content]  # fmt: skip
    return types.CallToolResult.model_validate(
        {"content": content, "structuredContent": result.structured_content,
         "isError": result.is_error}
    )  # fmt: skip


def _without_meta(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_meta(v) for k, v in value.items() if k != "_meta"}
    if isinstance(value, list):
        return [_without_meta(v) for v in value]
    return value


def _wire(result: types.CallToolResult) -> dict[str, Any]:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


def _text(
    text: str, *, error: bool, structured: dict[str, Any] | None = None
) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=error,
    )


def _refused(text: str) -> types.CallToolResult:
    return _text(text, error=True)


def _unknown(approval: Approval) -> types.CallToolResult:
    return _refused(
        f"the call approved by {approval.id} was started before and cut off midway (its client "
        "went away or its gateway stopped): its outcome is unknown, and it was not run again. "
        "Calling it again asks for a new approval."
    )


def _running(approval: Approval) -> types.CallToolResult:
    return _refused(
        f"the call approved by {approval.id} is running for an identical call and has not "
        "finished within the gateway's wait; its result goes to that call. Calling it again "
        "waits on it while it runs, and asks anew once it has finished."
    )


def _pending(approval: Approval) -> types.CallToolResult:
    text = (
        f"Nothing ran yet: this call waits for a person's approval ({approval.id}"
        + (f", rule {approval.rule}" if approval.rule else "")
        + f": {approval.reason}). Call the tool again with the same arguments to pick up the "
        "decision; it will not be asked for twice."
    )
    structured = {"status": "pending_approval", "approval_id": approval.id}
    return _text(text, error=False, structured=structured)


def _outcome(approval: Approval) -> types.CallToolResult:
    """The answer to an approval that did not let the call run."""
    decision = approval.decision
    by = approval.decided_by or "signoff"
    if approval.status == "responded":
        content = getattr(decision, "content", "")
        return _text(content, error=False)
    if approval.status == "rejected":
        reason = getattr(decision, "reason", None) or "no reason given"
        return _refused(f"The user {by} rejected this call: {reason}. Do not retry it.")
    if approval.status == "expired":
        return _refused("Nobody approved this call in time; it expired and did not run.")
    return _refused(f"This call was {approval.status} and did not run.")


def _elicited(answer: Any) -> Decision | None:
    """The decision in an elicitation's answer (None: dismissed, or no decision)."""
    if not isinstance(answer, types.ElicitResult):
        try:
            answer = types.ElicitResult.model_validate(
                answer.model_dump(by_alias=True) if hasattr(answer, "model_dump") else answer
            )
        except ValueError:
            raise MCPError(
                INVALID_PARAMS, "the approval's answer is not an elicitation result"
            ) from None
    if answer.action == "decline":
        return Reject(reason="declined in the MCP client")
    if answer.action != "accept":
        return None
    content = answer.content or {}
    choice = content.get("decision")
    reason = content.get("reason")
    if choice == "approve":
        return Approve()
    if choice == "reject":
        return Reject(reason=str(reason) if reason else "rejected in the MCP client")
    raise MCPError(INVALID_PARAMS, f"decision must be 'approve' or 'reject', not {choice!r}")


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
    return AuditRecord(
        actor=asker.name,
        action="forward",
        subject=approval or call.id,
        at=_now(),
        data={
            "tool": call.name,
            "server": call.server,
            "digest": call.digest,
            "approval": approval,
            "rule": rule,
        },
    )


def _modern(ctx: Any) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _now() -> datetime:
    return datetime.now(UTC)


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "local"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("signoff")
    except PackageNotFoundError:
        return "0"
