"""Pausing a run for an approval and resuming it: signoff against its peers, in the same run, on
the same scenario.

Run it with ``make bench``. For each history size N (10, 1,000, 10,000) every system gets the same
cycle, on a thread that already holds N messages of about 500 bytes each (``bench/pause_resume.py``
builds them: alternating user and assistant text), written before anything is timed; every cycle
has a fresh thread:

1. a new user message; a model that answers at once calls ``send_report`` with the same arguments
   in every system; the call is held and the run pauses, durably;
2. the call is approved (signoff: ``gate.decide``, as the inbox would, not timed and its writes
   not counted; the peers take the approval with the resume);
3. the run resumes, the tool runs, the model answers with text and the run ends.

The systems take turns, cycle by cycle, in another order each cycle, with a garbage collection
(untimed; what the imports and the set-up made is frozen out of it) before each: none pays for
another's garbage.

- **signoff** on SQLite and on PostgreSQL: its own ``Runner`` and ``Gate`` (a policy that asks
  about ``send_report``) on ``open_store("sqlite:///FILE")``, and on a fresh PostgreSQL database;
  the N messages are an earlier, completed run of the thread, as in ``bench/pause_resume.py``.
- **LangGraph** with ``SqliteSaver`` and with ``PostgresSaver``: ``interrupt()`` in a review node
  before a prebuilt ``ToolNode`` (the graph of ``bench/pause_resume.py``), ``invoke`` with the
  default durability (``"async"``); the N messages go in with ``update_state``.
- **OpenAI Agents SDK**: ``send_report`` declared ``needs_approval=True``; the conversation (N
  items) in a row of an SQLite table. Pause: the conversation read, ``Runner.run`` ending with
  ``interruptions``, ``result.to_state().to_string()`` written to the row. Resume: the row read,
  ``RunState.from_string``, ``approve``, ``Runner.run(agent, state)``; after the run, the
  conversation (``to_input_list()``) is written back, untimed and not counted.
- **Agno**, its own pause: ``@tool(requires_confirmation=True)``, an agent with Agno's
  ``SqliteDb`` and ``add_history_to_context=True``; the N messages are an earlier run of the
  session. Pause: ``arun`` ending paused (Agno writes the session and the paused run). Resume, as
  in a later request: ``aget_run_output``, ``confirm()``, ``acontinue_run``.
- **DCAF's compressed session blob** (the seed design "DCAF on Agno/MCP"): an Agno agent with no
  database of its own; the conversation arrives with the request (the N messages and the new
  one are the run's input). Pause: ``arun`` ending paused, then DCAF's ``compress_for_session``:
  ``run_output.to_dict()`` as compact JSON (``separators=(',', ':')``), ``gzip`` at level 6,
  base64, written to a row of an SQLite table (DCAF's session travels in the HTTP body; here it
  is kept in a row, durably, to compare like with like). Resume: the row read, base64-decoded,
  gunzipped, ``RunOutput.from_dict``, each requirement ``confirm()``-ed and
  ``acontinue_run(run_response=...)``. After ``from_dict`` a requirement's ``tool_execution`` is
  a copy, not the run's own entry in ``run_output.tools``: ``confirm()`` alone leaves the run's
  tool unconfirmed, and Agno then skips the tool while the run reports ``completed``. The bench
  marks the run's own tool entry confirmed as well (the fix DCAF needs), and checks that the tool
  ran.

Every SQLite database is in WAL mode with ``synchronous=FULL`` (signoff's setting, and Agno's and
LangGraph's default; the OpenAI and DCAF rows are kept through ``sqlite3`` with the same two
pragmas); PostgreSQL keeps its defaults (``synchronous_commit=on``). All systems run in one
process and one event loop; LangGraph's synchronous ``invoke`` runs on it directly.

**Times**, per cycle:

- pause: from the model returning its turn (each model notes ``time.perf_counter()`` just before
  it returns) to control coming back to the caller with the run paused and durable (signoff: the
  ``paused`` event out of ``runner.start``; LangGraph: ``invoke`` returning with
  ``__interrupt__``; Agents SDK and DCAF: their row written; Agno: ``arun`` returning);
- resume: from the call that resumes (signoff: ``runner.resume``; LangGraph:
  ``invoke(Command(resume=...))``; the others: reading what they kept) to the first line of the
  tool's body (it notes the time).

**Bytes per cycle** are logical: the bytes of the values each system binds to its write
statements (INSERT, UPDATE, REPLACE, DELETE) from the new user message to the tool's first line —
for every bound parameter, the length of text (UTF-8) or bytes, 8 for a number, 0 for NULL
(``bench/pause_resume.py``'s measure; a ``Jsonb`` parameter of ``PostgresSaver`` counts as its
JSON text). signoff: a ``before_cursor_execute`` listener on its engine, its decision's share
taken out; Agno: the same listener on ``SqliteDb``'s engine; the Agents SDK and DCAF: the
``sqlite3`` connection's cursors tally what they bind; LangGraph: the saver's connection tallies
what each ``put``/``put_writes`` binds, and the writes that hold the tool's result are left out
(under ``"async"`` durability the checkpoint before the tools may land after the tool started;
it counts). Reads, the schema and the pre-populated history are not counted. For the Agents SDK
and DCAF this is the serialized state itself (the state string, the base64 blob) and the row's
key; the JSON document also keeps the state's size, and for DCAF the JSON before compression.

Every cycle checks what it measured: the model saw the N messages and the new one, the model was
called twice, the tool ran exactly once, and the run ended with the model's reply; a peer that
skipped the tool stops the bench. Nothing here is a test: the figures depend on the machine and
its load. ``bench/results/peers.json`` keeps every figure and ``docs/images/peers.png`` draws
them. ``SIGNOFF_BENCH_POSTGRES`` names the PostgreSQL server (by default
``postgresql://postgres@127.0.0.1:5432/test``); a fresh database is created there and dropped
afterwards; when it is not reachable the PostgreSQL systems are skipped, and the bench says so.

**Caveats.** The models are instant: the figures are each system's own work, without the
model's latency, which comes on top. Agno 3 keeps each run in a row of its own and leaves the
messages taken from the history out of it, so its pause writes what is new, not the N messages;
its resume reads the session's earlier runs back (their N messages) before the tool runs. The
history's text is drawn from a few dozen words, so it compresses better than most conversations
would (DCAF's blob is the smaller for it). The Agents SDK's and DCAF's rows are the simplest
durable store for each (one row per thread); an application may keep them elsewhere. The cycles
are few at N=10,000 (see `CYCLES`), and other work on the machine moves the figures: the load
average before and after is in the JSON document.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gc
import gzip
import json
import os
import platform
import sqlite3
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any, Final, Literal, Self

import asyncpg
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import psycopg
from agents import Agent as OAAgent
from agents import ModelResponse, RunState, Usage, function_tool, set_tracing_disabled
from agents import Runner as OARunner
from agents.testing import assistant_message, function_call
from agno.agent import Agent as AgnoAgent
from agno.db.sqlite import SqliteDb
from agno.models.message import Message as AgnoMessage
from agno.models.response import ModelResponse as AgnoResponse
from agno.run.agent import RunOutput
from agno.run.base import RunStatus
from agno.session import AgentSession
from agno.tools import tool as agno_tool
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Json, Jsonb
from rich.table import Table
from sqlalchemy import event
from sqlalchemy.engine import Engine

from _common import Latency, environment, latency, ms, percentile, wide_console
from frameworks import AgnoAnswering, Answering
from pause_resume import (
    ACTOR,
    AGENT,
    ARGS,
    POLICY,
    REPLY,
    TOOL,
    ClockedModel,
    Conversation,
    CountingConnection,
    Probe,
    Tally,
    _after_tool,
    build_graph,
    conversation,
    cycle_script,
    prepopulate,
)
from pause_resume import Usage as Bound
from signoff import Approve, __version__, tool
from signoff.agent import Agent, ModelTurn, Runner
from signoff.agent.model import Message, ToolSpec
from signoff.gate import Gate
from signoff.store import SQLStore, open_store

Backend = Literal["sqlite", "postgresql"]

SIZES: Final = (10, 1_000, 10_000)
CYCLES: Final = {10: 50, 1_000: 20, 10_000: 10}
"""Timed cycles of every system, by history size (a cycle of the seven at N=10,000 takes about
15 s on a busy 2-core machine)."""
WARMUP: Final = {10: 3, 1_000: 2, 10_000: 1}
"""Untimed cycles of every system before the timed ones, by history size."""
PG_ADMIN: Final = os.environ.get(
    "SIGNOFF_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"
)
RESULTS: Final = Path(__file__).resolve().parent / "results" / "peers.json"
PLOT: Final = Path(__file__).resolve().parents[1] / "docs" / "images" / "peers.png"


@dataclass
class Clock(Probe):
    """What the model and the tool note as a cycle goes (`Probe`), and what the bench checks:
    how often the tool ran, how many messages the model was given at each turn."""

    ran: int = 0
    seen: list[int] = field(default_factory=list)

    def reset(self) -> None:
        super().reset()
        self.ran = 0
        self.seen.clear()

    def on_tool(self) -> None:
        super().on_tool()
        self.ran += 1


# -- the systems -----------------------------------------------------------------------------


class Contender:
    """One system's cycle. `fill` writes a thread's N messages (untimed); `pause` returns the
    moment the run was paused and durable; `decide` is signoff's decision (untimed, its writes not
    counted); `resume` runs to the end and returns the model's last text."""

    key: str
    label: str
    backend: Backend

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.talk = conversation(0)
        self.paused = self.decided = Bound()
        self.state_bytes: int | None = None
        """The serialized state this cycle wrote, where a system writes one (Agents SDK, DCAF)."""
        self.raw_bytes: int | None = None
        """DCAF: the JSON before compression."""

    def use(self, talk: Conversation) -> None:
        self.talk = talk

    async def fill(self, thread: str) -> None:
        raise NotImplementedError

    async def pause(self, thread: str) -> float:
        raise NotImplementedError

    async def decide(self, thread: str) -> None:
        return None

    async def resume(self, thread: str) -> str:
        raise NotImplementedError

    def history_seen(self) -> bool:
        """Whether the model's first turn had the N messages and the new one."""
        return bool(self.clock.seen) and self.clock.seen[0] >= len(self.talk.ours) + 1

    # The logical bytes: a tally of the values bound, read after the pause, around the decision
    # and at the tool's first line (see the module's docstring).

    def begin(self) -> None:
        self.state_bytes = self.raw_bytes = None
        if self.clock.tally is not None:
            self.clock.tally.take()

    def after_pause(self) -> None:
        if self.clock.tally is not None:
            self.paused = self.decided = self.clock.tally.snapshot()

    def after_decision(self) -> None:
        if self.clock.tally is not None:
            self.decided = self.clock.tally.snapshot()

    def written(self) -> Bound:
        return self.paused + (self.clock.logical_at_tool - self.decided)


def note(tally: Tally, statement: str, rows: Sequence[object]) -> None:
    """`Tally.add`, past PostgreSQL's settings (``SET``, ``SHOW``), which bind nothing."""
    if statement.lstrip()[:4].upper() not in ("SET ", "SHOW"):
        tally.add(statement, rows)


def sqlalchemy_tally(engine: Engine, tally: Tally) -> None:
    """Tally what `engine` binds to its write statements."""

    def before_cursor_execute(
        _conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, many: bool
    ) -> None:
        note(tally, statement, parameters if many else [parameters])

    event.listen(engine, "before_cursor_execute", before_cursor_execute)


class SeeingModel(ClockedModel):
    """signoff's clocked scripted model, noting how many messages each turn is given."""

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock)
        self.clock = clock

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        self.clock.seen.append(len(messages))
        return await super().complete(messages, tools)


class SignoffSide(Contender):
    label = "signoff"

    def __init__(self, clock: Clock, store: SQLStore, backend: Backend) -> None:
        super().__init__(clock)
        self.store = store
        self.backend = backend
        self.key = f"signoff-{backend}"
        assert clock.tally is not None
        sqlalchemy_tally(store.runner.engine, clock.tally)

        @tool
        def send_report(to: str, subject: str) -> str:
            """Send the quarterly report."""
            clock.on_tool()
            return f"sent {subject!r} to {to}"

        self.model = SeeingModel(clock)
        self.gate = Gate(POLICY, store)
        self.runner = Runner(Agent(name=AGENT, model=self.model, tools=[send_report]), self.gate)
        self.approval: dict[str, tuple[str, str]] = {}

    async def fill(self, thread: str) -> None:
        await prepopulate(self.store, thread, self.talk.ours)

    async def pause(self, thread: str) -> float:
        self.model.script = cycle_script()
        approval_id = run_id = ""
        paused_at = None
        async for item in self.runner.start(thread, self.talk.question):
            if item.type == "paused":
                paused_at = time.perf_counter()
            elif item.type == "approval_requested":
                approval_id = str(item.data["approval_id"])
            run_id = item.run_id
        if paused_at is None or not approval_id:
            raise AssertionError(f"{self.key}: the run did not pause")
        self.approval[thread] = (approval_id, run_id)
        return paused_at

    async def decide(self, thread: str) -> None:
        await self.gate.decide(self.approval[thread][0], Approve(), actor=ACTOR)

    async def resume(self, thread: str) -> str:
        _, run_id = self.approval.pop(thread)
        said = ""
        async for item in self.runner.resume(run_id):
            if item.type == "text":
                said = str(item.data["text"])
            elif item.type == "completed":
                return said
        raise AssertionError(f"{self.key}: the run did not complete")


class Notes:
    """For each ``put``/``put_writes`` of a LangGraph saver, in order: whether it holds the tool's
    result, and what it bound. The saver's lock, made reentrant, is held around the write and the
    note, so a checkpoint written in the background is never mixed with another write."""

    def __init__(self, lock: threading.RLock, tally: Tally) -> None:
        self.lock = lock
        self.tally = tally
        self.written: list[tuple[bool, Bound]] = []

    @contextlib.contextmanager
    def note(self, after_tool: bool) -> Iterator[None]:
        with self.lock:
            yield
            self.written.append((after_tool, self.tally.take()))

    def forget(self) -> None:
        with self.lock:
            self.written.clear()
            self.tally.take()

    def before_tool(self) -> Bound:
        with self.lock:
            return sum((bound for after, bound in self.written if not after), Bound())


def holds_tool_result(checkpoint: Checkpoint) -> bool:
    return _after_tool(checkpoint["channel_values"].get("messages", ()))


def writes_tool_result(writes: Sequence[tuple[str, Any]]) -> bool:
    values = [v for _, v in writes]
    values += [m for v in values if isinstance(v, list) for m in v]
    return any(isinstance(v, ToolMessage) for v in values)


class Noting:
    """A saver that notes each commit (and whether it holds the tool's result) under its lock,
    made reentrant so the note and the write are one step. Mixed into a LangGraph saver."""

    notes: Notes

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        with self.notes.note(holds_tool_result(checkpoint)):
            return super().put(config, checkpoint, metadata, new_versions)  # type: ignore[misc,no-any-return]

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        with self.notes.note(writes_tool_result(writes)):
            super().put_writes(config, writes, task_id, task_path)  # type: ignore[misc]


class NotingSqliteSaver(Noting, SqliteSaver):
    def __init__(self, conn: CountingConnection) -> None:
        super().__init__(conn)
        lock = threading.RLock()
        self.lock = lock  # type: ignore[assignment]
        self.notes = Notes(lock, conn.tally)


class NotingPostgresSaver(Noting, PostgresSaver):
    def __init__(self, conn: psycopg.Connection[DictRow], tally: Tally) -> None:
        super().__init__(conn)
        lock = threading.RLock()
        self.lock = lock  # type: ignore[assignment]
        self.notes = Notes(lock, tally)


def json_as_text(value: object) -> object:
    """A ``Json``/``Jsonb`` parameter as the JSON text psycopg sends for it."""
    return json.dumps(value.obj) if isinstance(value, Json | Jsonb) else value


def plain_row(row: Any) -> Any:
    if isinstance(row, dict):
        return {k: json_as_text(v) for k, v in row.items()}
    return None if row is None else [json_as_text(v) for v in row]


def counting_cursor(tally: Tally) -> type[psycopg.Cursor[DictRow]]:
    """A psycopg cursor class that tallies what it binds to write statements."""

    class CountingCursor(psycopg.Cursor[DictRow]):
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Self:
            note(tally, str(query), [plain_row(params)])
            return super().execute(query, params, **kwargs)

        def executemany(self, query: Any, params_seq: Iterable[Any], **kwargs: Any) -> None:
            rows = [plain_row(p) for p in params_seq]
            note(tally, str(query), rows)
            super().executemany(query, rows, **kwargs)

    return CountingCursor


class LangGraphSide(Contender):
    def __init__(
        self, clock: Clock, saver: NotingSqliteSaver | NotingPostgresSaver, backend: Backend
    ) -> None:
        super().__init__(clock)
        self.backend = backend
        self.key = f"langgraph-{backend}"
        self.label = "LangGraph"
        self.saver = saver
        self.graph = build_graph(saver, clock)

    @staticmethod
    def config(thread: str) -> RunnableConfig:
        return {"configurable": {"thread_id": thread}}

    async def fill(self, thread: str) -> None:
        self.graph.update_state(
            self.config(thread), {"messages": self.talk.theirs}, as_node="agent"
        )

    def begin(self) -> None:
        super().begin()
        self.saver.notes.forget()

    async def pause(self, thread: str) -> float:
        paused = self.graph.invoke(
            {"messages": [HumanMessage(content=self.talk.question)]}, self.config(thread)
        )
        paused_at = time.perf_counter()
        if not paused.get("__interrupt__"):
            raise AssertionError(f"{self.key}: the graph did not pause")
        return paused_at

    async def resume(self, thread: str) -> str:
        final = self.graph.invoke(Command(resume={"action": "approve"}), self.config(thread))
        messages = final["messages"]
        # The history, the question, the call, the tool's result and the reply.
        self.clock.seen.append(len(messages) - 3)
        return str(messages[-1].content)

    def written(self) -> Bound:
        return self.saver.notes.before_tool()


class Rows:
    """One row per thread in an SQLite table, through ``sqlite3`` (WAL, ``synchronous=FULL``, as
    signoff's store), its cursors tallying what they bind."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, factory=CountingConnection)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("CREATE TABLE IF NOT EXISTS kept (thread TEXT PRIMARY KEY, data TEXT)")
        self.tally = self.db.tally

    def read(self, thread: str) -> str:
        row = self.db.execute("SELECT data FROM kept WHERE thread = ?", (thread,)).fetchone()
        if row is None:
            raise KeyError(thread)
        return str(row[0])

    def write(self, thread: str, data: str) -> None:
        # Through a cursor: ``Connection.execute`` would bypass the counting cursor's ``execute``.
        self.db.cursor().execute(
            "INSERT INTO kept VALUES (?, ?) "
            "ON CONFLICT (thread) DO UPDATE SET data = excluded.data",
            (thread, data),
        )

    def delete(self, thread: str) -> None:
        self.db.cursor().execute("DELETE FROM kept WHERE thread = ?", (thread,))

    def close(self) -> None:
        self.db.close()


class ClockedAnswering(Answering):
    """The Agents SDK model of ``bench/frameworks.py`` with ``bench/pause_resume.py``'s call and
    reply, noting the time just before it returns and how many items it was given."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    async def get_response(self, system_instructions: Any, input: Any, model_settings: Any,
                           tools: Any, *args: Any, **kwargs: Any) -> ModelResponse:  # fmt: skip
        self.clock.seen.append(len(input) if isinstance(input, list) else 1)
        last = input[-1] if isinstance(input, list) and input else {}
        if isinstance(last, dict) and last.get("type") == "function_call_output":
            output: list[Any] = [assistant_message(REPLY)]
        else:
            output = [function_call(tools[0].name, dict(ARGS), call_id=uuid.uuid4().hex)]
        response = ModelResponse(output=output, usage=Usage(), response_id=None)
        self.clock.model_returned.append(time.perf_counter())
        return response


class AgentsSdkSide(Contender):
    key = "openai-agents"
    label = "OpenAI Agents SDK"
    backend: Backend = "sqlite"

    def __init__(self, clock: Clock, rows: Rows) -> None:
        super().__init__(clock)
        self.rows = rows

        def send_report(to: str, subject: str) -> str:
            """Send the quarterly report."""
            clock.on_tool()
            return f"sent {subject!r} to {to}"

        self.agent = OAAgent(
            name=AGENT,
            model=ClockedAnswering(clock),
            tools=[function_tool(send_report, needs_approval=True)],
        )
        self.items: list[dict[str, str]] = []

    def use(self, talk: Conversation) -> None:
        super().use(talk)
        self.items = [{"role": m["role"], "content": m["content"]} for m in talk.ours]

    async def fill(self, thread: str) -> None:
        self.rows.write(thread, json.dumps(self.items))

    async def pause(self, thread: str) -> float:
        said = json.loads(self.rows.read(thread))
        result = await OARunner.run(
            self.agent, [*said, {"role": "user", "content": self.talk.question}]
        )
        if len(result.interruptions) != 1:
            raise AssertionError(f"{self.key}: {len(result.interruptions)} interruptions")
        state = result.to_state().to_string()
        self.rows.write(thread, state)
        paused_at = time.perf_counter()
        self.state_bytes = len(state.encode())
        return paused_at

    async def resume(self, thread: str) -> str:
        state = await RunState.from_string(self.agent, self.rows.read(thread))
        for item in state.get_interruptions():
            state.approve(item)
        result = await OARunner.run(self.agent, state)
        self.rows.write(thread, json.dumps(result.to_input_list()))
        return str(result.final_output)


@dataclass
class ClockedAgno(AgnoAnswering):
    """The Agno model of ``bench/frameworks.py`` with ``bench/pause_resume.py``'s call and reply,
    noting the time just before it returns and how many messages it was given."""

    clock: Clock | None = None

    def _reply(self, messages: list[Any], tools: Any) -> AgnoResponse:
        assert self.clock is not None
        self.clock.seen.append(sum(m.role != "system" for m in messages))
        if messages and messages[-1].role == "tool":
            response = AgnoResponse(role="assistant", content=REPLY)
        else:
            call = {"id": uuid.uuid4().hex, "type": "function",
                    "function": {"name": TOOL, "arguments": json.dumps(ARGS)}}  # fmt: skip
            response = AgnoResponse(role="assistant", tool_calls=[call])
        self.clock.model_returned.append(time.perf_counter())
        return response


def agno_confirmed_tool(clock: Clock) -> Any:
    @agno_tool(requires_confirmation=True)
    def send_report(to: str, subject: str) -> str:
        """Send the quarterly report."""
        clock.on_tool()
        return f"sent {subject!r} to {to}"

    return send_report


def agno_history(talk: Conversation) -> list[AgnoMessage]:
    return [AgnoMessage(role=m["role"], content=m["content"]) for m in talk.ours]


def agno_said(out: RunOutput | None, key: str) -> str:
    if out is None or out.status != RunStatus.completed:
        raise AssertionError(f"{key}: the run did not complete: {out and out.status}")
    return str(out.content)


class AgnoSide(Contender):
    key = "agno"
    label = "Agno (SqliteDb)"
    backend: Backend = "sqlite"

    def __init__(self, clock: Clock, path: Path) -> None:
        super().__init__(clock)
        self.db = SqliteDb(db_file=str(path))
        assert clock.tally is not None
        sqlalchemy_tally(self.db.db_engine, clock.tally)
        self.agent = AgnoAgent(
            id=AGENT,
            name=AGENT,
            model=ClockedAgno(clock=clock),
            tools=[agno_confirmed_tool(clock)],
            db=self.db,
            add_history_to_context=True,
        )
        self.run_of: dict[str, str] = {}

    async def fill(self, thread: str) -> None:
        run = RunOutput(run_id=uuid.uuid4().hex, agent_id=AGENT, session_id=thread,
                        messages=agno_history(self.talk), status=RunStatus.completed)  # fmt: skip
        self.db.upsert_session(AgentSession(session_id=thread, agent_id=AGENT, runs=[run]))
        self.db.upsert_run(run, session_id=thread, run_index=0)

    async def pause(self, thread: str) -> float:
        out = await self.agent.arun(self.talk.question, session_id=thread)
        paused_at = time.perf_counter()
        if not out.is_paused or out.run_id is None:
            raise AssertionError(f"{self.key}: the run did not pause: {out.status}")
        self.run_of[thread] = out.run_id
        return paused_at

    async def resume(self, thread: str) -> str:
        run_id = self.run_of.pop(thread)
        out = await self.agent.aget_run_output(run_id=run_id, session_id=thread)
        if out is None:
            raise AssertionError(f"{self.key}: the paused run {run_id} is not in the db")
        for requirement in out.active_requirements:
            requirement.confirm()  # type: ignore[no-untyped-call]
        done = await self.agent.acontinue_run(
            run_id=run_id, session_id=thread, requirements=out.requirements
        )
        return agno_said(done, self.key)


def compress_for_session(data: dict[str, Any]) -> tuple[str, int]:
    """DCAF's ``compress_for_session`` (the seed's ``dcaf/core/utils/compression.py``), and the
    size of the JSON it compressed."""
    raw = json.dumps(data, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=6)).decode("ascii"), len(raw)


def decompress_from_session(compressed: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(gzip.decompress(base64.b64decode(compressed.encode("ascii"))))
    return data


class DcafSide(Contender):
    key = "dcaf"
    label = "DCAF blob (Agno)"
    backend: Backend = "sqlite"

    def __init__(self, clock: Clock, rows: Rows) -> None:
        super().__init__(clock)
        self.rows = rows
        self.tool = agno_confirmed_tool(clock)
        self.request: list[AgnoMessage] = []

    def agent(self) -> AgnoAgent:
        """A new agent, as DCAF makes one for each request; with no Agno database (DCAF keeps
        none: the conversation comes with each request)."""
        return AgnoAgent(
            id=AGENT, name=AGENT, model=ClockedAgno(clock=self.clock), tools=[self.tool]
        )

    async def fill(self, thread: str) -> None:
        self.request = [
            *agno_history(self.talk),
            AgnoMessage(role="user", content=self.talk.question),
        ]

    async def pause(self, thread: str) -> float:
        out = await self.agent().arun(self.request, session_id=thread)
        if not out.is_paused:
            raise AssertionError(f"{self.key}: the run did not pause: {out.status}")
        blob, self.raw_bytes = compress_for_session(out.to_dict())
        self.rows.write(thread, blob)
        paused_at = time.perf_counter()
        self.state_bytes = len(blob)
        return paused_at

    async def resume(self, thread: str) -> str:
        run = RunOutput.from_dict(decompress_from_session(self.rows.read(thread)))
        for requirement in run.active_requirements:
            requirement.confirm()  # type: ignore[no-untyped-call]
            # After from_dict the requirement holds a copy of the tool's entry: confirm the run's
            # own, or Agno skips the tool and reports the run completed.
            execution = requirement.tool_execution
            assert execution is not None
            for entry in run.tools or []:
                if entry.tool_call_id == execution.tool_call_id:
                    entry.confirmed = True
        done = await self.agent().acontinue_run(run_response=run)
        self.rows.delete(thread)  # DCAF clears the paused state once resumed
        return agno_said(done, self.key)


# -- timing ----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Figures:
    """One system at one history size."""

    system: str
    label: str
    backend: Backend
    history: int
    cycles: int
    pause: Latency
    resume: Latency
    bytes_p50: int
    """Logical: the values bound to write statements, from the new message to the tool."""
    bytes_min: int
    bytes_max: int
    by_table: dict[str, int]
    """The p50 cycle's bytes by table."""
    state_bytes_p50: int | None
    """The serialized state written (Agents SDK: the state string; DCAF: the base64 blob)."""
    raw_json_bytes_p50: int | None
    """DCAF: ``to_dict()`` as compact JSON, before gzip and base64."""


def p50(values: Sequence[int]) -> int | None:
    return int(percentile(sorted(values), 0.5)) if values else None


def order(contenders: Sequence[Contender], cycle: int) -> list[Contender]:
    """Another order each cycle: none always goes first, or after the same one."""
    shift = cycle % len(contenders)
    turned = [*contenders[shift:], *contenders[:shift]]
    return turned if cycle % 2 else turned[::-1]


async def one_cycle(side: Contender, thread: str) -> tuple[float, float, Bound]:
    clock = side.clock
    await side.fill(thread)
    gc.collect()
    side.begin()
    clock.reset()
    paused_at = await side.pause(thread)
    side.after_pause()
    await side.decide(thread)
    side.after_decision()
    resume_called = time.perf_counter()
    said = await side.resume(thread)
    problems = []
    if clock.ran != 1:
        problems.append(f"the tool ran {clock.ran} times")
    if said != REPLY:
        problems.append(f"the run ended with {said!r}")
    if len(clock.model_returned) != 2:
        problems.append(f"the model was called {len(clock.model_returned)} times")
    if not side.history_seen():
        problems.append(f"the model was given {clock.seen} messages")
    if problems:
        raise AssertionError(f"{side.label}, N={len(side.talk.ours):,}: " + "; ".join(problems))
    return paused_at - clock.model_returned[0], clock.tool_started - resume_called, side.written()


async def bench_size(contenders: Sequence[Contender], size: int) -> list[Figures]:
    talk = conversation(size)
    for side in contenders:
        side.use(talk)
    pauses: dict[str, list[float]] = {s.key: [] for s in contenders}
    resumes: dict[str, list[float]] = {s.key: [] for s in contenders}
    bound: dict[str, list[Bound]] = {s.key: [] for s in contenders}
    states: dict[str, list[int]] = {s.key: [] for s in contenders}
    raws: dict[str, list[int]] = {s.key: [] for s in contenders}
    for cycle in range(WARMUP[size] + CYCLES[size]):
        for side in order(contenders, cycle):
            thread = f"peers-{side.key}-{size}-{cycle}-{uuid.uuid4().hex[:8]}"
            paused, resumed, written = await one_cycle(side, thread)
            if cycle < WARMUP[size]:
                continue
            pauses[side.key].append(paused)
            resumes[side.key].append(resumed)
            bound[side.key].append(written)
            if side.state_bytes is not None:
                states[side.key].append(side.state_bytes)
            if side.raw_bytes is not None:
                raws[side.key].append(side.raw_bytes)
    found = []
    for side in contenders:
        cycles = sorted(bound[side.key], key=lambda b: b.bytes.total())
        totals = [c.bytes.total() for c in cycles]
        middle = int(percentile(totals, 0.5))
        found.append(
            Figures(
                system=side.key,
                label=side.label,
                backend=side.backend,
                history=size,
                cycles=CYCLES[size],
                pause=latency(pauses[side.key]),
                resume=latency(resumes[side.key]),
                bytes_p50=middle,
                bytes_min=totals[0],
                bytes_max=totals[-1],
                by_table=dict(sorted(cycles[totals.index(middle)].bytes.items())),
                state_bytes_p50=p50(states[side.key]),
                raw_json_bytes_p50=p50(raws[side.key]),
            )
        )
    return found


# -- where they keep their state -------------------------------------------------------------


@contextlib.asynccontextmanager
async def postgres_database(console: Any) -> AsyncIterator[str | None]:
    """A fresh PostgreSQL database (its URL without a driver), dropped afterwards; None when the
    server is not reachable."""
    try:
        admin = await asyncpg.connect(PG_ADMIN, timeout=3)
    except (OSError, asyncpg.PostgresError) as exc:
        console.print(f"[bold red]PostgreSQL is not reachable at {PG_ADMIN}: {exc}[/]")
        yield None
        return
    name = f"signoff_bench_peers_{uuid.uuid4().hex[:12]}"
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        yield f"{PG_ADMIN.rsplit('/', 1)[0]}/{name}"
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


def new_clock(folder: Path, name: str, tally: Tally | None = None) -> Clock:
    # `Probe` also reads the size of an SQLite write-ahead log at the tool's first line; the
    # figures here do not use it (a file that does not exist reads as 0).
    return Clock(database=folder / f"{name}.db", tally=tally)


async def run_all(folder: Path, console: Any) -> tuple[list[Figures], dict[str, Any]]:
    async with contextlib.AsyncExitStack() as stack:
        contenders: list[Contender] = []
        signoff_sqlite = await stack.enter_async_context(
            open_store(f"sqlite:///{folder / 'signoff.db'}")
        )
        contenders.append(
            SignoffSide(new_clock(folder, "signoff", Tally()), signoff_sqlite, "sqlite")
        )

        lg_connection = sqlite3.connect(
            folder / "langgraph.db", check_same_thread=False, factory=CountingConnection
        )
        stack.callback(lg_connection.close)
        lg_connection.execute("PRAGMA journal_mode=WAL")
        sqlite_saver = NotingSqliteSaver(lg_connection)
        sqlite_saver.setup()
        contenders.append(LangGraphSide(new_clock(folder, "langgraph"), sqlite_saver, "sqlite"))

        rows = Rows(folder / "kept.db")
        stack.callback(rows.close)
        contenders.append(AgentsSdkSide(new_clock(folder, "kept", rows.tally), rows))
        contenders.append(AgnoSide(new_clock(folder, "agno", Tally()), folder / "agno.db"))
        dcaf_rows = Rows(folder / "dcaf.db")
        stack.callback(dcaf_rows.close)
        contenders.append(DcafSide(new_clock(folder, "dcaf", dcaf_rows.tally), dcaf_rows))

        postgres = await stack.enter_async_context(postgres_database(console))
        if postgres is not None:
            url = postgres.replace("postgresql://", "postgresql+asyncpg://", 1)
            store = await stack.enter_async_context(open_store(url))
            contenders.append(SignoffSide(new_clock(folder, "pg", Tally()), store, "postgresql"))
            tally = Tally()
            connection = psycopg.connect(
                postgres,
                autocommit=True,
                prepare_threshold=0,
                row_factory=dict_row,
                cursor_factory=counting_cursor(tally),
            )
            stack.callback(connection.close)
            pg_saver = NotingPostgresSaver(connection, tally)
            pg_saver.setup()
            contenders.append(LangGraphSide(new_clock(folder, "pg"), pg_saver, "postgresql"))

        settings = await durability(folder, signoff_sqlite, rows, contenders)
        # What the imports and the set-up made stays: each cycle's collection walks only what
        # came since (a full one walks half a million objects).
        gc.collect()
        gc.freeze()
        results: list[Figures] = []
        for size in SIZES:
            started = time.perf_counter()
            results += await bench_size(contenders, size)
            console.print(
                f"  N={size:,}: {len(contenders)} systems, {WARMUP[size]} + {CYCLES[size]} "
                f"cycles each ({time.perf_counter() - started:.0f} s)",
                style="dim",
            )
        return results, settings


async def durability(
    folder: Path, store: SQLStore, rows: Rows, contenders: Sequence[Contender]
) -> dict[str, Any]:
    """``journal_mode`` and ``synchronous`` (2 is FULL) as each SQLite connection has them."""

    def pragmas(connection: Any) -> dict[str, Any]:
        return {
            "journal_mode": connection.exec_driver_sql("PRAGMA journal_mode").scalar_one(),
            "synchronous": connection.exec_driver_sql("PRAGMA synchronous").scalar_one(),
        }

    found: dict[str, Any] = {"signoff": await store.run(pragmas, write=False)}
    for side in contenders:
        if isinstance(side, AgnoSide):
            with side.db.db_engine.connect() as connection:
                found["agno"] = pragmas(connection)
        elif isinstance(side, LangGraphSide) and isinstance(side.saver, SqliteSaver):
            conn = side.saver.conn
            found["langgraph"] = {
                "journal_mode": conn.execute("PRAGMA journal_mode").fetchone()[0],
                "synchronous": conn.execute("PRAGMA synchronous").fetchone()[0],
            }
    found["openai-agents and dcaf rows"] = {
        "journal_mode": rows.db.execute("PRAGMA journal_mode").fetchone()[0],
        "synchronous": rows.db.execute("PRAGMA synchronous").fetchone()[0],
    }
    return found


# -- reporting -------------------------------------------------------------------------------


def kb(value: float) -> str:
    return f"{value / 1024:,.1f} KB" if abs(value) < 1024 * 1024 else f"{value / 2**20:,.1f} MB"


def ratio(theirs: float, ours: float) -> str:
    return f"{theirs / ours:,.1f}x" if ours > 0 else "—"


def reference(results: Sequence[Figures], figures: Figures) -> Figures | None:
    """signoff on the same backend at the same N: what a peer's ratios divide by."""
    return next(
        (
            r
            for r in results
            if r.system == f"signoff-{figures.backend}" and r.history == figures.history
        ),
        None,
    )


def size_table(results: Sequence[Figures], size: int) -> Table:
    rows = [r for r in results if r.history == size]
    table = Table(
        title=f"N = {size:,} messages already in the thread ({rows[0].cycles} cycles each): "
        "p50, and the peer / signoff on the same database"
    )
    table.add_column("")
    table.add_column("store")
    for header in ("pause (ms)", "resume (ms)", "written / cycle"):
        table.add_column(header, justify="right")
    for header in ("pause", "resume", "written"):
        table.add_column(f"{header}\n/ signoff", justify="right", style="bold")
    for r in rows:
        ours = reference(results, r)
        mine = ours is not None and ours.system == r.system
        cells = (
            ["", "", ""]
            if ours is None or mine
            else [
                ratio(r.pause.p50_ms, ours.pause.p50_ms),
                ratio(r.resume.p50_ms, ours.resume.p50_ms),
                ratio(r.bytes_p50, ours.bytes_p50),
            ]
        )
        table.add_row(
            f"[green]{r.label}[/]" if mine else r.label,
            "SQLite" if r.backend == "sqlite" else "PostgreSQL",
            ms(r.pause.p50_ms),
            ms(r.resume.p50_ms),
            kb(r.bytes_p50),
            *cells,
        )
    return table


STYLES: Final = {
    "signoff-sqlite": ("tab:green", "o-"),
    "signoff-postgresql": ("tab:green", "o--"),
    "langgraph-sqlite": ("tab:blue", "s-"),
    "langgraph-postgresql": ("tab:blue", "s--"),
    "openai-agents": ("tab:orange", "^-"),
    "agno": ("tab:purple", "D-"),
    "dcaf": ("tab:red", "v-"),
}


def plot(results: Sequence[Figures], path: Path) -> None:
    figure, panels = plt.subplots(1, 3, figsize=(16, 5.2), constrained_layout=True)
    picks: list[tuple[str, str, Callable[[Figures], float]]] = [
        ("Pause p50: model returns → paused and durable", "milliseconds",
         lambda f: f.pause.p50_ms),
        ("Resume p50: resume called → tool's first line", "milliseconds",
         lambda f: f.resume.p50_ms),
        ("Written per cycle, p50 (values bound to writes)", "KB",
         lambda f: f.bytes_p50 / 1024),
    ]  # fmt: skip
    systems = list(dict.fromkeys(r.system for r in results))
    for axes, (title, unit, pick) in zip(panels, picks, strict=True):
        for system in systems:
            mine = sorted((r for r in results if r.system == system), key=lambda r: r.history)
            colour, style = STYLES.get(system, ("grey", "x-"))
            label = mine[0].label
            if system.startswith(("signoff", "langgraph")):
                label += " (SQLite)" if mine[0].backend == "sqlite" else " (PostgreSQL)"
            axes.plot(
                [r.history for r in mine], [pick(r) for r in mine], style, color=colour, label=label
            )
        axes.set_title(title)
        axes.set_ylabel(unit)
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlabel("messages already in the thread (N)")
        axes.set_xticks(list(SIZES), [f"{n:,}" for n in SIZES])
        axes.grid(True, which="both", alpha=0.3)
    handles, labels = panels[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncol=len(labels))
    figure.suptitle("Pause for an approval, then resume to the tool: signoff and its peers")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main() -> None:
    console = wide_console()
    set_tracing_disabled(True)
    started = time.perf_counter()
    load_before = os.getloadavg()
    peers = {
        name: version(name)
        for name in (
            "langgraph",
            "langgraph-checkpoint-sqlite",
            "langgraph-checkpoint-postgres",
            "openai-agents",
            "agno",
        )
    }
    console.print(
        f"signoff {__version__}, "
        + ", ".join(f"{name} {v}" for name, v in peers.items())
        + f"; Python {platform.python_version()} on {platform.machine()}; "
        f"SQLite {sqlite3.sqlite_version}; load average {load_before[0]:.2f}"
    )
    with tempfile.TemporaryDirectory(prefix="signoff-bench-") as name:
        results, settings = asyncio.run(run_all(Path(name), console))
    for size in SIZES:
        console.print(size_table(results, size))
    console.print(
        "  pause: model returns → paused and durable; resume: resume called → tool's first "
        "line; written: the values bound to INSERT/UPDATE/REPLACE/DELETE statements from the new "
        "message to the tool's first line (signoff's decision taken out); a peer's ratios divide "
        "by signoff on the same database\n"
        + "".join(
            f"  {r.label}, N={r.history:,}: serialized state {kb(r.state_bytes_p50)}"
            + (f" (JSON before gzip: {kb(r.raw_json_bytes_p50)})" if r.raw_json_bytes_p50 else "")
            + "\n"
            for r in results
            if r.state_bytes_p50 is not None
        )
        + f"  SQLite settings: {settings}",
        style="dim",
    )
    plot(results, PLOT)
    wall_s = time.perf_counter() - started
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    document = {
        **environment("peers"),
        "sqlite_version": sqlite3.sqlite_version,
        "peers": peers,
        "config": {
            "sizes": SIZES,
            "cycles": CYCLES,
            "warmup": WARMUP,
            "sqlite": settings,
            "bytes": "logical: the values bound to write statements from the new user message to "
            "the tool's first line (text and blobs by length, 8 per number, 0 per NULL)",
        },
        "results": [asdict(r) for r in results],
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "wall_time_s": round(wall_s, 1),
    }
    RESULTS.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    console.print(f"wall time {wall_s:.1f} s; results in {RESULTS}, plot in {PLOT}")


if __name__ == "__main__":
    main()
