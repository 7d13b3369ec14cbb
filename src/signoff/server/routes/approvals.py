"""The approvals and the decisions on them: ``GET /v1/approvals`` (newest first, by short id, or
those handed to someone), one approval (once it is decided, with ``wait``), a decision, several
at once, a handover, an edit's preview; and ``WS /v1/ws``, where they are pushed live and decided
(`signoff.server.ws`).

The decision's route seldom runs: `signoff.server.quick` takes a well-formed decision to
`Approvals.take` — the route's own work — before FastAPI would.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Query, Response, WebSocket
from starlette.requests import HTTPConnection

from signoff.errors import ApprovalTimeout
from signoff.server.auth import Who
from signoff.server.routes.depends import Authority, Limits, Served
from signoff.server.service import Principal, Service
from signoff.server.shapes import (
    AssignBody,
    DecisionBody,
    Decisions,
    PreviewBody,
    approval_json,
    previewed,
    seen_version,
    shown,
)
from signoff.server.ws import websocket_channel
from signoff.types import Approval, preview_to_dict

__all__ = ["ASKED_KEPT", "Approvals", "router"]

ASKED_KEPT = 10_000
"""Runs whose first message the API keeps in memory, to show with their approvals."""

router = APIRouter()


class Approvals:
    """The approvals as the API shows them, and a decision taken as its route takes it (kept
    on ``app.state.approvals`` by `create_app`)."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.asked: dict[str, str] = {}
        """What the user asked each run, as read: a run's first message never changes, so each
        is read once, not again at every decision of its calls (the newest `ASKED_KEPT` kept)."""

    async def json(self, approvals: Sequence[Approval]) -> list[dict[str, Any]]:
        """The approvals with what the user asked their runs, read at once for all of them,
        and the JSON schema kept with each (`args_schema`: an edit is checked against it, the
        inbox's edit form is built from it), or null."""
        asked = self.asked
        wanted = {a.run_id for a in approvals if a.run_id}
        unread = wanted - asked.keys()
        if unread:
            asked.update(await self.service.store.run_inputs(unread))
            for run_id in list(asked)[: max(0, len(asked) - ASKED_KEPT)]:
                del asked[run_id]  # the oldest read first
        inputs = {run_id: asked[run_id] for run_id in wanted if run_id in asked}
        return [
            approval_json(a, inputs)
            | {
                "args_schema": a.args_schema,
                "preview_edits": self.service.previews_for(a) is not None,
            }
            for a in approvals
        ]

    async def one(self, approval: Approval) -> dict[str, Any]:
        """The approval as its own page shows it: whole, arguments masked."""
        [found] = await self.json([approval])
        return shown(found, self.service.redaction)

    async def take(
        self, who: Principal, approval_id: str, body: DecisionBody, if_match: str | None = None
    ) -> dict[str, Any]:
        """A decision on one approval, as `POST /v1/approvals/{id}/decision` takes it: on the
        version its body or its ``If-Match`` names."""
        approval = await self.service.decide(
            approval_id,
            body.decision(),
            actor=who.name,
            roles=who.roles,
            version=seen_version(body.version, if_match),
        )
        return await self.one(approval)


def _approvals(connection: HTTPConnection) -> Approvals:
    approvals: Approvals = connection.app.state.approvals
    return approvals


Shown = Annotated[Approvals, Depends(_approvals)]
"""The app's `Approvals`."""


@router.get("/v1/approvals")
async def list_approvals(
    who: Who,
    service: Served,
    approvals: Shown,
    status: str | None = None,
    run_id: str | None = None,
    agent: str | None = None,
    tool: str | None = None,
    cursor: str | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    short_id: Annotated[str | None, Query(min_length=1)] = None,
    assigned: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
) -> dict[str, Any]:
    """Newest first; `next` is the cursor of the next page, or null. Long arguments are
    cut (``truncated``); `GET /v1/approvals/{id}` has them whole. With `short_id`, only
    the approvals whose id ends with it (the short id `signoff inbox` shows), on one page.
    With `assigned`, those handed to that principal or ``role:NAME``; ``assigned=me``:
    to the caller, or to a role the caller has."""
    if short_id is not None:
        if (status, run_id, agent, tool, cursor, assigned) != (None,) * 6:
            raise HTTPException(
                400, detail={"error": "InvalidRequest", "detail": "short_id goes alone"}
            )
        found = await service.store.find_approvals(short_id, limit=limit)
        return {"items": _listed(service, await approvals.json(found)), "next": None}
    assigned_to = None
    if assigned == "me":
        assigned_to = [who.name, *(f"role:{r}" for r in sorted(who.roles))]
    elif assigned is not None:
        assigned_to = [assigned]
    page = await service.store.list_approvals(
        status=status,
        run_id=run_id,
        agent=agent,
        tool=tool,
        assigned_to=assigned_to,
        before=cursor,
        limit=limit,
    )
    return {
        "items": _listed(service, await approvals.json(page)),
        "next": page[-1].id if len(page) == limit else None,
    }


def _listed(service: Service, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The approvals as a listing shows them: long arguments cut."""
    return [previewed(item, service.redaction) for item in items]


@router.get("/v1/approvals/{approval_id}")
async def get_approval(
    approval_id: str,
    _: Who,
    service: Served,
    approvals: Shown,
    response: Response,
    wait: Annotated[float, Query(ge=0, le=300)] = 0,
    version: Annotated[int | None, Query(ge=1, le=2**31)] = None,
) -> dict[str, Any]:
    """The approval; with `wait`, once it is decided (with `version`, once it is no longer
    at that version: edited, voted on, handed on, escalated) or that many seconds have
    passed. Its ``ETag`` is its version: send it back as ``If-Match`` with a decision."""
    approval = await service.store.get_approval(approval_id)
    if approval.pending and wait > 0 and version in (None, approval.version):
        with contextlib.suppress(ApprovalTimeout):
            approval = await service.gate.wait(approval_id, timeout=wait, past=version)
    response.headers["ETag"] = f'"{approval.version}"'
    return await approvals.one(approval)


@router.post("/v1/approvals/{approval_id}/decision")
async def decide(
    approval_id: str,
    body: DecisionBody,
    who: Who,
    approvals: Shown,
    if_match: Annotated[str | None, Header(max_length=64)] = None,
) -> dict[str, Any]:
    """Decide the approval, on the version its sender saw (``version``, or ``If-Match``):
    one that changed since gets 409 naming what changed, and nothing is written."""
    # A well-formed decision seldom gets here: `QuickDecision` takes it to `take` first.
    return await approvals.take(who, approval_id, body, if_match)


@router.post("/v1/approvals/{approval_id}/assign")
async def assign(
    approval_id: str, body: AssignBody, who: Who, service: Served, approvals: Shown
) -> dict[str, Any]:
    """Hand a pending approval to a person or a role (``role:NAME``) with a note, as
    someone who may decide it; it is told through the sinks that reach them, audited, and
    widens nothing: they are held to the rule's approvers like anyone."""
    approval = await service.gate.assign(
        approval_id, body.to, actor=who.name, roles=who.roles, note=body.note
    )
    return await approvals.one(approval)


@router.post("/v1/approvals/{approval_id}/preview")
async def preview(approval_id: str, body: PreviewBody, who: Who, service: Served) -> dict[str, Any]:
    """What the pending call would change with `args` in place of its own — an edit not
    sent yet — computed here, within the preview's bounds; 409 where its tool lives in
    another process (``preview_edits`` false on the approval)."""
    found = await service.preview_edit(approval_id, body.args, actor=who.name, roles=who.roles)
    return {"preview": shown(preview_to_dict(found), service.redaction)}


@router.post("/v1/approvals/decisions")
async def decide_batch(
    body: Decisions, who: Who, service: Served, approvals: Shown
) -> dict[str, Any]:
    """Several decisions, all or nothing ("Approve All" is every id with approve), each on
    the version of its approval it names."""
    decisions = {i: d.decision() for i, d in body.decisions.items()}
    versions = {i: d.version for i, d in body.decisions.items() if d.version is not None}
    decided = await service.decide_batch(
        decisions, actor=who.name, roles=who.roles, versions=versions
    )
    return {"items": [shown(a, service.redaction) for a in await approvals.json(decided)]}


@router.websocket("/v1/ws")
async def ws(socket: WebSocket, service: Served, auth: Authority, limits: Limits) -> None:
    """Approval requests and decisions pushed live; decisions taken (see `server.ws`)."""
    await websocket_channel(socket, service, auth, limits=limits)
