"""Agno agents behind signoff (DCAF's runtime): the agent as it is, run through `SignoffAgent`.

    runs = connect("policy.yaml", origin="agno", database="sqlite:///signoff.db")
    agent = SignoffAgent(Agent(model=..., tools=[...], db=SqliteDb(db_file="agno.db")), runs)
    out = await agent.run("Delete the nginx-123 pod", session_id="ops-1")
    # out.is_paused while calls wait for a person: decided in the inbox, the API, the terminal
    out = await agent.resume("ops-1")     # or agent.resumer().start() next to the app

signoff's policy judges every tool call of the agent with its arguments — its own tools and its
`MCPTools` alike. A tool the policy may ask about is marked ``requires_confirmation`` for the
call, so Agno pauses the run there and keeps it in the agent's `db`; a tool it always allows or
always denies is not. At a pause signoff settles what it can itself — an allowed call goes on,
a denied one is answered with the reason — and holds only the asked ones as approvals in its
store. The run is continued only once every call of the pause is decided (Agno would reject an
undecided one silently), and by one process at a time. Every call runs through signoff's ledger,
exactly once, reading the decision **from signoff's store**, whoever confirmed it to Agno: an
approval runs the call, an edit runs it with the edited arguments (checked against the tool's
schema and the policy), a response is the tool's result, a rejection's reason reaches the model.

`SignoffAgent.dcaf` takes DCAF's wire format: decisions as ``data.tool_calls[{id, execute,
rejection_reason}]``, answered with ``has_pending_approvals``, ``is_complete`` and
``pending_requirements[{requirement_id, tool_name, tool_args}]``. signoff adds the held call's
``approval_id`` and ``version`` to each call it lists, and takes a decision's ``version`` back: a
decision made on a version that changed since is not taken.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from signoff.errors import ConflictError, ForbiddenError, MissingExtraError, SignoffError
from signoff.gate import transcript
from signoff.gate.answers import blocked_text, edited_text
from signoff.gate.external import ExternalRuns, Pause, Resumed, Resumer, connect
from signoff.integrations._calls import Schemas, Unrun, run_once, step_of
from signoff.integrations._threads import Hold, busy, now
from signoff.types import Approval, Approve, Decision, Reject, ToolCall

os.environ.setdefault("AGNO_TELEMETRY", "false")  # signoff's users opt in to Agno's, not we

try:
    from agno.agent import Agent
    from agno.models.base import Model
    from agno.models.response import ToolExecution
    from agno.run.agent import RunOutput
    from agno.run.base import RunStatus
    from agno.run.requirement import RunRequirement
    from agno.tools.function import Function, FunctionCall, ToolResult
    from pydantic_core import to_jsonable_python
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise MissingExtraError("signoff.integrations.agno", "agno") from exc

__all__ = ["ORIGIN", "DcafRequest", "SignoffAgent", "connect", "dcaf_answer"]

ORIGIN = "agno"

_MARK = "_signoff_agent"
"""The attribute of a guarded model naming the `SignoffAgent` that guards it."""

Answer = tuple[Literal["confirm", "reject"], str | None]

_REFUSED_TOOLKITS = {
    "CodeMode": "its code calls the toolkits it wraps without the model, unjudged",
    "UserControlFlowTools": "Agno pauses its calls for a user's input, which signoff cannot judge",
    "UserFeedbackTools": "Agno pauses its calls for a user's answer, which signoff cannot judge",
}
"""Toolkits whose calls would run, or wait, around signoff's guard."""


class SignoffAgent:
    """An Agno `Agent` with signoff's policy, approvals, grants, ledger and audit."""

    def __init__(
        self,
        agent: Agent,
        runs: ExternalRuns,
        *,
        path: str | None = None,
        requested_by: str | None = None,
        idempotent: Iterable[str] = (),
        servers: Mapping[str, Any] | None = None,
    ) -> None:
        """`runs` from `connect(policy, origin="agno", database=...)`; `agent` an Agno `Agent`
        with a `Model` and a `db` (its paused runs are kept there, for any process to continue);
        `path` the agent path the policy's ``agents:`` section judges its calls by (default:
        the agent's name); `requested_by` who starts its sessions (default: the run's user);
        `idempotent` the tools safe to run again when a worker died inside them; `servers`
        names its `MCPTools` (``{"kubernetes": mcp_tools}``), so that the policy's ``servers:``
        section judges their tools by the MCP tool's own name.

        The agent's model is guarded in place: a run of the agent that does not go through
        `SignoffAgent` still runs no call the policy does not allow — it stops where one waits."""
        if not isinstance(agent.model, Model):
            raise SignoffError(
                "an Agno agent behind signoff needs a Model instance (agent.model), not "
                f"{type(agent.model).__name__}"
            )
        if agent.db is None:
            raise SignoffError(
                "an Agno agent behind signoff needs a db (Agent(db=SqliteDb(...)) or "
                "PostgresDb): its paused runs are kept there, for any process to continue"
            )
        for tool in agent.tools if isinstance(agent.tools, list) else []:
            if isinstance(tool, dict):
                raise SignoffError(
                    "signoff cannot judge a tool the model's provider runs (a dict tool): "
                    f"{str(tool)[:80]}"
                )
            if type(tool).__name__ in _REFUSED_TOOLKITS:
                raise SignoffError(
                    f"{type(tool).__name__} is not supported behind signoff: "
                    f"{_REFUSED_TOOLKITS[type(tool).__name__]}"
                )
        fallback = agent.fallback_config
        fallbacks = (
            [*fallback.on_error, *fallback.on_rate_limit, *fallback.on_context_overflow]
            if fallback is not None
            else []
        )
        if any(not isinstance(m, Model) for m in fallbacks):
            raise SignoffError(
                "an Agno agent behind signoff needs Model instances as its fallback models "
                "(each is guarded as its model is), not names"
            )
        self.agent = agent
        self.runs = runs
        self.path = path or agent.name
        self.requested_by = requested_by
        self.idempotent = frozenset(idempotent)
        self._servers = dict(servers or {})
        self._schemas = Schemas(runs)
        for model in [agent.model, *fallbacks]:
            assert isinstance(model, Model)  # checked above
            _guard(model, self)

    # -- running ---------------------------------------------------------------------------

    async def run(
        self, input: Any = None, *, session_id: str, user_id: str | None = None, **kwargs: Any
    ) -> RunOutput:
        """Run the agent on `session_id` (`Agent.arun`; `kwargs` go to it). Ends completed, or
        paused (`RunOutput.is_paused`) while calls wait for a person: the session takes no new
        input until it is resumed."""
        entries = await self._entries(session_id)
        if busy(entries, now(self.runs)):
            raise ConflictError(f"session {session_id!r} is being resumed")
        if await self._paused(session_id) is not None:
            raise ConflictError(
                f"session {session_id!r} waits on calls a person has not all answered: resume "
                "it (SignoffAgent.resume) once they are decided"
            )
        out = await self.agent.arun(input, session_id=session_id, user_id=user_id, **kwargs)
        assert isinstance(out, RunOutput)  # not streamed
        if not out.is_paused:
            return out
        _answers, waiting, _decided = await self._settle(out, session_id, user_id)
        if waiting is None:  # nothing waits on a person: the run goes on at once
            return await self.resume(session_id, run_id=out.run_id, **kwargs) or out
        if waiting:
            await self._pause(out, session_id, user_id, waiting)
        return out

    async def resume(
        self, session_id: str, *, run_id: str | None = None, **kwargs: Any
    ) -> RunOutput | None:
        """Continue the session's paused run (or run `run_id`) with the decisions signoff's
        store holds for its calls, once every one is decided — else the run as it stands, still
        paused. None when nothing waits, or another process is continuing it."""
        # The session's mark is renewed while this process continues it, so a continue longer
        # than the lease is not taken over, and ended on every path.
        hold = await Hold.take(self.runs, ORIGIN, session_id, await self._entries(session_id))
        if hold is None:
            return None
        decided: list[str] = []
        try:
            out = await self._paused(session_id, run_id)  # read after the mark: still paused?
            while out is not None and out.is_paused:
                user_id = out.user_id
                answers, waiting, now_decided = await self._settle(out, session_id, user_id)
                if waiting is not None:
                    if waiting:
                        await self._pause(out, session_id, user_id, waiting)
                    break
                decided += now_decided
                for requirement in out.active_requirements:
                    verb, note = answers[requirement.id]
                    if verb == "confirm":
                        requirement.confirm()  # type: ignore[no-untyped-call]
                    else:
                        requirement.reject(note=note)
                out = await self.agent.acontinue_run(
                    run_id=out.run_id,
                    session_id=session_id,
                    user_id=user_id,
                    requirements=out.requirements,
                    **kwargs,
                )
        finally:
            await hold.release()
        if decided:
            await self.runs.went_on(decided)
        return out

    def run_sync(
        self, input: Any = None, *, session_id: str, user_id: str | None = None, **kwargs: Any
    ) -> RunOutput:
        """`run` from synchronous code (not inside a running event loop)."""
        return asyncio.run(self.run(input, session_id=session_id, user_id=user_id, **kwargs))

    def resume_sync(self, session_id: str, **kwargs: Any) -> RunOutput | None:
        """`resume` from synchronous code (not inside a running event loop)."""
        return asyncio.run(self.resume(session_id, **kwargs))

    def resumer(self, *, on_resumed: Callable[[Resumed], Any] | None = None) -> Resumer:
        """A `Resumer` that continues this agent's paused runs once every call a pause waits on
        is decided — in any channel, with no code of the user's: ``.start()`` it next to the
        app, or ``await ....work()`` in a task. Each continued run's `RunOutput` reaches
        `on_resumed`, and ``wait(session_id)`` / ``await resumed(session_id)``."""

        async def go_on(pause: Pause) -> Resumed | None:
            thread, run_id = pause.thread_id, pause.data.get("run_id")
            out = await self.resume(thread, run_id=run_id)
            if out is None and await self._paused(thread, run_id):
                # Another process holds the session: the pause is tried again (it may have
                # read a call as undecided before its decision came).
                raise ConflictError(f"session {thread!r} is being continued elsewhere")
            return None if out is None else Resumed(thread, out)

        return Resumer(self.runs, go_on, on_resumed=on_resumed)

    # -- DCAF's wire format ----------------------------------------------------------------

    async def dcaf(
        self,
        body: Mapping[str, Any] | DcafRequest,
        *,
        session_id: str,
        user_id: str | None = None,
        actor: str | None = None,
        roles: Iterable[str] | None = None,
    ) -> dict[str, Any]:
        """Answer a DCAF client's request on `session_id`: while the session waits, the last
        message's ``data.tool_calls`` decide its calls (``execute: true`` approves; ``false``
        with a ``rejection_reason`` rejects; anything else leaves the call waiting), taken as
        `actor` with `roles` — the person the app authenticated (`ForbiddenError` without
        one) — through the same rules as any channel; else the last user message starts a
        run; decisions that find nothing waiting start nothing. A decision that names the
        ``version`` of its call it was made on (as the last answer listed it) is not taken if
        the call changed since: the answer lists it again, as it is now. Answers with DCAF's
        ``AgentResponse`` (`dcaf_answer`). Raises pydantic's `ValidationError` for a body
        that is not DCAF's (a 422 in a route)."""
        request = body if isinstance(body, DcafRequest) else DcafRequest.model_validate(body)
        wanted = request.decisions()
        if wanted and actor is None:
            raise ForbiddenError("DCAF decisions are taken as a person: give the actor")
        paused = await self._paused(session_id)
        if paused is None:
            if wanted:  # decisions sent again, or late: answer with the run as it stands
                last = await self._last(session_id)
                if last is not None:
                    return await self._dcaf_answer(last, session_id)
            prompt = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
            # The run's requester is its user, else the person the app authenticated: a rule
            # that forbids self-approval holds her to it when she decides here later.
            requester = user_id if user_id is not None else actor
            out = await self.run(prompt, session_id=session_id, user_id=requester)
            return await self._dcaf_answer(out, session_id)
        by_requirement = {r.id: r for r in paused.active_requirements}
        sent_on = request.versions()
        decisions: dict[str, Decision] = {}
        versions: dict[str, int] = {}
        for rid, decision in wanted.items():
            requirement = by_requirement.get(rid)
            execution = requirement.tool_execution if requirement is not None else None
            call_id = execution.tool_call_id if execution is not None else None
            if not call_id:
                continue
            turn = _turn(paused.messages, call_id)
            found = (await self.runs.held(session_id, [call_id], turn=turn)).get(call_id)
            if found is not None and found.approval is not None and found.approval.pending:
                decisions[found.approval.id] = decision
                if rid in sent_on:
                    versions[found.approval.id] = sent_on[rid]
        if decisions:
            await self.runs.decide(decisions, actor=actor, roles=roles or (), versions=versions)
        resumed = await self.resume(session_id, run_id=paused.run_id)
        if resumed is None:  # another process continues it: answer with the run as it stands
            latest = await self._run_output(session_id, paused.run_id) if paused.run_id else None
            resumed = latest or paused
        return await self._dcaf_answer(resumed, session_id)

    async def _dcaf_answer(self, out: RunOutput, session_id: str) -> dict[str, Any]:
        """`dcaf_answer`, listing only the calls that wait on a person, as they stand now."""
        if not out.is_paused:
            return dcaf_answer(out, session_id)
        _answers, waiting, _decided = await self._settle(out, session_id, out.user_id)
        held = waiting or {}
        return dcaf_answer(out, session_id, waiting=held, approvals=held)

    # -- pauses ----------------------------------------------------------------------------

    async def _settle(
        self, out: RunOutput, session_id: str, user_id: str | None
    ) -> tuple[dict[str, Answer], dict[str, Approval] | None, list[str]]:
        """Judge the calls the paused run waits on (or read how they were decided): what to
        tell Agno of each requirement, by its id; the approvals still undecided, by
        requirement id — None when none is and the run can go on, empty when it waits on
        something that is not signoff's (a user's input: answered through Agno); and the
        approvals decided."""
        pending = out.active_requirements
        foreign = [r for r in pending if not r.needs_confirmation]
        asked = [r for r in pending if r.needs_confirmation and r.tool_execution is not None]
        answers: dict[str, Answer] = {
            r.id: ("reject", blocked_text("a call without an id is not run"))
            for r in asked
            if not (out.run_id and _execution(r).tool_call_id)  # it cannot be kept once
        }
        requested_by = self.requested_by or user_id
        by_turn: dict[str | None, dict[str, ToolCall]] = {}
        for r in asked:
            if r.id not in answers:
                call = self._call(_execution(r))
                by_turn.setdefault(_turn(out.messages, call.id), {})[r.id] = call
        waiting: dict[str, Approval] = {}
        decided: list[str] = []
        for turn, calls in by_turn.items():
            held = await self.runs.judged(
                list(calls.values()), thread=session_id, requested_by=requested_by, turn=turn
            )
            for rid, call in calls.items():
                key = self.runs.key(session_id, call.id, turn)
                step = await self.runs.step(held[call.id], call, key=key)
                if step.approval is not None and not step.approval.pending:
                    decided.append(step.approval.id)
                if step.kind == "wait":
                    assert step.approval is not None  # a call waits on its approval
                    waiting[rid] = step.approval
                elif step.kind == "run" or step.ok:
                    answers[rid] = ("confirm", None)  # the call itself reads what to do
                else:
                    answers[rid] = ("reject", step.text)
        if foreign:
            return answers, waiting, decided
        return answers, waiting or None, decided

    async def _pause(
        self, out: RunOutput, session_id: str, user_id: str | None, waiting: Mapping[str, Approval]
    ) -> None:
        await self.runs.pause(
            thread=session_id,
            approvals=[a.id for a in waiting.values()],
            data={"session_id": session_id, "run_id": out.run_id, "user_id": user_id},
            agent=self.path,
            conversation=_transcript(out.messages or [], self.path),
        )

    async def _paused(self, session_id: str, run_id: str | None = None) -> RunOutput | None:
        """The session's paused run (`run_id`, or its last run), read from the agent's db."""
        out = await (self._run_output(session_id, run_id) if run_id else self._last(session_id))
        return out if out is not None and out.status == RunStatus.paused else None

    async def _last(self, session_id: str) -> RunOutput | None:
        session = await self.agent.aget_session(session_id=session_id)
        runs = (session.runs or []) if session is not None else []
        return runs[-1] if runs and isinstance(runs[-1], RunOutput) else None

    async def _run_output(self, session_id: str, run_id: str) -> RunOutput | None:
        return await self.agent.aget_run_output(run_id=run_id, session_id=session_id)

    async def _entries(self, session_id: str) -> list[str]:
        return await self.runs.near(self.runs.store.history(ORIGIN, session_id))

    # -- one call --------------------------------------------------------------------------

    def guarded(self, call: FunctionCall, turn: str | None = None) -> FunctionCall:
        """The call with a function of its own: confirmation asked where the policy may ask,
        and an entrypoint that judges it and runs it once (`execute`). `turn` is the id of the
        assistant message that made the call, when known (else read from the run)."""
        function = call.function
        name, server = self._named(function.name)
        fixed = self.runs.gate.engine.fixed_kind(name, server=server, agent=self.path)
        original = function.entrypoint
        if original is None:
            return call
        self._register(function, name)
        mine = function.model_copy()
        mine.requires_confirmation = fixed not in ("allow", "deny")
        mine.cache_results = False  # a cached result would be served unjudged
        if function.requires_user_input or function.external_execution:
            # Agno would hand these to the caller to answer or to run: signoff cannot judge
            # what runs then, so they run nowhere.
            mine.requires_user_input = mine.external_execution = False
            mine.requires_confirmation = False
            original = _refused
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # Agno's synchronous run: no loop in this thread

            @functools.wraps(original)
            def entry_sync(*args: Any, **kwargs: Any) -> Any:
                return asyncio.run(self.execute(call, original, args, kwargs, turn))

            mine.entrypoint = entry_sync
        else:

            @functools.wraps(original)
            async def entry(*args: Any, **kwargs: Any) -> Any:
                return await self.execute(call, original, args, kwargs, turn)

            mine.entrypoint = entry
        call.function = mine
        return call

    async def execute(
        self,
        call: FunctionCall,
        original: Callable[..., Any],
        args: Sequence[Any],
        kwargs: dict[str, Any],
        turn: str | None = None,
    ) -> Any:
        """Judge one call (or read how it was decided) and run it once, or answer it."""
        context = call.function._run_context
        thread = context.session_id if context is not None else None
        run_id = context.run_id if context is not None else None
        if thread is None or not run_id or not call.call_id:
            return blocked_text("a call outside a session's run, or without an id, is not run")
        if turn is None:  # a confirmed call Agno continues: its message is in the saved run
            saved = await self._run_output(thread, run_id)
            turn = _turn(saved.messages if saved is not None else None, call.call_id)
        proposed = self._call_of(call.function.name, call.call_id, call.arguments or {})
        schema = self._register(call.function, proposed.name)
        requested_by = self.requested_by or (context.user_id if context is not None else None)
        step = await step_of(
            self.runs, proposed, thread=thread, turn=turn, requested_by=requested_by, schema=schema
        )
        if step.kind == "wait":
            return "signoff: this call waits for a person's decision; it did not run."
        if step.kind == "answer":
            return step.text
        assert step.call is not None  # a call to run is named
        if step.edited is None:
            return await self._once(step.key, step.call, original, args, kwargs)
        edit = step.edited
        injected = {k: v for k, v in kwargs.items() if k not in proposed.args}
        value = await self._once(step.key, step.call, original, args, {**injected, **edit})
        if isinstance(value, ToolResult):
            return value.model_copy(update={"content": edited_text(edit, value.content)})
        return edited_text(edit, value) if isinstance(value, str) else value

    async def _once(
        self,
        key: str,
        call: ToolCall,
        original: Callable[..., Any],
        args: Sequence[Any],
        kwargs: dict[str, Any],
    ) -> Any:
        async def run() -> Any:
            value = await _outcome(original(*args, **kwargs))
            kind = "tool_result" if isinstance(value, ToolResult) else "result"
            return {kind: to_jsonable_python(value, fallback=str)}

        idempotent = call.name in self.idempotent
        value = await run_once(self.runs, key, call, run, idempotent=idempotent)
        if isinstance(value, Unrun):
            return value.text
        if "tool_result" in value:  # an MCP tool's, or one with media: kept as Agno's own
            return ToolResult.model_validate(value["tool_result"])
        return value["result"]

    def _call(self, execution: ToolExecution) -> ToolCall:
        return self._call_of(
            execution.tool_name or "", execution.tool_call_id or "", execution.tool_args or {}
        )

    def _call_of(self, tool: str, call_id: str, args: dict[str, Any]) -> ToolCall:
        name, server = self._named(tool)
        return ToolCall(id=call_id, name=name, args=args, server=server, agent=self.path)

    def _named(self, tool: str) -> tuple[str, str | None]:
        """The tool's name and server as the policy judges it: an MCP tool of a named server
        by its own name, any other by Agno's."""
        for server, toolkit in self._servers.items():
            if tool in (getattr(toolkit, "functions", None) or {}):
                prefix = getattr(toolkit, "tool_name_prefix", None)
                own = tool.removeprefix(f"{prefix}_") if prefix else tool
                return own, server
        return tool, None

    def _register(self, function: Function, name: str) -> dict[str, Any] | None:
        """Edits of the agent's calls are checked against its tools' schemas when decided (and
        again before an edited call runs: it may have been decided elsewhere)."""
        schema = function.parameters if isinstance(function.parameters, dict) else None
        self._schemas.register(name, schema, agent=self.path)
        return schema


# -- DCAF --------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", str_max_length=65_536)


class DcafToolCall(_Strict):
    id: str = Field(max_length=256)
    execute: bool = False
    rejection_reason: str | None = Field(default=None, max_length=4_096)
    version: int | None = Field(default=None, ge=1, strict=True)
    """signoff's: the version of the call the decision was made on (as the answer listed it)."""

    def decision(self) -> Decision | None:
        """``execute: true`` approves; ``false`` with a reason rejects; else none."""
        if self.execute:
            return Approve()
        if self.rejection_reason:
            return Reject(reason=self.rejection_reason)
        return None


class DcafData(_Strict):
    tool_calls: list[DcafToolCall] = Field(default_factory=list, max_length=256)


class DcafMessage(_Strict):
    role: str = Field(default="user", max_length=32)
    content: str = ""
    data: DcafData | None = None


class DcafRequest(_Strict):
    """A DCAF client's request: its messages, the last of which may carry decisions."""

    messages: list[DcafMessage] = Field(min_length=1, max_length=1_024)

    def decisions(self) -> dict[str, Decision]:
        """The decisions of the newest message that carries any, by requirement id."""
        return {call.id: decision for call, decision in self._decided()}

    def versions(self) -> dict[str, int]:
        """The version each of those decisions was made on, where it names one, by requirement
        id."""
        return {call.id: call.version for call, _ in self._decided() if call.version is not None}

    def _decided(self) -> list[tuple[DcafToolCall, Decision]]:
        for message in reversed(self.messages):
            calls = message.data.tool_calls if message.data is not None else []
            found = [(call, decision) for call in calls
                     if (decision := call.decision()) is not None]  # fmt: skip
            if found:
                return found
        return []


def dcaf_answer(
    out: RunOutput,
    conversation_id: str,
    *,
    waiting: Collection[str] | None = None,
    approvals: Mapping[str, Approval] | None = None,
) -> dict[str, Any]:
    """A run as DCAF's ``AgentResponse``: its text, the calls that wait (``data.tool_calls``
    with ``execute: false``, and ``pending_requirements``; those of the requirement ids
    `waiting`, or every one that asks for a confirmation), whether any waits, whether it is
    complete. A call held under one of `approvals` (by requirement id) is listed as it stands
    there — its arguments as edited, if they were — with the approval's id and version: what
    a decision on it sends back."""
    asked = [
        r
        for r in out.active_requirements
        if r.needs_confirmation
        and r.tool_execution is not None
        and (waiting is None or r.id in waiting)
    ]
    pending = [_pending(r, (approvals or {}).get(r.id)) for r in asked]
    has_pending = out.is_paused
    return {
        "conversation_id": conversation_id,
        "text": out.content if isinstance(out.content, str) else None,
        "data": {
            "tool_calls": [
                {
                    "id": p["requirement_id"],
                    "name": p["tool_name"],
                    "input": p["tool_args"],
                    "execute": False,
                    **{k: p[k] for k in ("approval_id", "version") if k in p},
                }
                for p in pending
            ]
        },
        "has_pending_approvals": has_pending,
        "is_complete": out.status == RunStatus.completed and not has_pending,
        "pending_requirements": pending,
    }


def _pending(requirement: RunRequirement, approval: Approval | None) -> dict[str, Any]:
    """One waiting call as DCAF lists it (as signoff holds it, where it does)."""
    execution = _execution(requirement)
    listed: dict[str, Any] = {
        "requirement_id": requirement.id,
        "tool_name": execution.tool_name,
        "tool_args": execution.tool_args or {},
    }
    if approval is not None:
        listed.update(tool_args=approval.call.args, approval_id=approval.id,
                      version=approval.version)  # fmt: skip
    return listed


# -- small things ------------------------------------------------------------------------------


def _guard(model: Model, signoff: SignoffAgent) -> None:
    """Have `model` hand every call it runs — proposed in a turn, or confirmed on a continue —
    to `signoff` first (on this instance: Agno asks the model for both)."""
    cls = type(model)

    def calls(assistant_message: Any, messages: Any, functions: Any = None) -> list[FunctionCall]:
        found = cls.get_function_calls_to_run(model, assistant_message, messages, functions)
        turn = getattr(assistant_message, "id", None)
        return [getattr(model, _MARK).guarded(c, turn) for c in found]

    def confirmed(tool_execution: ToolExecution, functions: Any = None) -> FunctionCall:
        call = cls.get_function_call_to_run_from_tool_execution(model, tool_execution, functions)
        return getattr(model, _MARK).guarded(call)  # type: ignore[no-any-return]

    setattr(model, _MARK, signoff)
    # A method of this instance only (mypy would refuse assigning to a method).
    setattr(model, "get_function_calls_to_run", calls)  # noqa: B010
    setattr(model, "get_function_call_to_run_from_tool_execution", confirmed)  # noqa: B010


def _turn(messages: Sequence[Any] | None, call_id: str) -> str | None:
    """The id of the assistant message — the model response — that made the call `call_id`:
    the newest of the run's that did. A provider that numbers each response's calls
    (LiteLLM's ``call_0``) gives the same id again in the next response of the same run, and
    in the next run; a message's id is Agno's own (a uuid), kept with the paused run, so the
    same response continued later is the same turn."""
    for message in reversed(messages or []):
        if message.role == "assistant" and any(
            (c or {}).get("id") == call_id for c in message.tool_calls or []
        ):
            return str(message.id)
    return None


def _execution(requirement: RunRequirement) -> ToolExecution:
    assert requirement.tool_execution is not None  # a confirmation is about a tool call
    return requirement.tool_execution


async def _outcome(value: Any) -> Any:
    """What a tool gave: awaited, and a (async) generator's items joined as Agno joins them."""
    if inspect.isawaitable(value):
        value = await value
    if inspect.isasyncgen(value):
        return "".join([str(item) async for item in value])
    if inspect.isgenerator(value):
        return "".join(str(item) for item in value)
    return value


def _refused(*args: Any, **kwargs: Any) -> str:
    return blocked_text(
        "tools that wait for a user's input or run outside the agent are not run behind signoff"
    )


def _transcript(messages: Sequence[Any], agent: str | None) -> list[dict[str, Any]]:
    """The run's messages as `transcript` messages: the model's are `agent`'s."""
    found: list[dict[str, Any]] = []
    for message in transcript.tail(messages):
        role = message.role if message.role in ("user", "assistant", "tool", "system") else None
        if role is None:
            continue
        calls = [
            transcript.call(c.get("id"), (c.get("function") or {}).get("name", ""),
                            (c.get("function") or {}).get("arguments"))
            for c in message.tool_calls or ()
        ]  # fmt: skip
        found.append(transcript.message(
            role, message.content, tool_calls=calls, tool_call_id=message.tool_call_id,
            name=message.tool_name, agent=agent if role == "assistant" else None,
            is_error=bool(message.tool_call_error)))  # fmt: skip
    return found
