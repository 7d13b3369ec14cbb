"""What signoff tells about itself: counts and times for metrics, spans for traces.

The core calls these hooks where what they count happens — the gate as it judges and decides,
the store around each transaction, the runtimes as they pause and resume, the notifier as a
send fails — so every channel and framework is counted alike. By default they do nothing: the
server installs a Prometheus `Observer` (`signoff.server.metrics`); anyone may install another.

Spans go to OpenTelemetry when its API is installed (``pip install 'signoff[otel]'``): the
application's tracer provider decides where they go, and without one they cost next to nothing.
Without OpenTelemetry signoff makes none. A span starts in the current context, so it joins the
caller's trace: the HTTP request's ``traceparent`` (the server extracts it), or the span of the
framework whose tool call is judged.

    telemetry.observe(MyObserver())      # counts
    with telemetry.channel("cli"):       # decisions taken here are the command line's
        await gate.decide(...)
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Final, Literal, Protocol, TypeAlias, get_args

from signoff.types import AUTOMATIC, Approval, ToolCall, Verdict

__all__ = [
    "CHANNELS",
    "Channel",
    "Judged",
    "Observer",
    "channel",
    "current_channel",
    "current_observer",
    "decided",
    "executing",
    "judged",
    "observe",
    "observer",
    "set_channel",
    "span",
    "trace",
]

Channel: TypeAlias = Literal[
    "web", "api", "cli", "slack", "a2a", "ag-ui", "mcp", "framework", "automatic", "other"
]
"""Where a decision came from: the web inbox, the REST API, the command line, Slack, an A2A or
AG-UI client, an MCP client (elicitation), a framework's own resume, signoff itself (a timeout),
or somewhere else (a library's own `Gate.decide`)."""
CHANNELS: Final[frozenset[str]] = frozenset(get_args(Channel))

logger = logging.getLogger(__name__)
_channel: contextvars.ContextVar[str] = contextvars.ContextVar("signoff_channel", default="other")


class Observer:
    """Receives what signoff counts; this one ignores it. Label values are bounded: verdicts,
    channels, statuses — never an id or an argument."""

    def judged(self, verdict: str, calls: int) -> None:
        """`calls` calls were judged `verdict` (allow, ask or deny)."""

    def grants_used(self, calls: int) -> None:
        """Grants let `calls` calls through."""

    def decided(self, channel: str, outcome: str, seconds: float) -> None:
        """An approval was decided (`outcome`: its status) through `channel`, `seconds` after
        it was requested."""

    def paused(self, kind: str) -> None:
        """A run paused on held calls (`kind`: ``runtime``, or ``framework``)."""

    def resumed(self, kind: str) -> None:
        """A paused run was resumed."""

    def unknown_outcome(self) -> None:
        """A call was found started and never finished: whether it ran is unknown."""

    def notification_failed(self, sink: str, final: bool) -> None:
        """A notification could not be sent to a sink of kind `sink` (webhook, slack, email);
        `final` when it is not tried again."""

    def transaction(self, kind: str, seconds: float) -> None:
        """A store transaction (`kind`: read or write) took `seconds`, waiting in line
        included."""


class _Guarded(Observer):
    """An observer whose failures are logged, never raised into what it counts: most hooks
    run once a decision or a hold is committed, which must stand and be told to its waiters."""

    def __init__(self, inner: Observer) -> None:
        self.inner = inner


def _guarded(name: str) -> Any:
    def call(self: _Guarded, *args: Any) -> None:
        try:
            getattr(self.inner, name)(*args)
        except Exception:
            logger.exception("signoff: the telemetry observer failed in %s", name)

    return call


for _name in [n for n in vars(Observer) if not n.startswith("_")]:
    setattr(_Guarded, _name, _guarded(_name))


observer: Observer = Observer()
"""The observer the hooks call; `observe` replaces it."""


def current_observer() -> Observer:
    """The observer `observe` installed (None installed: the one that ignores everything)."""
    return observer.inner if isinstance(observer, _Guarded) else observer


def observe(new: Observer | None) -> Observer:
    """Send what signoff counts to `new` (None: to nobody) from now on; returns the one it
    replaces. It is process-wide, as the counts are. An observer that raises is logged, and
    what it counted goes on."""
    global observer
    previous = current_observer()
    observer = Observer() if new is None else _Guarded(new)
    return previous


def current_channel() -> str:
    """The channel decisions taken now come through."""
    return _channel.get()


def set_channel(name: Channel) -> None:
    """Decisions taken from now on in this task (or thread) come through `name`."""
    _channel.set(name)


@contextlib.contextmanager
def channel(name: Channel) -> Iterator[None]:
    """Decisions taken within the block come through `name`."""
    token = _channel.set(name)
    try:
        yield
    finally:
        _channel.reset(token)


# -- the gate's hooks ----------------------------------------------------------------------


class Judged(Protocol):
    """A call as the gate judged it (`signoff.gate.Outcome`), as far as it is counted."""

    @property
    def call(self) -> ToolCall: ...

    @property
    def kind(self) -> str:
        """``run``, ``block`` or ``hold``."""
        ...

    @property
    def verdict(self) -> Verdict: ...

    @property
    def approval(self) -> Approval | None: ...

    @property
    def recorded(self) -> bool:
        """Judged before: not a new call."""
        ...


def judged(outcomes: Sequence[Judged], grants_used: int, within: Any = None) -> None:
    """Count the verdicts of calls judged now (not those judged before: a re-run is not a
    new call) and the grants that let some through; mark the judge span `within` with the
    calls' tools and verdicts, and open a `signoff.hold` span for each call held."""
    counts: dict[str, int] = {}
    for outcome in outcomes:
        if not outcome.recorded:
            counts[outcome.verdict.kind] = counts.get(outcome.verdict.kind, 0) + 1
    for verdict, calls in counts.items():
        observer.judged(verdict, calls)
    if grants_used:
        observer.grants_used(grants_used)
    if within is None or not within.is_recording():
        return
    within.set_attributes(_described(outcomes))
    held = [o.approval for o in outcomes if o.kind == "hold" and o.approval is not None]
    if held:
        _held_spans(within, held)


def _held_spans(judge: Any, approvals: Sequence[Approval]) -> None:
    """A `signoff.hold` span for each held call, a child of `judge`, as long as nothing (each
    is held when the judge's transaction commits): made without becoming current, which is
    half a span's cost."""
    from opentelemetry import trace as otel_trace

    parent = otel_trace.set_span_in_context(judge)
    for approval in approvals:
        held = _tracer.start_span(
            "signoff.hold", context=parent, attributes=_approval_attributes(approval, "ask")
        )
        held.end(end_time=held.start_time)


def decided(approvals: Iterable[Approval], within: Any = None) -> None:
    """Count each approval decided now (a vote that leaves it waiting is not a decision), with
    its channel — signoff's own when it decided on a timeout — and its time to decision."""
    ids: list[str] = []
    outcomes: list[str] = []
    for approval in approvals:
        if approval.pending or approval.decided_at is None:
            continue
        via = "automatic" if approval.decided_by == AUTOMATIC else _channel.get()
        seconds = (approval.decided_at - approval.requested_at).total_seconds()
        observer.decided(via, approval.status, max(seconds, 0.0))
        ids.append(approval.id)
        outcomes.append(approval.status)
    if within is not None and within.is_recording() and ids:
        one = len(ids) == 1
        within.set_attributes({
            "signoff.channel": _channel.get(),
            "signoff.approval_id": ids[0] if one else ids,
            "signoff.outcome": outcomes[0] if one else outcomes,
        })  # fmt: skip


def executing(call: ToolCall, approval_id: str | None = None) -> dict[str, Any]:
    """The attributes of a `signoff.execute` span: the tool, and the approval it runs under
    when it was held (its verdict then ``ask``, else ``allow``)."""
    return {
        "signoff.tool": call.name,
        "signoff.verdict": "allow" if approval_id is None else "ask",
        **({} if approval_id is None else {"signoff.approval_id": approval_id}),
    }


def _described(outcomes: Sequence[Judged]) -> dict[str, Any]:
    """The judge span's attributes: of one call, its tool and verdict; of several, lists."""
    tools = [o.call.name for o in outcomes]
    verdicts = [o.verdict.kind for o in outcomes]
    held = [o.approval.id for o in outcomes if o.approval is not None]
    one = len(outcomes) == 1
    attributes: dict[str, Any] = {
        "signoff.calls": len(outcomes),
        "signoff.tool": tools[0] if one else tools,
        "signoff.verdict": verdicts[0] if one else verdicts,
    }
    if held:
        attributes["signoff.approval_id"] = held[0] if one else held
    return attributes


def _approval_attributes(approval: Approval, verdict: str) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "signoff.approval_id": approval.id,
        "signoff.tool": approval.call.name,
        "signoff.verdict": verdict,
    }
    if approval.rule is not None:
        attributes["signoff.rule"] = approval.rule
    return attributes


# -- spans ---------------------------------------------------------------------------------

_NO_SPAN: Final = contextlib.nullcontext(None)
_tracer: Any = None
"""OpenTelemetry's tracer for signoff; False when OpenTelemetry is missing or tracing off."""


def trace(enabled: bool = True, *, provider: Any = None) -> None:
    """Make spans (the default, when OpenTelemetry is installed) or not; with `provider`, an
    OpenTelemetry tracer provider, make them there rather than in the global one."""
    global _tracer
    if not enabled:
        _tracer = False
    elif provider is not None:
        _tracer = _tracer_of(provider)
    else:
        _tracer = None  # the global provider's, found at the next span


def span(
    name: str, attributes: dict[str, Any] | None = None, *, current: bool = True
) -> AbstractContextManager[Any]:
    """A span named `name` with `attributes`, a child of the current one, for the block; the
    block gets it (None when no span is made). `current`: the spans started within the block
    are its children — without, it costs a third less (a span with no children: the gate's).
    An exception that leaves the block marks it failed."""
    tracer = _tracer if _tracer is not None else _find_tracer()
    if tracer is False:
        return _NO_SPAN
    if not current:
        return _Leaf(tracer.start_span(name, attributes=attributes))
    started: AbstractContextManager[Any] = tracer.start_as_current_span(name, attributes=attributes)
    return started


class _Leaf:
    """A span that is not made current: ended with its block, failed by its exception."""

    __slots__ = ("_span",)

    def __init__(self, started: Any) -> None:
        self._span = started

    def __enter__(self) -> Any:
        return self._span

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _: Any
    ) -> None:
        if error is not None:
            from opentelemetry.trace import Status, StatusCode

            self._span.record_exception(error)
            self._span.set_status(
                Status(StatusCode.ERROR, f"{kind.__name__ if kind else ''}: {error}")
            )
        self._span.end()


def _find_tracer() -> Any:
    global _tracer
    try:
        from opentelemetry import trace as otel_trace
    except ImportError:
        _tracer = False
        return False
    # A proxy until the application sets its tracer provider: spans then go there.
    _tracer = _tracer_of(otel_trace.get_tracer_provider())
    return _tracer


def _tracer_of(provider: Any) -> Any:
    # The installed distribution's version, read here: telemetry sits below the package.
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("signoff")
    except PackageNotFoundError:  # pragma: no cover - a source tree without install
        release = "0.0.0"  # what `signoff.__version__` says then
    return provider.get_tracer("signoff", release)
