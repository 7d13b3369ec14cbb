"""``/healthz`` and ``/readyz``: what a load balancer or a kubelet asks, and nothing more.

``/healthz`` answers while the process serves requests; ``/readyz`` when, besides, the store
answers and holds this version's schema — a replica whose database is away, or not migrated
yet, is taken out of rotation instead of failing the requests sent to it. Both are cheap (no
read beyond the schema's version), need no token, and say only ``ok`` / ``ready`` or ``not
ready``: why is logged on the server, not told to whoever asks.

They answer whatever ``Host`` the request names: a kubelet probes the pod's IP, which no
``allowed_hosts`` lists, and an answer that reveals nothing gives DNS rebinding nothing to take.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol, runtime_checkable

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError

from signoff.errors import SignoffError
from signoff.store import Store

__all__ = ["PROBES", "READY_SECONDS", "mount_probes"]

PROBES = frozenset({"/healthz", "/readyz"})
"""The probes' paths: served for any Host."""
READY_SECONDS = 2.0
"""How long the store may take to answer `/readyz` before the replica is not ready."""
logger = logging.getLogger(__name__)


@runtime_checkable
class _Checked(Protocol):
    async def check_schema(self) -> None: ...


def mount_probes(app: FastAPI, store: Store) -> None:
    """Add the probes' routes to `app`, and the API's own ``/v1/health`` (behind its guards)."""

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> JSONResponse:
        ready = await _ready(store)
        return JSONResponse(
            {"status": "ready" if ready else "not ready"}, status_code=200 if ready else 503
        )

    @app.get("/v1/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}


async def _ready(store: Store) -> bool:
    try:
        async with asyncio.timeout(READY_SECONDS):
            if isinstance(store, _Checked):
                await store.check_schema()
            else:
                await store.audit_length()
    except (SignoffError, SQLAlchemyError, OSError, TimeoutError) as exc:
        logger.warning("not ready: %s", exc)
        return False
    return True
