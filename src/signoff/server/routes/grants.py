"""The grants: those in force (and the revoked ones, asked for), one grant, and one revoked by
its granter or the admin role."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter

from signoff.errors import ForbiddenError, NotFoundError
from signoff.names import same_person
from signoff.server.auth import Who
from signoff.server.routes.depends import Served
from signoff.server.service import Service
from signoff.server.shapes import grant_json, shown
from signoff.types import Grant

__all__ = ["router"]

router = APIRouter()


@router.get("/v1/grants")
async def grants(
    _: Who, service: Served, tool: str | None = None, revoked: bool = False
) -> dict[str, Any]:
    """Every grant in force, oldest first (with `revoked`, the revoked ones too): its
    scope, tool, argument binding, who granted it and when, how often it was used, and
    whether it is in force: ``stale`` once the rule it was given under is no longer the
    policy's, ``inactive`` once its granter is no longer one of this server's principals
    or no longer has a role its rule needs (``why`` says which) — either covers nothing."""
    found = await service.store.list_grants(tool=tool, revoked=revoked)
    return {"items": await _grants_json(service, found)}


@router.get("/v1/grants/{grant_id}")
async def grant(grant_id: str, _: Who, service: Served) -> dict[str, Any]:
    [shown_grant] = await _grants_json(service, [await service.store.get_grant(grant_id)])
    return shown_grant


@router.delete("/v1/grants/{grant_id}")
async def revoke(grant_id: str, who: Who, service: Served) -> dict[str, Any]:
    """Revoke a grant (its granter, or the admin role): no call passes under it once this
    answers. Audited."""
    found = await service.store.get_grant(grant_id)
    if not same_person(found.created_by, who.name) and "admin" not in who.roles:
        raise ForbiddenError(
            f"{who.name!r} may not revoke {found.created_by!r}'s grant: it needs the admin role"
        )
    if found.revoked_at is None:
        # Revoked meanwhile by another request: done all the same (a DELETE sent again,
        # after an answer that was lost, is answered as the first was).
        with contextlib.suppress(NotFoundError):
            await service.gate.revoke_grant(grant_id, actor=who.name)
    [revoked_grant] = await _grants_json(service, [await service.store.get_grant(grant_id)])
    return revoked_grant


async def _grants_json(service: Service, grants: Sequence[Grant]) -> list[dict[str, Any]]:
    """The grants as the API lists them, each narrowed to arguments with those arguments (as
    the approval that left it was decided; shown as every call's are)."""
    engine = service.gate.engine
    bound = [g.approval_id for g in grants if g.args_digest is not None and g.approval_id]
    approvals = {a.id: a for a in await service.store.get_approvals(bound)} if bound else {}
    items = []
    for g in grants:
        item = grant_json(
            g, in_force=engine.knows(g.rule_digest), inactive=service.gate.grant_inactive(g)
        )
        approval = approvals.get(g.approval_id or "")
        item["args"] = None if approval is None else approval.call.args
        items.append(shown(item, service.redaction))
    return items
