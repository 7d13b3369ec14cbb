"""Pausing a run for an approval and resuming it: signoff against LangGraph, in the same run.

Run it with ``make bench``. For each history size N (10, 100, 1,000, 10,000) both systems get
the same cycle, on a conversation thread that already holds N messages of about 500 bytes each
(alternating user and assistant text, written before anything is timed):

1. a new user message; the scripted model answers at once with one call of ``send_report``,
   which the policy asks about; the run pauses (the call is held and the run's state persisted);
2. the call is approved (signoff: ``gate.decide(id, Approve())``, timed on its own and not part
   of the figures; LangGraph has no separate decision, the approval travels in the resume);
3. the run resumes, the tool runs, the model answers with text and the run ends.

Every cycle gets a fresh thread pre-populated with N messages, so the history really is N.

**signoff**: ``open_store("sqlite:///FILE")`` in a temporary folder, ``Gate(policy, store)`` with
``ask: send_report``, ``Runner(Agent(model=..., tools=[send_report]), gate)``. The N messages are a
completed earlier run of the same thread (``store.create_run`` with ``message_to_dict``
messages), which the model sees on its next turn. The model is a ``ScriptedModel`` wrapped to
note ``time.perf_counter()`` just before it returns.

**LangGraph** (the ``bench`` dependency group: langgraph, langgraph-checkpoint-sqlite): the
human-in-the-loop shape its documentation recommends for approving tool calls — dynamic
``interrupt()``, not the static ``interrupt_before`` breakpoints — as a ``StateGraph`` over
``MessagesState`` (the ``add_messages`` reducer, langchain_core messages): ``agent`` (the
scripted model, an ``AIMessage`` with the tool call) → ``review``, which calls ``interrupt(...)``
with the call and on approval returns ``Command(goto="tools")`` → ``tools``, a prebuilt
``ToolNode`` → ``agent`` → end. The checkpointer is the synchronous ``SqliteSaver`` on a file in
the temporary folder; ``invoke`` runs with LangGraph's default durability, ``"async"`` (a step's
checkpoint is written in the background while the next step runs; ``invoke`` returns only once
every write has finished, so the pause is durable when it returns). The N messages go in with
``graph.update_state(config, {"messages": [...]}, as_node="agent")``, untimed. Both tools are
plain ``def`` functions (signoff runs them in a thread, ToolNode in its executor).

**Times**, per cycle:

- pause: from the model returning its turn to control coming back to the caller with the run
  paused and durable — signoff: the ``paused`` event out of ``runner.start(...)``'s stream;
  LangGraph: ``graph.invoke(...)`` returning with ``__interrupt__``;
- resume: from calling ``runner.resume(run_id)`` / ``graph.invoke(Command(resume=...), config)``
  to the first line of the tool's body (it notes ``time.perf_counter()``).

**Bytes**, per cycle, from the new user message to the first line of the tool's body, measured two
ways in the same cycles.

*Physical*: the bytes appended to the SQLite write-ahead log. Both databases are in WAL mode with
``wal_autocheckpoint=0`` on every connection that writes (signoff's through a ``connect``
listener on its engine, then ``store.runner.reset()``; LangGraph's on the ``sqlite3`` connection
the bench hands to ``SqliteSaver``), and each cycle starts with
``PRAGMA wal_checkpoint(TRUNCATE)``, so the log holds nothing but the cycle's writes: 32 bytes of
header, then 24 bytes of header and one whole page for every page each transaction changed.

- signoff: the tool's body reads the log's size after it has noted the time; every write before
  it has been committed by then (each store call is awaited). The decision's growth of the log,
  measured around ``gate.decide``, is taken out.
- LangGraph: under ``"async"`` durability the checkpoint of the step before the tools may still
  be on its way to the database when the tool starts, so the log is read after the cycle, frame
  by frame, and each committed transaction is attributed by what it holds: the saver (a
  ``SqliteSaver`` subclass whose lock is made reentrant so it notes each commit under the lock,
  in commit order) marks the transactions holding the tool's result as after the tool. Every
  other transaction counts — all of what LangGraph persisted on the way to the tool, whenever it
  landed.

*Logical*: the bytes of the values each system hands to SQLite in its write statements (INSERT,
UPDATE, REPLACE, DELETE): for every bound parameter, the length of text (UTF-8) or bytes, 8 for
an integer or a float, 0 for NULL; every row of an ``executemany``. signoff: a
``before_cursor_execute`` listener on ``store.runner.engine``, read at the same points as the log
(after the pause, around ``gate.decide``, whose share is taken out, and at the tool's first
line). LangGraph: the bench's ``sqlite3`` connection hands ``SqliteSaver`` cursors that tally
what ``execute``/``executemany`` bind; the saver adds each transaction's tally to its note of the
commit, and the transactions on the way to the tool count, as for the log. Reads, the schema and
the pre-populated history are not counted. The breakdown by table is that of the cycle at the
p50.

"Beyond the new messages" subtracts the canonical-JSON size of the two messages a cycle adds
before the tool runs (the user's and the assistant's call, as signoff stores them), the same
figure for both, from each measure. The table also shows the last cycle's frames: pages written,
distinct pages, transactions.

The issue's target, at most 16 KB written per cycle beyond the new messages, judges the logical
figure; the physical one is printed next to it. Unless the values are large (LangGraph's
checkpoints at large N), the log's bytes are dominated by whole pages: every page of every B-tree
a write touches, each index as well as the table, goes into the log as a whole 4 KB page (and a
24-byte frame header), however few of its bytes changed, so a few small rows in a few tables
cost tens of pages. What a store controls is what it asks the database to write; the values it
binds measure that, whatever SQLite's page size and however many indexes the schema keeps.

**Caveats.** The scripted model is instant: it returns without ever yielding to the event loop.
signoff's first store call after it then also pays for work the loop had left over from reading
the history for the model (freeing the N rows, which the executor's future held until then); a
real model's network wait would absorb that before the pause starts. LangGraph's resume may
start the tool before the checkpoint of the step before it is written (its default), while
signoff commits the call's ledger entry first (at most once); LangGraph stores the whole message
list in every checkpoint (``SqliteSaver`` keeps channel values inline; the beta
``DeltaChannel``, which would store deltas, is not its default and is not used here).

**A model that takes 50 ms.** After the instant model, signoff's pause runs with the CPU's caches
still full of the history just read for it, so at N = 10,000 each of its statements runs slower,
though none depends on N. To tell work done on the history from such cache and idle effects, the
bench also times signoff's pause, after everything else and in the same cycle, with a model whose
every turn first awaits ``asyncio.sleep(0.05)`` (the time still noted just before it returns),
at N = 10 and 10,000 (`SLOW_MODEL_CYCLES`); a pause that grew with N there too would be work on
the history. The targets do not judge it.

Both connections use ``synchronous=FULL`` (signoff's setting; the SQLite default, which
LangGraph keeps).

**The limit, in the same run** (issue 22; ``bench/_limits.py``): before each history size,
single-row INSERT + COMMIT back to back on one ``sqlite3`` connection to a new file in the same
temporary folder (WAL, ``synchronous=FULL``). A pause and a resume each wait for at least one
such commit, so issue 22's goals are printed against its p50 with their ratio to it: signoff's
pause p50 at most 1.0 ms at N = 10 and 1.2 ms at N = 10,000, its resume p50 at most 0.8 ms at
N = 10. Missed targets are printed as MISSED; the exit status is 0 all the same.
``bench/results/pause_resume.json`` keeps every figure and ``docs/images/pause_resume.png``
draws them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import platform
import random
import re
import sqlite3
import struct
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any, Final, Literal, Self

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool as langchain_tool
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
)
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt
from rich.table import Table
from sqlalchemy import event

from _common import (
    Latency,
    Target,
    environment,
    latency,
    ms,
    percentile,
    print_targets,
    wide_console,
)
from _limits import Commits, limit_target, limits_table, sqlite_commits
from signoff import Approve, Policy, __version__, tool
from signoff.agent import Agent, ModelTurn, Runner
from signoff.agent.model import Message, ToolSpec, message_to_dict
from signoff.gate import Gate
from signoff.gate.ids import new_id
from signoff.store import SQLStore, open_store
from signoff.store.runs import RunRecord
from signoff.testing import ScriptedModel, call
from signoff.types import canonical_json

System = Literal["signoff", "langgraph"]

SEED: Final = 11
SIZES: Final = (10, 100, 1_000, 10_000)
CYCLES: Final[dict[System, dict[int, int]]] = {
    "signoff": {10: 200, 100: 200, 1_000: 100, 10_000: 30},
    "langgraph": {10: 200, 100: 200, 1_000: 50, 10_000: 20},
}
WARMUP: Final = 5
"""Untimed cycles before the timed ones, per system and size."""
SLOW_MODEL_S: Final = 0.05
"""The model's latency per turn in the extra measurement of signoff's pause."""
SLOW_MODEL_CYCLES: Final = {10: 40, 10_000: 16}
"""Timed cycles of that measurement, by history size (a cycle at N=10,000 takes 0.5 s)."""
SLOW_MODEL_WARMUP: Final = 3
MESSAGE_BYTES: Final = 500
"""About the canonical-JSON size of each history message."""
TOOL: Final = "send_report"
ARGS: Final = {"to": "ops@example.com", "subject": "Quarterly report"}
CALL_ID: Final = "call_send_report"
REPLY: Final = "Sent the quarterly report to ops@example.com."
AGENT: Final = "assistant"
ACTOR: Final = "bench"
POLICY: Final = Policy.from_yaml(
    f"""
    default: allow
    rules:
      - ask: {TOOL}
    """
)
PAUSE_GOALS_MS: Final = {10: 1.0, 10_000: 1.2}
"""Issue 22: signoff's pause p50 at these history sizes."""
RESUME_GOALS_MS: Final = {10: 0.8}
"""Issue 22: signoff's resume p50 at these history sizes."""
RESUME_GOAL_MS: Final = 2.0
"""signoff's resume p50 at every history size."""
GROWTH_GOAL: Final = 1.5
EXTRA_BYTES_GOAL: Final = 16 * 1024
WAL_HEADER: Final = 32
FRAME_HEADER: Final = 24
RESULTS: Final = Path(__file__).resolve().parent / "results" / "pause_resume.json"
PLOT: Final = Path(__file__).resolve().parents[1] / "docs" / "images" / "pause_resume.png"

_VOCABULARY: Final = (
    "deploy cluster review budget quarter ticket rollout pager metric latency region backup "
    "invoice customer schedule release branch incident summary forecast report approval owner "
    "service database capacity migration contract vendor alert dashboard"
)
_WORDS: Final = _VOCABULARY.split()


# -- the conversation ------------------------------------------------------------------------


def text(rng: random.Random, index: int, role: str) -> str:
    """Words until the message's canonical JSON is about `MESSAGE_BYTES` long."""
    overhead = len(canonical_json({"content": "", "role": role}))
    words = [f"({index})"]
    while sum(len(w) + 1 for w in words) < MESSAGE_BYTES - overhead:
        words.append(rng.choice(_WORDS))
    return " ".join(words)[: MESSAGE_BYTES - overhead]


@dataclass(frozen=True)
class Conversation:
    """The N messages of history, in both systems' forms, and the cycle's new user message."""

    ours: list[dict[str, Any]]
    theirs: list[BaseMessage]
    question: str


def conversation(size: int) -> Conversation:
    rng = random.Random(f"{SEED}-{size}")
    ours: list[dict[str, Any]] = []
    theirs: list[BaseMessage] = []
    for i in range(size):
        role: Literal["user", "assistant"] = "user" if i % 2 == 0 else "assistant"
        content = text(rng, i, role)
        ours.append(message_to_dict(Message(role=role, content=content)))
        kind = HumanMessage if role == "user" else AIMessage
        theirs.append(kind(content=content, id=f"history-{i}"))
    return Conversation(ours=ours, theirs=theirs, question=text(rng, size, "user"))


def new_messages_bytes(question: str) -> int:
    """The canonical JSON of what a cycle adds before the tool runs: the user's message and the
    assistant's turn with its call, as signoff stores them."""
    user = Message(role="user", content=question)
    said = Message(role="assistant", tool_calls=(call(TOOL, **ARGS),))
    return sum(len(canonical_json(message_to_dict(m))) for m in (user, said))


# -- the write-ahead log ---------------------------------------------------------------------


def wal_file(database: Path) -> Path:
    return database.with_name(database.name + "-wal")


def wal_size(database: Path) -> int:
    try:
        return os.stat(wal_file(database)).st_size
    except FileNotFoundError:
        return 0


def truncate_wal(connection: sqlite3.Connection, database: Path) -> None:
    """Copy the log into the database and empty it: what follows is one cycle's writes."""
    busy, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if busy or wal_size(database):
        raise RuntimeError(f"could not empty the write-ahead log of {database}")


def no_autocheckpoint(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA wal_autocheckpoint=0")
    cursor.close()


@dataclass(frozen=True, kw_only=True)
class Frames:
    pages: int
    """Frames written: one page (and a 24-byte header) each."""
    distinct_pages: int
    commits: int
    """Write transactions."""


def transactions(
    database: Path, page_size: int, start: int = 0, end: int | None = None
) -> list[list[int]]:
    """The pages each transaction wrote to the log between two byte offsets, in commit order (a
    transaction's last frame carries the database's size after it)."""
    frame = FRAME_HEADER + page_size
    found: list[list[int]] = []
    pages: list[int] = []
    with open(wal_file(database), "rb") as log:
        end = os.fstat(log.fileno()).st_size if end is None else end
        offset = max(start, WAL_HEADER)
        log.seek(offset)
        while offset + frame <= end:
            page, size_after = struct.unpack(">II", log.read(FRAME_HEADER)[:8])
            log.seek(page_size, os.SEEK_CUR)
            pages.append(page)
            if size_after:
                found.append(pages)
                pages = []
            offset += frame
    if pages:
        raise RuntimeError(f"{len(pages)} frames of {database}'s log belong to no commit")
    return found


def frames(written: Sequence[Sequence[int]]) -> Frames:
    every = [page for pages in written for page in pages]
    return Frames(pages=len(every), distinct_pages=len(set(every)), commits=len(written))


# -- the values handed to SQLite -------------------------------------------------------------

_WRITE: Final = re.compile(
    r"(?:INSERT(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)"
    r"\s+[\"`\[]?(\w+)",
    re.IGNORECASE,
)
_NOT_WRITES: Final = frozenset(
    [
        "SELECT",
        "PRAGMA",
        "BEGIN",
        "COMMIT",
        "END",
        "ROLLBACK",
        "SAVEPOINT",
        "RELEASE",
        "CREATE",
        "DROP",
        "ALTER",
        "ANALYZE",
        "VACUUM",
        "REINDEX",
        "EXPLAIN",
        "ATTACH",
        "DETACH",
    ]
)
"""Statements that bind no row values (reads, transactions, the schema)."""


def written_table(statement: str) -> str | None:
    """The table a write statement (INSERT, UPDATE, REPLACE, DELETE) writes to; None for any
    other statement."""
    words = statement.split(None, 1)
    first = words[0].upper() if words else ""
    if first in _NOT_WRITES:
        return None
    if first == "WITH":  # a common table expression, before a SELECT or a write
        found = _WRITE.search(statement)
        return None if found is None else found.group(1).lower()
    found = _WRITE.match(statement.lstrip())
    if found is None:
        raise RuntimeError(f"cannot tell whether this statement writes: {statement[:200]!r}")
    return found.group(1).lower()


def value_bytes(value: object) -> int:
    """A bound value's size: UTF-8 length of text, length of bytes, 8 for a number, 0 for NULL."""
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, bytes | bytearray):
        return len(value)
    if isinstance(value, memoryview):
        return value.nbytes
    if isinstance(value, int | float):
        return 8
    raise TypeError(f"no size for a bound {type(value).__name__}: {value!r}")


def row_bytes(row: object) -> int:
    if row is None:
        return 0
    if isinstance(row, Mapping):
        return sum(value_bytes(v) for v in row.values())
    if isinstance(row, Sequence) and not isinstance(row, str | bytes):
        return sum(value_bytes(v) for v in row)
    raise TypeError(f"unexpected parameters: {row!r}")


@dataclass(frozen=True)
class Usage:
    """Bytes bound to write statements, and the statements (rows, for an executemany), by
    table."""

    bytes: Counter[str] = field(default_factory=Counter)
    rows: Counter[str] = field(default_factory=Counter)

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.bytes + other.bytes, self.rows + other.rows)

    def __sub__(self, other: Usage) -> Usage:
        return Usage(self.bytes - other.bytes, self.rows - other.rows)


class Tally:
    """The values a system binds to its write statements, by table, as it hands them to SQLite
    (the logical measure; see the module's docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._usage = Usage()

    def add(self, statement: str, rows: Sequence[object]) -> None:
        table = written_table(statement)
        if table is None:
            return
        size = sum(row_bytes(row) for row in rows)
        with self._lock:
            self._usage.bytes[table] += size
            self._usage.rows[table] += len(rows)

    def snapshot(self) -> Usage:
        with self._lock:
            return Usage(Counter(self._usage.bytes), Counter(self._usage.rows))

    def take(self) -> Usage:
        """What was bound since the last `take`, and start again."""
        with self._lock:
            taken, self._usage = self._usage, Usage()
            return taken


# -- measuring -------------------------------------------------------------------------------


@dataclass
class Probe:
    """What the model and the tool note as a cycle goes."""

    database: Path
    tally: Tally | None = None
    """signoff's: read at the tool's first line."""
    model_returned: list[float] = field(default_factory=list)
    tool_started: float = math.nan
    wal_at_tool: int = -1
    logical_at_tool: Usage = field(default_factory=Usage)

    def reset(self) -> None:
        self.model_returned.clear()
        self.tool_started = math.nan
        self.wal_at_tool = -1
        self.logical_at_tool = Usage()

    def on_tool(self) -> None:
        self.tool_started = time.perf_counter()
        self.wal_at_tool = wal_size(self.database)
        if self.tally is not None:
            self.logical_at_tool = self.tally.snapshot()


@dataclass(frozen=True, kw_only=True)
class Written:
    p50: int
    min: int
    max: int
    beyond_messages_p50: int
    """`p50` minus the canonical JSON of the messages the cycle added."""
    frames: Frames
    """Of the last timed cycle."""


def written(sizes: Sequence[int], new_messages: int, last: Frames) -> Written:
    ordered = sorted(sizes)
    p50 = int(percentile(ordered, 0.5))
    return Written(
        p50=p50,
        min=ordered[0],
        max=ordered[-1],
        beyond_messages_p50=p50 - new_messages,
        frames=last,
    )


@dataclass(frozen=True, kw_only=True)
class Logical:
    """The bytes of the values bound to write statements per cycle (see the module's docstring)."""

    p50: int
    min: int
    max: int
    beyond_messages_p50: int
    """`p50` minus the canonical JSON of the messages the cycle added."""
    by_table: dict[str, int]
    """Of the cycle at the p50."""
    statements_by_table: dict[str, int]
    """Of the cycle at the p50: write statements (rows, for an executemany)."""


def logical(cycles: Sequence[Usage], new_messages: int) -> Logical:
    ordered = sorted(cycles, key=lambda c: c.bytes.total())
    totals = [c.bytes.total() for c in ordered]
    p50 = int(percentile(totals, 0.5))
    middle = ordered[totals.index(p50)]
    return Logical(
        p50=p50,
        min=totals[0],
        max=totals[-1],
        beyond_messages_p50=p50 - new_messages,
        by_table=dict(sorted(middle.bytes.items())),
        statements_by_table=dict(sorted(middle.rows.items())),
    )


@dataclass(frozen=True, kw_only=True)
class Side:
    """One system at one history size."""

    system: System
    history: int
    cycles: int
    pause: Latency
    resume: Latency
    written: Written
    """Physical: appended to the write-ahead log."""
    logical: Logical
    """Logical: the values bound to write statements, in the same cycles."""
    decide: Latency | None
    """signoff's ``gate.decide``, timed on its own (LangGraph has no separate decision)."""
    prepare_s: float
    """Mean time to write a thread's N messages of history (untimed in the figures)."""
    seconds: float


# -- signoff ---------------------------------------------------------------------------------


class ClockedModel:
    """This cycle's `ScriptedModel`, noting the time just before each turn returns; with a
    `delay_s`, each turn first awaits ``asyncio.sleep(delay_s)`` (a model's latency)."""

    def __init__(self, probe: Probe, delay_s: float = 0.0) -> None:
        self.probe = probe
        self.delay_s = delay_s
        self.script = ScriptedModel([])

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        turn = await self.script.complete(messages, tools)
        self.probe.model_returned.append(time.perf_counter())
        return turn


def cycle_script() -> ScriptedModel:
    return ScriptedModel([ModelTurn(tool_calls=(call(TOOL, **ARGS),)), ModelTurn(text=REPLY)])


async def prepopulate(store: SQLStore, thread_id: str, history: list[dict[str, Any]]) -> None:
    """An earlier, completed run of the thread that holds its N messages."""
    now = datetime.now(UTC)
    record = RunRecord(
        id=new_id(),
        thread_id=thread_id,
        agent=AGENT,
        status="completed",
        started_by=None,
        lease_owner=None,
        version=1,
    )
    await store.create_run(record, at=now, lease_until=now, messages=history)


async def bench_signoff(
    folder: Path,
    size: int,
    talk: Conversation,
    *,
    cycles: int | None = None,
    warmup: int = WARMUP,
    model_delay_s: float = 0.0,
) -> Side:
    """signoff's cycle at history size `size`: `cycles` timed cycles (by default those of
    `CYCLES`) after `warmup` untimed ones, with a model taking `model_delay_s` per turn."""
    started = time.perf_counter()
    slow = f"-model-{model_delay_s * 1000:g}ms" if model_delay_s else ""
    database = folder / f"signoff-{size}{slow}.db"
    tally = Tally()
    probe = Probe(database=database, tally=tally)

    @tool
    def send_report(to: str, subject: str) -> str:
        """Send the quarterly report."""
        probe.on_tool()
        return f"sent {subject!r} to {to}"

    model = ClockedModel(probe, model_delay_s)
    pauses: list[float] = []
    resumes: list[float] = []
    decides: list[float] = []
    sizes: list[int] = []
    bound: list[Usage] = []
    prepare = 0.0
    last = Frames(pages=0, distinct_pages=0, commits=0)
    added = new_messages_bytes(talk.question)
    cycles = CYCLES["signoff"][size] if cycles is None else cycles

    def before_cursor_execute(
        _conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, many: bool
    ) -> None:
        tally.add(statement, parameters if many else [parameters])

    async with open_store(f"sqlite:///{database}") as store:
        event.listen(store.engine, "connect", no_autocheckpoint)
        event.listen(store.runner.engine, "before_cursor_execute", before_cursor_execute)
        await store.runner.reset()  # the pooled connections go; new ones take the setting
        gate = Gate(POLICY, store)
        runner = Runner(Agent(name=AGENT, model=model, tools=[send_report]), gate)
        page_size = await store.run(
            lambda c: c.exec_driver_sql("PRAGMA page_size").scalar_one(), write=False
        )
        checkpointer = sqlite3.connect(database, isolation_level=None)
        try:
            for i in range(warmup + cycles):
                thread_id = f"thread-{size}-{i}"
                t = time.perf_counter()
                await prepopulate(store, thread_id, talk.ours)
                prepare += time.perf_counter() - t
                truncate_wal(checkpointer, database)
                tally.take()
                model.script = cycle_script()
                probe.reset()

                approval_id = run_id = ""
                paused_at = math.nan
                async for item in runner.start(thread_id, talk.question):
                    if item.type == "paused":
                        paused_at = time.perf_counter()
                    elif item.type == "approval_requested":
                        approval_id = str(item.data["approval_id"])
                    run_id = item.run_id
                assert approval_id and not math.isnan(paused_at), "the run did not pause"
                wal_paused = wal_size(database)
                bound_paused = tally.snapshot()

                t = time.perf_counter()
                await gate.decide(approval_id, Approve(), actor=ACTOR)
                decided = time.perf_counter() - t
                wal_decided = wal_size(database)
                bound_decided = tally.snapshot()

                resume_called = time.perf_counter()
                kinds = [e.type async for e in runner.resume(run_id)]
                assert kinds[-1] == "completed", kinds
                assert probe.wal_at_tool >= wal_decided, "the tool did not run"
                if i < warmup:
                    continue
                [model_returned, _] = probe.model_returned
                pauses.append(paused_at - model_returned)
                resumes.append(probe.tool_started - resume_called)
                decides.append(decided)
                sizes.append(wal_paused + probe.wal_at_tool - wal_decided)
                bound.append(bound_paused + (probe.logical_at_tool - bound_decided))
                last = frames(
                    transactions(database, page_size, 0, wal_paused)
                    + transactions(database, page_size, wal_decided, probe.wal_at_tool)
                )
                if sizes[-1] != WAL_HEADER + last.pages * (FRAME_HEADER + page_size):
                    raise RuntimeError("the log's frames do not add up to its size")
        finally:
            checkpointer.close()
    database.unlink()
    return Side(
        system="signoff",
        history=size,
        cycles=cycles,
        pause=latency(pauses),
        resume=latency(resumes),
        written=written(sizes, added, last),
        logical=logical(bound, added),
        decide=latency(decides),
        prepare_s=round(prepare / (warmup + cycles), 4),
        seconds=round(time.perf_counter() - started, 1),
    )


# -- LangGraph -------------------------------------------------------------------------------


def _after_tool(values: Sequence[Any]) -> bool:
    """Whether the last messages of a write include the tool's result."""
    return any(isinstance(v, ToolMessage) for v in values[-2:])


class CountingConnection(sqlite3.Connection):
    """A ``sqlite3`` connection whose cursors tally what they bind to write statements."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tally = Tally()

    def cursor(self, factory: Any = None) -> Any:
        # ``Connection.execute`` goes through here too.
        return super().cursor(factory or CountingCursor)


class CountingCursor(sqlite3.Cursor):
    def _tally(self) -> Tally:
        connection = self.connection
        assert isinstance(connection, CountingConnection)
        return connection.tally

    def execute(self, sql: str, parameters: Any = (), /) -> Self:
        self._tally().add(sql, [parameters])
        return super().execute(sql, parameters)

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /) -> Self:
        rows = list(seq_of_parameters)
        self._tally().add(sql, rows)
        return super().executemany(sql, rows)


class RecordingSaver(SqliteSaver):
    """``SqliteSaver`` noting, for each transaction it commits and in commit order, whether it
    comes after the tool ran (it holds the tool's result) or on the way to it, and what it bound
    to its write statements.

    Under ``"async"`` durability the checkpoint of the step before the tools may still be on its
    way to the database when the tool starts: counting the transactions by what they hold, not by
    when they land, gives every write on the way to the tool and none after it. The saver's lock
    becomes reentrant so that the note is taken under it, in the order of the commits."""

    def __init__(self, conn: CountingConnection) -> None:
        super().__init__(conn)
        self.lock = threading.RLock()  # type: ignore[assignment]
        self.counted = conn
        self.commits: list[bool] = []
        self.bound: list[Usage] = []
        """Of each transaction in `commits`."""
        self._after = threading.local()

    @contextlib.contextmanager
    def cursor(self, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        with self.lock:
            with super().cursor(transaction) as cur:
                yield cur
            if transaction:
                self.commits.append(getattr(self._after, "value", False))
                self.bound.append(self.counted.tally.take())

    def forget(self) -> None:
        """Start a new cycle's notes."""
        self.commits.clear()
        self.bound.clear()
        self.counted.tally.take()

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self._after.value = _after_tool(checkpoint["channel_values"].get("messages", ()))
        return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        values = [v for _, v in writes]
        values += [m for v in values if isinstance(v, list) for m in v]
        self._after.value = any(isinstance(v, ToolMessage) for v in values)
        super().put_writes(config, writes, task_id, task_path)


def build_graph(saver: BaseCheckpointSaver[Any], probe: Probe) -> Any:
    @langchain_tool
    def send_report(to: str, subject: str) -> str:
        """Send the quarterly report."""
        probe.on_tool()
        return f"sent {subject!r} to {to}"

    def model(messages: Sequence[AnyMessage]) -> AIMessage:
        """The scripted model: the call after a user's message, then text."""
        if isinstance(messages[-1], HumanMessage):
            reply = AIMessage(
                content="", tool_calls=[{"name": TOOL, "args": dict(ARGS), "id": CALL_ID}]
            )
        else:
            reply = AIMessage(content=REPLY)
        probe.model_returned.append(time.perf_counter())
        return reply

    def agent(state: MessagesState) -> dict[str, list[AnyMessage]]:
        return {"messages": [model(state["messages"])]}

    def route(state: MessagesState) -> Literal["review", "__end__"]:
        last = state["messages"][-1]
        return "review" if isinstance(last, AIMessage) and last.tool_calls else "__end__"

    def review(state: MessagesState) -> Command[Literal["tools", "agent"]]:
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        proposed = last.tool_calls[-1]
        decision = interrupt({"question": "Run this tool call?", "tool_call": proposed})
        if decision.get("action") == "approve":
            return Command(goto="tools")
        refused = ToolMessage(content="The user rejected this call.", tool_call_id=proposed["id"])
        return Command(goto="agent", update={"messages": [refused]})

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("review", review)
    builder.add_node("tools", ToolNode([send_report]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=saver)


def bench_langgraph(folder: Path, size: int, talk: Conversation) -> Side:
    started = time.perf_counter()
    database = folder / f"langgraph-{size}.db"
    probe = Probe(database=database)
    pauses: list[float] = []
    resumes: list[float] = []
    sizes: list[int] = []
    bound: list[Usage] = []
    prepare = 0.0
    last = Frames(pages=0, distinct_pages=0, commits=0)
    added = new_messages_bytes(talk.question)
    cycles = CYCLES["langgraph"][size]
    connection = sqlite3.connect(database, check_same_thread=False, factory=CountingConnection)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA wal_autocheckpoint=0")
        page_size = connection.execute("PRAGMA page_size").fetchone()[0]
        saver = RecordingSaver(connection)
        saver.setup()
        graph = build_graph(saver, probe)
        for i in range(WARMUP + cycles):
            config: RunnableConfig = {"configurable": {"thread_id": f"thread-{size}-{i}"}}
            t = time.perf_counter()
            graph.update_state(config, {"messages": talk.theirs}, as_node="agent")
            prepare += time.perf_counter() - t
            with saver.lock:
                truncate_wal(connection, database)
                saver.forget()
            probe.reset()

            paused = graph.invoke({"messages": [HumanMessage(content=talk.question)]}, config)
            paused_at = time.perf_counter()
            assert paused.get("__interrupt__"), "the graph did not pause"

            resume_called = time.perf_counter()
            final = graph.invoke(Command(resume={"action": "approve"}), config)
            assert final["messages"][-1].content == REPLY
            assert len(final["messages"]) == size + 4
            assert not math.isnan(probe.tool_started), "the tool did not run"
            if i < WARMUP:
                continue
            [model_returned, _] = probe.model_returned
            pauses.append(paused_at - model_returned)
            resumes.append(probe.tool_started - resume_called)
            committed = transactions(database, page_size)
            if len(committed) != len(saver.commits):
                raise RuntimeError(
                    f"{len(committed)} commits in the log, {len(saver.commits)} by the saver"
                )
            if connection.tally.snapshot().rows:
                raise RuntimeError("a write outside the saver's transactions")
            before_tool = [
                t for t, after in zip(committed, saver.commits, strict=True) if not after
            ]
            last = frames(before_tool)
            sizes.append(WAL_HEADER + last.pages * (FRAME_HEADER + page_size))
            bound.append(
                sum(
                    (u for u, after in zip(saver.bound, saver.commits, strict=True) if not after),
                    Usage(),
                )
            )
    finally:
        connection.close()
    database.unlink()
    return Side(
        system="langgraph",
        history=size,
        cycles=cycles,
        pause=latency(pauses),
        resume=latency(resumes),
        written=written(sizes, added, last),
        logical=logical(bound, added),
        decide=None,
        prepare_s=round(prepare / (WARMUP + cycles), 4),
        seconds=round(time.perf_counter() - started, 1),
    )


# -- reporting -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Size:
    history: int
    new_messages_bytes: int
    limit: Commits
    """Single-row durable commits in the same folder, measured just before `signoff`."""
    signoff: Side
    langgraph: Side


def kb(value: float) -> str:
    return f"{value / 1024:,.1f} KB" if abs(value) < 1024 * 1024 else f"{value / 2**20:,.1f} MB"


def ratio(theirs: float, ours: float) -> str:
    return f"{theirs / ours:,.1f}x" if ours > 0 else "—"


def size_table(result: Size) -> Table:
    ours, theirs = result.signoff, result.langgraph
    table = Table(
        title=f"N = {result.history:,} messages already in the thread "
        f"(cycles: signoff {ours.cycles}, LangGraph {theirs.cycles})"
    )
    table.add_column("")
    table.add_column("signoff", justify="right", style="green")
    table.add_column("LangGraph", justify="right", style="cyan")
    table.add_column("LangGraph / signoff", justify="right", style="bold")
    rows: list[tuple[str, float, float, Callable[[float], str]]] = [
        ("pause p50 (ms)", ours.pause.p50_ms, theirs.pause.p50_ms, ms),
        ("pause p99 (ms)", ours.pause.p99_ms, theirs.pause.p99_ms, ms),
        ("resume → tool starts, p50 (ms)", ours.resume.p50_ms, theirs.resume.p50_ms, ms),
        ("resume → tool starts, p99 (ms)", ours.resume.p99_ms, theirs.resume.p99_ms, ms),
        ("written per cycle, p50: WAL (physical)", ours.written.p50, theirs.written.p50, kb),
        ("  values bound (logical)", ours.logical.p50, theirs.logical.p50, kb),
        (
            "beyond the new messages: WAL (physical)",
            ours.written.beyond_messages_p50,
            theirs.written.beyond_messages_p50,
            kb,
        ),
        (
            "  values bound (logical)",
            ours.logical.beyond_messages_p50,
            theirs.logical.beyond_messages_p50,
            kb,
        ),
    ]
    for label, mine, peer, show in rows:
        table.add_row(label, show(mine), show(peer), ratio(peer, mine))
    table.add_row(
        "WAL pages written / distinct / transactions",
        *(
            f"{f.pages} / {f.distinct_pages} / {f.commits}"
            for f in (ours.written.frames, theirs.written.frames)
        ),
        "",
    )
    return table


@dataclass(frozen=True, kw_only=True)
class SlowModel:
    """signoff's pause with a model that takes `SLOW_MODEL_S` per turn, at one history size."""

    history: int
    cycles: int
    pause: Latency
    seconds: float


def slow_model_table(slow: Sequence[SlowModel], results: Sequence[Size]) -> Table:
    instant = {r.history: r.signoff.pause for r in results}
    table = Table(
        title=f"signoff: pause p50/p99 with a model that takes {SLOW_MODEL_S * 1000:g} ms "
        f"(every turn awaits asyncio.sleep({SLOW_MODEL_S:g}))"
    )
    for header in ("N", "cycles", "pause p50 (ms)", "pause p99 (ms)", "instant model: p50 / p99"):
        table.add_column(header, justify="right")
    for s in slow:
        fast = instant[s.history]
        table.add_row(
            f"{s.history:,}",
            str(s.cycles),
            ms(s.pause.p50_ms),
            ms(s.pause.p99_ms),
            f"{ms(fast.p50_ms)} / {ms(fast.p99_ms)}",
        )
    return table


def tables_table(results: Sequence[Size]) -> Table:
    """The logical bytes of each system's p50 cycle, by table, with the write statements."""
    table = Table(title="Values bound per cycle by table, the p50 cycle: bytes (write statements)")
    table.add_column("")
    for result in results:
        table.add_column(f"N = {result.history:,}", justify="right")
    for system, label, style in (
        ("signoff", "signoff", "green"),
        ("langgraph", "LangGraph", "cyan"),
    ):
        names = sorted({name for r in results for name in getattr(r, system).logical.by_table})
        for name in names:
            cells = []
            for result in results:
                bound: Logical = getattr(result, system).logical
                cells.append(
                    f"{bound.by_table.get(name, 0):,} ({bound.statements_by_table.get(name, 0)})"
                )
            table.add_row(f"[{style}]{label}[/] {name}", *cells)
        table.add_row(
            f"[{style}]{label}[/] total",
            *(f"{getattr(r, system).logical.p50:,}" for r in results),
            end_section=True,
        )
    return table


def targets(results: Sequence[Size]) -> list[Target]:
    def worst(goal_name: str, goal: float, pick: Callable[[Side], float]) -> Target:
        value, at = max((pick(r.signoff), r.history) for r in results)
        return Target(
            name=goal_name,
            goal=f"<= {goal:g} ms",
            value=f"{value:.3f} ms (N={at:,})",
            status="met" if value <= goal else "MISSED",
        )

    def growth(goal_name: str, pick: Callable[[Side], float]) -> Target:
        small = next(r for r in results if r.history == min(SIZES)).signoff
        large = next(r for r in results if r.history == max(SIZES)).signoff
        value = pick(large) / pick(small)
        return Target(
            name=goal_name,
            goal=f"<= {GROWTH_GOAL:g}x",
            value=f"{value:.2f}x ({pick(small):.3f} → {pick(large):.3f} ms)",
            status="met" if value <= GROWTH_GOAL else "MISSED",
        )

    def against_commit(
        what: str, goals: Mapping[int, float], pick: Callable[[Side], float]
    ) -> Iterator[Target]:
        """Issue 22's goals of `what` at some sizes, each against one durable commit's p50 in
        the same folder at that size (a pause and a resume each wait for one)."""
        by_size = {r.history: r for r in results}
        for size, goal in goals.items():
            result = by_size.get(size)
            commit = None if result is None else result.limit.latency
            yield limit_target(
                f"signoff {what} p50, SQLite, N={size:,}",
                None if result is None else pick(result.signoff),
                goal=goal,
                limit=None if commit is None else commit.p50_ms,
                limit_what="for one durable commit (p50)",
                better="lower",
            )

    extra, at = max((r.signoff.logical.beyond_messages_p50, r.history) for r in results)
    physical, physical_at = max((r.signoff.written.beyond_messages_p50, r.history) for r in results)
    return [
        *against_commit("pause", PAUSE_GOALS_MS, lambda s: s.pause.p50_ms),
        *against_commit("resume", RESUME_GOALS_MS, lambda s: s.resume.p50_ms),
        worst("signoff resume p50, SQLite, every N", RESUME_GOAL_MS, lambda s: s.resume.p50_ms),
        growth(
            f"signoff pause p50, N={max(SIZES):,} over N={min(SIZES):,}",
            lambda s: s.pause.p50_ms,
        ),
        growth(
            f"signoff resume p50, N={max(SIZES):,} over N={min(SIZES):,}",
            lambda s: s.resume.p50_ms,
        ),
        Target(
            name="signoff bytes per cycle beyond the new messages (logical: values bound), every N",
            goal=f"<= {EXTRA_BYTES_GOAL // 1024} KB",
            value=f"{kb(extra)} (N={at:,}); WAL, not judged: {kb(physical)} (N={physical_at:,})",
            status="met" if extra <= EXTRA_BYTES_GOAL else "MISSED",
        ),
    ]


def plot(results: Sequence[Size], path: Path) -> None:
    history = [r.history for r in results]
    figure, (times, sizes) = plt.subplots(1, 2, figsize=(12, 4.8), constrained_layout=True)
    lines: list[tuple[str, System, Callable[[Side], float], str, str]] = [
        ("signoff pause", "signoff", lambda s: s.pause.p50_ms, "tab:green", "o-"),
        ("signoff resume", "signoff", lambda s: s.resume.p50_ms, "tab:green", "s--"),
        ("LangGraph pause", "langgraph", lambda s: s.pause.p50_ms, "tab:blue", "o-"),
        ("LangGraph resume", "langgraph", lambda s: s.resume.p50_ms, "tab:blue", "s--"),
    ]
    for label, system, pick, colour, style in lines:
        values = [pick(getattr(r, system)) for r in results]
        times.plot(history, values, style, color=colour, label=label)
    times.set_title("Latency, p50")
    times.set_ylabel("milliseconds")
    for label, system, colour in (
        ("signoff", "signoff", "tab:green"),
        ("LangGraph", "langgraph", "tab:blue"),
    ):
        sizes.plot(
            history,
            [getattr(r, system).written.p50 / 1024 for r in results],
            "o-",
            color=colour,
            label=f"{label}: WAL (physical)",
        )
        sizes.plot(
            history,
            [getattr(r, system).logical.p50 / 1024 for r in results],
            "s--",
            color=colour,
            label=f"{label}: values bound (logical)",
        )
    sizes.plot(
        history,
        [r.new_messages_bytes / 1024 for r in results],
        ":",
        color="grey",
        label="the two new messages (canonical JSON)",
    )
    sizes.set_title("Bytes per cycle, p50: WAL and values bound")
    sizes.set_ylabel("KB")
    for axes in (times, sizes):
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlabel("messages already in the thread (N)")
        axes.set_xticks(history, [f"{n:,}" for n in history])
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(loc="upper left")
    figure.suptitle("Pause for an approval, then resume to the tool: signoff vs LangGraph (SQLite)")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=130)
    plt.close(figure)


def synchronous_settings(folder: Path) -> dict[System, int]:
    """``PRAGMA synchronous`` as each system's connections have it (2 is FULL)."""

    async def ours() -> int:
        async with open_store(f"sqlite:///{folder / 'probe.db'}") as store:
            value: int = await store.run(
                lambda c: c.exec_driver_sql("PRAGMA synchronous").scalar_one(), write=False
            )
            return value

    connection = sqlite3.connect(folder / "probe-langgraph.db", check_same_thread=False)
    try:
        SqliteSaver(connection).setup()
        theirs = int(connection.execute("PRAGMA synchronous").fetchone()[0])
    finally:
        connection.close()
    return {"signoff": asyncio.run(ours()), "langgraph": theirs}


def main() -> None:
    console = wide_console()
    started = time.perf_counter()
    load_before = os.getloadavg()
    console.print(
        f"signoff {__version__}, langgraph {version('langgraph')}, "
        f"langgraph-checkpoint-sqlite {version('langgraph-checkpoint-sqlite')}; "
        f"Python {platform.python_version()} on {platform.machine()}; "
        f"SQLite {sqlite3.sqlite_version}; load average {load_before[0]:.2f}"
    )
    results: list[Size] = []
    slow: list[SlowModel] = []
    talks: dict[int, Conversation] = {}
    with tempfile.TemporaryDirectory(prefix="signoff-bench-") as name:
        folder = Path(name)
        synchronous = synchronous_settings(folder)
        for size in SIZES:
            talk = talks[size] = conversation(size)
            limit = sqlite_commits(folder)
            ours = asyncio.run(bench_signoff(folder, size, talk))
            console.print(f"  N={size:,}: signoff ({ours.seconds:.0f} s)", style="dim")
            theirs = bench_langgraph(folder, size, talk)
            console.print(f"  N={size:,}: LangGraph ({theirs.seconds:.0f} s)", style="dim")
            results.append(
                Size(
                    history=size,
                    new_messages_bytes=new_messages_bytes(talk.question),
                    limit=limit,
                    signoff=ours,
                    langgraph=theirs,
                )
            )
        for size, cycles in SLOW_MODEL_CYCLES.items():
            side = asyncio.run(
                bench_signoff(
                    folder,
                    size,
                    talks[size],
                    cycles=cycles,
                    warmup=SLOW_MODEL_WARMUP,
                    model_delay_s=SLOW_MODEL_S,
                )
            )
            console.print(
                f"  N={size:,}: signoff, model {SLOW_MODEL_S * 1000:g} ms ({side.seconds:.0f} s)",
                style="dim",
            )
            slow.append(
                SlowModel(history=size, cycles=cycles, pause=side.pause, seconds=side.seconds)
            )
    for result in results:
        console.print(size_table(result))
    console.print(tables_table(results))
    decides = ", ".join(
        f"N={r.history:,} {ms(r.signoff.decide.p50_ms)}"
        for r in results
        if r.signoff.decide is not None
    )
    console.print(
        "  pause: model returns → paused and durable; resume: resume called → tool's first line\n"
        "  bytes, from the new user message to the tool's first line (signoff's decision taken "
        "out): physical = appended to the WAL (pages are 4 KB + 24 B each in the log, counted "
        "in each system's last cycle); logical = the values bound to INSERT/UPDATE/REPLACE/"
        "DELETE statements (text and blobs by length, 8 per number, 0 per NULL)\n"
        f"  signoff gate.decide p50 (ms, not in the figures): {decides}\n"
        f"  PRAGMA synchronous: signoff {synchronous['signoff']}, "
        f"LangGraph {synchronous['langgraph']} (2 = FULL)",
        style="dim",
    )
    console.print(slow_model_table(slow, results))
    console.print(
        limits_table(
            [replace(r.limit, what=f"before N={r.history:,}: {r.limit.what}") for r in results]
        )
    )
    goals = targets(results)
    print_targets(console, goals)
    plot(results, PLOT)
    wall_s = time.perf_counter() - started

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    document = {
        **environment("pause_resume"),
        "sqlite_version": sqlite3.sqlite_version,
        "peer": {
            "langgraph": version("langgraph"),
            "langgraph-checkpoint-sqlite": version("langgraph-checkpoint-sqlite"),
            "langchain-core": version("langchain-core"),
            "idiom": "interrupt() in a review node before a prebuilt ToolNode; SqliteSaver "
            "(sync); durability 'async' (the default)",
        },
        "config": {
            "seed": SEED,
            "sizes": SIZES,
            "cycles": CYCLES,
            "warmup": WARMUP,
            "message_bytes": MESSAGE_BYTES,
            "synchronous": synchronous,
        },
        "sizes": [asdict(r) for r in results],
        "signoff_pause_with_slow_model": {
            "what": "signoff's pause (model returns → paused and durable), same cycle, with a "
            "model whose every turn awaits asyncio.sleep(model_delay_s) before returning; not "
            "judged by the targets",
            "model_delay_s": SLOW_MODEL_S,
            "warmup": SLOW_MODEL_WARMUP,
            "sizes": [asdict(s) for s in slow],
        },
        "targets": [asdict(goal) for goal in goals],
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "wall_time_s": round(wall_s, 1),
    }
    RESULTS.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    console.print(f"wall time {wall_s:.1f} s; results in {RESULTS}, plot in {PLOT}")


if __name__ == "__main__":
    main()
