"""``GET /v1/approvals/changes``: every change to an approval as server-sent events, live
(`signoff.server.changes` finds them). An event names the approval, its version and its status —
never what the audit entry holds (arguments: the approval itself is read through the API, where
the server's redaction applies). Included before ``/v1/approvals/{id}``, which would take its
path for an id."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Request
from fastapi.responses import StreamingResponse

from signoff.server.auth import Who
from signoff.server.changes import approval_changes
from signoff.server.routes.depends import Authority, Served
from signoff.server.shapes import MAX_SEQ, sse

__all__ = ["router"]

router = APIRouter()


@router.get("/v1/approvals/changes", response_class=StreamingResponse)
async def changes(
    _: Who,
    service: Served,
    auth: Authority,
    request: Request,
    last_event_id: Annotated[int | None, Header(ge=0, le=MAX_SEQ)] = None,
) -> StreamingResponse:
    """Every change to an approval as server-sent events, live: from now on, or after
    `Last-Event-ID`. Each is ``event: approval`` with ``{"id", "version", "status"}``
    — read the approval for the rest; its id is the number of the newest audit entry
    that changed it. The first event, ``open``, carries where the stream starts as its
    id: a client that reconnects with the last id it got misses nothing."""
    end = await service.store.audit_length()
    # An id past the log's end (another database, or one restored from a backup): from now.
    after = end if last_event_id is None else min(last_event_id, end)
    found = approval_changes(service, after=after)

    async def stream() -> AsyncIterator[str]:
        yield ": approval changes\n\n"
        yield sse({"after": after}, "open", str(after))
        async for seq, approval in found:
            brief = {"id": approval.id, "version": approval.version, "status": approval.status}
            yield sse(brief, "approval", str(seq))

    # Ended once who opened it may no longer read it (signed out, on any replica).
    watched = auth.while_signed_in(request.headers, stream())
    return StreamingResponse(watched, media_type="text/event-stream")
