"""A call the gateway lets through, forwarded to its server over the client's own connection —
the server's answer screened of what the client may not read, its progress passed on, what it
asks of the client first passed on too (`relay`) — and the audit entry that records each forward,
with the verdict or the approval that let it through."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from mcp import types
from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY

from signoff.gate import Outcome
from signoff.protocols.mcp.answers import DOING, Reply, clean, shape_of
from signoff.protocols.mcp.questions import ServerQuestions
from signoff.protocols.mcp.relay import relayed, relays
from signoff.protocols.mcp.request import Action, Asked, Asker, modern
from signoff.protocols.mcp.requesting import Round, declaring
from signoff.protocols.mcp.screen import Screen
from signoff.protocols.mcp.upstream import Answer, UpstreamError
from signoff.store import AuditRecord
from signoff.types import ToolCall

__all__ = ["MAX_ROUNDS", "forward_record", "forwarding", "send"]

MAX_ROUNDS = 16
"""The most rounds of a call (counted through the client's retries, in the gateway's state) in
which a 2026-07-28 server's questions are answered from the inbox; a server that asks the inbox
more is refused (the client is never handed the forms instead: it may not show one)."""


async def send(
    asked: Asked,
    action: Action,
    call: ToolCall,
    *,
    screen: Screen,
    approval: str | None = None,
    again: Round | None = None,
) -> Reply:
    """Forward `call` to its server over the client's own connection (`again`: made again
    with what the server asked for): the server's answer, without its `_meta`, screened. What
    it asks first (2026-07-28) is asked in the inbox where the client cannot answer it
    (`questions`, and the request made again with the answers), else passed on to the client
    (`relay`), with the `approval` that let the call through."""
    shape = shape_of(call)
    doing = DOING[call.kind]
    upstream = action.upstream
    assert upstream is not None  # a question of the ask tool's is answered, never forwarded
    link = await asked.peer.link(upstream)
    logs = asked.peer.logs(asked.ctx, upstream.name)
    fresh = modern(asked.ctx)
    headers = asked.headers
    client = asked.ctx.session.client_capabilities if fresh else None
    questions = asked.peer.questions if fresh else None
    # A 2026-07-28 request declares its client's capabilities, and the forms the inbox takes.
    declared = client if questions is None else questions.declared(client)

    async def request(again: Round | None) -> Answer:
        with declaring(declared):
            if call.kind == "tool":
                progress = _progress(asked)
                return await link.call(
                    call.name, call.args, headers=headers, progress=progress, logs=logs, again=again
                )
            if call.kind == "resource":
                return await link.read(call.name, headers=headers, logs=logs, again=again)
            arguments = {k: str(v) for k, v in call.args.items()}
            return await link.prompt(call.name, arguments, headers=headers, logs=logs, again=again)

    answered: dict[str, types.ElicitResult] = {}
    try:
        result = await request(again)
        if questions is not None:
            rounds = _inbox_rounds(questions, asked, upstream.name, result, again, request)
            result, again, answered = await rounds
    except UpstreamError as exc:
        if exc.answer is not None and exc.answer.code == MISSING_REQUIRED_CLIENT_CAPABILITY:
            return _lacking(exc.answer.error, shared=not (fresh or asked.peer.bound))
        if exc.answer is not None and call.kind != "tool":
            return exc.answer.error  # the server's own error, as it said it
        if exc.answered:
            text = f"{exc}. The {doing} ran on the server; its answer is not passed on."
            return shape.refused(text, "failed")
        return shape.refused(f"{exc}. The {doing} may not have run.", "failed")
    read = call.name if call.kind == "resource" else None
    screened = screen.answer(clean(result), call.server, read=read)
    if not isinstance(result, types.InputRequiredResult):
        return shape.done(screened)
    server = upstream.name
    if not fresh:
        return shape.refused(
            f"MCP server {server!r} asks for input in its result (2026-07-28), which this "
            f"client's protocol cannot carry. The {doing} did not finish.",
            "failed",
        )
    if questions is not None and not answered and questions.takes(result, client):
        return shape.refused(
            f"MCP server {server!r} asked for input more than {MAX_ROUNDS} times in this "
            f"{doing}. The {doing} did not finish.",
            "failed",
        )
    try:
        asking = types.InputRequiredResult.model_validate(screened)
        number = (0 if again is None else again.number) + 1
        passed = relayed(asking, approval=approval, asker=asked.asker.name, server=server,
                         number=number, answered=answered)  # fmt: skip
    except ValueError as exc:
        return shape.refused(f"{exc}. The {doing} did not finish.", "failed")
    await asked.peer.store.append_audit(relays(passed, actor=asked.asker.name, server=server))
    return passed


async def _inbox_rounds(
    questions: ServerQuestions,
    asked: Asked,
    server: str,
    result: Answer,
    again: Round | None,
    request: Callable[[Round | None], Awaitable[Answer]],
) -> tuple[Answer, Round | None, dict[str, types.ElicitResult]]:
    """The server's answer once the inbox answered what it asked that the inbox takes
    (`questions`), the request made again with the answers each time, up to the call's
    `MAX_ROUNDS`th round; the round it came in. When the server also asks what the client
    answers, the rest of its input requests, for the client, and the inbox's answers, to go
    with the client's."""
    client = asked.ctx.session.client_capabilities
    while (0 if again is None else again.number) < MAX_ROUNDS:
        if not isinstance(result, types.InputRequiredResult) or not questions.takes(result, client):
            break
        responses = await questions.answers(server, asked.asker.name, result)
        asks = result.input_requests or {}
        if len(responses) < len(asks):
            rest = {k: a for k, a in asks.items() if k not in responses}
            return result.model_copy(update={"input_requests": rest}), again, responses
        number = (0 if again is None else again.number) + 1
        again = Round(responses=responses, state=result.request_state, number=number)
        result = await request(again)
    return result, again, {}


def _lacking(error: types.ErrorData, *, shared: bool) -> types.ErrorData:
    """A server's -32021 (a capability of the client's missing), as it said it; for a
    2025-era client on the gateway's shared connection, which declares none of its own, saying
    so."""
    if not shared:
        return error
    why = (
        " (this client's session shares the gateway's connection to the server, past "
        "gateway.sessions, which declares no capability of the client's)"
    )
    return error.model_copy(update={"message": error.message + why})


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


def forwarding(call: ToolCall, asker: Asker) -> Callable[[list[Outcome]], list[AuditRecord]]:
    """The `forward` entry of the call when the verdict judged now lets it run, audited with
    that verdict."""

    def forwarded(outcomes: list[Outcome]) -> list[AuditRecord]:
        return [
            forward_record(call, asker, approval=None, rule=o.verdict.rule)
            for o in outcomes
            if o.kind == "run" and not o.recorded
        ]

    return forwarded


def forward_record(
    call: ToolCall, asker: Asker, *, approval: str | None, rule: str | None
) -> AuditRecord:
    """The audit entry of a forward: the call, and the approval or rule that let it through."""
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
        actor=asker.name,
        action="forward",
        subject=approval or call.id,
        at=datetime.now(UTC),
        data=data,
    )
