"""Every refusal as JSON naming the problem: signoff's errors by their HTTP status (the only place
that maps them), Starlette's own (404, 405, …) and a request FastAPI could not read, each as
``{"error", "detail"}`` — never a 500 for bad input."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from signoff.errors import (
    ConflictError,
    ForbiddenError,
    InvalidDecisionError,
    InvalidEditError,
    NotFoundError,
    PolicyError,
    SignoffError,
    StaleDecisionError,
    StoreUnavailableError,
)
from signoff.server.intake import validation_refusal
from signoff.server.service import Service
from signoff.server.shapes import stale_json

__all__ = ["STATUSES", "install_refusals"]

STATUSES: Mapping[type[SignoffError], int] = {
    StoreUnavailableError: 503,
    NotFoundError: 404,
    PolicyError: 422,
    ConflictError: 409,
    ForbiddenError: 403,
    InvalidEditError: 422,
    InvalidDecisionError: 422,
}
"""The status of each of signoff's errors (the first that matches); any other is a 400."""
_PHRASES = {401: "Unauthorized", 404: "NotFound", 405: "MethodNotAllowed"}
logger = logging.getLogger(__name__)


def install_refusals(app: FastAPI) -> None:
    """Answer `app`'s errors as JSON (the redaction of ``app.state.service`` masks what a
    409 for a stale decision shows)."""
    app.add_exception_handler(SignoffError, _signoff_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _invalid_request)  # type: ignore[arg-type]


async def _signoff_error(request: Request, exc: SignoffError) -> JSONResponse:
    status = next((s for kind, s in STATUSES.items() if isinstance(exc, kind)), 400)
    body: dict[str, Any] = {"error": type(exc).__name__, "detail": str(exc)}
    if isinstance(exc, InvalidEditError):
        body |= {"path": exc.path, "schema_path": exc.schema_path}
    if isinstance(exc, PolicyError):
        body["problems"] = [{"path": p.path, "problem": p.message} for p in exc.problems]
    if isinstance(exc, StaleDecisionError):
        service: Service = request.app.state.service
        body |= stale_json(exc, service.redaction)
    if isinstance(exc, StoreUnavailableError):  # what it was is for the server's log
        logger.warning("%s %s: %s", request.method, request.url.path, exc)
        body["detail"] = "the database cannot be reached now: try again"
        return JSONResponse(body, status_code=status, headers={"Retry-After": "1"})
    return JSONResponse(body, status_code=status)


async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
    detail: Any = exc.detail  # ours are dicts already; Starlette's own are words
    body = detail if isinstance(detail, dict) else {"error": "", "detail": str(detail)}
    body["error"] = body["error"] or _PHRASES.get(exc.status_code, "Error")
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


async def _invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
    status, body = validation_refusal(exc.errors(), exc.body)
    return JSONResponse(body, status_code=status)
