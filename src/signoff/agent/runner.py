"""The loop of ARCHITECTURE §1: model turn → gate → run, block or hold → pause → resume.

One pause per model turn holds all of its asked calls; the allowed ones have already run. A
paused run is resumed by whoever claims it first (compare-and-set on the run), once every held
call is decided. Approved and edited calls run through the ledger, keyed by their approval, so a
call runs at most once however often resuming is retried; rejected, answered and expired calls
become tool results. The model is called again only when every call of its turn has a result.

The runner drives the loop; what it writes to a run's log, and when, is `RunLog`'s.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Coroutine, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any, TypeVar

from signoff import telemetry
from signoff.agent.agent import Agent
from signoff.agent.events import RunEvent, TextDelta
from signoff.agent.model import (
    History,
    Message,
    ModelTurn,
    StreamingModel,
    message_from_dict,
    message_to_dict,
)
from signoff.agent.results import (
    answer,
    blocked_result,
    call_data,
    status_result,
    subagent_result,
    tool_message,
    unknown_tools,
)
from signoff.agent.run_log import RunLog, closing, in_order
from signoff.agent.state import OpenTurn, RunScope, Suspended, unique_ids
from signoff.agent.tools import ToolResult
from signoff.errors import ConflictError
from signoff.gate import CheckContext, Gate, Outcome
from signoff.gate.ids import new_id
from signoff.gate.once import record_unknown
from signoff.gate.preview import PREVIEW_SECONDS, Previews
from signoff.gate.worker import work_ready
from signoff.redaction import Redaction
from signoff.store.runs import RunRecord, RunWrite, StoredEvent
from signoff.types import Approval, ToolCall

__all__ = ["LEASE", "Runner"]

LEASE = timedelta(minutes=5)

logger = logging.getLogger(__name__)
T = TypeVar("T")


class Runner:
    """Runs one agent (and its sub-agents) behind a Gate; `start` and `resume` stream the run's
    events."""

    def __init__(
        self,
        agent: Agent,
        gate: Gate,
        *,
        owner: str | None = None,
        lease: timedelta = LEASE,
        stream_text: bool = False,
        preview_timeout: float = PREVIEW_SECONDS,
        redaction: Redaction | None = None,
    ) -> None:
        self.agent = agent
        self.gate = gate
        self.store = gate.store
        self.lease = lease
        """How long a run stays this runner's without word from it; then another may take it."""
        self.stream_text = stream_text
        """Stream the model's text as `TextDelta`s when the model can stream."""
        # Edits of this agent's calls are checked against its tools' schemas.
        for path, schemas in agent.schemas().items():
            gate.register_schemas(schemas, agent=path)
        self.owner = owner or f"{os.getpid()}-{new_id()[-8:]}"
        """Who holds a run's lease while working on it: this process and this runner."""
        self.preview_timeout = preview_timeout
        """How long a tool's preview may take when its call is held (`Tool.preview`)."""
        self.redaction = redaction or Redaction()
        """The argument values masked in what a preview says (a server's ``redact:``)."""
        self.log = RunLog(self.store, owner=self.owner, lease=lease)
        """This runner's writes to the logs of the runs it works on."""

    def previews(self, agent: Agent) -> Previews:
        """The previews of `agent`'s tools that have one, bounded by `preview_timeout` and
        masked by `redaction`."""
        functions = {t.name: t.previewing() for t in agent.tools if t.preview is not None}
        return Previews(functions, timeout=self.preview_timeout, redaction=self.redaction)

    async def start(
        self,
        thread_id: str,
        input: str,
        *,
        started_by: str | None = None,
        run_id: str | None = None,
    ) -> AsyncIterator[RunEvent]:
        """Start a run on the thread with a user message; stream its events until it pauses,
        completes or fails. `run_id` names the run (a new id by default)."""
        record = RunRecord(
            id=run_id or new_id(),
            thread_id=thread_id,
            agent=self.agent.name,
            status="running",
            started_by=started_by,
            lease_owner=self.owner,
            version=1,
        )
        scope = RunScope(agent=self.agent, path=self.agent.name, record=record, root=record)
        for stored in await self.log.create(scope, input):
            yield stored
        async for event in self._run(scope, None):
            yield event

    async def resume(self, run_id: str) -> AsyncIterator[RunEvent]:
        """Resume a run: paused with every held call decided (its sub-agents' too), or left
        running by a worker that died (its lease ran out). Stream its events.

        Raises `ConflictError` when another worker holds the run, the run is finished, some
        call still waits for a person, or the run is a sub-agent's (resume its root run).
        """
        state = await self.log.claim(
            run_id, agent=self.agent.name, path=self.agent.name, root_id=run_id
        )
        if state is None:
            raise ConflictError(f"run {run_id!r} is not paused, or another worker resumed it")
        scope = RunScope(
            agent=self.agent, path=self.agent.name, record=state.record, root=state.record
        )
        turn = await self.log.reopen(scope, state)
        if turn.waiting:
            raise ConflictError(f"run {run_id!r} still waits on {len(turn.waiting)} approval(s)")
        telemetry.observer.resumed("runtime")
        async for event in self._run(scope, turn):
            yield event

    async def work(self, *, poll_interval: float = 1.0, concurrency: int = 32) -> None:
        """Resume this agent's runs as they become ready, until cancelled: a paused run once
        its last held call is decided (or expires), a run whose worker died once its lease
        runs out. Several workers, in one process or many sharing the database, may work the
        same agent: each run is resumed by the one that claims it first.

        Decisions taken through this worker's gate wake it at once, and so do decisions taken
        in other processes on PostgreSQL; otherwise it looks every `poll_interval` seconds.
        At most `concurrency` runs go on at once. What a resumed run does is in its log
        (`store.run_events`)."""

        async def ready() -> list[str]:
            return await self.store.ready_runs(self.agent.name, now=await self.store.clock())

        # A run left mid-way when this stops is taken over by another worker once its lease
        # runs out.
        await work_ready(self.gate, ready, self.resume_ready, poll_interval=poll_interval,
                         concurrency=concurrency)  # fmt: skip

    async def resume_ready(self, run_id: str) -> bool:
        """Resume the run to its next pause or its end, if it is still ready and this worker
        claims it first. Returns whether it did."""
        try:
            with telemetry.span("signoff.resume", {"signoff.run_id": run_id}):
                async for event in self.resume(run_id):
                    # Readers of run logs in this process (event streams) look at once.
                    self.gate.notifier.notify(event.run_id)
        except ConflictError:
            return False  # another worker took it, or it is not ready after all
        except Exception:  # a worker outlives any one run's trouble; the run is taken over
            logger.exception("resuming run %s failed; it will be taken over", run_id)
            return False
        return True

    # -- the loop --------------------------------------------------------------------------

    async def _run(self, scope: RunScope, turn: OpenTurn | None) -> AsyncIterator[RunEvent]:
        """Settle the open turn (if any), then alternate model turns and settling until the
        model stops calling tools, a call is held, or the run's turn budget is spent."""
        agent, record = scope.agent, scope.record
        while True:
            if turn is not None:
                async for event in self._settle(scope, turn):
                    yield event
                if scope.held:
                    return
            if scope.turns >= agent.max_turns:
                async for event in self._fail(scope, f"more than {agent.max_turns} model turns"):
                    yield event
                return
            instructions = [Message(role="system", content=agent.instructions)]
            history = History(
                await self.store.thread_texts(record.thread_id),
                head=instructions if agent.instructions else (),
            )
            reply: ModelTurn | None = None
            try:
                async with self.log.heartbeat(scope):  # a slow model is not a dead worker either
                    if self.stream_text and isinstance(agent.model, StreamingModel):
                        text: list[str] = []
                        calls: list[ToolCall] = []
                        async for delta in agent.model.stream(history, agent.specs):
                            if delta.text:
                                text.append(delta.text)
                                yield TextDelta(run_id=record.id, text=delta.text)
                            if delta.tool_call is not None:
                                calls.append(delta.tool_call)
                        reply = ModelTurn(text="".join(text), tool_calls=tuple(calls))
                    else:
                        reply = await agent.model.complete(history, agent.specs)
            except Exception as exc:  # the model is another service: its failure ends the run
                reason = f"the model failed: {type(exc).__name__}: {exc}"
                async for event in self._fail(scope, reason):
                    yield event
                return
            scope.turns += 1
            # Arguments the gate cannot take are kept as the reason why (and blocked with it):
            # a model's 100,000 levels of nesting would break every reader of the run.
            admit = self.gate.limits.admit
            calls_made = [
                replace(c, agent=scope.path, args=admit(c.args), **_tool_of(agent, c))
                for c in unique_ids(reply.tool_calls)
            ]
            said = Message(role="assistant", content=reply.text, tool_calls=tuple(calls_made))
            events: list[tuple[str, dict[str, object]]] = []
            if reply.text:
                events.append(("text", {"text": reply.text}))
            events += [("tool_call", call_data(c)) for c in calls_made]
            if calls_made:
                # Written with the turn's first step (its calls held, or started): one commit.
                scope.pending_messages.append(message_to_dict(said))
                scope.pending_events += events
                turn = OpenTurn(number=scope.turns, calls=calls_made, approvals={}, requested=[])
                continue
            events.append(("completed", {}))
            scope.final = reply.text
            for event in await self.log.append(
                scope, messages=[message_to_dict(said)], events=events, status="completed"
            ):
                yield event
            return

    async def _fail(self, scope: RunScope, reason: str) -> AsyncIterator[RunEvent]:
        scope.failure = reason
        for event in await self.log.append(
            scope, events=[("failed", {"reason": reason})], status="failed"
        ):
            yield event

    async def _settle(self, scope: RunScope, turn: OpenTurn) -> AsyncIterator[RunEvent]:
        """Give every open call of the turn its result: decided ones from their decision, the
        others through the gate — running, blocking, or holding them (then the run pauses).
        A call already started (a sub-agent's, or one a dead worker began) goes on without
        asking the gate again."""
        results = unknown_tools(scope.agent, turn.calls)
        open_calls = [c for c in turn.calls if c.id not in results]
        keys = {c.id: f"{scope.record.id}:{turn.number}:{c.id}" for c in open_calls}
        keys |= {c.id: turn.approvals[c.id].id for c in open_calls if c.id in turn.approvals}
        runnable, fresh, held = await self._sorted(turn, open_calls, keys, results)
        log: list[RunEvent] = []  # what running the calls wrote to the run's (and sub-runs') logs
        settled = False
        if fresh:
            more, blocked, asked, stored = await self._hold(
                scope, turn, fresh, runnable=runnable, results=results, held=held
            )
            log += stored
            runnable += more
            results |= blocked
            held += asked
            settled = not runnable
        elif len(runnable) > 1 and scope.pending():
            log += await self.log.append(scope)  # before calls that run side by side
        if runnable:
            executed = await _all(
                [self._execute(scope, c, key=keys[c.id], log=log) for c in runnable]
            )
            for call, result in zip(runnable, executed, strict=True):
                if isinstance(result, Suspended):
                    held += result.approvals
                else:
                    results[call.id] = result
        scope.held = held
        if not settled:
            log += await self.log.commit(closing(self.log.write(scope), turn, results, held))
        if held and scope.record.id == scope.root.id:  # a sub-agent's pause is its root's
            telemetry.observer.paused("runtime")
        for event in in_order(log):
            yield event

    async def _sorted(
        self,
        turn: OpenTurn,
        open_calls: list[ToolCall],
        keys: dict[str, str],
        results: dict[str, dict[str, object]],
    ) -> tuple[list[ToolCall], list[ToolCall], list[Approval]]:
        """The open calls sorted by what happens to them: those to run (approved, or started
        before), those the gate has not judged yet, and those still held; the results of the
        others (answered, rejected, expired, or approved but denied now) go into `results`."""
        runnable: list[ToolCall] = []
        fresh: list[ToolCall] = []
        held: list[Approval] = []
        if any(a.status in ("approved", "edited") for a in turn.approvals.values()):
            await self.gate.catch_up()  # approved calls run only by the policy of now
        for call in open_calls:
            approval = turn.approvals.get(call.id)
            if approval is None:
                (runnable if keys[call.id] in turn.begun else fresh).append(call)
            elif approval.call.kind == "question" and not approval.pending:
                results[call.id] = answer(approval)  # whatever decided it: never run
            elif approval.status in ("approved", "edited"):
                denied = self.gate.denied_now(approval)
                if denied is None:
                    runnable.append(approval.call)  # as approved: edited arguments included
                else:  # approved, then the policy changed: it never runs what it now denies
                    text = f"This call was approved, but {denied}. Do not retry it."
                    results[call.id] = tool_message(call, status_result("blocked", text))
            elif approval.pending:  # pragma: no cover - resuming waits for every decision
                held.append(approval)
            else:
                results[call.id] = answer(approval)
        return runnable, fresh, held

    async def _hold(
        self,
        scope: RunScope,
        turn: OpenTurn,
        fresh: list[ToolCall],
        *,
        runnable: list[ToolCall],
        results: dict[str, dict[str, object]],
        held: list[Approval],
    ) -> tuple[list[ToolCall], dict[str, dict[str, object]], list[Approval], list[StoredEvent]]:
        """Judge the calls the gate has not judged yet: the calls it lets run, the results of
        those it blocks, the approvals of those it holds, and the events written. With nothing
        to run after it, the turn settles (or pauses) in the hold's own transaction."""
        context = CheckContext(
            run_id=scope.root.id,
            thread_id=scope.root.thread_id,
            requested_by=scope.root.started_by,
            origin="runtime",
        )
        write = self.log.write(scope)  # the turn's calls (or the resume), written first

        def then(outcomes: list[Outcome]) -> RunWrite:
            # On the store's thread, in the hold's transaction: only computes.
            more, blocked, asked = _tally(outcomes)
            if runnable or more:
                return write
            # Nothing to run: the turn settles (or pauses) in this very transaction.
            return closing(write, turn, results | blocked, held + asked)

        outcomes, stored = await self.gate.hold(
            fresh, context, then=then, previews=self.previews(scope.agent)
        )
        return (*_tally(outcomes), stored)

    async def _execute(
        self, scope: RunScope, call: ToolCall, *, key: str, log: list[RunEvent]
    ) -> dict[str, object] | Suspended:
        """Run the call once, through the ledger: a second attempt with the same key returns the
        first result, and a call whose first attempt died midway is re-run only if idempotent
        (a sub-agent's run is picked up where it stopped). The events it writes (tool started,
        finished; a sub-agent's whole run) are added to `log`."""
        args: object = call.args
        if not isinstance(args, dict):
            text = f"the arguments are not a JSON object: {args!r}; the call did not run"
            return tool_message(call, ToolResult(content=text, is_error=True))
        sub = scope.agent.subagent(call.name)
        tool = scope.agent.tool(call.name)
        if tool is None and sub is None:  # pragma: no cover - _settle answers unknown tools
            raise AssertionError(f"unknown tool {call.name!r} reached execution")
        if tool is not None and not tool.available:
            # Leave the call unstarted: a worker that can run it takes the run over.
            raise ConflictError(f"tool {call.name!r} cannot be run now; the call was not started")
        rerun = sub is not None or (tool is not None and tool.idempotent)
        previous, stored = await self.log.start(scope, call, key, retry=rerun and sub is None)
        log += stored
        if previous is not None and previous.result is not None:
            return previous.result
        if sub is not None:
            return await self._delegate(scope, sub, call, args, key=key, log=log)
        assert tool is not None
        if previous is not None and not rerun:
            await record_unknown(
                self.store, key, tool=call.name, run_id=scope.record.id, call_id=call.id
            )
            text = "This call started before a crash and its outcome is unknown; it was not re-run."
            return tool_message(call, status_result("unknown", text))
        held = None if ":" in key else key  # a held call runs under its approval's id
        with telemetry.span("signoff.execute", telemetry.executing(call, held)):
            async with self.log.heartbeat(scope):
                result = await tool.invoke(args, key=key)
        return await self.log.finish(scope, call, key, result, log)

    async def _delegate(
        self,
        scope: RunScope,
        sub: Agent,
        call: ToolCall,
        args: dict[str, Any],
        *,
        key: str,
        log: list[RunEvent],
    ) -> dict[str, object] | Suspended:
        """Answer a call of a sub-agent: start its run (one per call, keyed by the call's
        ledger key), or pick it up where it stopped; a run that pauses suspends the call, and
        its held approvals pause this run too."""
        child = await self.store.child_run(scope.record.id, key)
        if child is None:
            text = args.get("input")
            if not isinstance(text, str):
                result = ToolResult(content="the input must be a string", is_error=True)
                return await self.log.finish(scope, call, key, result, log)
            record = RunRecord(
                id=new_id(),
                thread_id=f"{key}/{sub.name}",
                agent=sub.name,
                status="running",
                started_by=scope.root.started_by,
                lease_owner=self.owner,
                version=1,
                parent_id=scope.record.id,
                parent_key=key,
            )
            inner = scope.child(sub, record)
            log += await self.log.create(inner, text)
            turn = None
        else:
            inner = scope.child(sub, child)
            if child.status in ("completed", "failed"):
                # It ended, and our worker died before taking its result: take it now.
                tail = await self.store.open_turn(child.id)
                inner.final = message_from_dict(tail.messages[0]).content if tail.messages else ""
                if child.status == "failed":
                    [*_, end] = await self.store.run_events(child.id)
                    inner.failure = str(end.data.get("reason", "unknown"))
                return await self.log.finish(scope, call, key, subagent_result(inner), log)
            state = await self.log.claim(
                child.id, agent=sub.name, path=inner.path, root_id=scope.root.id
            )
            if state is None:
                raise ConflictError(f"the sub-agent's run {child.id!r} is held by another worker")
            inner = scope.child(sub, state.record)
            turn = await self.log.reopen(inner, state)
            if turn.waiting:  # its worker died between its pause and ours: paused again
                return Suspended(approvals=turn.waiting)
        async for event in self._run(inner, turn):
            log.append(event)
        if inner.held:
            return Suspended(approvals=inner.held)
        return await self.log.finish(scope, call, key, subagent_result(inner), log)


def _tally(
    outcomes: Sequence[Outcome],
) -> tuple[list[ToolCall], dict[str, dict[str, object]], list[Approval]]:
    """The gate's outcomes as calls to run, results of blocked calls, and held approvals."""
    return (
        [o.call for o in outcomes if o.kind == "run"],
        {
            o.call.id: tool_message(o.call, blocked_result(o.verdict))
            for o in outcomes
            if o.kind == "block"
        },
        [o.approval for o in outcomes if o.approval is not None],
    )


async def _all(steps: Sequence[Coroutine[Any, Any, T]]) -> list[T]:
    """Run the steps side by side; if one fails, stop the others before raising its error, so
    that nothing of the run goes on behind the caller's back."""
    if len(steps) == 1:
        return [await steps[0]]
    tasks = [asyncio.create_task(step) for step in steps]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _tool_of(agent: Agent, call: ToolCall) -> dict[str, Any]:
    """What a call's tool says of it to the policy: the MCP server it goes to (as the policy's
    ``servers:`` sections match it), and its kind (a call of the ask tool is a question)."""
    tool = agent.tool(call.name)
    if tool is None:
        return {"server": None, "kind": "tool"}
    return {"server": tool.server, "kind": tool.kind}
