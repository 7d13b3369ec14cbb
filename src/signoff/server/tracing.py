"""Each request in its caller's trace, and each decision with the channel it came through.

`RequestContext` (ASGI middleware, outermost) makes the spans a request causes — judging,
deciding — children of the caller's span when the request carries W3C ``traceparent`` (and
``tracestate``), through OpenTelemetry's own propagator (no instrumentation package). It also
names the request's channel for the decisions it takes: a path that belongs to one (Slack's
interactions, A2A, AG-UI), else the web inbox for a browser's request (browsers send
``Sec-Fetch-Site``; other clients do not), else the API.
"""

from __future__ import annotations

import importlib
from typing import Any

from signoff import telemetry
from signoff.server.slack import INTERACTIONS

__all__ = ["RequestContext", "channel_of"]

_AGUI_PREFIX = "/agui/"
_A2A_PREFIX = "/a2a"
"""`signoff.protocols.a2a.routes.PREFIX` (not imported: it needs the A2A extra)."""


def channel_of(scope: Any) -> telemetry.Channel:
    """The channel a request's decisions come through (see the module)."""
    path: str = scope.get("path", "")
    if path == INTERACTIONS:
        return "slack"
    if path.startswith(_AGUI_PREFIX):
        return "ag-ui"
    if path == _A2A_PREFIX or path.startswith(_A2A_PREFIX + "/"):
        return "a2a"
    for name, _ in scope.get("headers") or ():
        if name == b"sec-fetch-site":
            return "web"
    return "api"


class RequestContext:
    """Runs each HTTP request and WebSocket in its caller's trace context and its channel."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._propagate = _propagation()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        with telemetry.channel(channel_of(scope)):
            if self._propagate is None or not _has_traceparent(scope):
                await self.app(scope, receive, send)
                return
            extract, attach, detach = self._propagate
            carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            context_token = attach(extract(carrier))
            try:
                await self.app(scope, receive, send)
            finally:
                detach(context_token)


def _has_traceparent(scope: Any) -> bool:
    return any(name == b"traceparent" for name, _ in scope.get("headers") or ())


def _propagation() -> tuple[Any, Any, Any] | None:
    """OpenTelemetry's extract, attach and detach; None when it is not installed."""
    try:
        context = importlib.import_module("opentelemetry.context")
        propagate = importlib.import_module("opentelemetry.propagate")
    except ImportError:
        return None
    return propagate.extract, context.attach, context.detach
