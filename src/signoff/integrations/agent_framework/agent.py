"""`SignoffAgent`: an Agent Framework agent run behind `SignoffMiddleware`, its thread's
`AgentSession` kept in signoff's store so that any process resumes it — once: the thread's mark
holds it while a resume runs. A thread's entries: ``{"message": ...}`` (one message of the
session's in-memory history), ``{"messages": [...]}`` (the history anew, after a run that
rewrote it), ``{"session": ..., "requests": [...]}`` (the rest of the session after a run, and
the approval requests it ended on), and resume marks."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import Any, cast

from agent_framework import Agent, AgentResponse, AgentSession, Content, Message

from signoff.errors import ConflictError, InvalidDecisionError
from signoff.gate import transcript
from signoff.gate.external import LEASE, ExternalRuns, Held, Resumed, Resumer
from signoff.integrations._threads import Append, Hold, appender, busy, now, resumer, unmarked
from signoff.integrations.agent_framework.middleware import SignoffMiddleware
from signoff.types import Approve, Decision, Reject

__all__ = ["ORIGIN", "SignoffAgent"]

ORIGIN = "agent-framework"

Kept = tuple[list[dict[str, Any]], dict[str, Any] | None, list[dict[str, Any]]]
"""A kept thread: its messages, the rest of its session, and the requests it waits on."""


class SignoffAgent:
    """A Microsoft Agent Framework `Agent` with signoff's policy, approvals, grants, ledger and
    audit, and its threads' sessions kept in signoff's store."""

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
        """`runs` from `connect(policy, origin="agent-framework", database=...)`; `path` the
        agent path the policy judges its calls by (default: the agent's name); `requested_by`
        who starts its threads; `idempotent` the tools safe to run again when a worker died
        inside them; `lease` how long a resume holds its thread unrenewed."""
        self.agent = agent
        self.runs = runs
        self.path = path or agent.name
        self.lease = lease
        self.middleware = SignoffMiddleware(runs, path=self.path, requested_by=requested_by,
                                            idempotent=idempotent)  # fmt: skip

    async def run(
        self, input: Any = None, *, thread: str, user: str | None = None, **kwargs: Any
    ) -> AgentResponse:
        """Run the agent on `thread` with its session so far; `kwargs` go to `Agent.run`.
        Ends with the agent's answer, or with the framework's approval requests
        (``user_input_requests``) while calls wait for a person. While the thread waits, the
        input answers its requests the framework's way (each request's
        ``to_function_approval_response(approved)``): decisions taken as `user`, or as the
        principal `connect` names (else not taken); the run goes on once all are decided."""
        entries = await self._entries(thread)
        if busy(entries, now(self.runs)):
            raise ConflictError(f"thread {thread!r} is being resumed")
        messages, session, requests = read(entries)
        answers = _answers(input)
        if requests:
            if not answers:
                raise ConflictError(
                    f"thread {thread!r} waits on calls a person has not all answered: answer "
                    "its approval requests, or resume it (SignoffAgent.resume) once decided"
                )
            await self._decide(thread, requests, answers, user)
            response, _ = await self._resume(thread, **kwargs)
            return response or await self._waiting(thread, requests)
        if answers:
            raise InvalidDecisionError(f"thread {thread!r} waits on no approval request")
        current = self._session(thread, messages, session)
        response = await self.agent.run(input, session=current, middleware=[self.middleware],
                                        **kwargs)  # fmt: skip
        await self._keep(thread, current, messages, response, appender(self.runs, ORIGIN,
                                                                       thread, len(entries)))  # fmt: skip
        return response

    async def resume(self, thread: str, **kwargs: Any) -> AgentResponse | None:
        """Resume `thread` once signoff's store holds a decision on every call it waits on.
        None when nothing waits, a call it waits on is undecided, or another process resumes
        it now."""
        response, _ = await self._resume(thread, **kwargs)
        return response

    async def _resume(self, thread: str, **kwargs: Any) -> tuple[AgentResponse | None, bool]:
        """`resume`, and whether the thread's pause is over (False: it waits on)."""
        entries = await self._entries(thread)
        messages, session, requests = read(entries)
        if not requests:
            return None, True  # nothing waits: the run went on already
        held = await self._held(thread, requests)
        if any(h is None or h.approval is None or h.approval.pending for h in held):
            return None, False
        hold = await Hold.take(self.runs, ORIGIN, thread, entries, lease=self.lease)
        if hold is None:
            return None, False  # another process resumes it
        try:
            current = self._session(thread, messages, session)
            # Approved in the framework: the middleware reads each decision from the store.
            answers = [Content.from_dict(r).to_function_approval_response(True) for r in requests]
            response = await self.agent.run(Message("user", answers), session=current,
                                            middleware=[self.middleware], **kwargs)  # fmt: skip
            await self._keep(thread, current, messages, response, hold.keep)
        finally:
            await hold.release()  # a no-op once kept
        await self.runs.went_on([h.approval.id for h in held if h is not None and h.approval])
        return response, True

    def resumer(self, *, on_resumed: Callable[[Resumed], Any] | None = None) -> Resumer:
        """A `Resumer` that resumes this agent's waiting threads once every call a pause waits
        on is decided — in any channel: ``.start()`` it next to the app, or
        ``await ....work()`` in a task. Each resumed run's `AgentResponse` reaches
        `on_resumed`, and ``wait(thread)`` / ``await resumed(thread)``."""
        return resumer(self.runs, self._resume, on_resumed)

    async def _entries(self, thread: str) -> list[str]:
        return await self.runs.near(self.runs.store.history(ORIGIN, thread))

    def _session(self, thread: str, messages: list[dict[str, Any]],
                 session: dict[str, Any] | None) -> AgentSession:  # fmt: skip
        """The thread's session as kept (a new one, under the thread's id, at first)."""
        if session is None:
            return self.agent.create_session(session_id=thread)
        state = dict(session.get("state") or {})
        if messages or "in_memory" in state:
            state["in_memory"] = {**(state.get("in_memory") or {}), "messages": messages}
        return AgentSession.from_dict({**session, "session_id": thread, "state": state})

    async def _held(self, thread: str, requests: Sequence[dict[str, Any]]) -> list[Held | None]:
        """How each requested call stands in signoff's store (None: it holds no such call)."""
        found: list[Held | None] = []
        for request in requests:
            call = request.get("function_call") or {}
            held = await self.runs.held(thread, [str(call.get("call_id"))], turn=call.get("id"))
            found.append(held.get(str(call.get("call_id"))))
        return found

    async def _waiting(self, thread: str, requests: list[dict[str, Any]]) -> AgentResponse:
        """The requests the thread still waits on, each showing its approval as it is now."""
        waiting = []
        for request, held in zip(requests, await self._held(thread, requests), strict=True):
            content = Content.from_dict(request)
            if held is not None and held.approval is not None:
                shown = {"approval": held.approval.id, "version": held.approval.version}
                content.additional_properties = {"signoff": shown}
            waiting.append(content)
        return AgentResponse(messages=[Message("assistant", waiting)])

    async def _decide(self, thread: str, requests: list[dict[str, Any]],
                      answers: list[Content], user: str | None) -> None:  # fmt: skip
        """Take the approval responses sent the framework's way as `user`'s decisions."""
        ids = [r.get("id") for r in requests]
        held = dict(zip(ids, await self._held(thread, requests), strict=True))
        decisions: dict[str, Decision] = {}
        versions: dict[str, int] = {}
        for answer in answers:
            found = held.get(answer.id) if isinstance(answer.id, str) else None
            if found is None or found.approval is None:
                raise InvalidDecisionError(
                    f"thread {thread!r} waits on no approval request {str(answer.id)[:200]!r}"
                )
            approval = found.approval.id
            decisions[approval] = Approve() if answer.approved is True else Reject(
                reason="rejected in the app")  # fmt: skip
            shown = (answer.additional_properties or {}).get("signoff")
            version = shown.get("version") if isinstance(shown, dict) else None
            if isinstance(version, int) and not isinstance(version, bool):
                versions[approval] = version
        await self.runs.decide(decisions, actor=user, versions=versions)

    async def _keep(self, thread: str, session: AgentSession, before: list[dict[str, Any]],
                    response: AgentResponse, append: Append) -> None:  # fmt: skip
        """Append what the run added to the thread's session, with the pause when it ended
        waiting on people (one transaction)."""
        kept = session.to_dict()
        state = dict(kept.get("state") or {})
        memory = dict(state.get("in_memory") or {})
        messages = list(memory.pop("messages", []))
        state["in_memory"] = memory
        if messages[: len(before)] == before:
            new = [json.dumps({"message": m}) for m in messages[len(before) :]]
        else:
            new = [json.dumps({"messages": messages})]
        requests = [c for c in response.user_input_requests
                    if c.type == "function_approval_request"]  # fmt: skip
        new.append(json.dumps({"session": {**kept, "state": state},
                               "requests": [r.to_dict() for r in requests]}))  # fmt: skip
        pause = None
        held = await self._held(thread, [r.to_dict() for r in requests])
        asked = [h.approval.id for h in held if h is not None and h.approval is not None]
        if asked:
            pause = self.runs.pause_of(thread=thread, approvals=asked,
                                       data={"thread_id": thread, "asked": asked},
                                       agent=self.path,
                                       conversation=transcript_of(messages, self.path))  # fmt: skip
        if not await append(new, pause):
            raise ConflictError(
                f"thread {thread!r} was extended by another run meanwhile; this run was not "
                "kept (its tools ran once all the same)"
            )


def read(entries: Sequence[str]) -> Kept:
    """The thread's messages, the rest of its session, and the requests it waits on."""
    messages: list[dict[str, Any]] = []
    session: dict[str, Any] | None = None
    requests: list[dict[str, Any]] = []
    for entry in unmarked(entries):
        parsed = json.loads(entry)
        if "message" in parsed:
            messages.append(parsed["message"])
        elif "messages" in parsed:
            messages = list(parsed["messages"])
        else:
            session, requests = parsed["session"], list(parsed["requests"])
    return messages, session, requests


def _answers(input: Any) -> list[Content]:
    """The approval responses in a run's input (a message, or a list of messages)."""
    items = input if isinstance(input, list) else [input]
    return [c for m in items if isinstance(m, Message) for c in m.contents
            if c.type == "function_approval_response"]  # fmt: skip


def transcript_of(messages: Sequence[dict[str, Any]], agent: str | None) -> list[dict[str, Any]]:
    """The session's messages as `transcript` messages: the model's are `agent`'s."""
    found: list[dict[str, Any]] = []
    for message in transcript.tail(messages):
        contents = [c for c in message.get("contents") or [] if isinstance(c, dict)]
        text = "".join(str(c.get("text", "")) for c in contents if c.get("type") == "text")
        calls = [transcript.call(c.get("call_id"), str(c.get("name", "")), c.get("arguments"))
                 for c in contents if c.get("type") == "function_call"]  # fmt: skip
        role = message.get("role")
        if role == "assistant":
            found.append(transcript.message("assistant", text, tool_calls=calls, agent=agent))
        elif role in ("user", "system"):
            found.append(transcript.message(cast(transcript.Role, role), text))
        found += [transcript.message("tool", c.get("result"), tool_call_id=c.get("call_id"))
                  for c in contents if c.get("type") == "function_result"]  # fmt: skip
    return found
