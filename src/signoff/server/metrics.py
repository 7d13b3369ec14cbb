"""``GET /metrics`` in Prometheus's text format, through the official `prometheus_client`.

What is counted as it happens (verdicts, decisions and their time, grants used, pauses and
resumes, unknown outcomes, failed notifications, store transactions) comes from the core's
hooks (`signoff.telemetry`), counted by this process (`signoff.prometheus`): Prometheus sums
the replicas, and the framework apps, which serve their own counts. What is waiting (approvals
by agent, tool and rule; notifications not sent) is the database's, read at each scrape in one
grouped query (`Store.gauges`), so every replica tells the same truth. Label values are
bounded: verdicts, channels, statuses, sink kinds — never an id or an argument; agent, tool and
rule names of waiting approvals are capped to the `GROUPS` largest groups, the rest summed as
``other``.

The route needs the API's bearer token (any principal: give the scraper a token of its own,
with no roles). The config may also serve it on a listen address of its own, without
authentication, for a scraper inside the network boundary::

    metrics: {listen: "127.0.0.1:9464"}
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, Final

from fastapi import FastAPI
from fastapi.responses import Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    generate_latest,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from signoff.errors import StoreError
from signoff.policy.reader import Reader
from signoff.prometheus import process_observer
from signoff.server.auth import Who
from signoff.server.service import Service
from signoff.server.tracing import RequestContext
from signoff.store.base import Store
from signoff.store.gauges import Gauges

__all__ = [
    "GROUPS",
    "MetricsSettings",
    "install_metrics",
    "read_metrics",
    "serve_metrics",
]

logger = logging.getLogger(__name__)

PATH: Final = "/metrics"
GROUPS: Final = 200
"""The most (agent, tool, rule) label sets of waiting approvals; the rest are summed."""
_SCRAPE_SECONDS: Final = 10.0
_SHOWN: Final = 2 * GROUPS


class StoreGauges(Collector):
    """What is waiting, as the store counted it at the last `refresh` (see the module)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.loop: asyncio.AbstractEventLoop | None = None
        """The store's loop, for a scrape served on another thread (`serve_metrics`)."""
        self._counted: Gauges | None = None
        self._shown: dict[tuple[str, str, str], None] = {}
        """The label sets of waiting approvals shown lately (the newest `_SHOWN`): one whose
        approvals were all decided shows 0, rather than vanishing from the dashboards."""
        self._lock = threading.Lock()  # scrapes on the API and on the metrics address at once

    async def refresh(self) -> None:
        """Count again; a store that cannot answer leaves the gauges out of this scrape."""
        try:
            self._counted = await self.store.gauges(groups=GROUPS)
        except StoreError as exc:
            logger.warning("the metrics leave out what is waiting: %s", exc)
            self._counted = None

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(())  # names known at each scrape: registering reads nothing

    def collect(self) -> Iterator[GaugeMetricFamily]:
        if self.loop is not None and _running_loop() is not self.loop:
            refreshed = asyncio.run_coroutine_threadsafe(self.refresh(), self.loop)
            try:
                refreshed.result(timeout=_SCRAPE_SECONDS)
            except TimeoutError:
                refreshed.cancel()
                logger.warning("the metrics leave out what is waiting: the store took too long")
                return
        counted = self._counted
        if counted is None:
            return
        waiting = GaugeMetricFamily(
            "signoff_approvals_waiting",
            f"Approvals waiting for a decision, by agent, tool and rule (the {GROUPS} largest "
            "groups; the rest summed as other).",
            labels=["agent", "tool", "rule"],
        )
        with self._lock:
            for labels in counted.waiting:
                self._shown.pop(labels, None)
                self._shown[labels] = None
            for labels in list(self._shown)[: max(0, len(self._shown) - _SHOWN)]:
                del self._shown[labels]  # the longest unseen first
            for labels in self._shown:
                waiting.add_metric(list(labels), counted.waiting.get(labels, 0))
        yield waiting
        backlog = GaugeMetricFamily(
            "signoff_notification_backlog",
            "Notifications waiting to be sent or tried again, by sink (as the config names it).",
            labels=["sink"],
        )
        for sink, count in counted.backlog.items():
            backlog.add_metric([sink], count)
        yield backlog


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def install_metrics(app: FastAPI, service: Service) -> None:
    """Serve ``GET /metrics`` on `app` (for any authenticated principal), count what the core
    observes, and run each request in its caller's trace (`RequestContext`)."""
    registry = CollectorRegistry(auto_describe=True)
    for collector in process_observer().collectors():
        registry.register(collector)
    gauges = StoreGauges(service.store)
    registry.register(gauges)
    app.state.metrics = registry
    app.state.metrics_gauges = gauges
    app.add_middleware(RequestContext)

    @app.get(PATH, include_in_schema=False)
    async def metrics(_: Who) -> Response:
        await gauges.refresh()
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


# -- a listen address of its own -----------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class MetricsSettings:
    """The config's ``metrics:``."""

    listen: tuple[str, int] | None = None
    """Where to serve the metrics without authentication too (host, port); None: only on
    the API's own address, with its tokens."""


def read_metrics(reader: Reader, value: Any) -> MetricsSettings:
    """The ``metrics:`` section, its mistakes reported to `reader` (file, line, column)."""
    section = reader.section(value, "metrics", frozenset({"listen"}))
    if section is None or "listen" not in section:
        return MetricsSettings()
    where = ("metrics", "listen")
    text = reader.string(section["listen"], where, "metrics.listen")
    if text is None:
        return MetricsSettings()
    address = _address(text)
    if address is None:
        reader.error(
            where,
            f"metrics.listen must be host:port with a port from 1 to 65535 (like "
            f"127.0.0.1:9464, or [::1]:9464), not {text!r}",
        )
        return MetricsSettings()
    return MetricsSettings(listen=address)


def _address(text: str) -> tuple[str, int] | None:
    host, colon, port = text.rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        return None  # an IPv6 address is written in brackets
    return (host, int(port)) if host else None


def serve_metrics(app: FastAPI, listen: tuple[str, int]) -> None:
    """While `app` runs, serve its metrics at `listen` too, without authentication (on a thread
    of prometheus_client's own: the waiting approvals are still counted on the app's loop)."""
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(running: FastAPI) -> AsyncIterator[Any]:
        async with inner(running) as state:
            gauges: StoreGauges = running.state.metrics_gauges
            gauges.loop = asyncio.get_running_loop()
            server, thread = start_http_server(listen[1], listen[0], registry=running.state.metrics)
            logger.info("metrics served on %s:%d", *listen)
            try:
                yield state
            finally:
                # Off the loop: a scrape under way counts the waiting approvals on it.
                await asyncio.to_thread(server.shutdown)
                server.server_close()
                thread.join()

    app.router.lifespan_context = lifespan
