"""What signoff costs a LangChain agent: ``SignoffMiddleware`` against plain ``create_agent`` and
against LangChain's own ``HumanInTheLoopMiddleware``, in the same run, on the same checkpointer.

Run it with ``make bench``. Everything runs twice: on SQLite (``SqliteSaver`` on a file, signoff's
store on another file in the same temporary folder) and on PostgreSQL (``PostgresSaver`` and
signoff's store in one fresh database, dropped afterwards; ``SIGNOFF_BENCH_POSTGRES`` names the
server, by default ``postgresql://postgres@127.0.0.1:5432/test``; skipped, and said so, when it is
not reachable). The agents are ``create_agent`` from LangChain v1 with a scripted chat model that
answers at once, and ``invoke`` with LangGraph's default durability. signoff's side is opened as
its documentation says, ``connect(policy, origin="langgraph", database=...)``: its store on a loop
of its own, which the middleware calls from ``invoke``'s thread.

**An allowed call.** ``create_agent(model, [lookup], checkpointer=...)``, and the same agent with
``middleware=[SignoffMiddleware(runs)]`` under a policy that allows ``lookup``; for scale, also
with ``HumanInTheLoopMiddleware(interrupt_on={"lookup": False})``, which adds a node to the graph
and nothing else. A cycle is one ``invoke`` on a new thread: a user message; the model answers
with one call of ``lookup``; the tool runs; the model answers with text; the run ends. The agents
take turns, each cycle in another order.
Timed: the whole ``invoke``, and from the model returning its call to the tool's first line. The
middleware's added latency per allowed call is the difference of the p50s: it judges the call
(one transaction in signoff's store: the verdict kept under the call's key, the audit), runs it
through the ledger (a claim before, the result recorded after) and adds two nodes to the graph.

**A held call**, on a thread that already holds N = 10, 100 or 1,000 messages of about 500 bytes
(written with ``update_state`` before anything is timed; each cycle has a fresh thread):
LangChain's ``HumanInTheLoopMiddleware(interrupt_on={"send_report": True})``, resumed with
``Command(resume={"decisions": [{"type": "approve"}]})``; and ``SignoffMiddleware`` under a
policy that asks about ``send_report``, the approval decided with ``gate.decide`` (as the inbox
would; timed on its own and not part of the figures) and the run resumed with
``Command(resume={"signoff": ...})``, which is what signoff's ``resumer`` sends. Timed:

- pause: from the model returning its call to ``invoke`` returning with ``__interrupt__``;
- resume: from calling ``invoke(Command(...))`` to the tool's first line, and to ``invoke``
  returning (the tool, the model's last turn, the checkpoints on the way).

What signoff does in that time that the HITL middleware does not: the policy judges the call
with its arguments; the approval is in a store every channel reads (web inbox, API, terminal,
A2A, MCP), with the pause that the resumer finds; the decision is audited; the tool runs through
the ledger, once, however often the node re-runs or the checkpoint is resumed.

Every cycle checks what it measured: the tool ran exactly once and the run ended with the
model's reply. Nothing here is a test: the figures depend on the machine and its load.
``bench/results/integrations.json`` keeps them.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import random
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any, Final, Literal

import psycopg
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from psycopg.rows import dict_row
from rich.table import Table

from _common import (
    Latency,
    Target,
    added_target,
    environment,
    held_target,
    latency,
    ms,
    print_targets,
    wide_console,
)
from signoff import Approve, Policy, __version__
from signoff.integrations.langchain import SignoffMiddleware, connect

Backend = Literal["sqlite", "postgresql"]

SEED: Final = 17
SIZES: Final = (10, 100, 1_000)
HELD_CYCLES: Final = {10: 60, 100: 60, 1_000: 25}
ALLOWED_CYCLES: Final = 150
WARMUP: Final = 5
"""Untimed cycles before the timed ones, per measurement."""
MESSAGE_BYTES: Final = 500
QUESTION: Final = "Send the quarterly report to ops."
REPLY: Final = "Done."
ALLOWED_TOOL: Final = "lookup"
HELD_TOOL: Final = "send_report"
ACTOR: Final = "bench"
ALLOW: Final = Policy.from_yaml(f"default: deny\nrules:\n  - allow: {ALLOWED_TOOL}\n")
ASK: Final = Policy.from_yaml(f"default: deny\nrules:\n  - ask: {HELD_TOOL}\n")
PG_ADMIN: Final = os.environ.get(
    "SIGNOFF_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"
)
RESULTS: Final = Path(__file__).parent / "results" / "integrations.json"


# -- the agents' parts ---------------------------------------------------------------------------


@dataclass
class Clock:
    """When the model returned each turn and the tool started, and how often the tool ran."""

    model_returns: list[float] = field(default_factory=list)
    tool_started: float = 0.0
    executions: int = 0

    def reset(self) -> None:
        self.model_returns.clear()
        self.tool_started = 0.0
        self.executions = 0

    def tool(self) -> None:
        self.tool_started = time.perf_counter()
        self.executions += 1


CLOCK: Final = Clock()


class ScriptedChat(BaseChatModel):
    """Answers a user's message with one call of `tool`, anything else with `REPLY`; notes the
    time just before it returns."""

    tool: str
    args: dict[str, Any]

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChat:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if isinstance(messages[-1], HumanMessage):
            call = {"name": self.tool, "args": self.args, "id": f"call_{uuid.uuid4().hex[:16]}"}
            reply = AIMessage(content="", tool_calls=[{**call, "type": "tool_call"}])
        else:
            reply = AIMessage(content=REPLY)
        result = ChatResult(generations=[ChatGeneration(message=reply)])
        CLOCK.model_returns.append(time.perf_counter())
        return result


def lookup(key: str) -> str:
    """Look a key up."""
    CLOCK.tool()
    return f"the value of {key}"


def send_report(to: str, subject: str) -> str:
    """Send a report by email."""
    CLOCK.tool()
    return f"sent {subject!r} to {to}"


def history(size: int, rng: random.Random) -> list[BaseMessage]:
    """`size` messages of about `MESSAGE_BYTES`, a user's and an assistant's in turn."""
    words = ("report", "quarter", "figures", "ops", "revenue", "churn", "plan", "budget", "team")
    messages: list[BaseMessage] = []
    for index in range(size):
        text = f"{index}: " + " ".join(rng.choice(words) for _ in range(MESSAGE_BYTES // 7))
        kind = HumanMessage if index % 2 == 0 else AIMessage
        messages.append(kind(content=text[:MESSAGE_BYTES], id=f"m{index}"))
    return messages


def check(result: dict[str, Any], what: str) -> None:
    """A cycle measured what it says: the tool ran once and the run ended with the reply."""
    last = result["messages"][-1]
    if CLOCK.executions != 1 or last.content != REPLY:
        raise RuntimeError(f"{what}: the tool ran {CLOCK.executions} times, last {last!r}")


def rotated(names: list[str], cycle: int) -> list[str]:
    """The systems in another order each cycle: none always goes first (or after another)."""
    shift = cycle % len(names)
    return names[shift:] + names[:shift]


def thread(name: str) -> RunnableConfig:
    return {"configurable": {"thread_id": f"{name}-{uuid.uuid4().hex[:12]}"}}


# -- where they keep their state -----------------------------------------------------------------


@dataclass(frozen=True)
class Place:
    backend: Backend
    saver: BaseCheckpointSaver[Any]
    database: str
    """signoff's store."""


@contextlib.contextmanager
def sqlite_place(folder: Path) -> Iterator[Place]:
    connection = sqlite3.connect(folder / "checkpoints.db", check_same_thread=False)
    try:
        yield Place("sqlite", SqliteSaver(connection), f"sqlite:///{folder / 'signoff.db'}")
    finally:
        connection.close()


@contextlib.contextmanager
def postgres_place() -> Iterator[Place]:
    """A fresh database for both, dropped afterwards."""
    name = f"signoff_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=3) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            url = f"{PG_ADMIN.rsplit('/', 1)[0]}/{name}"
            with psycopg.connect(
                url, autocommit=True, prepare_threshold=0, row_factory=dict_row
            ) as connection:
                saver = PostgresSaver(connection)
                saver.setup()
                yield Place("postgresql", saver, url)
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# -- an allowed call -----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Allowed:
    invoke: Latency
    to_tool: Latency
    """From the model returning its call to the tool's first line."""


def bench_allowed(place: Place) -> dict[str, Allowed]:
    model = ScriptedChat(tool=ALLOWED_TOOL, args={"key": "quarterly-revenue"})
    runs = connect(ALLOW, origin="langgraph", database=place.database)
    try:
        stacks: dict[str, list[AgentMiddleware]] = {
            "plain": [],
            "hitl": [HumanInTheLoopMiddleware(interrupt_on={ALLOWED_TOOL: False})],
            "signoff": [SignoffMiddleware(runs)],
        }
        agents = {
            name: create_agent(model, [lookup], middleware=stack, checkpointer=place.saver)
            for name, stack in stacks.items()
        }
        invoke: dict[str, list[float]] = {name: [] for name in agents}
        to_tool: dict[str, list[float]] = {name: [] for name in agents}
        for cycle in range(WARMUP + ALLOWED_CYCLES):
            for name in rotated(list(agents), cycle):
                CLOCK.reset()
                started = time.perf_counter()
                result = agents[name].invoke(
                    {"messages": [HumanMessage(QUESTION)]}, thread(f"allowed-{name}")
                )
                ended = time.perf_counter()
                check(result, f"allowed, {name}")
                if cycle >= WARMUP:
                    invoke[name].append(ended - started)
                    to_tool[name].append(CLOCK.tool_started - CLOCK.model_returns[0])
    finally:
        runs.close()
    return {
        name: Allowed(invoke=latency(invoke[name]), to_tool=latency(to_tool[name]))
        for name in agents
    }


# -- a held call ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Held:
    pause: Latency
    resume_to_tool: Latency
    resume_to_end: Latency
    decide: Latency | None
    """signoff's ``gate.decide``, not part of the figures."""


SETTLED: Final = {
    "hitl": "HumanInTheLoopMiddleware.after_model",
    "signoff": "signoff.after_model",
}
"""The node a thread's history is written as, so that the graph waits for new input."""


def bench_held(place: Place, size: int) -> dict[str, Held]:
    model = ScriptedChat(tool=HELD_TOOL, args={"to": "ops@example.com", "subject": "Q3 report"})
    runs = connect(ASK, origin="langgraph", database=place.database)
    try:
        stacks: dict[str, list[AgentMiddleware]] = {
            "hitl": [HumanInTheLoopMiddleware(interrupt_on={HELD_TOOL: True})],
            "signoff": [SignoffMiddleware(runs)],
        }
        agents = {
            name: create_agent(model, [send_report], middleware=stack, checkpointer=place.saver)
            for name, stack in stacks.items()
        }
        figures: dict[str, dict[str, list[float]]] = {
            name: {"pause": [], "to_tool": [], "to_end": [], "decide": []} for name in agents
        }
        cycles = HELD_CYCLES[size]
        for cycle in range(WARMUP + cycles):
            for name in rotated(list(agents), cycle):
                agent, config = agents[name], thread(f"held-{name}")
                agent.update_state(
                    config,
                    {"messages": history(size, random.Random(SEED + cycle))},
                    as_node=SETTLED[name],
                )
                CLOCK.reset()
                result = agent.invoke({"messages": [HumanMessage(QUESTION)]}, config)
                paused = time.perf_counter()
                [asked] = result["__interrupt__"]
                decide = 0.0
                if name == "signoff":
                    [approval] = asked.value["signoff"]["approvals"]
                    before = time.perf_counter()
                    runs.run(runs.gate.decide(approval, Approve(), actor=ACTOR))
                    decide = time.perf_counter() - before
                    command: Command[Any] = Command(resume={"signoff": asked.value["signoff"]})
                else:
                    command = Command(resume={"decisions": [{"type": "approve"}]})
                if CLOCK.executions:
                    raise RuntimeError(f"held, {name}: the tool ran before the decision")
                returned = CLOCK.model_returns[0]
                started = time.perf_counter()
                result = agent.invoke(command, config)
                ended = time.perf_counter()
                check(result, f"held, {name}, N={size}")
                if cycle >= WARMUP:
                    figures[name]["pause"].append(paused - returned)
                    figures[name]["to_tool"].append(CLOCK.tool_started - started)
                    figures[name]["to_end"].append(ended - started)
                    figures[name]["decide"].append(decide)
    finally:
        runs.close()
    return {
        name: Held(
            pause=latency(got["pause"]),
            resume_to_tool=latency(got["to_tool"]),
            resume_to_end=latency(got["to_end"]),
            decide=latency(got["decide"]) if name == "signoff" else None,
        )
        for name, got in figures.items()
    }


# -- reporting -----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class BackendResult:
    backend: Backend
    allowed: dict[str, Allowed]
    held: dict[int, dict[str, Held]]
    seconds: float


def times(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.2f}x" if theirs > 0 else "—"


def allowed_table(result: BackendResult) -> Table:
    plain, hitl, ours = (result.allowed[name] for name in ("plain", "hitl", "signoff"))
    table = Table(title=f"An allowed call, {result.backend}: one invoke (model → tool → model)")
    for header in ("", "invoke p50", "invoke p99", "model → tool p50", "model → tool p99"):
        table.add_column(header, justify="right" if header else "left")
    rows = (
        ("create_agent", plain),
        ("+ HITL middleware (not asking)", hitl),
        ("+ SignoffMiddleware (allowed)", ours),
    )
    for label, figure in rows:
        table.add_row(
            label,
            ms(figure.invoke.p50_ms),
            ms(figure.invoke.p99_ms),
            ms(figure.to_tool.p50_ms),
            ms(figure.to_tool.p99_ms),
        )
    table.add_row(
        "added by signoff",
        f"{ms(ours.invoke.p50_ms - plain.invoke.p50_ms)} "
        f"({times(ours.invoke.p50_ms, plain.invoke.p50_ms)})",
        "",
        f"{ms(ours.to_tool.p50_ms - plain.to_tool.p50_ms)}",
        "",
        style="bold",
    )
    return table


def held_table(result: BackendResult) -> Table:
    table = Table(
        title=f"A held call, {result.backend}: HumanInTheLoopMiddleware / SignoffMiddleware, "
        "p50 (p99) in ms, and signoff's time as a multiple of HITL's"
    )
    table.add_column("N", justify="right")
    for header in ("pause", "resume → tool", "resume → end"):
        table.add_column(f"{header}\nHITL", justify="right", style="cyan")
        table.add_column(f"{header}\nsignoff", justify="right", style="green")
        table.add_column("", justify="right", style="bold")
    for size, sides in result.held.items():
        hitl, ours = sides["hitl"], sides["signoff"]
        cells: list[str] = []
        for figure in ("pause", "resume_to_tool", "resume_to_end"):
            theirs_figure, ours_figure = getattr(hitl, figure), getattr(ours, figure)
            cells += [
                f"{ms(theirs_figure.p50_ms)} ({ms(theirs_figure.p99_ms)})",
                f"{ms(ours_figure.p50_ms)} ({ms(ours_figure.p99_ms)})",
                times(ours_figure.p50_ms, theirs_figure.p50_ms),
            ]
        table.add_row(f"{size:,}", *cells)
    return table


ALLOWED_GOAL_MS: Final = {"sqlite": 1.0, "postgresql": 2.0}
"""Issue 36: an allowed call costs at most this much more than HITL's middleware asking
nothing."""


def targets(results: Sequence[BackendResult]) -> list[Target]:
    """Issue 36's goals against LangChain's own middleware in this run: an allowed call at most
    1 ms (PostgreSQL: 2 ms) more than with ``HumanInTheLoopMiddleware`` asking nothing; a held
    call's pause and resume (to the end of the run) no slower than HITL's at N = 10, and
    faster from N = 100 up."""
    goals: list[Target] = []
    for result in results:
        hitl, ours = result.allowed["hitl"].invoke.p50_ms, result.allowed["signoff"].invoke.p50_ms
        limit = ALLOWED_GOAL_MS[result.backend]
        name = f"{result.backend}: allowed call"
        goals.append(added_target(name, ours, hitl, limit, "HITL not asking"))
        for size, sides in result.held.items():
            goals += [
                held_target(
                    f"{result.backend}: held call, {what}, N={size:,}",
                    getattr(sides["signoff"], field).p50_ms,
                    getattr(sides["hitl"], field).p50_ms,
                    size,
                    "HITL",
                )
                for what, field in (("pause", "pause"), ("resume", "resume_to_end"))
            ]
    return goals


def run_backend(backend: Backend, place: Place, console: Any) -> BackendResult:
    started = time.perf_counter()
    allowed = bench_allowed(place)
    console.print(f"  {backend}: an allowed call, {ALLOWED_CYCLES} cycles each", style="dim")
    held: dict[int, dict[str, Held]] = {}
    for size in SIZES:
        held[size] = bench_held(place, size)
        console.print(f"  {backend}: a held call at N={size:,}", style="dim")
    return BackendResult(
        backend=backend,
        allowed=allowed,
        held=held,
        seconds=round(time.perf_counter() - started, 1),
    )


def main() -> None:
    console = wide_console()
    started = time.perf_counter()
    load_before = os.getloadavg()
    console.print(
        f"signoff {__version__}, langchain {version('langchain')}, langgraph "
        f"{version('langgraph')}; Python {platform.python_version()} on {platform.machine()}; "
        f"SQLite {sqlite3.sqlite_version}; load average {load_before[0]:.2f}"
    )
    results: list[BackendResult] = []
    with (
        tempfile.TemporaryDirectory(prefix="signoff-bench-") as folder,
        sqlite_place(Path(folder)) as place,
    ):
        results.append(run_backend("sqlite", place, console))
    try:
        with postgres_place() as place:
            results.append(run_backend("postgresql", place, console))
    except psycopg.OperationalError as exc:
        console.print(f"[bold red]PostgreSQL is not reachable at {PG_ADMIN}: {exc}[/]")
    for result in results:
        console.print(allowed_table(result))
        console.print(held_table(result))
        decides = ", ".join(
            f"N={size:,} {ms(sides['signoff'].decide.p50_ms)}"
            for size, sides in result.held.items()
            if sides["signoff"].decide is not None
        )
        console.print(
            f"  {result.backend}: signoff's gate.decide p50 (ms, not in the figures): {decides}",
            style="dim",
        )
    goals = targets(results)
    print_targets(console, goals)
    wall_s = time.perf_counter() - started
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    document = {
        **environment("integrations"),
        "sqlite_version": sqlite3.sqlite_version,
        "peer": {
            "langchain": version("langchain"),
            "langgraph": version("langgraph"),
            "langgraph-checkpoint-sqlite": version("langgraph-checkpoint-sqlite"),
            "langgraph-checkpoint-postgres": version("langgraph-checkpoint-postgres"),
            "idiom": "create_agent with no middleware (an allowed call) and with "
            "HumanInTheLoopMiddleware (a held call); durability 'async' (the default)",
        },
        "config": {
            "seed": SEED,
            "sizes": SIZES,
            "held_cycles": HELD_CYCLES,
            "allowed_cycles": ALLOWED_CYCLES,
            "warmup": WARMUP,
            "message_bytes": MESSAGE_BYTES,
        },
        "backends": [asdict(result) for result in results],
        "targets": [asdict(goal) for goal in goals],
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "wall_time_s": round(wall_s, 1),
    }
    RESULTS.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    console.print(f"wall time {wall_s:.1f} s; results in {RESULTS}")


if __name__ == "__main__":
    main()
