"""LangGraph graphs behind signoff: a drop-in `ApprovalToolNode`, `gated` for any node, and
`resumer` so a decision in any signoff channel resumes the thread (ARCHITECTURE §6).

    runs = connect("policy.yaml", origin="langgraph", database="sqlite:///signoff.db")
    builder.add_node("tools", ApprovalToolNode(tools, runs=runs))
    graph = builder.compile(checkpointer=SqliteSaver(conn))
    stop = resumer(graph, runs).start()          # decisions in the inbox resume the thread

signoff's policy judges every call of a model turn with its arguments: allowed calls run, denied
ones get a blocked result and never run, asked ones are held as approvals and the node interrupts
once for all of them (the allowed siblings have run). LangGraph re-runs a node from its start when
it resumes: every call is then judged again under its key — (thread, AI message id, call id) —
and gets the same verdict and approval, and every execution goes through signoff's core
(`ExternalRuns.claim`: only the call as allowed, approved or edited runs) and its ledger, so a
tool runs once however often the node re-runs, or the same checkpoint is resumed, by any number
of processes. The decision is read from signoff's store, never from the resume payload; a
LangChain-style payload (``Command(resume={"decisions": [...]})``) is first recorded as a
decision of whoever sent it (`LangGraphGate.requested_by` of the resuming run), else of the
principal the app connected with, compare-and-set against one taken elsewhere.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from signoff.errors import (
    CallRefused,
    ExecutionFailed,
    InvalidDecisionError,
    MissingExtraError,
    OutcomeUnknown,
)
from signoff.gate.answers import answer_text, blocked_text, edited_text
from signoff.gate.external import ExternalRuns, Held, Resumed, Resumer, connect
from signoff.gate.once import Claim, Recorded
from signoff.integrations._hitl import (
    MARK,
    interrupt_value,
    response_schema,
    resume_decisions,
    transcript_of,
)
from signoff.integrations._pauses import RESUMING, Continuation, acontinuing, continuing
from signoff.limits import ArgumentLimits
from signoff.types import Approval, ToolCall

try:
    from langchain_core.load import dumpd, load
    from langchain_core.messages import AIMessage, ToolMessage, message_to_dict, messages_from_dict
    from langchain_core.runnables import RunnableConfig
    from langgraph.config import get_config
    from langgraph.prebuilt import ToolNode
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.types import Command, interrupt
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise MissingExtraError("signoff.integrations.langgraph", "langgraph") from exc

__all__ = [
    "MARK",
    "ORIGIN",
    "ApprovalToolNode",
    "CallResult",
    "LangGraphGate",
    "connect",
    "gated",
    "response_schema",
    "resumer",
]

ORIGIN = "langgraph"
_LIMITS = ArgumentLimits()

Handler = Callable[[ToolCallRequest], "ToolMessage | Command[Any]"]
AsyncHandler = Callable[[ToolCallRequest], "Awaitable[ToolMessage | Command[Any]]"]


class LangGraphGate:
    """What the LangGraph and LangChain integrations share: judging a model turn's calls,
    running each through the ledger, answering decided ones, and the one interrupt per turn."""

    def __init__(
        self,
        runs: ExternalRuns,
        *,
        agent: str | None = None,
        requested_by: str | Callable[[RunnableConfig], str | None] | None = None,
    ) -> None:
        """`agent` is the path the policy's ``agents:`` section judges these calls by
        (``coordinator/researcher``); `requested_by` who started the thread (for rules that
        forbid self-approval): a name, or read from the run's config."""
        self.runs = runs
        self.agent = agent
        self._requested_by = requested_by

    # -- judging ---------------------------------------------------------------------------

    def requested_by(self, config: RunnableConfig) -> str | None:
        """Who runs the graph with `config`: the app's `requested_by` (a name, or a function of
        the config), else the user LangGraph Platform authenticated
        (``configurable.langgraph_auth_user_id``), else ``configurable.user_id`` — as the
        invoker says it. The same person is who sends a resume the LangChain way."""
        if callable(self._requested_by):
            return self._requested_by(config)
        if self._requested_by is not None:
            return self._requested_by
        return invoker(config)

    def agent_of(self, config: RunnableConfig) -> str | None:
        """The path the calls are judged by and shown with: the app's `agent`, else the name
        of the ``create_agent`` agent that makes them (``create_agent(name=...)``)."""
        named = (config.get("metadata") or {}).get("lc_agent_name")
        return self.agent or (named if isinstance(named, str) and named else None)

    def calls(self, message: AIMessage, config: RunnableConfig) -> list[ToolCall]:
        agent = self.agent_of(config)
        return [
            ToolCall(id=c["id"] or "", name=c["name"], args=_LIMITS.admit(c["args"]), agent=agent)
            for c in message.tool_calls
        ]

    async def judge(self, message: AIMessage, config: RunnableConfig) -> dict[str, Held]:
        """Judge the turn's calls (the same verdicts and approvals when judged before) and
        return how each stands, by call id."""
        return await self.runs.judged(
            self.calls(message, config),
            thread=thread_of(config),
            requested_by=self.requested_by(config),
            turn=message.id,
        )

    def key_of(self, request: ToolCallRequest) -> str:
        """The key the call of `request` is kept and run once under."""
        call_id = request.tool_call["id"] or ""
        return self.runs.key(thread_of(request.runtime.config), call_id,
                             turn_of(request.state, call_id))  # fmt: skip

    # -- one call --------------------------------------------------------------------------

    def execute(self, request: ToolCallRequest, handler: Handler) -> ToolMessage | Command[Any]:
        """Run (or answer) one call of the turn, synchronously: exactly once per call."""
        runs = self.runs
        started = runs.run_near(self._start(request))
        if not isinstance(started, tuple):
            return started
        plan, claim = started
        if isinstance(claim, Recorded):
            return _restored(claim.value, plan)
        try:
            result = handler(plan.request)
        except BaseException as exc:
            runs.run_near(runs.fail(claim, exc))
            raise
        return _restored(runs.run_near(runs.finish(claim, _record(result))), plan)

    async def aexecute(
        self, request: ToolCallRequest, handler: AsyncHandler
    ) -> ToolMessage | Command[Any]:
        """`execute` for async graphs."""
        runs = self.runs
        started = await runs.near(self._start(request))
        if not isinstance(started, tuple):
            return started
        plan, claim = started
        if isinstance(claim, Recorded):
            return _restored(claim.value, plan)
        try:
            result = await handler(plan.request)
        except BaseException as exc:
            await runs.fail(claim, exc)
            raise
        return _restored(await runs.finish(claim, _record(result)), plan)

    async def _start(
        self, request: ToolCallRequest
    ) -> ToolMessage | Command[Any] | tuple[_Run, Claim | Recorded]:
        """`_plan`, and for a call to run, its claim (on the bridge's loop: one hop for both).
        A call signoff refuses to run is answered, never run."""
        plan = await self._plan(request)
        if not isinstance(plan, _Run):
            return plan
        try:
            claim = await self.runs.claim(plan.key, plan.call, idempotent=plan.idempotent)
        except CallRefused as exc:
            return blocked(request.tool_call, str(exc), plan.key)
        return plan, claim

    async def _plan(self, request: ToolCallRequest) -> _Run | ToolMessage | Command[Any]:
        """What to do with one call: run it (as approved) or the message that answers it."""
        config = request.runtime.config
        thread = thread_of(config)
        tool_call = request.tool_call
        call_id = tool_call["id"] or ""
        turn = turn_of(request.state, call_id)
        [proposed] = self.calls(AIMessage(content="", tool_calls=[tool_call]), config)
        found = (await self.runs.held(thread, [call_id], turn=turn)).get(call_id)
        if found is None:
            # Not judged with its turn (another middleware's call, a state edited by hand):
            # judged now, alone.
            found = (
                await self.runs.judged(
                    [proposed], thread=thread, requested_by=self.requested_by(config), turn=turn
                )
            )[call_id]
        key = self.runs.key(thread, call_id, turn)
        step = await self.runs.step(found, proposed, key=key, schema=tool_schema(request.tool))
        if step.kind == "wait":
            return _DEFERRED
        if step.kind == "answer":
            return _answer(tool_call, step.text, step.ok, key)
        assert step.call is not None  # a call to run is named
        if step.edited is not None:
            request = request.override(tool_call={**tool_call, "args": step.edited})
        return _Run(request=request, key=key, call=step.call, edited=step.edited,
                    idempotent=_idempotent(request))  # fmt: skip

    # -- the one interrupt of a turn -------------------------------------------------------

    def decide_turn(
        self,
        message: AIMessage,
        answered: set[str],
        config: RunnableConfig,
        messages: Sequence[Any] = (),
    ) -> tuple[dict[str, Held], bool]:
        """Interrupt until every held call of the turn without a result is decided (once, for
        all of them; again only if a resume payload left some undecided). Returns how each call
        without a result stands, and whether the node was resumed from an interrupt here.
        `messages` (the graph's) are kept with the pause, for the people who decide."""
        runs, interrupted = self.runs, False
        known = self._known(message, answered, config)
        if known is not None:
            return known, False
        with continuing(self.runs) as continuation:
            while True:
                held, turn, asked = runs.run(
                    self._stand(message, answered, config, continuation, messages)
                )
                if asked is None:
                    return held, interrupted
                runs.run(self.take(_interrupt(asked), turn, config))
                interrupted = True

    async def adecide_turn(
        self,
        message: AIMessage,
        answered: set[str],
        config: RunnableConfig,
        messages: Sequence[Any] = (),
    ) -> tuple[dict[str, Held], bool]:
        """`decide_turn` for async graphs."""
        interrupted = False
        known = self._known(message, answered, config)
        if known is not None:
            return known, False
        async with acontinuing(self.runs) as continuation:
            while True:
                held, turn, asked = await self.runs.bridge.arun(
                    self._stand(message, answered, config, continuation, messages)
                )
                if asked is None:
                    return held, interrupted
                await self.take(_interrupt(asked), turn, config)
                interrupted = True

    async def _stand(
        self,
        message: AIMessage,
        answered: set[str],
        config: RunnableConfig,
        continuation: Continuation,
        messages: Sequence[Any] = (),
    ) -> tuple[dict[str, Held], list[Approval], dict[str, Any] | None]:
        """How the turn's calls without a result stand, their approvals, and — while some are
        undecided — the pause's interrupt value (on the bridge's loop: one hop for all). With
        every call decided the run goes on past the pause: claimed for `continuation`."""
        turn, held = await self._held(message, answered, config)
        pending = [a for a in turn if a.pending]
        if not pending:
            await self._went_on(turn, config, continuation)
            return held, turn, None
        return held, turn, await self.pause(pending, config, messages)

    def _known(
        self, message: AIMessage, answered: set[str], config: RunnableConfig
    ) -> dict[str, Held] | None:
        """How the turn's calls without a result stand, when none was held (`runs.known`)."""
        open_ids = [c["id"] or "" for c in message.tool_calls if c["id"] not in answered]
        return self.runs.known(thread_of(config), open_ids, turn=message.id)

    async def _held(
        self, message: AIMessage, answered: set[str], config: RunnableConfig
    ) -> tuple[list[Approval], dict[str, Held]]:
        """The approvals of the turn's held calls without a result, in the turn's order, and
        how every call without a result stands."""
        open_ids = [c["id"] or "" for c in message.tool_calls if c["id"] not in answered]
        held = await self.runs.held(thread_of(config), open_ids, turn=message.id)
        turn = [held[i].approval for i in open_ids if i in held]
        return [a for a in turn if a is not None], held

    async def pause(
        self, pending: Sequence[Approval], config: RunnableConfig, messages: Sequence[Any] = ()
    ) -> dict[str, Any]:
        """Record the pause on the `pending` calls (with the graph's last `messages`) and make
        the interrupt's value: LangChain's ``HITLRequest`` shape (Agent Inbox and LangGraph
        Studio show it), with signoff's part under ``signoff`` (the pause, its approvals and
        the version of each). Re-entered (a re-run node on its way to the resume value), the
        open pause that asked for them stands, with the calls it listed as they are now."""
        configurable, agent = config.get("configurable") or {}, self.agent_of(config)
        standing = await self.runs.open_pause([a.id for a in pending])
        if standing is not None and {a.id for a in pending} <= set(standing.data.get("asked", [])):
            asked = await self.runs.near(self.runs.store.get_approvals(standing.data["asked"]))
            return interrupt_value(standing.id, asked)
        pause = await self.runs.pause(
            thread=thread_of(config),
            approvals=[a.id for a in pending],
            data={
                "thread_id": thread_of(config),
                "checkpoint_ns": configurable.get("checkpoint_ns", ""),
                "checkpoint": configurable.get("checkpoint_map"),
                "asked": [a.id for a in pending],
                # Who runs the thread, for the resumer to run it as: the calls of the turns
                # after the resume are theirs too (self-approval, grants of theirs).
                "user_id": self.requested_by(config),
            },
            agent=agent,
            conversation=transcript_of(messages, agent),
        )
        return interrupt_value(pause.id, pending)

    async def take(
        self, value: Any, turn: Sequence[Approval], config: RunnableConfig | None = None
    ) -> None:
        """Record the decisions a resume payload carries (LangChain's ``{"decisions": [...]}``
        by position in the interrupt that asked, or ``{approval id: decision}``) as whoever
        sent it — the resuming run's ``configurable.user_id`` —, else as the integration's
        principal (none named: not taken); signoff's own resume value carries none. A decision
        that names the ``version`` it was made on is not taken if its call changed since (the
        node then interrupts again, showing the version now). Malformed payloads are refused,
        nothing taken."""
        if isinstance(value, Mapping) and MARK in value:
            return
        pause = await self.runs.open_pause([a.id for a in turn])
        by_id = {a.id: a for a in turn}
        asked = [by_id[i] for i in (pause.data.get("asked", []) if pause else []) if i in by_id]
        sent = resume_decisions(value, asked or [a for a in turn if a.pending])
        if sent.decisions:
            await self.runs.decide(
                sent.decisions,
                actor=None if config is None else self.requested_by(config),
                versions=sent.versions,
            )

    async def _went_on(
        self, approvals: Sequence[Approval], config: RunnableConfig, continuation: Continuation
    ) -> None:
        """The run goes on past the turn's pause. The step that resumes the checkpoint which
        paused claims the pause: another invocation resuming that checkpoint at once (or late)
        must not go on too — it would call the model again, and run the next turn's calls
        twice. A later step (the middleware's next hook) is on the line that one claim let
        through: the pause is done for good."""
        if not approvals:
            return
        ids = [a.id for a in approvals]
        pause = await self.runs.store.last_pause(ids)
        checkpoint = (config.get("configurable") or {}).get("checkpoint_map")
        if pause is not None and checkpoint and pause.data.get("checkpoint") == checkpoint:
            await continuation.take(pause)
            return
        await self.runs.went_on(ids)


@dataclass(frozen=True, kw_only=True)
class _Run:
    request: ToolCallRequest
    key: str
    call: ToolCall
    edited: dict[str, Any] | None
    idempotent: bool


_DEFERRED: Command[Any] = Command(update={})
"""A held call's placeholder in the tools step: its result comes after the decision."""


# -- messages ------------------------------------------------------------------------------


def message_id(key: str) -> str:
    """The id of the message answering the call under `key`: the same however often the
    answer is given, so LangGraph's message reducer replaces it instead of adding another."""
    return f"signoff-{key[:32]}"


def blocked(tool_call: Mapping[str, Any], reason: str, key: str) -> ToolMessage:
    return ToolMessage(
        id=message_id(key),
        content=blocked_text(reason),
        name=tool_call["name"],
        tool_call_id=tool_call["id"] or "",
        status="error",
    )


def answer(tool_call: Mapping[str, Any], approval: Approval, key: str) -> ToolMessage:
    """The result a decided call that does not run gives the model (`answer_text`)."""
    return _answer(tool_call, *answer_text(approval), key)


def _answer(tool_call: Mapping[str, Any], content: str, ok: bool, key: str) -> ToolMessage:
    return ToolMessage(id=message_id(key), content=content, name=tool_call["name"],
                       tool_call_id=tool_call["id"] or "",
                       status="success" if ok else "error")  # fmt: skip


def _record(result: ToolMessage | Command[Any]) -> dict[str, Any]:
    """A tool's result as the ledger keeps it."""
    if isinstance(result, ToolMessage):
        return {"message": message_to_dict(result)}
    if isinstance(result, Command) and isinstance(result.update, dict) and result.goto == ():
        return {"command": dumpd(result.update)}
    raise ExecutionFailed(
        f"signoff can keep a tool's ToolMessage or Command(update=...) result, not {result!r}"
    )


def _restored(value: Any, plan: _Run) -> ToolMessage | Command[Any]:
    """The recorded result as the tool node returns it, with the call's own message id (and a
    note that a person edited the call)."""
    if "message" in value:
        [message] = messages_from_dict([value["message"]])
        assert isinstance(message, ToolMessage)
        return _marked(message, plan)
    update = load(value["command"])
    messages = [
        _marked(m, plan) if isinstance(m, ToolMessage) else m for m in update.get("messages", [])
    ]
    return Command(update={**update, "messages": messages})


def _marked(message: ToolMessage, plan: _Run) -> ToolMessage:
    content = message.content
    if plan.edited is not None and isinstance(content, str):
        content = edited_text(plan.edited, content)
    return message.model_copy(update={"id": message_id(plan.key), "content": content})


def unknown(tool_call: Mapping[str, Any], key: str, exc: OutcomeUnknown) -> ToolMessage:
    return ToolMessage(id=message_id(key), content=f"signoff: {exc}", name=tool_call["name"],
                       tool_call_id=tool_call["id"] or "", status="error")  # fmt: skip


# -- interrupts and resume payloads --------------------------------------------------------


def _interrupt(asked: dict[str, Any]) -> Any:
    """Interrupt the node with `asked`; on resume, the payload (checked by LangGraph first)."""
    return interrupt(asked, response_schema=response_schema(len(asked["action_requests"])))


# -- small things --------------------------------------------------------------------------


def turn_of(state: Any, call_id: str) -> str | None:
    """The id of the AI message (the model response) that made the call `call_id`: the newest
    one in the state that did — a provider may number every response's calls ``call_0``."""
    messages = state.get("messages") if isinstance(state, dict) else state
    if not isinstance(messages, list):
        messages = getattr(state, "messages", None) or []
    for message in reversed(messages):
        if isinstance(message, AIMessage) and any(c["id"] == call_id for c in message.tool_calls):
            return message.id
    return None


def invoker(config: RunnableConfig | None) -> str | None:
    """Who invokes the graph, as its config says: the user LangGraph Platform authenticated,
    else ``configurable.user_id``."""
    configurable = (config or {}).get("configurable") or {}
    for key in ("langgraph_auth_user_id", "user_id"):
        found = configurable.get(key)
        if isinstance(found, str) and found:
            return found
    return None


def thread_of(config: RunnableConfig) -> str:
    thread = (config.get("configurable") or {}).get("thread_id")
    if thread is None:
        raise InvalidDecisionError(
            "signoff holds calls per thread: run the graph with a checkpointer and "
            "config={'configurable': {'thread_id': ...}}"
        )
    return str(thread)


def tool_schema(tool: Any) -> dict[str, Any] | None:
    """The JSON schema of a LangChain tool's arguments, as the model sees them."""
    if tool is None:
        return None
    try:
        schema = tool.tool_call_schema
        if isinstance(schema, dict):
            return schema
        return dict(schema.model_json_schema())
    except Exception:  # a tool without a usable schema: edits are checked by the policy only
        return None


def _idempotent(request: ToolCallRequest) -> bool:
    metadata = getattr(request.tool, "metadata", None) or {}
    return bool(metadata.get("idempotent") or metadata.get("read_only"))


# -- the drop-in tool node -----------------------------------------------------------------


class ApprovalToolNode(ToolNode):
    """`ToolNode` with signoff in front: seed 002's approval node between agent and tools.

    Judges all calls of the last AI message; runs the allowed ones (once, through the ledger);
    answers the denied ones; holds the asked ones and interrupts once for all of them. On
    resume the node re-runs: nothing runs twice, and decided calls run (approved, edited) or
    are answered (responded, rejected)."""

    def __init__(
        self,
        tools: Sequence[Any],
        *,
        runs: ExternalRuns,
        agent: str | None = None,
        requested_by: str | Callable[[RunnableConfig], str | None] | None = None,
        name: str = "tools",
        handle_tool_errors: Any = True,
    ) -> None:
        self.signoff = LangGraphGate(runs, agent=agent, requested_by=requested_by)
        super().__init__(
            list(tools),
            name=name,
            handle_tool_errors=handle_tool_errors,
            wrap_tool_call=self._wrap,
            awrap_tool_call=self._awrap,
        )
        for tool in self.tools_by_name.values():
            schema = tool_schema(tool)
            if schema is not None:
                runs.gate.register_schemas({tool.name: schema}, agent=agent)

    def _wrap(self, request: ToolCallRequest, handler: Handler) -> ToolMessage | Command[Any]:
        try:
            return self.signoff.execute(request, handler)
        except OutcomeUnknown as exc:
            return unknown(request.tool_call, self.signoff.key_of(request), exc)

    async def _awrap(
        self, request: ToolCallRequest, handler: AsyncHandler
    ) -> ToolMessage | Command[Any]:
        try:
            return await self.signoff.aexecute(request, handler)
        except OutcomeUnknown as exc:
            return unknown(request.tool_call, self.signoff.key_of(request), exc)

    def _func(self, input: Any, config: RunnableConfig, runtime: Any) -> Any:
        message, gate = _last_ai(input), self.signoff
        if message is not None:
            gate.runs.run_near(gate.judge(message, config))
        # The pause this run goes on past stays claimed while the decided calls run.
        with continuing(gate.runs):
            # Allowed calls run (and decided ones, on a resume); held ones wait for the
            # interrupt, and run once decided: by the payload, or meanwhile by anyone.
            output = super()._func(input, config, runtime)
            if message is not None and (
                gate.decide_turn(message, set(), config, _messages(input))[1] or _waited(output)
            ):
                output = super()._func(input, config, runtime)
        return _settled(output)

    async def _afunc(self, input: Any, config: RunnableConfig, runtime: Any) -> Any:
        message, gate = _last_ai(input), self.signoff
        if message is not None:
            await gate.judge(message, config)
        async with acontinuing(gate.runs):
            output = await super()._afunc(input, config, runtime)
            if message is not None and (
                (await gate.adecide_turn(message, set(), config, _messages(input)))[1]
                or _waited(output)
            ):
                output = await super()._afunc(input, config, runtime)
        return _settled(output)


def _messages(input: Any) -> list[Any]:
    """The graph's messages in a tool node's input."""
    messages = input.get("messages") if isinstance(input, dict) else input
    if not isinstance(messages, list):
        messages = getattr(input, "messages", None) or []
    return list(messages)


def _last_ai(input: Any) -> AIMessage | None:
    for message in reversed(_messages(input)):
        if isinstance(message, AIMessage):
            return message if message.tool_calls else None
    return None


def _waited(output: Any) -> bool:
    """Whether a tools step left a held call waiting (its placeholder in the output)."""
    return isinstance(output, list) and any(o is _DEFERRED for o in output)


def _settled(output: Any) -> Any:
    """The node's output without held calls' placeholders (none are left once decided)."""
    if isinstance(output, list):
        return [o for o in output if o is not _DEFERRED]
    return output


# -- a call inside any node ----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CallResult:
    """What became of a call made with `gated`."""

    status: Literal["ran", "responded", "rejected", "blocked", "expired", "cancelled"]
    value: Any = None
    """The function's result when it ran (its recorded result on a re-run)."""
    message: str = ""
    """The person's response, the rejection's reason, or why the call was blocked."""
    args: dict[str, Any] | None = None
    """The arguments it ran with (a person's edit included)."""


def gated(
    runs: ExternalRuns,
    name: str,
    args: dict[str, Any],
    run: Callable[[dict[str, Any]], Any],
    *,
    id: str,
    agent: str | None = None,
    idempotent: bool = False,
) -> CallResult:
    """Call `run(args)` inside a LangGraph node, behind signoff: judged by the policy as tool
    `name`; held calls interrupt the node, and on the re-run after the decision it runs with
    the approved (or edited) arguments — exactly once however often the node re-runs. `id`
    names the call within its node (a node making several calls gives each its own). The
    result must be JSON. Raises `OutcomeUnknown` when a worker died inside the call."""
    config = get_config()
    configurable = config.get("configurable") or {}
    call_id = f"{configurable.get('checkpoint_ns', '')}|{id}"
    call = ToolCall(id=call_id, name=name, args=args, agent=agent)
    thread = thread_of(config)
    while True:
        requested_by = configurable.get("user_id")
        found = runs.run_near(runs.judged([call], thread=thread, requested_by=requested_by))[
            call_id
        ]
        record, approval = found.record, found.approval
        if record.kind == "block":
            return CallResult(status="blocked", message=record.reason)
        if approval is not None and approval.pending:
            gate = LangGraphGate(runs, agent=agent)
            value = _interrupt(runs.run(gate.pause([approval], config)))
            runs.run(gate.take(value, [approval], config))
            continue
        if approval is not None and approval.status not in ("approved", "edited"):
            decision = approval.decision
            text = getattr(decision, "content", None) or getattr(decision, "reason", "")
            return CallResult(status=approval.status, message=text)  # type: ignore[arg-type]
        final = approval.call.args if approval is not None else args
        try:
            claim = runs.run_near(
                runs.claim(
                    runs.key(thread, call_id), replace(call, args=final), idempotent=idempotent
                )
            )
        except CallRefused as exc:
            return CallResult(status="blocked", message=str(exc))
        if isinstance(claim, Recorded):
            return CallResult(status="ran", value=claim.value, args=final)
        try:
            value = run(final)
        except BaseException as exc:
            runs.run_near(runs.fail(claim, exc))
            raise
        value = runs.run_near(runs.finish(claim, value))
        if approval is not None:
            runs.run_near(runs.went_on([approval.id]))
        return CallResult(status="ran", value=value, args=final)


# -- resuming from any channel -------------------------------------------------------------


def resumer(
    graph: Any,
    runs: ExternalRuns,
    *,
    use_async: bool | None = None,
    on_resumed: Callable[[Resumed], Any] | None = None,
) -> Resumer:
    """A `Resumer` that resumes `graph`'s paused threads once every held call of a pause is
    decided — in the web inbox, the API, the terminal, Slack — with no code of the user's:
    ``resumer(graph, runs).start()`` next to the app, or ``await ....work()`` in a task.
    Synchronous graphs (a sync checkpointer: ``SqliteSaver``, ``PostgresSaver``) resume on a
    worker thread; async ones (``AsyncSqliteSaver``, ``AsyncPostgresSaver``) on the loop. The
    graph's state each resume ends with (what ``invoke`` returns) reaches `on_resumed`, and
    ``wait(thread_id)`` / ``await resumed(thread_id)``."""
    if use_async is None:
        use_async = type(getattr(graph, "checkpointer", None)).__name__.startswith("Async")

    async def resume(pause: Any) -> Resumed | None:
        user = pause.data.get("user_id")
        configurable = {"thread_id": pause.thread_id} | ({"user_id": user} if user else {})
        config: RunnableConfig = {"configurable": configurable}
        if use_async:
            state = await graph.aget_state(config, subgraphs=True)
        else:
            state = await asyncio.to_thread(graph.get_state, config, subgraphs=True)
        ids = [i.id for i in _interrupts(state) if _pause_of(i.value) == pause.id]
        if not ids:
            return None  # the thread went on past this pause already
        command: Command[Any] = Command(resume={i: {MARK: {"pause": pause.id}} for i in ids})
        # The invocation goes on under this resumer's claim of the pause (its nodes see this
        # context): another invocation resuming the same checkpoint finds the pause taken.
        token = RESUMING.set((pause.id, pause.lease_owner or ""))
        try:
            if use_async:
                output = await graph.ainvoke(command, config)
            else:
                output = await asyncio.to_thread(graph.invoke, command, config)
        finally:
            RESUMING.reset(token)
        return Resumed(pause.thread_id, output)

    return Resumer(runs, resume, on_resumed=on_resumed)


def _interrupts(state: Any) -> list[Any]:
    found = list(getattr(state, "interrupts", ()) or ())
    for task in getattr(state, "tasks", ()) or ():
        found += list(getattr(task, "interrupts", ()) or ())
        if getattr(task, "state", None) is not None and not isinstance(task.state, dict):
            found += _interrupts(task.state)
    unique: dict[str, Any] = {}
    for item in found:
        unique.setdefault(item.id, item)
    return list(unique.values())


def _pause_of(value: Any) -> str | None:
    if isinstance(value, Mapping) and isinstance(value.get(MARK), Mapping):
        pause = value[MARK].get("pause")
        return pause if isinstance(pause, str) else None
    return None
