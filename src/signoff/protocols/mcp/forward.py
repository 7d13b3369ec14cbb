"""A call the gateway lets through, forwarded to its server over the client's own connection —
the server's answer screened of what the client may not read, its progress passed on — and the
audit entry that records each forward, with the verdict or the approval that let it through."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from signoff.gate import Outcome
from signoff.protocols.mcp.answers import DOING, Reply, clean, shape_of
from signoff.protocols.mcp.request import Action, Asked, Asker
from signoff.protocols.mcp.screen import Screen
from signoff.protocols.mcp.upstream import UpstreamError
from signoff.store import AuditRecord
from signoff.types import ToolCall

__all__ = ["forward_record", "forwarding", "send"]


async def send(asked: Asked, action: Action, call: ToolCall, *, screen: Screen) -> Reply:
    """Forward `call` to its server over the client's own connection: the server's answer,
    without its `_meta`, screened."""
    shape = shape_of(call)
    link = await asked.peer.link(action.upstream)
    logs = asked.peer.logs(asked.ctx, action.upstream.name)
    try:
        if call.kind == "tool":
            result: Any = await link.call(
                call.name, call.args, headers=asked.headers, progress=_progress(asked), logs=logs
            )
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
    return shape.done(screen.answer(clean(result), call.server, read=read))


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
