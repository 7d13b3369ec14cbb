"""What metrics and traces cost a decision: ``gate.decide`` (and ``gate.check`` of an asked call,
and a decision over the API in-process) with them off and on, in the same run, interleaved.

Run it with ``make bench``. Each backend gets a fresh database: a SQLite file in a temporary
folder, and a new ``signoff_bench_<random>`` database on this machine's PostgreSQL server
(``SIGNOFF_BENCH_POSTGRES``, by default ``postgresql://postgres@127.0.0.1:5432/test``), dropped
at the end.

- **off**: no observer (``telemetry.observe(None)``) and no spans (``telemetry.trace(False)``):
  what a library user without OpenTelemetry has;
- **metrics**: the server's Prometheus observer (``signoff.server.metrics``: every verdict,
  decision, store transaction counted), no spans;
- **traces**: spans recorded by the OpenTelemetry SDK (a ``TracerProvider`` with a
  ``BatchSpanProcessor``, its exporter dropping the batches: an OTLP exporter's own work is on
  the processor's thread, not the decision's), no observer;
- **on**: both, as ``signoff serve`` runs with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set.

The modes alternate every `BLOCK` samples for `ROUNDS` rounds (off, metrics, traces, on, off,
...), so drift of the machine (another process, the page cache, the database growing) falls on
all alike. Each
block holds its calls untimed first, then times each ``gate.check([one asked call])``, then each
``gate.decide(id, Approve())`` of those approvals. The HTTP figure is
``POST /v1/approvals/{id}/decision`` through ``httpx.ASGITransport`` to ``create_app``'s app (the
request-context middleware runs in every mode: it is installed with the app; only the counting
and the spans are switched), decided by an authenticated principal; no network. The goal (issue
35's closing note): the p50 with telemetry on within 5% of the p50 with it off; metrics alone
and traces alone are shown beside, to tell where the cost is. Missed targets
are printed as MISSED; the exit status is 0 all the same. ``bench/results/telemetry.json`` keeps
every figure.
"""

from __future__ import annotations

import asyncio
import functools
import json
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final, Literal

import httpx
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from rich.console import Console
from rich.table import Table

from _common import (
    Latency,
    Target,
    asyncpg_url,
    environment,
    latency,
    ms,
    print_targets,
    scratch_postgres,
    wide_console,
)
from signoff import Approve, Policy, ToolCall, telemetry
from signoff.gate import Gate
from signoff.prometheus import process_observer
from signoff.server import Auth, Principal, Service, create_app
from signoff.store import open_store

Mode = Literal["off", "metrics", "traces", "on"]
MODES: Final[tuple[Mode, ...]] = ("off", "metrics", "traces", "on")
ROUNDS: Final = 15
BLOCK: Final = 50
"""Samples of each kind in one block of one mode."""
WARMUP: Final = 100
GOAL: Final = 1.05
TOKEN: Final = "bench-token"
RESULTS: Final = Path(__file__).resolve().parent / "results" / "telemetry.json"
POLICY: Final = Policy.from_dict({"default": "ask", "rules": [{"allow": "*_list*"}]})


class _Dropped(SpanExporter):
    """Takes every batch and sends it nowhere."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def switch(mode: Mode, provider: TracerProvider) -> None:
    telemetry.observe(None)
    telemetry.trace(False)
    if mode in ("metrics", "on"):
        process_observer()
    if mode in ("traces", "on"):
        telemetry.trace(provider=provider)


def email(n: int) -> ToolCall:
    return ToolCall(
        id=f"call-{n}", name="send_email", agent="assistant",
        args={"to": f"user{n}@example.com", "subject": "Quarterly report", "body": "Attached."},
    )  # fmt: skip


@dataclass
class Samples:
    """Seconds, by mode."""

    check: dict[Mode, list[float]] = field(default_factory=lambda: {m: [] for m in MODES})
    decide: dict[Mode, list[float]] = field(default_factory=lambda: {m: [] for m in MODES})
    http: dict[Mode, list[float]] = field(default_factory=lambda: {m: [] for m in MODES})


@dataclass(frozen=True, kw_only=True)
class Compared:
    off: Latency
    metrics: Latency
    traces: Latency
    on: Latency
    ratio: float
    """p50 on (metrics and traces) over p50 off."""
    metrics_ratio: float
    traces_ratio: float

    @property
    def by_mode(self) -> dict[Mode, Latency]:
        return {"off": self.off, "metrics": self.metrics, "traces": self.traces, "on": self.on}


def compared(samples: dict[Mode, list[float]]) -> Compared:
    found = {mode: latency(samples[mode]) for mode in MODES}

    def over_off(mode: Mode) -> float:
        return round(found[mode].p50_ms / found["off"].p50_ms, 4)

    return Compared(
        off=found["off"], metrics=found["metrics"], traces=found["traces"], on=found["on"],
        ratio=over_off("on"), metrics_ratio=over_off("metrics"), traces_ratio=over_off("traces"),
    )  # fmt: skip


async def timed(action: Callable[[], Awaitable[object]], into: list[float] | None) -> None:
    start = time.perf_counter()
    await action()
    if into is not None:
        into.append(time.perf_counter() - start)


async def measure(url: str) -> dict[str, Compared]:
    """The samples of one backend, off and on interleaved (see the module)."""
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(_Dropped()))
    samples = Samples()
    numbered = iter(range(10**9))
    async with open_store(url) as store:
        gate = Gate(POLICY, store)
        service = Service(store=store, gate=gate, agents=[])
        app = create_app(service, Auth(tokens={TOKEN: Principal(name="ada")}))
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app),
                base_url="http://signoff",
                headers={"Authorization": f"Bearer {TOKEN}"},
            ) as client,
        ):

            async def post(approval_id: str) -> None:
                path = f"/v1/approvals/{approval_id}/decision"
                answer = await client.post(path, json={"kind": "approve"})
                assert answer.status_code == 200, answer.text

            async def block(mode: Mode, count: int, timing: bool) -> None:
                switch(mode, provider)
                held: list[str] = []

                async def check() -> None:
                    [outcome] = await gate.check([email(next(numbered))])
                    assert outcome.approval is not None
                    held.append(outcome.approval.id)

                for _ in range(2 * count):
                    await timed(check, samples.check[mode] if timing else None)
                for approval_id in held[:count]:
                    decide = functools.partial(gate.decide, approval_id, Approve(), actor="bench")
                    await timed(decide, samples.decide[mode] if timing else None)
                for approval_id in held[count:]:
                    await timed(
                        functools.partial(post, approval_id), samples.http[mode] if timing else None
                    )

            for mode in MODES:
                await block(mode, WARMUP, timing=False)
            for _ in range(ROUNDS):
                for mode in MODES:
                    await block(mode, BLOCK, timing=True)
    switch("off", provider)
    provider.shutdown()
    return {
        "gate.check (asked call)": compared(samples.check),
        "gate.decide": compared(samples.decide),
        "HTTP decision (in-process)": compared(samples.http),
    }


def table(title: str, results: dict[str, Compared]) -> Table:
    """p50 (and p99) of each mode, and the ratio of each to off."""
    shown = Table(title=title)
    shown.add_column("")
    for mode in MODES:
        shown.add_column(f"{mode}\np50 (p99)", justify="right")
    for mode in MODES[1:]:
        shown.add_column(f"{mode}\n/ off", justify="right")
    shown.add_column("n each", justify="right")
    for name, found in results.items():
        figures = [f"{ms(f.p50_ms)} ({ms(f.p99_ms)})" for f in found.by_mode.values()]
        ratios = [found.metrics_ratio, found.traces_ratio, found.ratio]
        shown.add_row(name, *figures, *(f"{r:.3f}" for r in ratios), f"{found.off.samples:,}")
    return shown


def targets(backend: str, results: dict[str, Compared]) -> list[Target]:
    return [
        Target(
            name=f"{name}, {backend}: telemetry on vs off (p50)",
            goal=f"<= {GOAL:.2f}x",
            value=f"{found.ratio:.3f}x ({ms(found.on.p50_ms)} vs {ms(found.off.p50_ms)} ms)",
            status="met" if found.ratio <= GOAL else "MISSED",
        )
        for name, found in results.items()
    ]


async def run(console: Console) -> dict[str, dict[str, Compared]]:
    found: dict[str, dict[str, Compared]] = {}
    with tempfile.TemporaryDirectory(prefix="signoff-bench-") as folder:
        console.print("SQLite…")
        found["sqlite"] = await measure(f"sqlite:///{folder}/bench.db")
    async with scratch_postgres(console) as url:
        if url is not None:
            console.print("PostgreSQL…")
            found["postgresql"] = await measure(asyncpg_url(url))
    return found


def main() -> None:
    console = wide_console()
    console.print(
        f"Telemetry's cost: {ROUNDS} rounds of {BLOCK} samples a mode, off and on interleaved "
        "(times in ms)",
        style="bold",
    )
    found = asyncio.run(run(console))
    goals: list[Target] = []
    for backend, results in found.items():
        console.print(table(f"{backend}: metrics and traces off vs on", results))
        goals += targets(backend, results)
    print_targets(console, goals)
    data = {
        "environment": environment("telemetry"),
        "rounds": ROUNDS,
        "block": BLOCK,
        "goal_ratio": GOAL,
        "results": {
            backend: {name: asdict(figure) for name, figure in results.items()}
            for backend, results in found.items()
        },
    }
    RESULTS.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
