"""``GET /v1/me``: who the request is, with which roles — what the inbox shows as signed in, and
whether anyone signs in at all."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from signoff.server.auth import Who
from signoff.server.routes.depends import Authority

__all__ = ["router"]

router = APIRouter()


@router.get("/v1/me")
async def me(who: Who, auth: Authority) -> dict[str, Any]:
    """Who the request is, with which roles; `authenticated` is false without tokens."""
    return {
        "name": who.name,
        "roles": sorted(who.roles),
        "authenticated": auth.anonymous is None,
    }
