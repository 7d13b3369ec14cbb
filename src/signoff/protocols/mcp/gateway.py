"""The MCP gateway: any MCP client in front, the config's MCP servers behind, the policy and a
person in between (ARCHITECTURE §7; `signoff mcp-gateway`).

The gateway lists the servers' tools (prefixed ``<server>_`` when it fronts several), without
those the policy denies whatever their arguments. A call the policy allows is forwarded; one it
denies is answered with an error result; one that asks becomes an approval in the shared store
(the web inbox, `signoff inbox`, the API) and waits for a decision — while the client is told
of progress, and, where the client can elicit and the rule lets the asker decide, asked in the
client too; the first decision wins. When its wait runs out the call answers "pending", and
the same call again (same asker, tool and arguments) waits on that approval, not a new one.

An approval answers one call: the ledger keeps, per approval, the answer given (the upstream's
result, or the rejection), so the approved call runs exactly once, and after it an identical
call asks again (unless an approve-always grant lets it through).
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import hashlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from signoff.errors import (
    ApprovalTimeout,
    ConflictError,
    InvalidEditError,
    NotFoundError,
)
from signoff.gate import CheckContext, Gate, Outcome
from signoff.gate.edits import check_edit
from signoff.gate.ids import new_id
from signoff.protocols.mcp.settings import GatewaySettings
from signoff.protocols.mcp.upstream import Upstream, UpstreamError
from signoff.store import AuditRecord, Store
from signoff.store.base import NoteRecord
from signoff.store.ledger import LedgerEntry
from signoff.types import Approval, Approve, Decision, Reject, ToolCall, canonical_json

__all__ = ["ORIGIN", "Asker", "Gateway"]

logger = logging.getLogger("signoff.mcp.gateway")

ORIGIN = "mcp-gateway"
"""The origin of the approvals the gateway asks for."""
_CHANNEL = "mcp"
"""Notes: the approvals asked, under (asker, call digest), for a retried call to find."""
_CLAIMS = "mcp.asked"
"""Notes: the approval of a call asked after its n-th answered one, claimed once (by the
gateway that asks for it)."""
_ANSWER = "mcp:"
"""Ledger keys: the answer given to an approval's call."""
_LEDGER_RUN = "mcp-gateway"
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
        self._routes: dict[str, _Route] = {}
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}
        self._running: dict[str, asyncio.Future[types.CallToolResult]] = {}
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
            found = await self._approval_for(call, asker, subject, params.name)
            if isinstance(found, Outcome):
                if found.kind == "run":
                    return await self._send(ctx, route, call)
                return _refused(f"signoff blocked this call: {found.verdict.reason}")
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

    @contextlib.asynccontextmanager
    async def _exclusive(self, subject: str) -> AsyncIterator[None]:
        """One call at a time per asker and exact call, while it finds or makes its approval
        (in this process); the lock is dropped when nobody holds or awaits it."""
        lock, users = self._locks.get(subject, (asyncio.Lock(), 0))
        self._locks[subject] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[subject]
            if users == 1:
                del self._locks[subject]
            else:
                self._locks[subject] = (lock, users - 1)

    async def _approval_for(
        self, call: ToolCall, asker: Asker, subject: str, name: str
    ) -> Approval | Outcome:
        """The approval the call waits on — the one asked before for the same call by the same
        asker and not answered yet, or a new one — or, when the policy lets it run or blocks
        it, that outcome."""
        async with self._exclusive(subject):
            for _ in range(5):
                # Only a call the policy asks for can have an approval waiting (a grant only
                # turns an ask into an allow): the others need not look.
                if self.gate.engine.evaluate(call).kind == "ask":
                    waiting = await self.store.unanswered_approval(
                        channel=_CHANNEL, subject=subject, answer_prefix=_ANSWER
                    )
                    if waiting is not None:
                        return waiting
                # The claim is the count of this call's answered approvals: two gateways that
                # both found none waiting claim the same one, and one of them asks.
                answered = await self.store.count_answered(
                    channel=_CHANNEL, subject=subject, answer_prefix=_ANSWER
                )
                try:
                    outcome = await self._judge(call, asker, subject, name, claim=answered)
                except ConflictError:
                    continue  # another gateway asked for this very call meanwhile: wait on it
                return outcome.approval if outcome.approval is not None else outcome
        raise MCPError(INTERNAL_ERROR, "could not settle which approval this call waits on")

    async def _judge(
        self, call: ToolCall, asker: Asker, subject: str, name: str, *, claim: int
    ) -> Outcome:
        """The policy's verdict, audited; a call that runs at once is audited as forwarded,
        and a held one noted for its retries to find, in the same transaction — with a note
        claiming the approval that follows the `claim` answered ones, so that of two gateways
        asking for it at once, one does (`ConflictError` for the other)."""
        now = _now()

        def forwarded(outcomes: list[Outcome]) -> list[AuditRecord]:
            return [
                _forward_record(o.call, asker, approval=None, rule=o.verdict.rule)
                for o in outcomes
                if o.kind == "run"
            ]

        def noted(outcomes: list[Outcome]) -> list[NoteRecord]:
            notes = []
            for held in (o.approval for o in outcomes if o.approval is not None):
                notes.append(NoteRecord(channel=_CLAIMS, subject=subject, key=str(claim),
                                        data={"approval": held.id}, at=now,
                                        exclusive=True))  # fmt: skip
                notes.append(NoteRecord(channel=_CHANNEL, subject=subject, key=held.id,
                                        data={"tool": name}, at=now))  # fmt: skip
            return notes

        context = CheckContext(origin=ORIGIN, requested_by=asker.name)
        [outcome], _ = await self.gate.hold([call], context, also_audit=forwarded, notes=noted)
        return outcome

    async def _from_state(self, state: str, asker: Asker, subject: str) -> Approval:
        """The approval a 2026-07-28 retry names in its (unsealed) request state; it must be
        one the gateway asked for this asker and this call."""
        try:
            approval_id = json.loads(state)["approval"]
            approval = await self.store.get_approval(str(approval_id))
            noted = await self.store.notes(_CHANNEL, subject, key=approval.id)
        except (ValueError, KeyError, TypeError, NotFoundError):
            noted = []
        if not noted or approval.requested_by != asker.name:
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
        """The one answer to a decided approval: the approved call run once, or the reason
        it was not. Identical calls waiting here on the same approval share it."""
        key = _ANSWER + approval.id
        running = self._running.get(key)
        if running is not None:
            return await asyncio.shield(running)
        future: asyncio.Future[types.CallToolResult] = asyncio.get_running_loop().create_future()
        self._running[key] = future
        result = _refused("the call did not finish")
        try:
            result = await self._settle(ctx, route, approval, asker, key)
            return result
        finally:
            del self._running[key]
            future.set_result(result)

    async def _settle(
        self, ctx: Any, route: _Route, approval: Approval, asker: Asker, key: str
    ) -> types.CallToolResult:
        call = approval.call
        if approval.status in ("approved", "edited"):
            result = self._unfit(route, approval)
        else:
            result = _outcome(approval)
        forwarding = result is None
        forward = [_forward_record(call, asker, approval=approval.id, rule=approval.rule)]
        entry, _ = await self.store.ledger_start(
            key, run_id=_LEDGER_RUN, call_id=call.id, tool=call.name, digest=call.digest,
            at=_now(), audit=forward if forwarding else (),
        )  # fmt: skip
        if entry is not None:
            # Started before: by another gateway now (its answer is coming), or by one that
            # stopped during the call (no answer will come).
            entry = await self._answered(key, entry)
            if entry.result is not None:
                return types.CallToolResult.model_validate(entry.result)
            if not (forwarding and route.idempotent):
                result = _refused(
                    f"the call approved by {approval.id} was started before (a gateway stopped "
                    "during it) and its outcome is unknown; it was not run again. Calling it "
                    "again asks for a new approval."
                )
                await self.store.ledger_finish(key, result=_wire(result), at=_now())
                return result
        else:
            forward = []
        if result is None:
            result = await self._send(ctx, route, call)
        # A read-only or idempotent call started before is run again: audited as it goes.
        await self.store.ledger_finish(key, result=_wire(result), at=_now(), audit=forward)
        return result

    async def _answered(self, key: str, entry: LedgerEntry) -> LedgerEntry:
        """The entry once it has its answer, or as it is after the gateway's wait."""
        deadline = time.monotonic() + self.settings.wait
        while entry.result is None and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            entry = await self.store.ledger_entry(key) or entry
        return entry

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
