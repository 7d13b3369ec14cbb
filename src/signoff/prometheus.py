"""signoff's counts as Prometheus metrics, in the process where they happen: what the core's hooks
(`signoff.telemetry`) report — calls judged, decisions and their time, grants used, runs paused
and resumed, unknown outcomes, failed notifications, store transactions.

Each process counts what happens in it, and Prometheus adds the processes up (``sum``):
`signoff serve` serves its counts at ``/metrics`` (`signoff.server.metrics`); a framework app
(LangGraph, Pydantic AI, the Agents SDK, ADK, Agno, AdalFlow) judges its own calls and pauses and
resumes its own runs, so it serves its own counts, as it serves any other metrics::

    from prometheus_client import start_http_server
    from signoff.prometheus import count_metrics

    count_metrics()          # this process's counts, in prometheus_client's registry
    start_http_server(9464)  # or make_asgi_app() mounted in the app's web server

The server does not count them again from the database it shares with the apps: every replica
would see every app's calls (``sum`` would count each once per replica), and the store keeps no
order of commits to count them from without reading them all at each scrape.
"""

from __future__ import annotations

import weakref
from typing import Final, get_args

from signoff import telemetry
from signoff.errors import MissingExtraError
from signoff.types import ApprovalStatus

try:
    from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram
    from prometheus_client.registry import Collector
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise MissingExtraError("signoff.prometheus", "server") from exc

__all__ = [
    "DECISION_BUCKETS",
    "TRANSACTION_BUCKETS",
    "PrometheusObserver",
    "count_metrics",
    "process_observer",
]

DECISION_BUCKETS: Final = (
    1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400, 172800, 345600,
    604800,
)  # fmt: skip
"""Seconds from a request to its decision: a second to a week."""
TRANSACTION_BUCKETS: Final = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
)  # fmt: skip
"""Seconds a store transaction takes: half a millisecond to five seconds."""
_VERDICTS: Final = frozenset({"allow", "ask", "deny"})
_KINDS: Final = frozenset({"runtime", "framework"})
_SINKS: Final = frozenset({"webhook", "slack", "email"})
_OUTCOMES: Final = frozenset(get_args(ApprovalStatus)) - {"pending"}
"""Every status a decision or a lapse leaves (a question's answer among them)."""


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
        # Each verdict and kind of run is shown from the start, at 0: a series that first
        # appears at 1 shows `rate` no increase (a short-lived app's first calls).
        for verdict in sorted(_VERDICTS):
            self.calls.labels(verdict)
        for kind in sorted(_KINDS):
            self.pauses.labels(kind)
            self.resumes.labels(kind)
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


_observer: PrometheusObserver | None = None
_counted_in: weakref.WeakSet[CollectorRegistry] = weakref.WeakSet()


def process_observer() -> PrometheusObserver:
    """This process's counts, installed as the core's observer (in place of any other; once,
    whatever number of apps the process serves)."""
    global _observer
    if _observer is None:
        _observer = PrometheusObserver()
    if telemetry.current_observer() is not _observer:
        telemetry.observe(_observer)
    return _observer


def count_metrics(registry: CollectorRegistry = REGISTRY) -> None:
    """Count what signoff does in this process — a framework app's calls judged, its runs
    paused and resumed, the decisions sent through it — in `registry` (prometheus_client's own
    unless given), for the app to serve as it serves its metrics. Again with the same registry,
    it does nothing."""
    observer = process_observer()
    if registry in _counted_in:
        return
    for collector in observer.collectors():
        registry.register(collector)
    _counted_in.add(registry)
