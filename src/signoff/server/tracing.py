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
import os
from collections.abc import Mapping
from typing import Any, Final

from signoff import telemetry
from signoff.errors import MissingExtraError
from signoff.server.slack import INTERACTIONS

__all__ = ["EXPORTERS", "RequestContext", "channel_of", "export_spans"]

_AGUI_PREFIX = "/agui/"
_A2A_PREFIX = "/a2a"
"""`signoff.protocols.a2a.routes.PREFIX` (not imported: it needs the A2A extra)."""
EXPORTERS: Final = ("otlp", "console", "none")
"""What ``OTEL_TRACES_EXPORTER`` may name."""


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


def export_spans(environ: Mapping[str, str] = os.environ) -> str | None:
    """Send this process's spans where OpenTelemetry's own variables say (``signoff serve``
    calls it): ``OTEL_TRACES_EXPORTER`` ``otlp`` (OTLP over HTTP to
    ``OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT``, the default when one is set), ``console`` (each
    span printed as JSON) or ``none`` (the default otherwise); ``OTEL_SERVICE_NAME`` names the
    service (``signoff`` unless set). Returns the exporter set up, or None. Raises
    `MissingExtraError` without the otel extra, `ValueError` for an exporter it does not know."""
    endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    name = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() or (
        "otlp" if endpoint else "none"
    )
    if name not in EXPORTERS:
        raise ValueError(
            f"OTEL_TRACES_EXPORTER={name!r} is not one signoff serve sends spans with: "
            f"use one of {', '.join(EXPORTERS)}"
        )
    if name == "none":
        return None
    feature = f"sending spans (OTEL_TRACES_EXPORTER={name})"
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SimpleSpanProcessor,
        )
    except ImportError:
        raise MissingExtraError(feature, "otel") from None
    service = environ.get("OTEL_SERVICE_NAME") or "signoff"
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    if name == "console":  # for a person watching: each span as it ends
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    else:
        try:
            otlp = importlib.import_module("opentelemetry.exporter.otlp.proto.http.trace_exporter")
        except ImportError:
            raise MissingExtraError(feature, "otel") from None
        provider.add_span_processor(BatchSpanProcessor(otlp.OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    telemetry.trace()  # signoff's spans go to the provider just set
    return name
