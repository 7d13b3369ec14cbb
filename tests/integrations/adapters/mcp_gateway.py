"""The MCP gateway (`signoff mcp-gateway`, src/signoff/protocols/mcp/) as the shared scenarios
drive it: the real `Gateway`, in-process on signoff's store, in front of a real MCP server with
the scenarios' tools (tests/integrations/mcp_tools.py, a process of its own), and the official
`mcp` client as the model: each turn's calls go through the gateway at once, as a model's
parallel calls do.

A held call waits inside its ``tools/call``, in the gateway's memory: nothing is saved that a
run could be resumed from. So, as for AdalFlow, `start` plays the script in a background task
until a call waits on a person, and `resume` lets that task go on to its next wait or its end.
A call that waits says so (the gateway's progress: "waiting for a person to decide approval …")
and its approval is pending in the store.

Who and which thread: the gateway names no thread. Every call is made in the name of its
principal (`REQUESTER`, as ``gateway.principal`` sets it over stdio), and an approval's thread is
the asker's exact call (`held.py`). Each scenario thread is an MCP session of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client, types
from mcp.shared.exceptions import MCPError

from signoff.gate import Gate
from signoff.gate.external import ExternalRuns
from signoff.gate.questions import held_question
from signoff.protocols.mcp.gateway import ORIGIN, Gateway
from signoff.protocols.mcp.settings import GatewaySettings, PreviewSpec, UpstreamSpec
from signoff.protocols.mcp.upstream import Upstream
from signoff.store import open_store
from signoff.types import Approval, ToolCall
from tests.deadline import HANG
from tests.integrations.adapters import _base
from tests.integrations.adapters._base import AdapterBase, GoesOnByItself
from tests.integrations.scenarios import (
    POLICY,
    REQUESTER,
    Call,
    NotSupported,
    Outcome,
    Script,
    Seen,
    final_text,
)
from tests.protocols.test_mcp_gateway import text

TOOLS = Path(__file__).parents[1] / "mcp_tools.py"

NO_STATE = (
    "the MCP gateway keeps no state of a call a person could edit: a held call waits in the "
    "gateway's memory, inside its tools/call, on its approval in signoff's store"
)


def _not_theirs(user: str | None) -> str:
    who = "nobody named" if user is None else f"{user!r}"
    return (
        "a decision the MCP way is the answer to the gateway's elicitation dialog, which it shows "
        "only in the session of the call it holds and takes as that session's principal "
        f"({REQUESTER!r}: gateway.principal over stdio, the token's over HTTP): a decision by "
        f"{who} has no MCP way, only signoff's inbox, API or CLI"
    )


@dataclass
class _Session:
    """One thread: an MCP client session playing its script in a background task."""

    asked: asyncio.Event = field(default_factory=asyncio.Event)
    """Set whenever a call reports it waits on a person, or the gateway opens a dialog."""
    calls: list[Call] = field(default_factory=list)
    """The calls sent and not answered yet."""
    dialogs: list[tuple[str, asyncio.Future[types.ElicitResult]]] = field(default_factory=list)
    """The gateway's elicitation dialogs open in this client: what each asks, and its answer."""
    task: asyncio.Task[str] | None = None

    async def progressed(self, progress: float, total: float | None, message: str | None) -> None:
        self.asked.set()

    async def elicited(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        answer: asyncio.Future[types.ElicitResult] = asyncio.get_running_loop().create_future()
        self.dialogs.append((params.message, answer))
        self.asked.set()
        return await answer


class MCPGatewayAdapter(GoesOnByItself, AdapterBase):
    name = "mcp-gateway"
    no_ask = ""  # the gateway offers signoff's ask tool itself (``gateway.ask_tool: true``)
    no_thread = (
        "an MCP request names no thread: a held call's or question's thread is its asker's "
        "exact call (held.py)"
    )
    no_shown = (
        "the MCP client has no list of held calls to read a version from: the gateway "
        "shows a held call only in its elicitation dialog, a form for the person at the "
        "client, and keeps what that form showed itself (src/signoff/protocols/mcp)"
    )
    no_state = NO_STATE
    no_resumer = (
        "the gateway's client repeats its request (or waits on it): the answer goes to the "
        "client, and no run of the gateway's is resumed"
    )

    def __init__(self, runs: ExternalRuns, front: Gateway, side_effects: Path) -> None:
        # `runs`: the gateway's own gate and store, as the scenarios reach them (the gateway
        # holds its calls through `Gate.hold_external` itself, not through `ExternalRuns`).
        super().__init__(runs, side_effects)
        self.front = front
        self._sessions: dict[str, _Session] = {}

    async def start(self, thread: str, script: Script) -> Outcome:
        engine = self.runs.gate.engine
        denied = sorted({c.name for turn in script if not isinstance(turn, str) for c in turn
                         if engine.fixed_kind(c.name) == "deny"})  # fmt: skip
        if denied:
            # By design (docs/mcp-gateway.md): a tool the policy always denies is not listed,
            # so no MCP client can call it; a call by name is an unknown tool.
            raise NotSupported(f"the gateway does not list {denied}, which the policy always "
                               "denies: an MCP client has no such tool to call")  # fmt: skip
        session = self._sessions[thread] = _Session()
        session.task = asyncio.ensure_future(self._play(session, script))
        return await self._next(thread)

    async def send(
        self, thread: str, approve: bool, *, user: str | None, seen: Seen = None
    ) -> Outcome:
        """Answer the gateway's dialog for each waiting call, as the person at the client (the
        answer is to the form as the gateway showed it: `seen` has no say in it)."""
        if user != REQUESTER:
            raise NotSupported(_not_theirs(user))
        session = self._sessions[thread]
        answer = types.ElicitResult(
            action="accept", content={"decision": "approve" if approve else "reject"}
        )
        gate = self.runs.gate
        answered = []
        for approval in await self._waiting(session):
            # The gateway opens a dialog only where the rule lets the asker decide; the others
            # wait on signoff's inbox alone, and there is nothing to answer in the client.
            if gate.may_decide(approval, actor=user):
                (await self._dialog(session, approval)).set_result(answer)
                answered.append(approval)
        for approval in answered:
            # The answer reaches the gateway after this: wait until it took it (or the run
            # went on without it), so the outcome below is the decision's.
            taken = asyncio.ensure_future(gate.wait(approval.id, timeout=HANG))
            assert session.task is not None
            try:
                await asyncio.wait([taken, session.task], return_when=asyncio.FIRST_COMPLETED)
            finally:
                taken.cancel()
        return await self._next(thread)

    async def _play(self, session: _Session, script: Script) -> str:
        """The model: each turn's calls sent at once, until its final text (``done`` after the
        script), told every result in order."""
        results: list[tuple[str, str]] = []
        callback = session.elicited
        # 2025-11-25: a session of its own (its own connection upstream), and the gateway's
        # dialog asked in the middle of the call, as Claude Desktop or VS Code meet it.
        async with Client(self.front.server, mode="legacy", elicitation_callback=callback) as c:
            for turn in script:
                self._turns.append(len(self._turns))
                if isinstance(turn, str):
                    return final_text(turn, results)
                results += await asyncio.gather(*(self._call(session, c, call) for call in turn))
        self._turns.append(len(self._turns))
        return final_text("done", results)

    async def _call(self, session: _Session, client: Client, call: Call) -> tuple[str, str]:
        session.calls.append(call)
        try:
            result = await client.call_tool(
                call.name, call.args, progress_callback=session.progressed
            )
        except MCPError as exc:  # a JSON-RPC error (an unknown tool): the model reads it
            return call.id, str(exc)
        finally:
            session.calls.remove(call)
        return call.id, text(result)

    async def _next(self, thread: str) -> Outcome:
        """Where the thread stands once a call waits on an approval nobody decided yet, or the
        model has finished."""
        session = self._sessions[thread]
        assert session.task is not None

        async def waits() -> bool:
            return bool(await self._waiting(session))

        if await _base.stopped(session.task, session.asked, waits):
            return Outcome(paused=True)
        return Outcome(paused=False, text=session.task.result())

    async def _waiting(self, session: _Session) -> list[Approval]:
        """The pending approvals of the session's unanswered calls (the gateway's approvals
        name the asker and the exact call as asked — before any edit, a question's form with
        its field order written down —, not the session)."""
        pending = await self.runs.store.list_approvals(status="pending")
        return [
            a for a in pending
            if a.origin == ORIGIN and a.requested_by == REQUESTER
            and any((c.name, _held(c, a)) == (a.call.name, a.requested_call.args)
                    for c in session.calls)
        ]  # fmt: skip

    async def _dialog(
        self, session: _Session, approval: Approval
    ) -> asyncio.Future[types.ElicitResult]:
        """The dialog the gateway opens in the client for `approval` (it names the approval),
        once it is open."""
        async with asyncio.timeout(HANG):
            while True:
                session.asked.clear()
                for message, answer in session.dialogs:
                    if approval.id in message and not answer.done():
                        return answer
                await session.asked.wait()

    async def close(self) -> None:
        await _base.cancelled(s.task for s in self._sessions.values() if s.task is not None)


def _held(call: Call, approval: Approval) -> dict[str, Any]:
    """`call`'s arguments as an approval of its kind holds them (`held_question`)."""
    kind = approval.call.kind
    return held_question(ToolCall(id=call.id, name=call.name, args=call.args, kind=kind)).args


@contextlib.asynccontextmanager
async def opened(database: str, tmp_path: Path) -> AsyncIterator[MCPGatewayAdapter]:
    side_effects = tmp_path / "side-effects.txt"
    # A held transfer is previewed by the server's companion tool, as the config's
    # ``preview: {transfer: {tool: preview_transfer}}`` says.
    tools = UpstreamSpec(name="tools", command=sys.executable,
                         args=(str(TOOLS), str(side_effects)),
                         previews={"transfer": PreviewSpec(tool="preview_transfer")})  # fmt: skip
    # A held call waits, never "pending"; the model may ask a person (``ask_person``).
    settings = GatewaySettings(principal=REQUESTER, wait=HANG, ask_tool=True)
    async with open_store(database) as store:
        gate = Gate(POLICY, store)
        front = Gateway(gate, [Upstream(tools)], settings=settings)
        # Built on this loop, the runs' bridge is this loop: the gateway, its store and the
        # scenarios' decisions all run on the test's loop.
        adapter = MCPGatewayAdapter(ExternalRuns(gate, origin=ORIGIN), front, side_effects)
        async with front.running():
            try:
                yield adapter
            finally:
                await adapter.close()
