"""`SignoffAgent`: an Agents SDK agent run, paused and resumed behind signoff, its thread kept in
signoff's store (`conversation`) so that any process resumes it — once: the thread's mark holds
it while a resume runs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import timedelta
from typing import Any

from agents import Agent, Runner, RunState
from agents.items import ToolApprovalItem
from agents.result import RunResult, RunResultStreaming
from agents.stream_events import StreamEvent

from signoff._moved import moved
from signoff.gate.answers import answer_text, blocked_text
from signoff.gate.external import LEASE, ExternalRuns, Held
from signoff.integrations._kept import KeptThreads, extended, waits
from signoff.integrations._threads import Append
from signoff.integrations.openai_agents.calls import Calls
from signoff.integrations.openai_agents.conversation import added, items, read, transcript_of
from signoff.integrations.openai_agents.wrapping import Wrapping

__all__ = ["ORIGIN", "SignoffAgent"]

ORIGIN = "openai-agents"


class SignoffAgent(KeptThreads[RunResult]):
    """An OpenAI Agents SDK `Agent` with signoff's policy, approvals, grants, ledger and
    audit, and its threads kept in signoff's store. A resume takes the run's ``context`` when
    it could not be kept; an undecided call waits on; each resumed run's `RunResult` reaches a
    `resumer`'s ``on_resumed``."""

    origin = ORIGIN

    def __init__(
        self,
        agent: Agent[Any],
        runs: ExternalRuns,
        *,
        path: str | None = None,
        requested_by: str | None = None,
        idempotent: Iterable[str] = (),
        lease: timedelta = LEASE,
    ) -> None:
        """`runs` from `connect(policy, origin="openai-agents", database=...)`; `path` the agent
        path the policy's ``agents:`` section judges its calls by (default: the agent's name;
        an agent it hands off to is judged as ``path/its-name``); `requested_by` who starts its
        threads (a rule may forbid them approving their own); `idempotent` the tools safe to run
        again when a worker died inside them (any other is then ``unknown``, not re-run);
        `lease` how long a resume holds its thread unrenewed (renewed every third of it)."""
        self.agent = agent
        self.runs = runs
        self.path = path or agent.name
        self.requested_by = requested_by
        self.idempotent = frozenset(idempotent)
        self.lease = lease
        self._calls = Calls(runs, requested_by=requested_by, idempotent=self.idempotent)

    # -- deprecated: the calls' own now ----------------------------------------------------

    @moved("SignoffAgent.asks", "the wrapped agent's tools, which ask by themselves")
    def asks(self, *args: Any, **kwargs: Any) -> Any:
        return self._calls.asks(*args, **kwargs)

    @moved("SignoffAgent.execute", "the wrapped agent's tools, which run once by themselves")
    def execute(self, *args: Any, **kwargs: Any) -> Any:
        return self._calls.execute(*args, **kwargs)

    @moved("SignoffAgent.register", "the wrapped agent's tools, registered as they are wrapped")
    def register(self, *args: Any, **kwargs: Any) -> Any:
        return self._calls.register(*args, **kwargs)

    # -- running ---------------------------------------------------------------------------

    async def run(self, input: str | list[Any], *, thread: str, **kwargs: Any) -> RunResult:
        """Run the agent on `thread`: its conversation so far, then `input`; what the run adds
        is appended to it. Ends with the agent's output, or with `interruptions` while calls
        wait for a person. `kwargs` go to `Runner.run` (context, max_turns, run_config, ...)."""
        entries, conversation, _ = await self._thread(thread, waiting=False)
        wrapping = self._wrapping(thread, kwargs.get("context"))
        wrapped = await wrapping.root()
        result = await Runner.run(wrapped, [*conversation, *items(input)], **kwargs)
        append = self._appender(thread, len(entries))
        kept: RunResult = await self._settle(wrapping, append, conversation, result, kwargs)
        return kept

    async def _resume(self, thread: str, **kwargs: Any) -> tuple[RunResult | None, bool]:
        """`resume`, and whether the thread's pause is over (False: it waits on)."""
        entries, conversation, paused = await self._thread(thread, waiting=True)
        if paused is None:
            return None, True  # nothing waits: the run went on already
        context = kwargs.pop("context", None)
        wrapping = self._wrapping(thread, context, run=paused)
        wrapped = await wrapping.root()
        state = await RunState.from_json(wrapped, paused["state"], context_override=context)
        held = await self._judged(wrapping, state.get_interruptions())
        answered, decided = _answer(state, held, wrapping)
        if not answered:
            return None, False  # nothing it waits on is decided: it waits on, untouched

        async def go(append: Append) -> RunResult:
            result = await Runner.run(wrapped, state, **kwargs)
            kept: RunResult = await self._settle(wrapping, append, conversation, result, kwargs)
            return kept

        return await self._held(thread, entries, go, decided)

    async def stream(
        self, input: str | list[Any], *, thread: str, **kwargs: Any
    ) -> AsyncIterator[StreamEvent]:
        """`run`, streamed: the SDK's events as they come (`Runner.run_streamed`); the thread
        is kept once the stream ends, as `run` keeps it."""
        entries, conversation, _ = await self._thread(thread, waiting=False)
        wrapping = self._wrapping(thread, kwargs.get("context"))
        wrapped = await wrapping.root()
        streamed = Runner.run_streamed(wrapped, [*conversation, *items(input)], **kwargs)
        async for event in streamed.stream_events():
            yield event
        await self._settle(wrapping, self._appender(thread, len(entries)), conversation,
                           streamed, kwargs)  # fmt: skip

    def run_sync(self, input: str | list[Any], *, thread: str, **kwargs: Any) -> RunResult:
        """`run` from synchronous code (not inside a running event loop)."""
        return asyncio.run(self.run(input, thread=thread, **kwargs))

    def _wrapping(self, thread: str, context: Any, run: dict[str, Any] | None = None) -> Wrapping:
        return Wrapping(self.agent, self.path, self._calls, thread, context, run)

    async def _thread(
        self, thread: str, *, waiting: bool
    ) -> tuple[list[str], list[Any], dict[str, Any] | None]:
        """The thread's entries, its conversation, and the entry of its run that waits on
        people — which takes no new input (`waiting` False) until it is resumed.

        (Its entries: `signoff.integrations.openai_agents.conversation`.)"""
        entries = await self._entries(thread, resuming=waiting)
        conversation, paused = read(entries)
        if paused is not None and not waiting:
            raise waits(thread)
        return entries, conversation, paused

    async def _settle(
        self,
        wrapping: Wrapping,
        append: Append,
        conversation: Sequence[Any],
        result: RunResult | RunResultStreaming,
        kwargs: dict[str, Any],
    ) -> Any:
        """Go on while every call the run stopped on is answered without a person (a verdict
        the SDK could not ask for, a grant given meanwhile); then `append` what the run added
        to the thread."""
        thread, wrapped = wrapping.thread, await wrapping.root()
        held: dict[str, Held] = {}
        while result.interruptions:
            held = await self._judged(wrapping, result.interruptions)
            state = result.to_state()
            answered, _ = _answer(state, held, wrapping)
            if answered < len(result.interruptions):
                break  # a call waits for a person
            kwargs = {k: v for k, v in kwargs.items() if k != "context"}
            result = await Runner.run(wrapped, state, **kwargs)
        pause = None
        if result.interruptions:
            new = [json.dumps({"state": result.to_state().to_json(), **wrapping.where()})]
            asked = [h.approval.id for h in held.values() if h.approval is not None]
            shown = transcript_of(result.to_input_list(), self.path)
            pause = self._pause_of(thread, asked, self.path, shown)
        else:
            new = added(conversation, result.to_input_list())
        if not await append(new, pause):  # the pause, if any, with the entries: one write
            raise extended(thread)
        return result

    async def _judged(
        self, wrapping: Wrapping, items: Sequence[ToolApprovalItem]
    ) -> dict[str, Held]:
        """How each call the run stopped on stands, by call id (judged now when the SDK
        stopped on it without asking the tool: arguments it could not read, say)."""
        calls = [wrapping.proposed(item) for item in items]
        return await self.runs.judged(calls, thread=wrapping.thread, requested_by=self.requested_by,
                                      turn=wrapping.turn)  # fmt: skip


def _answer(
    state: RunState[Any, Any], held: dict[str, Held], wrapping: Wrapping
) -> tuple[int, list[str]]:
    """Approve or reject, in `state`, each call it waits on that is answered: how many were,
    and the approvals decided among them. A wrapped tool's approved, edited or responded call
    is approved in the SDK: the wrapper runs it as decided, or gives the person's response as
    its result. A tool signoff did not wrap runs only as proposed: an edit or a response of its
    call reaches the model as a rejection's text (the SDK's one way to answer it)."""
    answered, decided = 0, []
    for item in state.get_interruptions():
        found = held.get(item.call_id or "")
        record = found.record if found is not None else None
        approval = found.approval if found is not None else None
        if record is None:
            state.reject(item, rejection_message=blocked_text("signoff holds no such call"))
        elif record.kind == "run":
            state.approve(item)
        elif record.kind == "block":
            state.reject(item, rejection_message=blocked_text(record.reason))
        elif approval is None or approval.pending:
            continue  # waits on
        else:
            decided.append(approval.id)
            if approval.status == "approved" or (
                approval.status in ("edited", "responded") and wrapping.wrapped(item)
            ):
                state.approve(item)
            elif approval.status == "edited":
                problem = "a person edited it, and signoff cannot change this tool's arguments"
                state.reject(item, rejection_message=blocked_text(problem))
            else:
                state.reject(item, rejection_message=answer_text(approval)[0])
        answered += 1
    return answered, decided
