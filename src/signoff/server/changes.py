"""``GET /v1/approvals/changes``: every change to an approval, live, for whoever shows approvals
as they stand — held, edited, voted on, handed on, escalated, judged again by a new policy,
decided — wherever the change was made (this replica or another, any channel, any run or none).

The audit log is the feed: each of those changes writes its entry, whose subject is the
approval, in the transaction that makes it, so the log's order is the order they happened in and
its entry numbers are the stream's ids. An event names the approval, its version and its status —
never what the entry holds (arguments: the approval itself is read through the API, where the
server's redaction applies).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Annotated, Final

from fastapi import FastAPI, Header, Request
from fastapi.responses import StreamingResponse

from signoff.errors import NotFoundError, StoreUnavailableError
from signoff.gate.notifier import ANY
from signoff.server.auth import Auth, Who
from signoff.server.service import Service
from signoff.server.shapes import sse
from signoff.types import Approval

__all__ = ["approval_changes", "mount_changes"]

PAGE: Final = 500
"""Audit entries read at a time."""
_MAX_SEQ: Final = 2**62
logger = logging.getLogger(__name__)


def mount_changes(app: FastAPI, service: Service) -> None:
    """``GET /v1/approvals/changes`` (mounted before ``/v1/approvals/{id}``, which would take
    its path for an id)."""

    @app.get("/v1/approvals/changes", response_class=StreamingResponse)
    async def changes(
        _: Who,
        request: Request,
        last_event_id: Annotated[int | None, Header(ge=0, le=_MAX_SEQ)] = None,
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
        auth: Auth = request.app.state.auth
        watched = auth.while_signed_in(request.headers, stream())
        return StreamingResponse(watched, media_type="text/event-stream")


async def approval_changes(service: Service, *, after: int) -> AsyncIterator[tuple[int, Approval]]:
    """Each approval changed after audit entry `after`, as it stands when read, with the number
    of the newest entry that changed it; live, until cancelled. Changes made here wake it at
    once; those of other replicas are found every `poll_interval`. A database that stops
    answering is asked again then: nothing is skipped meanwhile."""
    with service.gate.notifier.subscription(ANY) as woken:
        while True:
            woken.clear()
            try:
                while True:  # every page written since, however many
                    last, found = await service.store.audit_changes(after=after, limit=PAGE)
                    changed: dict[str, int] = {}
                    for seq, approval_id in found:  # each once, at its newest change
                        changed.pop(approval_id, None)
                        changed[approval_id] = seq
                    for approval in await _read(service, changed):
                        yield changed[approval.id], approval
                    if last - after < PAGE:
                        after = last
                        break
                    after = last
            except StoreUnavailableError as exc:
                logger.warning("following approval changes: %s", exc)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(service.poll_interval):
                    await woken.wait()


async def _read(service: Service, changed: dict[str, int]) -> list[Approval]:
    """The approvals by id; an id that names none (the subject of a damaged entry) is passed
    over, never the end of the stream."""
    if not changed:
        return []
    try:
        return await service.store.get_approvals(list(changed))
    except NotFoundError:
        found = []
        for approval_id in changed:
            with contextlib.suppress(NotFoundError):
                found.append(await service.store.get_approval(approval_id))
        return found
