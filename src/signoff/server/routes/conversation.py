"""The conversations behind approvals: what a person deciding a call reads of the thread that
made it. For another framework's call, the messages its integration kept with the pause
(`signoff.gate.transcript`); for a call of signoff's own runs, the thread's messages. Read as
the approval itself is: ``GET /v1/approvals/{id}/conversation``, arguments masked."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from signoff.gate.transcript import MESSAGES, bounded, tail
from signoff.server.auth import Who
from signoff.server.routes.depends import Served
from signoff.server.shapes import shown

__all__ = ["ERROR_HIDDEN", "router"]

ERROR_HIDDEN = "(the tool's error, not shown: it may quote arguments this server redacts)"

router = APIRouter()


@router.get("/v1/approvals/{approval_id}/conversation")
async def conversation(approval_id: str, _: Who, service: Served) -> dict[str, Any]:
    """The conversation of the approval's thread — for another framework's call as it
    stood when the call was held, for signoff's own runs as it stands (its newest
    `MESSAGES` messages, each text cut): user and assistant text, tool calls and
    their results, each with the agent that said it where the framework tells agents
    apart. `agent` is the path of the agent that paused; `messages` is empty when nothing
    of the thread is kept (an integration that records none, the MCP gateway)."""
    approval = await service.store.get_approval(approval_id)  # 404 for no such approval
    agent, messages = approval.call.agent, []
    if approval.run_id is not None:
        run = await service.store.get_run(approval.run_id)
        messages = bounded(tail(await service.store.thread_messages(run.thread_id)))
    else:
        pause = await service.store.last_pause([approval_id])
        if pause is not None:
            agent = agent or pause.agent
            kept = pause.data.get("conversation")
            messages = kept[-MESSAGES:] if isinstance(kept, list) else []
    if service.redaction:
        messages = [_unquoted(m) for m in messages]
    found: dict[str, Any] = {
        "approval_id": approval.id,
        "origin": approval.origin,
        "thread_id": approval.thread_id,
        "agent": agent,
        "messages": messages,
    }
    return shown(found, service.redaction)


def _unquoted(message: dict[str, Any]) -> dict[str, Any]:
    """`message` without the text of a tool's error, which frameworks write with the call's
    arguments in it (LangGraph's "with kwargs {…}", Pydantic AI's retry prompt): where the
    server redacts arguments, their masks must not be read around."""
    return message | {"content": ERROR_HIDDEN} if message.get("is_error") else message
