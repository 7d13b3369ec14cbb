"""A held call over A2A: how long a client waits for ``input-required``, and from its decision to
``completed`` — signoff against a plain a2a-sdk server doing nothing but the same two steps.

Run it with ``make bench``. Each server runs in a child process (this file with ``--serve``), on
127.0.0.1 with uvicorn (asyncio loop, h11) and a fresh SQLite file; the client is this process:
a2a-sdk's own Python client (JSON-RPC binding, blocking ``SendMessage``), one task at a time.
For each sample: a new task ("delete pod-N"), timed from just before the send to the answer in
``TASK_STATE_INPUT_REQUIRED``; then the decision on that task (``{"decision_type": "approve"}``,
kagent's), timed to the answer in ``TASK_STATE_COMPLETED``. `WARMUP` samples are not counted.

- **signoff**: ``create_app(Service(...))`` with the ``ops`` agent — a ``ScriptedModel``-like
  model that calls ``delete_pod`` then answers — behind a policy that asks for ``delete_pod``.
  Asking is: the model turn, the policy, the approval and the pause written to the database,
  the task read back from the run's log. Deciding is: the approval decided by compare-and-set
  with its audit entry, the run resumed by the worker (claim, the tool run once through the
  ledger, the model's answer), the task read back.
- **a2a-sdk + DatabaseTaskStore** (the peer): ``DefaultRequestHandlerV2`` with the SDK's own
  durable ``DatabaseTaskStore`` (SQLAlchemy on aiosqlite) and an executor that answers the first
  message with ``input-required`` (a text part and a data part) and the second with an artifact
  and ``completed`` — no model, no policy, no tool, no audit: the cost of A2A and a durable task
  alone.
- **a2a-sdk + InMemoryTaskStore**: the same executor, nothing written to disk.

The ratio is signoff's p50 over the durable peer's. No target is set: this shows what the
approval machinery adds to a durable A2A round trip. ``bench/results/a2a_roundtrip.json``
keeps every figure.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers.default_request_handler_v2 import DefaultRequestHandlerV2
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import DatabaseTaskStore, InMemoryTaskStore, TaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    SendMessageRequest,
    TaskState,
)
from google.protobuf.json_format import ParseDict
from google.protobuf.struct_pb2 import Value
from rich.table import Table
from sqlalchemy.ext.asyncio import create_async_engine
from starlette.applications import Starlette

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Latency, environment, latency, ms, serve_until_stdin_closes, wide_console
from signoff import Gate, Policy, ToolCall, tool
from signoff.agent import Agent, ModelTurn, ToolSpec
from signoff.agent import Message as ModelMessage
from signoff.server import Auth, Principal, Service, create_app
from signoff.store import open_store

SERVE: Final = "--serve"
HOST: Final = "127.0.0.1"
TOKEN: Final = "bench-token"
SAMPLES: Final = 200
WARMUP: Final = 20
RESULTS: Final = Path(__file__).resolve().parent / "results" / "a2a_roundtrip.json"
SERVERS: Final = ("signoff", "a2a-sdk + DatabaseTaskStore", "a2a-sdk + InMemoryTaskStore")


# -- signoff's server --------------------------------------------------------------------------


@tool
def delete_pod(name: str) -> str:
    """Delete a pod."""
    return f"deleted {name}"


class Model:
    """Calls delete_pod on the pod the user names; after the result, says so."""

    async def complete(
        self, messages: Sequence[ModelMessage], tools: Sequence[ToolSpec]
    ) -> ModelTurn:
        last = messages[-1]
        if last.role == "tool":
            return ModelTurn(text=f"done: {last.content}")
        name = last.content.split()[-1]
        return ModelTurn(tool_calls=(ToolCall(id="c1", name="delete_pod", args={"name": name}),))


async def signoff_app(folder: Path) -> tuple[Any, contextlib.AsyncExitStack]:
    stack = contextlib.AsyncExitStack()
    store = await stack.enter_async_context(open_store(f"sqlite:///{folder / 'signoff.db'}"))
    policy = Policy.from_dict({"rules": [{"ask": "delete_pod"}]})
    agent = Agent(name="ops", model=Model(), tools=[delete_pod])
    service = Service(store=store, gate=Gate(policy, store), agents=[agent])
    return create_app(service, Auth(tokens={TOKEN: Principal(name="bench")})), stack


# -- the peer: a2a-sdk alone -------------------------------------------------------------------


class AskOnce(AgentExecutor):
    """The first message of a task asks for input; the next one completes it."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if context.current_task is None:
            assert context.message is not None
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
            await updater.start_work()
            held = Value()
            held.struct_value.update({"tool": "delete_pod", "args": {"name": "pod"}})
            await updater.requires_input(
                updater.new_agent_message([Part(text="delete_pod needs approval"), Part(data=held)])
            )
            return
        await updater.start_work()
        await updater.add_artifact([Part(text="done: deleted pod")], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


async def peer_app(
    folder: Path, url: str, *, durable: bool
) -> tuple[Any, contextlib.AsyncExitStack]:
    stack = contextlib.AsyncExitStack()
    store: TaskStore
    if durable:
        engine = create_async_engine(f"sqlite+aiosqlite:///{folder / 'a2a.db'}")
        stack.push_async_callback(engine.dispose)
        database = DatabaseTaskStore(engine)
        await database.initialize()
        store = database
    else:
        store = InMemoryTaskStore()
    card = AgentCard(
        name="ops",
        description="asks once",
        version="1",
        supported_interfaces=[
            AgentInterface(url=f"{url}/a2a/ops", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="ops", name="ops", description="asks once", tags=["ops"])],
    )
    handler = DefaultRequestHandlerV2(agent_executor=AskOnce(), task_store=store, agent_card=card)
    stack.push_async_callback(handler.aclose)
    app = Starlette(
        routes=[
            *create_agent_card_routes(card, card_url="/a2a/ops/.well-known/agent-card.json"),
            *create_jsonrpc_routes(handler, rpc_url="/a2a/ops"),
        ]
    )
    return app, stack


async def serve(kind: str) -> None:
    """Serve `kind` on a free port, print its URL, stop when stdin closes."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port = probe.getsockname()[1]
    url = f"http://{HOST}:{port}"
    with tempfile.TemporaryDirectory() as folder:
        if kind == SERVERS[0]:
            app, stack = await signoff_app(Path(folder))
        else:
            app, stack = await peer_app(Path(folder), url, durable=kind == SERVERS[1])
        async with stack:
            await serve_until_stdin_closes(app, host=HOST, port=port, ready=lambda _: {"url": url})


# -- the client (this process) -----------------------------------------------------------------


@contextlib.asynccontextmanager
async def served(kind: str) -> AsyncIterator[str]:
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(Path(__file__).resolve()), SERVE, kind,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    try:
        line = await asyncio.wait_for(child.stdout.readline(), 60)
        if not line:
            raise RuntimeError(f"the {kind} server did not start (see its errors above)")
        yield str(json.loads(line)["url"])
    finally:
        child.stdin.close()
        await asyncio.wait_for(child.wait(), 30)


def send(
    text: str | None = None, *, data: Any = None, task: str = "", n: int
) -> SendMessageRequest:
    part = {"text": text} if text is not None else {"data": data}
    body: dict[str, Any] = {"messageId": f"b-{n}", "role": "ROLE_USER", "parts": [part]}
    if task:
        body["taskId"] = task
    return SendMessageRequest(message=ParseDict(body, Message()))


async def measure(kind: str) -> dict[str, Latency]:
    asks: list[float] = []
    decides: list[float] = []
    async with (
        served(kind) as url,
        httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http,
    ):
        config = ClientConfig(httpx_client=http, streaming=False)
        client = await ClientFactory(config).create_from_url(f"{url}/a2a/ops")
        for n in range(WARMUP + SAMPLES):
            start = time.perf_counter()
            [asked] = [e async for e in client.send_message(send(f"delete pod-{n}", n=2 * n))]
            middle = time.perf_counter()
            assert asked.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, asked
            decision = send(data={"decision_type": "approve"}, task=asked.task.id, n=2 * n + 1)
            [done] = [e async for e in client.send_message(decision)]
            end = time.perf_counter()
            assert done.task.status.state == TaskState.TASK_STATE_COMPLETED, done
            if n >= WARMUP:
                asks.append(middle - start)
                decides.append(end - middle)
    return {"ask": latency(asks), "decide": latency(decides)}


async def run() -> None:
    console = wide_console()
    results = {kind: await measure(kind) for kind in SERVERS}
    table = Table(title=f"A held call over A2A ({SAMPLES} tasks each, one at a time, SQLite)")
    table.add_column("server")
    for step in ("ask → input-required", "decide → completed"):
        for stat in ("p50", "p99"):
            table.add_column(f"{step}\n{stat} ms", justify="right")
    for kind, figures in results.items():
        table.add_row(
            kind,
            *(
                ms(getattr(figures[s], f"{q}_ms"))
                for s in ("ask", "decide")
                for q in ("p50", "p99")
            ),
        )
    console.print(table)
    peer = results[SERVERS[1]]
    ours = results[SERVERS[0]]
    ratios = {s: round(ours[s].p50_ms / peer[s].p50_ms, 2) for s in ("ask", "decide")}
    console.print(
        f"signoff / a2a-sdk + DatabaseTaskStore, p50: ask {ratios['ask']}x, "
        f"decide {ratios['decide']}x"
    )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            environment("a2a")
            | {
                "samples": SAMPLES,
                "results": {k: {s: asdict(v) for s, v in f.items()} for k, f in results.items()},
                "p50_ratio_to_durable_peer": ratios,
            },
            indent=2,
        )
        + "\n"
    )


def main() -> None:
    if sys.argv[1:2] == [SERVE]:
        asyncio.run(serve(sys.argv[2]))
    else:
        asyncio.run(run())


if __name__ == "__main__":
    main()
