"""`SignoffAgent`: an Agno agent run, paused and continued behind signoff. Its paused runs stay in
the agent's own `db`; signoff holds the asked calls as approvals, continues a run only once every
call of its pause is decided, by one process at a time (the session's mark in signoff's store),
and answers DCAF's clients (`SignoffAgent.dcaf`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from agno.agent import Agent
from agno.run.agent import RunOutput
from agno.run.base import RunStatus

from signoff._moved import moved
from signoff.errors import ConflictError, ForbiddenError
from signoff.gate import transcript
from signoff.gate.external import LEASE, ExternalRuns, Pause, Resumed, Resumer
from signoff.integrations._kept import Threads, waits
from signoff.integrations._threads import Append
from signoff.integrations.agno.dcaf import DcafRequest, dcaf_answer
from signoff.integrations.agno.guard import Guard, guardable, turn_of
from signoff.types import Approval, Decision

__all__ = ["ORIGIN", "SignoffAgent"]

ORIGIN = "agno"


class SignoffAgent(Threads[RunOutput]):
    """An Agno `Agent` with signoff's policy, approvals, grants, ledger and audit."""

    origin, noun, lease = ORIGIN, "session", LEASE

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
        models = guardable(agent)
        self.agent = agent
        self.runs = runs
        self.path = path or agent.name
        self.requested_by = requested_by
        self.idempotent = frozenset(idempotent)
        self._guard = Guard(
            agent,
            runs,
            path=self.path,
            requested_by=requested_by,
            idempotent=self.idempotent,
            servers=servers or {},
        )
        for model in models:
            self._guard.guard(model)

    # -- deprecated: the guard's own now ----------------------------------------------------

    @moved(
        "SignoffAgent.guarded", "the guard the agent's model is wrapped in (it is guarded in place)"
    )
    def guarded(self, *args: Any, **kwargs: Any) -> Any:
        return self._guard.guarded(*args, **kwargs)

    @moved("SignoffAgent.execute", "the guard the agent's model is wrapped in")
    def execute(self, *args: Any, **kwargs: Any) -> Any:
        return self._guard.execute(*args, **kwargs)

    # -- running ---------------------------------------------------------------------------

    async def run(
        self, input: Any = None, *, session_id: str, user_id: str | None = None, **kwargs: Any
    ) -> RunOutput:
        """Run the agent on `session_id` (`Agent.arun`; `kwargs` go to it). Ends completed, or
        paused (`RunOutput.is_paused`) while calls wait for a person: the session takes no new
        input until it is resumed."""
        await self._entries(session_id)  # refused while another process continues it
        if await self._paused(session_id) is not None:
            raise waits(session_id, self.noun)
        out = await self.agent.arun(input, session_id=session_id, user_id=user_id, **kwargs)
        assert isinstance(out, RunOutput)  # not streamed
        if not out.is_paused:
            return out
        _answers, waiting, _decided = await self._guard.settle(out, session_id, user_id)
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
        decided: list[str] = []

        async def go(_: Append) -> RunOutput | None:
            out = await self._paused(session_id, run_id)  # read after the mark: still paused?
            while out is not None and out.is_paused:
                user_id = out.user_id
                answers, waiting, now_decided = await self._guard.settle(out, session_id, user_id)
                if waiting is not None:
                    if waiting:
                        await self._pause(out, session_id, user_id, waiting)
                    break
                decided.extend(now_decided)
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
            return out

        # The session's mark is renewed while this process continues it, so a continue longer
        # than the lease is not taken over, and ended on every path.
        entries = await self._entries(session_id, resuming=True)
        return (await self._held(session_id, entries, go, decided))[0]

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
            turn = turn_of(paused.messages, call_id)
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
        _answers, waiting, _decided = await self._guard.settle(out, session_id, out.user_id)
        held = waiting or {}
        return dcaf_answer(out, session_id, waiting=held, approvals=held)

    # -- pauses ----------------------------------------------------------------------------
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
