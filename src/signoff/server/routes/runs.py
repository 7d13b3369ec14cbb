"""Runs and threads: a run started on a thread (answered once it pauses or ends, with ``wait``),
the runs newest first, one run with its messages and the runs of its thread before it, and the
events of one run or of every run as server-sent events."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Header, HTTPException, Query, Request
from fastapi.responses import StreamingResponse

from signoff.gate.transcript import bounded
from signoff.server.auth import Who
from signoff.server.routes.depends import Authority, Served
from signoff.server.service import Service
from signoff.server.shapes import (
    MAX_SEQ,
    StartRun,
    cut_input,
    event_json,
    iso,
    previewed,
    shown,
    sse,
)
from signoff.store.runs import RunRecord
from signoff.store.times import from_micros, to_micros
from signoff.types.fields import same_named

__all__ = ["EARLIER_BYTES", "EARLIER_RUNS", "router"]

EARLIER_RUNS = 20
"""The most runs of a thread before it a run's page shows."""
EARLIER_BYTES = 256 * 1024
"""The most those runs' messages take as JSON: the runs farthest back are left out past it."""

router = APIRouter()


@router.post("/v1/threads/{thread_id}/runs", status_code=201)
async def start_run(
    thread_id: str,
    body: StartRun,
    who: Who,
    service: Served,
    wait: Annotated[float, Query(ge=0, le=60)] = 0,
) -> dict[str, Any]:
    """Start a run of `agent` on the thread; with `wait`, answer once it pauses or ends
    (or after that many seconds)."""
    run_id = await service.start_run(
        body.agent, thread_id, body.input, started_by=who.name, wait=wait
    )
    return await _run(service, run_id, earlier=False)


@router.get("/v1/runs")
async def list_runs(
    _: Who,
    service: Served,
    agent: str | None = None,
    status: str | None = None,
    cursor: str | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> dict[str, Any]:
    """Runs, newest first, without their messages but with what each was asked (`input`:
    its first message, cut); `next` is the next page's cursor."""
    if cursor is not None:
        await service.store.get_run(cursor)  # 404 for a cursor that names no run
    page = await service.store.list_runs(agent=agent, status=status, before=cursor, limit=limit)
    inputs = await service.store.run_inputs([r.id for r in page])
    return {
        "items": [_run_summary(r) | {"input": cut_input(inputs.get(r.id))} for r in page],
        "next": page[-1].id if len(page) == limit else None,
    }


@router.get("/v1/runs/{run_id}")
async def get_run(run_id: str, _: Who, service: Served) -> dict[str, Any]:
    return await _run(service, run_id)


@router.get("/v1/runs/{run_id}/events")
async def run_events(
    run_id: str,
    _: Who,
    service: Served,
    auth: Authority,
    request: Request,
    last_event_id: Annotated[int | None, Header(ge=0, le=MAX_SEQ)] = None,
    after: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
) -> StreamingResponse:
    """The run's events as server-sent events, from the start or after `Last-Event-ID`,
    live until the run ends."""
    await service.store.get_run(run_id)  # 404 before the stream starts
    events = service.follow(run_id, after=last_event_id or after)

    async def stream() -> AsyncIterator[str]:
        async for event in events:
            yield sse(previewed(event_json(event), service.redaction), event.type, str(event.seq))

    # Ended once who opened it may no longer read it (signed out, on any replica).
    watched = auth.while_signed_in(request.headers, stream())
    return StreamingResponse(watched, media_type="text/event-stream")


@router.get("/v1/events")
async def all_events(
    _: Who,
    service: Served,
    auth: Authority,
    request: Request,
    last_event_id: Annotated[str | None, Header(max_length=200)] = None,
    since: datetime | None = None,
) -> StreamingResponse:
    """Every run's events as server-sent events, live: from now on, from `since`, or after
    `Last-Event-ID` (an id of this stream: ``<micros>.<run id>.<number>``). For inboxes."""
    after = None
    if last_event_id is not None:
        try:
            micros, run_id, seq = last_event_id.split(".")
            after = (from_micros(int(micros)), run_id, int(seq))
            since = after[0]
        except (ValueError, OverflowError, OSError):
            detail = f"Last-Event-ID {last_event_id!r} is not an id of this stream"
            raise HTTPException(400, detail={"error": "InvalidRequest", "detail": detail}) from None
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=UTC)  # a time without a zone is UTC
    events = service.follow_all(since=since, after=after)

    async def stream() -> AsyncIterator[str]:
        yield ": every run's events\n\n"  # the stream is open before the first event
        async for event in events:
            event_id = f"{to_micros(event.at)}.{event.run_id}.{event.seq}"
            yield sse(previewed(event_json(event), service.redaction), event.type, event_id)

    watched = auth.while_signed_in(request.headers, stream())
    return StreamingResponse(watched, media_type="text/event-stream")


async def _run(service: Service, run_id: str, *, earlier: bool = True) -> dict[str, Any]:
    """The run with its messages, and — for a run that continues a conversation — the runs
    of its thread before it (`earlier`, oldest first, each with its newest messages, texts
    cut: `EARLIER_RUNS` runs at most, `EARLIER_BYTES` of messages in all)."""
    store = service.store
    record = await store.get_run(run_id)
    pending = await store.list_approvals(status="pending", run_id=run_id, limit=500)
    before: list[dict[str, Any]] = []
    if earlier and record.parent_id is None:
        found = await store.list_runs(thread_id=record.thread_id, roots=True, before=run_id,
                                      limit=EARLIER_RUNS)  # fmt: skip
        size = 0
        for run in found:  # newest first: the runs nearest this one are kept
            messages = bounded(shown(await store.run_messages(run.id), service.redaction))
            size += len(json.dumps(messages, default=str))
            if size > EARLIER_BYTES:
                break
            before.append(_run_summary(run) | {"messages": messages})
    return _run_summary(record) | {
        "messages": shown(await store.run_messages(run_id), service.redaction),
        "pending_approvals": [a.id for a in pending],
        "earlier": before[::-1],
    }


def _run_summary(record: RunRecord) -> dict[str, Any]:
    return {
        **same_named(record, ("id", "thread_id", "agent", "status", "started_by", "parent_id")),
        "created_at": None if record.created_at is None else iso(record.created_at),
        "updated_at": None if record.updated_at is None else iso(record.updated_at),
    }
