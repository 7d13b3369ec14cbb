"""`SignoffAgent`: an Agent Framework agent behind `SignoffMiddleware`, its `AgentSession` kept in
signoff's store — messages appended (``{"message": ...}``, or ``{"messages": [...]}`` after a
run that rewrote them), then the rest and the approval requests the run ended on (``{"session":
..., "requests": [...]}``) — so that any process resumes it, once (`KeptThreads`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import timedelta
from typing import Any, cast

from agent_framework import Agent, AgentResponse, AgentSession, Content, Message
from agent_framework import AgentResponseUpdate as Update

from signoff.errors import ConflictError, InvalidDecisionError
from signoff.gate import transcript
from signoff.gate.external import LEASE, ExternalRuns
from signoff.integrations._kept import KeptThreads, extended, waits
from signoff.integrations._threads import Append, unmarked
from signoff.integrations.agent_framework.middleware import SignoffMiddleware
from signoff.types import Approval, Approve, Decision, Reject

__all__ = ["ORIGIN", "SignoffAgent"]

ORIGIN = "agent-framework"

Json = dict[str, Any]


class SignoffAgent(KeptThreads[AgentResponse]):
    """A Microsoft Agent Framework `Agent` behind signoff, its threads kept in signoff's store."""

    origin = ORIGIN

    def __init__(self, agent: Agent[Any], runs: ExternalRuns, *, path: str | None = None,
                 requested_by: str | None = None, idempotent: Iterable[str] = (),
                 lease: timedelta = LEASE) -> None:  # fmt: skip
        """`path`: the agent path (default: its name); `lease`: a resume's hold on its thread."""
        self.agent, self.runs, self.lease, self.path = agent, runs, lease, path or agent.name
        self.middleware = SignoffMiddleware(runs, path=self.path, requested_by=requested_by,
                                            idempotent=idempotent)  # fmt: skip

    async def run(self, input: Any = None, *, thread: str, user: str | None = None,
                  roles: Iterable[str] = (), **kwargs: Any) -> AgentResponse:  # fmt: skip
        """Run the agent on `thread` with its session (`kwargs` go to `Agent.run`): its answer,
        or the framework's approval requests while calls wait for a person. While the thread
        waits, `input` answers them the framework's way (``to_function_approval_response``),
        taken as `user`'s, with `roles` (else the principal `connect` names, else not taken)."""
        messages, session, requests = read(entries := await self._entries(thread))
        given = input if isinstance(input, list) else [input]
        answers = [c for m in given if isinstance(m, Message) for c in m.contents
                   if c.type == "function_approval_response"]  # fmt: skip
        if requests and answers:  # going on: a call still undecided is asked again, as it is now
            await self._answer(thread, requests, answers, user, roles)
            response, _ = await self._resume(thread, force=True, **kwargs)
            if response is None:
                raise ConflictError(f"thread {thread!r} is being resumed")
            return response
        if requests or answers:
            raise waits(thread) if requests else InvalidDecisionError(
                f"thread {thread!r} waits on no approval request")  # fmt: skip
        current = self._session(thread, messages, session)
        return await self._go(thread, current, messages, input,
                              self._appender(thread, len(entries)), kwargs)  # fmt: skip

    async def stream(self, input: Any = None, *, thread: str,
                     **kwargs: Any) -> AsyncIterator[Update]:  # fmt: skip
        """`run`, streamed: the framework's updates as they come; the thread kept at its end."""
        messages, session, requests = read(entries := await self._entries(thread))
        if requests:
            raise waits(thread)
        current = self._session(thread, messages, session)
        streamed = self.agent.run(input, session=current, middleware=[self.middleware],
                                  stream=True, **kwargs)  # fmt: skip
        async for update in streamed:
            yield update
        await self._go(thread, current, messages, input, self._appender(thread, len(entries)),
                       kwargs, first=await streamed.get_final_response())  # fmt: skip

    async def _resume(self, thread: str, *, force: bool = False,
                      **kwargs: Any) -> tuple[AgentResponse | None, bool]:  # fmt: skip
        """`resume` (`force`: with nothing decided), and whether the pause is over (else: waits)."""
        messages, session, requests = read(entries := await self._entries(thread, resuming=True))
        if not requests:
            return None, True  # nothing waits: the run went on already
        asked = await self._asked(thread, requests)
        decided = [a.id for a in asked.values() if not a.pending]
        if not decided and not force:
            return None, False  # going on would only ask the same calls again

        async def go(append: Append) -> AgentResponse:  # each call as the store has it decided
            current = self._session(thread, messages, session)
            return await self._go(thread, current, messages, _approved(requests), append, kwargs)

        return await self._held(thread, entries, go, decided)  # (None, False): another has it

    def _session(self, thread: str, messages: list[Json], session: Json | None) -> AgentSession:
        """The thread's session as kept (a new one, under the thread's id, at first)."""
        if session is None:
            return self.agent.create_session(session_id=thread)
        memory = {**(session["state"].get("in_memory") or {}), "messages": messages}
        state = {**session["state"], "in_memory": memory}
        return AgentSession.from_dict({**session, "session_id": thread, "state": state})

    async def _go(self, thread: str, session: AgentSession, before: list[Json], input: Any,
                  append: Append, kwargs: dict[str, Any],
                  first: AgentResponse | None = None) -> AgentResponse:  # fmt: skip
        """Run the agent (`first`: it ran); `append` what it added, with the pause it ended on."""
        seen: set[str] = set()
        while True:
            response: AgentResponse = first if first is not None else await self.agent.run(
                input, session=session, middleware=[self.middleware], **kwargs)  # fmt: skip
            requests = [c.to_dict() for c in response.user_input_requests
                        if c.type == "function_approval_request"]  # fmt: skip
            asked = await self._asked(thread, requests)
            unheld = {str(r.get("id")) for r in requests} - set(asked)
            if not unheld or unheld & seen:
                break
            # Asked by the framework (a tool's approval_mode): the policy answers in the middleware.
            seen, input, first = seen | unheld, _approved(requests), None
        kept = session.to_dict()
        memory = dict(kept["state"].get("in_memory") or {})
        messages = list(memory.pop("messages", []))
        new = [json.dumps({"message": m}) for m in messages[len(before) :]]
        if messages[: len(before)] != before:
            new = [json.dumps({"messages": messages})]
        kept["state"] = {**kept["state"], "in_memory": memory}
        new.append(json.dumps({"session": kept, "requests": requests}))
        ids = [a.id for a in asked.values()]
        pause = ids and self._pause_of(thread, ids, self.path, transcript_of(messages, self.path))
        if not await append(new, pause or None):  # the pause, if any, with the entries: one write
            raise extended(thread)
        return response

    async def _asked(self, thread: str, requests: Sequence[Json]) -> dict[str, Approval]:
        """The approvals of the thread the requests name (those signoff made), by request id."""
        shown = {str(r.get("id")): (r.get("additional_properties") or {}).get("signoff")
                 for r in requests}  # fmt: skip
        named = {r: str(s.get("approval")) for r, s in shown.items() if isinstance(s, dict)}
        found = await self.runs.near(self.runs.store.get_approvals(list(named.values())))
        mine = {a.id: a for a in found if (a.origin, a.thread_id) == (ORIGIN, thread)}
        return {request: mine[a] for request, a in named.items() if a in mine}

    async def _answer(self, thread: str, requests: list[Json], answers: list[Content],
                      user: str | None, roles: Iterable[str]) -> None:  # fmt: skip
        """Take the approval responses sent the framework's way as `user`'s decisions, each on
        the version its request showed."""
        asked = await self._asked(thread, requests)
        decisions: dict[str, Decision] = {}
        versions: dict[str, int] = {}
        for answer in answers:
            approval = asked.get(str(answer.id))  # a request this thread waits on, approved or not
            if approval is None or not isinstance(answer.approved, bool):
                raise InvalidDecisionError(f"not an answer to a request thread {thread!r} waits "
                                           f"on: {str(answer.id)[:200]!r}")  # fmt: skip
            decisions[approval.id] = Approve() if answer.approved is True else Reject(
                reason="rejected in the app")  # fmt: skip
            shown = (answer.additional_properties or {}).get("signoff")
            if isinstance(shown, dict) and type(shown.get("version")) is int:
                versions[approval.id] = shown["version"]
        await self.runs.decide(decisions, actor=user, roles=roles, versions=versions)


def _approved(requests: Sequence[Json]) -> Message:
    """Every request approved in the framework, the middleware reading the decisions — but a
    provider's own (hosted) tool's, which signoff can neither judge nor run once: rejected."""
    return Message("user", [Content.from_dict(r).to_function_approval_response(
        not (r.get("function_call") or {}).get("hosted")) for r in requests])  # fmt: skip


def read(entries: Sequence[str]) -> tuple[list[Json], Json | None, list[Json]]:
    """The thread's messages, the rest of its session, and the requests it waits on."""
    messages, session, requests = cast(list[Json], []), None, []
    for parsed in map(json.loads, unmarked(entries)):
        if "session" in parsed:
            session, requests = parsed["session"], list(parsed["requests"])
        elif "message" in parsed:
            messages.append(parsed["message"])
        else:
            messages = list(parsed["messages"])
    return messages, session, requests


def transcript_of(messages: Sequence[Json], agent: str | None) -> list[Json]:
    """The session's messages as `transcript` messages: the model's are `agent`'s."""
    found: list[Json] = []
    for message in transcript.tail(messages):
        contents = [c for c in message.get("contents") or [] if isinstance(c, dict)]
        text = "".join(str(c.get("text", "")) for c in contents if c.get("type") == "text")
        calls = [transcript.call(c.get("call_id"), str(c.get("name", "")), c.get("arguments"))
                 for c in contents if c.get("type") == "function_call"]  # fmt: skip
        if (role := message.get("role")) in ("assistant", "user", "system"):
            said = agent if role == "assistant" else None
            found.append(transcript.message(cast(transcript.Role, role), text, tool_calls=calls,
                                            agent=said))  # fmt: skip
        found += [transcript.message("tool", c.get("result"), tool_call_id=c.get("call_id"))
                  for c in contents if c.get("type") == "function_result"]  # fmt: skip
    return found
