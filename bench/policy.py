"""signoff's compiled policy engine against seed 003's fnmatch loop, measured in the same run.

Run it with ``make bench``. Policies of 20, 1,000 and 10,000 generated rules (exact names, prefix,
suffix and infix globs, a few complex globs, some argument conditions and priorities) decide a
fixed sample of tool calls. Before anything is timed, both evaluators must give every sample call
the same verdict and the same deciding rule. The table shows latency percentiles and throughput of
each, and the speed-up; ``bench/results/policy.json`` keeps every figure.
"""

from __future__ import annotations

import fnmatch
import json
import math
import platform
import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

import yaml
from rich.console import Console
from rich.table import Table

from _common import Target, environment, percentile, print_targets, wide_console
from signoff import Policy, PolicyEngine, ToolCall, __version__
from signoff.policy.source import parse_text

SEED: Final = 3
SIZES: Final = (20, 1_000, 10_000)
SAMPLE_SIZE: Final = 1_000
KNOWN_PASSES: Final = 200
"""Passes over the sample for signoff's known-name figures: 200,000 evaluations."""
PEER_BUDGET_S: Final = 5.0
"""Roughly how long the fnmatch loop is timed, per policy size and per figure."""
COLD_BUDGET_S: Final = 2.0
"""Roughly how long fresh engines are built and probed for the cold figures, per size."""
MAX_COLD_ENGINES: Final = 20
LOAD_REPEATS: Final = 5
RESULTS: Final = Path(__file__).resolve().parent / "results" / "policy.json"

VOCABULARY_FLOOR: Final = 20
CONDITIONS: Final[tuple[dict[str, dict[str, Any]], ...]] = (
    {"path": {"glob": "/etc/**"}},
    {"replicas": {"gt": 10}},
    {"path": {"glob": "/var/*/log*"}},
    {"path": {"glob": "/home/**"}, "replicas": {"gt": 3}},
)
PATHS: Final = ("/etc/x", "/etc/ssh/sshd_config", "/var/app/logs", "/home/u/notes.txt", "/tmp/t")

Evaluate = Callable[[ToolCall], object]
Verdicts = tuple[str, str | None]


# -- the workload ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Vocabulary:
    """Tool names ``svc<s>_op<o>``: `width` digits each, so a policy of n rules has n services
    and n operations. More rules cover more tools, and a name matches a few rules at any size
    instead of hundreds of broad globs at 10,000 rules."""

    count: int
    width: int

    @classmethod
    def for_size(cls, size: int) -> Vocabulary:
        count = max(VOCABULARY_FLOOR, size)
        return cls(count=count, width=len(str(count - 1)))

    def parts(self, rng: random.Random) -> tuple[str, str]:
        return (
            f"{rng.randrange(self.count):0{self.width}d}",
            f"{rng.randrange(self.count):0{self.width}d}",
        )

    def name(self, rng: random.Random) -> str:
        s, o = self.parts(rng)
        return f"svc{s}_op{o}"


def make_pattern(rng: random.Random, vocabulary: Vocabulary) -> tuple[str, str, str]:
    """A tool-name pattern, its shape, and a vocabulary name it matches."""
    s, o = vocabulary.parts(rng)
    name = f"svc{s}_op{o}"
    roll = rng.random()
    if roll < 0.40:
        return name, "exact", name
    if roll < 0.60:
        return f"svc{s}_*", "prefix", name
    if roll < 0.80:
        return f"*_op{o}", "suffix", name
    if roll < 0.95:
        infix = rng.choice((f"*op{o}*", f"*op{o[:-1]}*", f"*c{s}_*"))
        return infix, "infix", name
    complex_ = rng.choice(
        (
            f"svc{s[:-1]}?_op[0-9]*",  # keyed by its literal prefix, like "svc12"
            f"svc{s}_op?{o[1:]}",  # keyed by "svc123_op"
            f"?vc{s}_op{o}",  # keyed by its literal suffix
            f"svc{'[0-9]' * len(s)}_op{o}",  # keyed by "svc": tried for every vocabulary name
            f"*_op{o[:-1]}[0-9]",  # no literal key: tried for every name
        )
    )
    return complex_, "complex", name


def make_rules(size: int) -> tuple[list[dict[str, Any]], list[str], Counter[str]]:
    """`size` rules in the unified format, the names their patterns were built from, the shapes."""
    rng = random.Random(SEED * 1_000_000 + size)
    rules: list[dict[str, Any]] = []
    origins: list[str] = []
    shapes: Counter[str] = Counter()
    vocabulary = Vocabulary.for_size(size)
    for _ in range(size):
        effect = rng.choices(("deny", "ask", "allow"), weights=(2, 3, 5))[0]
        patterns = []
        for _ in range(rng.randint(1, 3)):
            pattern, shape, origin = make_pattern(rng, vocabulary)
            patterns.append(pattern)
            origins.append(origin)
            shapes[shape] += 1
        rule: dict[str, Any] = {effect: patterns}
        if rng.random() < 0.10:
            rule["when"] = rng.choice(CONDITIONS)
        roll = rng.random()
        if roll < 0.10:
            rule["priority"] = 10
        elif roll < 0.13:
            rule["priority"] = 5
        rules.append(rule)
    return rules, origins, shapes


def make_calls(origins: Sequence[str], size: int) -> list[ToolCall]:
    """`SAMPLE_SIZE` calls with distinct names: half built from rule patterns, some unknown."""
    rng = random.Random(SEED * 1_000_000 + size + 1)
    vocabulary = Vocabulary.for_size(size)
    names: dict[str, None] = {}
    while len(names) < SAMPLE_SIZE:
        roll = rng.random()
        if roll < 0.50:
            name = rng.choice(origins)
        elif roll < 0.85:
            name = vocabulary.name(rng)
        else:
            name = f"ext{rng.randrange(1000)}_fn{rng.randrange(100)}"  # matches no pattern
        names[name] = None
    calls = []
    for name in names:
        args: dict[str, Any] = {"path": rng.choice(PATHS), "replicas": rng.randrange(21)}
        if rng.random() < 0.10:
            del args[rng.choice(("path", "replicas"))]
        calls.append(ToolCall(id="c", name=name, args=args))
    return calls


# -- the peer --------------------------------------------------------------------------------

_MISSING: Final = object()
_EFFECT_RANK: Final = {"deny": 0, "ask": 1, "allow": 2}


@dataclass(frozen=True, slots=True)
class _PeerRule:
    id: str
    effect: str
    patterns: tuple[str, ...]
    conditions: tuple[tuple[str, str, Any], ...]


class FnmatchLoop:
    """Seed 003's matcher grown into a whole policy: every rule, in precedence order, is tried
    with ``any(fnmatch.fnmatch(tool_name, pattern) for pattern in patterns)``."""

    def __init__(self, rules: Sequence[dict[str, Any]]) -> None:
        peer_rules = []
        for i, rule in enumerate(rules):
            effect = next(e for e in ("deny", "ask", "allow") if e in rule)
            conditions = tuple(
                (path, operator, operand)
                for path, tests in rule.get("when", {}).items()
                for operator, operand in tests.items()
            )
            peer_rules.append(
                (
                    (-rule.get("priority", 0), effect != "deny", _EFFECT_RANK[effect], i),
                    _PeerRule(
                        id=f"rules[{i}]",
                        effect=effect,
                        patterns=tuple(rule[effect]),
                        conditions=conditions,
                    ),
                )
            )
        self._rules = [rule for _, rule in sorted(peer_rules, key=lambda pair: pair[0])]

    def evaluate(self, call: ToolCall) -> Verdicts:
        name, args = call.name, call.args
        for rule in self._rules:
            if any(fnmatch.fnmatch(name, pattern) for pattern in rule.patterns) and all(
                _holds(args, *condition) for condition in rule.conditions
            ):
                return rule.effect, rule.id
        return "ask", None


def _holds(args: dict[str, Any], path: str, operator: str, operand: Any) -> bool:
    value = args.get(path, _MISSING)
    if operator == "glob":
        return isinstance(value, str) and fnmatch.fnmatch(value, operand)
    if operator == "gt":
        return isinstance(value, int | float) and not isinstance(value, bool) and value > operand
    raise ValueError(f"the bench's peer does not know the operator {operator!r}")


# -- measuring -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Latency:
    p50_us: float
    p99_us: float
    samples: int


@dataclass(frozen=True, kw_only=True)
class SizeResult:
    rules: int
    patterns: int
    shapes: dict[str, int]
    outcomes: dict[str, int]
    """How the sample calls were decided: by a deny, ask or allow rule, or by the default."""
    signoff_known: Latency
    signoff_decisions_per_s: float
    signoff_cold: Latency
    cold_engines: int
    fnmatch: Latency
    fnmatch_decisions_per_s: float
    speedup_p50: float
    speedup_throughput: float


@dataclass(frozen=True, kw_only=True)
class LoadResult:
    rules: int
    yaml_bytes: int
    from_dict_ms: float
    from_json_file_ms: float
    from_yaml_ms: float
    yaml_parse_only_ms: float


def latency(timings_ns: list[int]) -> Latency:
    ordered = sorted(timings_ns)

    def rank(q: float) -> float:
        return percentile(ordered, q) / 1_000

    return Latency(p50_us=rank(0.50), p99_us=rank(0.99), samples=len(ordered))


def time_each(evaluate: Evaluate, calls: Sequence[ToolCall], passes: int) -> list[int]:
    """The time of every evaluation, `passes` times over `calls`."""
    clock = time.perf_counter_ns
    timings: list[int] = []
    record = timings.append
    for _ in range(passes):
        for call in calls:
            start = clock()
            evaluate(call)
            record(clock() - start)
    return timings


def decisions_per_s(evaluate: Evaluate, calls: Sequence[ToolCall], passes: int) -> float:
    """Throughput of a tight loop, timed as a whole rather than call by call."""
    start = time.perf_counter_ns()
    for _ in range(passes):
        for call in calls:
            evaluate(call)
    return passes * len(calls) / ((time.perf_counter_ns() - start) / 1e9)


def check_agreement(
    size: int, engine: PolicyEngine, peer: FnmatchLoop, calls: Sequence[ToolCall]
) -> Counter[str]:
    """Both evaluators must agree on every call, signoff from a cold and from a warm cache."""
    expected = [peer.evaluate(call) for call in calls]
    for warm in (False, True):
        for call, (kind, rule) in zip(calls, expected, strict=True):
            verdict = engine.evaluate(call)
            if (verdict.kind, verdict.rule) != (kind, rule):
                raise RuntimeError(
                    f"signoff and the fnmatch loop disagree at {size} rules "
                    f"({'warm' if warm else 'cold'} cache) on {call.name!r} with {call.args!r}: "
                    f"signoff says {verdict.kind} by {verdict.rule}, fnmatch says {kind} by {rule}"
                )
    return Counter(kind if rule else "default" for kind, rule in expected)


def cold_latency(policy: Policy, calls: Sequence[ToolCall]) -> tuple[Latency, int]:
    """First evaluations of each (distinct) sample name on fresh engines: every one a cache miss."""
    timings: list[int] = []
    engines = 0
    deadline = time.perf_counter() + COLD_BUDGET_S
    while engines < MAX_COLD_ENGINES and (engines == 0 or time.perf_counter() < deadline):
        engine = PolicyEngine(policy)
        timings += time_each(engine.evaluate, calls, 1)
        engines += 1
    return latency(timings), engines


def bench_size(size: int, console: Console) -> SizeResult:
    rules, origins, shapes = make_rules(size)
    calls = make_calls(origins, size)
    policy = Policy.from_dict({"default": "ask", "rules": rules})
    engine = PolicyEngine(policy)
    peer = FnmatchLoop(rules)

    started = time.perf_counter()
    outcomes = check_agreement(size, engine, peer, calls)  # also fills the engine's cache
    check_s = time.perf_counter() - started
    console.print(f"  {size:>6,} rules: both agree on all {len(calls):,} calls", style="dim")

    known = latency(time_each(engine.evaluate, calls, KNOWN_PASSES))
    known_rate = decisions_per_s(engine.evaluate, calls, KNOWN_PASSES)
    cold, engines = cold_latency(policy, calls)

    # The agreement check ran the peer over the sample once; that is its cost estimate.
    peer_pass_s = check_s
    peer_passes = max(1, min(KNOWN_PASSES, int(PEER_BUDGET_S / max(peer_pass_s, 1e-9))))
    peer_latency = latency(time_each(peer.evaluate, calls, peer_passes))
    peer_rate = decisions_per_s(peer.evaluate, calls, peer_passes)

    return SizeResult(
        rules=size,
        patterns=sum(shapes.values()),
        shapes=dict(sorted(shapes.items())),
        outcomes={k: outcomes[k] for k in ("deny", "ask", "allow", "default")},
        signoff_known=known,
        signoff_decisions_per_s=known_rate,
        signoff_cold=cold,
        cold_engines=engines,
        fnmatch=peer_latency,
        fnmatch_decisions_per_s=peer_rate,
        speedup_p50=peer_latency.p50_us / known.p50_us,
        speedup_throughput=known_rate / peer_rate,
    )


def best_ms(load: Callable[[], object]) -> float:
    best = math.inf
    for _ in range(LOAD_REPEATS):
        start = time.perf_counter_ns()
        load()
        best = min(best, (time.perf_counter_ns() - start) / 1e6)
    return best


def bench_load(size: int) -> LoadResult:
    document = {"default": "ask", "rules": make_rules(size)[0]}
    text = yaml.safe_dump(document, sort_keys=False)
    with tempfile.TemporaryDirectory() as folder:
        json_file = Path(folder) / "policy.json"
        json_file.write_text(json.dumps(document), encoding="utf-8")
        from_json_file_ms = best_ms(lambda: PolicyEngine(Policy.from_file(json_file)))
    return LoadResult(
        rules=size,
        yaml_bytes=len(text.encode()),
        from_dict_ms=best_ms(lambda: PolicyEngine(Policy.from_dict(document))),
        from_json_file_ms=from_json_file_ms,
        from_yaml_ms=best_ms(lambda: PolicyEngine(Policy.from_yaml(text))),
        yaml_parse_only_ms=best_ms(lambda: parse_text(text, source=None)),
    )


# -- reporting -------------------------------------------------------------------------------


def targets(sizes: Sequence[SizeResult], loads: Sequence[LoadResult]) -> list[Target]:
    largest = next(r for r in sizes if r.rules == 10_000)
    middle = next(r for r in sizes if r.rules == 1_000)
    load = next(r for r in loads if r.rules == 10_000)
    return [
        Target(
            name="p50, known tool name, 10,000 rules",
            goal="<= 5 µs",
            value=f"{largest.signoff_known.p50_us:.2f} µs",
            status="met" if largest.signoff_known.p50_us <= 5 else "MISSED",
        ),
        Target(
            name="p99, known tool name, 10,000 rules",
            goal="<= 50 µs",
            value=f"{largest.signoff_known.p99_us:.2f} µs",
            status="met" if largest.signoff_known.p99_us <= 50 else "MISSED",
        ),
        Target(
            name="throughput vs the fnmatch loop, 1,000 rules",
            goal=">= 100x",
            value=f"{middle.speedup_throughput:,.0f}x",
            status="met" if middle.speedup_throughput >= 100 else "MISSED",
        ),
        Target(
            name="load 10,000 rules (from_dict + PolicyEngine)",
            goal="<= 250 ms",
            value=f"{load.from_dict_ms:.0f} ms",
            status="met" if load.from_dict_ms <= 250 else "MISSED",
        ),
        Target(
            name="load 10,000 rules (JSON file + PolicyEngine)",
            goal="<= 250 ms",
            value=f"{load.from_json_file_ms:.0f} ms",
            status="met" if load.from_json_file_ms <= 250 else "MISSED",
        ),
        Target(
            name="load 10,000 rules (YAML text + PolicyEngine)",
            goal="<= 250 ms",
            value=f"{load.from_yaml_ms:.0f} ms",
            status="met" if load.from_yaml_ms <= 250 else "MISSED",
        ),
    ]


def rate(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    if value >= 1e3:
        return f"{value / 1e3:.1f}k"
    return f"{value:.0f}"


def report(
    console: Console,
    sizes: Sequence[SizeResult],
    loads: Sequence[LoadResult],
    goals: Sequence[Target],
) -> None:
    table = Table(title="signoff PolicyEngine vs seed 003's fnmatch loop (µs per decision)")
    table.add_column("rules", justify="right")
    for header in ("signoff\np50", "signoff\np99", "signoff\ndec/s", "signoff cold\np50 / p99"):
        table.add_column(header, justify="right", style="green")
    for header in ("fnmatch\np50", "fnmatch\np99", "fnmatch\ndec/s"):
        table.add_column(header, justify="right", style="yellow")
    table.add_column("speed-up\np50", justify="right", style="bold")
    table.add_column("speed-up\ndec/s", justify="right", style="bold")
    for r in sizes:
        table.add_row(
            f"{r.rules:,}",
            f"{r.signoff_known.p50_us:.2f}",
            f"{r.signoff_known.p99_us:.2f}",
            rate(r.signoff_decisions_per_s),
            f"{r.signoff_cold.p50_us:.1f} / {r.signoff_cold.p99_us:.1f}",
            f"{r.fnmatch.p50_us:,.1f}",
            f"{r.fnmatch.p99_us:,.1f}",
            rate(r.fnmatch_decisions_per_s),
            f"{r.speedup_p50:,.0f}x",
            f"{r.speedup_throughput:,.0f}x",
        )
    console.print(table)
    for r in sizes:
        decided = ", ".join(f"{k} {v}" for k, v in r.outcomes.items())
        console.print(
            f"  {r.rules:>6,} rules, {r.patterns:,} patterns; the sample is decided by {decided}\n"
            f"  {'':>6} timed: signoff {r.signoff_known.samples:,} known and "
            f"{r.signoff_cold.samples:,} cold ({r.cold_engines} fresh engines), "
            f"fnmatch {r.fnmatch.samples:,}",
            style="dim",
        )

    loads_table = Table(title=f"Loading a policy (best of {LOAD_REPEATS}, ms)")
    loads_table.add_column("rules", justify="right")
    loads_table.add_column("from_dict + PolicyEngine", justify="right")
    loads_table.add_column("JSON file + PolicyEngine", justify="right")
    loads_table.add_column("YAML text + PolicyEngine", justify="right")
    loads_table.add_column("of which PyYAML parsing", justify="right")
    loads_table.add_column("YAML size", justify="right")
    for load in loads:
        loads_table.add_row(
            f"{load.rules:,}",
            f"{load.from_dict_ms:,.1f}",
            f"{load.from_json_file_ms:,.1f}",
            f"{load.from_yaml_ms:,.1f}",
            f"{load.yaml_parse_only_ms:,.1f}",
            f"{load.yaml_bytes / 1024:,.0f} KiB",
        )
    console.print(loads_table)

    print_targets(console, goals)


def main() -> None:
    console = wide_console()
    started = time.perf_counter()
    console.print(
        f"signoff {__version__}, Python {platform.python_version()} on {platform.machine()}; "
        f"{SAMPLE_SIZE:,} sample calls per policy"
    )
    # Loading first: a service loads its policy at startup, before its heap fills up.
    loads = [bench_load(size) for size in SIZES]
    sizes = [bench_size(size, console) for size in SIZES]
    goals = targets(sizes, loads)
    report(console, sizes, loads, goals)
    wall_s = time.perf_counter() - started

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    results = {
        **environment("policy"),
        "config": {
            "seed": SEED,
            "sample_calls": SAMPLE_SIZE,
            "known_evaluations": KNOWN_PASSES * SAMPLE_SIZE,
            "peer_budget_s": PEER_BUDGET_S,
            "cold_budget_s": COLD_BUDGET_S,
            "load_repeats": LOAD_REPEATS,
            "peer": "any(fnmatch.fnmatch(name, p) for p in patterns) per rule, precedence order",
        },
        "sizes": [asdict(r) for r in sizes],
        "load": [asdict(load) for load in loads],
        "targets": [asdict(goal) for goal in goals],
        "wall_time_s": round(wall_s, 1),
    }
    RESULTS.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    console.print(f"wall time {wall_s:.1f} s; results in {RESULTS}")


if __name__ == "__main__":
    main()
