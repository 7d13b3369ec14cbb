"""``GET /v1/approvals/catalog``: the agents and tools approvals name — the inbox's filters.
Not only the server's own agents: the calls of other frameworks' apps on its database and of
the MCP gateway are held under agents and tools the server does not run. Included before
``/v1/approvals/{id}``, which would take its path for an id."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from signoff.server.auth import Who
from signoff.server.routes.depends import Served

__all__ = ["router"]

router = APIRouter()


@router.get("/v1/approvals/catalog")
async def catalog(
    _: Who, service: Served, limit: Annotated[int, Query(ge=1, le=500)] = 200
) -> dict[str, Any]:
    """``{"agents", "tools"}``: the agent paths and tool names of the approvals held here,
    pending or decided, whoever held them, each once and in order — at most `limit` of
    each. A name filters ``GET /v1/approvals?agent=&tool=``."""
    found = await service.store.catalog(limit=limit)
    return {"agents": found.agents, "tools": found.tools}
