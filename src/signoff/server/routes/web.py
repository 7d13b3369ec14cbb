"""The web inbox (ARCHITECTURE §7): static files shipped in the package, served at ``/`` (and at
``/approvals/<id>``, an approval's own page).

No build step: plain ES modules and one stylesheet. The page talks only to the ``/v1`` API and
its server-sent events, with the bearer token in a header (kept in the tab's session storage,
never a cookie), under a Content-Security-Policy that allows nothing but this origin.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.responses import Response

from signoff.server.auth import Who
from signoff.server.routes.depends import Served

__all__ = ["CSP", "router"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""The page may load its own scripts and styles and talk to its own origin; nothing inline,
nothing from elsewhere, and no other site may frame it."""

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


router = APIRouter()
"""The page at ``/`` and at ``/approvals/<id>`` (an approval's own page, which notifications
link to), its files under ``/ui/``, and what it takes from the server's config. The page names
its files and the API from the root, so it works the same at either path."""


@router.get("/", include_in_schema=False)
async def page() -> Response:
    return _file("index.html")


@router.get("/approvals/{approval_id}", include_in_schema=False)
async def approval_page(approval_id: str) -> Response:
    # Whether the approval exists is the API's to say, to a signed-in page: the page shows
    # "no such approval" itself.
    return _file("index.html")


@router.get("/ui/{name}", include_in_schema=False)
async def asset(name: str) -> Response:
    return _file(name)


@router.get("/v1/web")
async def web(_: Who, service: Served) -> dict[str, Any]:
    """What the web inbox takes from the server's config: how many seconds it holds an
    approval or a rejection back, undoable, before sending it (0: none)."""
    return {"undo_seconds": service.undo_seconds}


def _file(name: str) -> Response:
    body = _files().get(name)
    if body is None:
        raise HTTPException(404, detail={"error": "NotFound", "detail": f"no file {name!r}"})
    suffix = name[name.rfind(".") :]
    return Response(body, media_type=_TYPES[suffix], headers=_HEADERS)


@cache
def _files() -> dict[str, bytes]:
    """The page's files by name, read once."""
    folder = files("signoff.server") / "web"
    return {
        entry.name: entry.read_bytes()
        for entry in folder.iterdir()
        if entry.is_file() and entry.name[entry.name.rfind(".") :] in _TYPES
    }
