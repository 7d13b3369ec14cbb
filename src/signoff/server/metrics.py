"""``GET /metrics`` in Prometheus's text format, through the official `prometheus_client`.

What is counted as it happens (verdicts, decisions and their time, grants used, pauses and
resumes, unknown outcomes, failed notifications, store transactions) comes from the core's
hooks (`signoff.telemetry`), counted by this process: Prometheus sums the replicas. What is
waiting (approvals by agent, tool and rule; notifications not sent) is the database's, read at
each scrape in one grouped query (`Store.gauges`), so every replica tells the same truth. Label
values are bounded: verdicts, channels, statuses, sink kinds — never an id or an argument;
agent, tool and rule names of waiting approvals are capped to the `GROUPS` largest groups, the
rest summed as ``other``.

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
    Counter,
    Histogram,
    generate_latest,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from signoff import telemetry
from signoff.errors import StoreError
from signoff.policy.reader import Reader
from signoff.server.auth import Who
from signoff.server.service import Service
from signoff.server.tracing import RequestContext
from signoff.store.base import Store
from signoff.store.gauges import Gauges
from signoff.store.insights import STATUSES

__all__ = [
    "GROUPS",
    "MetricsSettings",
    "PrometheusObserver",
    "install_metrics",
    "read_metrics",
    "serve_metrics",
]

logger = logging.getLogger(__name__)

PATH: Final = "/metrics"
GROUPS: Final = 200
"""The most (agent, tool, rule) label sets of waiting approvals; the rest are summed."""
DECISION_BUCKETS: Final = (
    1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400, 172800, 345600,
    604800,
)  # fmt: skip
"""Seconds from a request to its decision: a second to a week."""
TRANSACTION_BUCKETS: Final = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
)  # fmt: skip
"""Seconds a store transaction takes: half a millisecond to five seconds."""
_SCRAPE_SECONDS: Final = 10.0
_SHOWN: Final = 2 * GROUPS
_VERDICTS: Final = frozenset({"allow", "ask", "deny"})
_KINDS: Final = frozenset({"runtime", "framework"})
_SINKS: Final = frozenset({"webhook", "slack", "email"})


def _bounded(value: str, known: frozenset[str]) -> str:
    return value if value in known else "other"


class PrometheusObserver(telemetry.Observer):
    """The core's hooks as Prometheus metrics (registered in no registry: see `collectors`)."""

    def __init__(self) -> None:
        self.calls = Counter(
            "signoff_calls_judged", "Tool calls judged, by verdict.", ["verdict"], registry=None
        )
        self.decisions = Histogram(
            "signoff_decision_seconds",
            "Time from a call's request to its decision, by channel and outcome (its status).",
            ["channel", "outcome"],
            buckets=DECISION_BUCKETS,
            registry=None,
        )
        self.grants = Counter(
            "signoff_grants_used", "Calls a grant let through without asking.", registry=None
        )
        self.pauses = Counter(
            "signoff_pauses", "Runs paused on held calls, by kind of run.", ["kind"], registry=None
        )
        self.resumes = Counter(
            "signoff_resumes", "Paused runs resumed, by kind of run.", ["kind"], registry=None
        )
        self.unknown = Counter(
            "signoff_unknown_outcomes",
            "Calls found started and never finished: whether they ran is unknown.",
            registry=None,
        )
        self.failures = Counter(
            "signoff_notification_failures",
            "Notifications that could not be sent, by kind of sink; final: not tried again.",
            ["sink", "final"],
            registry=None,
        )
        self.transactions = Histogram(
            "signoff_store_transaction_seconds",
            "Time a store transaction takes, waiting in line included, by kind (read, write).",
            ["kind"],
            buckets=TRANSACTION_BUCKETS,
            registry=None,
        )
        self._transactions = {kind: self.transactions.labels(kind) for kind in ("read", "write")}
        self._decided: dict[tuple[str, str], Histogram] = {}
        """The decision histogram's children, by their labels."""

    def collectors(self) -> list[Collector]:
        return [self.calls, self.decisions, self.grants, self.pauses, self.resumes,
                self.unknown, self.failures, self.transactions]  # fmt: skip

    def judged(self, verdict: str, calls: int) -> None:
        self.calls.labels(_bounded(verdict, _VERDICTS)).inc(calls)

    # The hot paths keep their labelled children: `labels` costs as much as the count itself.

    def grants_used(self, calls: int) -> None:
        self.grants.inc(calls)

    def decided(self, channel: str, outcome: str, seconds: float) -> None:
        labels = _bounded(channel, telemetry.CHANNELS), _bounded(outcome, _OUTCOMES)
        child = self._decided.get(labels)
        if child is None:
            child = self._decided[labels] = self.decisions.labels(*labels)
        child.observe(seconds)

    def paused(self, kind: str) -> None:
        self.pauses.labels(_bounded(kind, _KINDS)).inc()

    def resumed(self, kind: str) -> None:
        self.resumes.labels(_bounded(kind, _KINDS)).inc()

    def unknown_outcome(self) -> None:
        self.unknown.inc()

    def notification_failed(self, sink: str, final: bool) -> None:
        self.failures.labels(_bounded(sink, _SINKS), "true" if final else "false").inc()

    def transaction(self, kind: str, seconds: float) -> None:
        self._transactions["read" if kind == "read" else "write"].observe(seconds)


_OUTCOMES: Final = frozenset(STATUSES) - {"pending"}


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


_observer: PrometheusObserver | None = None


def process_observer() -> PrometheusObserver:
    """This process's counts, installed as the core's observer (in place of any other; once,
    whatever number of apps the process serves)."""
    global _observer
    if _observer is None:
        _observer = PrometheusObserver()
    if telemetry.current_observer() is not _observer:
        telemetry.observe(_observer)
    return _observer


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
    if value is None:
        return MetricsSettings()
    section = reader.mapping(value, ("metrics",), "metrics")
    if section is None:
        return MetricsSettings()
    reader.keys(section, ("metrics",), frozenset({"listen"}), "metrics")
    if "listen" not in section:
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
