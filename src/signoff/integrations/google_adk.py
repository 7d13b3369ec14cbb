"""Google ADK agents behind signoff: one plugin on the app's `Runner` (kagent's runtime).

    runs = connect("policy.yaml", origin="google-adk", database="sqlite:///signoff.db")
    signoff = SignoffPlugin(runs)
    app = App(name="ops", root_agent=agent, plugins=[signoff])
    runner = Runner(app=app, session_service=DatabaseSessionService(...))
    ...                                   # a call waits: decided in the inbox, the API, the CLI
    stop = signoff.resumer(runner).start()  # sends ADK the confirmation once it is decided

signoff's policy judges every tool call of every agent of the runner with its arguments
(``before_tool_callback``): allowed calls run once, through signoff's ledger; denied ones answer
the model with the reason; asked ones become approvals in signoff's store and ADK's own pause, a
``request_confirmation`` carrying the approval's id and version — the run stops there, no model
call. When the confirmation comes back (from the resumer, or from any ADK client), ADK runs the
call again: signoff reads the decision **from its store**, never from the confirmation's
payload, and runs the call once (approved, or edited: checked against the tool's schema and the
policy), or gives the person's response as its result, or the rejection with its reason. ADK runs
a confirmed tool again in each invocation that the confirmation reaches; the ledger keeps it to
one execution.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

from signoff.errors import ConflictError, MissingExtraError
from signoff.gate import transcript
from signoff.gate.answers import blocked_text, edited_text
from signoff.gate.external import LEASE, ExternalRuns, Pause, Resumed, Resumer, connect
from signoff.gate.versions import version_of
from signoff.integrations._calls import Schemas, Unrun, held_call, run_once, step_of
from signoff.types import Approve, Decision, Reject, ToolCall

try:
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.events import Event
    from google.adk.plugins.base_plugin import BasePlugin
    from google.adk.runners import Runner
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.tool_confirmation import ToolConfirmation
    from google.adk.tools.tool_context import ToolContext
    from google.genai import types
    from pydantic_core import to_jsonable_python
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise MissingExtraError("signoff.integrations.google_adk", "google-adk") from exc

__all__ = ["CONFIRMATION", "ORIGIN", "SignoffPlugin", "connect"]

logger = logging.getLogger("signoff.google_adk")

ORIGIN = "google-adk"
CONFIRMATION = "adk_request_confirmation"
"""The function call by which ADK pauses a run for a confirmation (and its response resumes it)."""

_RESUMING: ContextVar[str | None] = ContextVar("signoff_adk_resuming", default=None)
"""The pause a `SignoffPlugin.resumer` continues in this task (it holds the pause's claim)."""


class SignoffPlugin(BasePlugin):
    """signoff's policy, approvals, grants, ledger and audit for every agent of an ADK runner."""

    def __init__(
        self,
        runs: ExternalRuns,
        *,
        requested_by: str | None = None,
        idempotent: Iterable[str] = (),
        servers: Mapping[str, Any] | None = None,
        client_decisions: bool = False,
    ) -> None:
        """`runs` from `connect(policy, origin="google-adk", database=...)`; `requested_by` who
        starts the sessions (a rule may forbid them approving their own; default: the session's
        user); `idempotent` the tools safe to run again when a worker died inside them;
        `servers` names the agents' MCP toolsets (``{"filesystem": toolset}``), so that the
        policy's ``servers:`` section — kagent's ``toolNames`` and ``requireApproval`` — judges
        their tools by the MCP tool's own name; `client_decisions` takes an ADK client's
        answer to a confirmation (kagent's UI: approve, or reject with a reason) as the
        session's user's decision — else only signoff's channels decide."""
        super().__init__(name="signoff")
        self.runs = runs
        self.requested_by = requested_by
        self.idempotent = frozenset(idempotent)
        self.client_decisions = client_decisions
        self._servers = {
            id(getattr(toolset, "_mcp_session_manager", toolset)): name
            for name, toolset in (servers or {}).items()
        }
        self._schemas = Schemas(runs)
        self._claims: dict[str, tuple[str, str, Sequence[str]]] = {}
        """The pauses the invocations of this process continue: invocation id → (pause,
        claim owner, approvals)."""

    # -- the calls -------------------------------------------------------------------------

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        """Judge the call (or read how it was decided) and run it once, answer it, or pause."""
        if tool.name == CONFIRMATION:
            # ADK's to make, never a model's. Answered to the model, ADK would call it again
            # and again (up to max_llm_calls): the invocation ends here, with the answer as
            # the last thing the user sees.
            tool_context.actions.skip_summarization = True
            tool_context._invocation_context.end_invocation = True
            return {"error": blocked_text("only ADK asks for a confirmation; the run stops here")}
        session = tool_context.session
        thread = _thread(session)
        call_id = tool_context.function_call_id or ""
        # The model response is the session's event that holds the call: ADK re-runs a
        # confirmed tool from that same event in a later invocation (the same turn), while a
        # provider that numbers every response's calls call_0 makes a new event (a new turn).
        turn = _turn(session.events, call_id)
        path = _path(tool_context)
        name, server = self._named(tool)
        schema = self._register(tool, name, path)
        proposed = ToolCall(id=call_id, name=name, args=tool_args, server=server, agent=path)
        # Confirmed: the call was judged when it was proposed. What runs is what signoff's
        # store says, whatever the confirmation carried.
        confirmed = tool_context.tool_confirmation is not None
        step = await step_of(
            self.runs,
            proposed,
            thread=thread,
            turn=turn,
            requested_by=self.requested_by or tool_context.user_id,
            schema=schema,
            found=await held_call(self.runs, thread, proposed, turn) if confirmed else None,
        )
        if step.kind == "wait":
            assert step.approval is not None  # a call waits on its approval
            # The version of the call as asked: a client's answer sends it back, and is not
            # taken if the call changed since (`client_decisions`).
            shown = {"approval": step.approval.id, "version": step.approval.version}
            tool_context.request_confirmation(
                hint=f"signoff: {tool.name} waits for a person's decision",
                payload={"signoff": shown},
            )
            tool_context.actions.skip_summarization = True  # the run stops here: no model call
            return {"status": "waiting for a person's decision"}
        if step.kind == "answer":
            return {"result": step.text} if step.ok else {"error": step.text}
        assert step.call is not None  # a call to run is named
        return await self._once(step.key, step.call, tool, tool_context, edited=step.edited)

    async def _once(
        self,
        key: str,
        call: ToolCall,
        tool: BaseTool,
        tool_context: ToolContext,
        *,
        edited: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """Run the tool once under the call's key (its recorded result when it ran); a call
        signoff refuses is answered, never run."""

        async def execute() -> Any:
            # signoff decided: a tool that asks for a confirmation itself finds it given.
            given = tool_context.tool_confirmation
            tool_context.tool_confirmation = ToolConfirmation(hint="signoff", confirmed=True)
            try:
                result = await tool.run_async(args=call.args, tool_context=tool_context)
            finally:
                tool_context.tool_confirmation = given
            return to_jsonable_python(result)

        idempotent = tool.name in self.idempotent
        result = await run_once(self.runs, key, call, execute, idempotent=idempotent)
        if isinstance(result, Unrun):
            return {"error": result.text}
        answer = result if isinstance(result, dict) else {"result": result}
        if edited is not None:
            note = edited_text(edited, "").rstrip()
            return {"note": note, **answer}
        return answer

    def _named(self, tool: BaseTool) -> tuple[str, str | None]:
        """The name the policy judges a tool's calls by, and its MCP server's when named."""
        server = self._servers.get(id(getattr(tool, "_mcp_session_manager", None)))
        raw = getattr(getattr(tool, "_mcp_tool", None), "name", None)
        if server is None or not isinstance(raw, str):
            return tool.name, None
        return raw, server

    def _register(self, tool: BaseTool, name: str, path: str) -> dict[str, Any] | None:
        """The tool's parameters' schema; edits of its calls are checked against it."""
        declaration = tool._get_declaration()
        schema = declaration.parameters_json_schema if declaration is not None else None
        if not isinstance(schema, dict):
            return None
        self._schemas.register(name, schema, agent=path)
        return schema

    # -- confirmations from ADK clients -----------------------------------------------------

    async def on_user_message_callback(
        self, *, invocation_context: InvocationContext, user_message: types.Content
    ) -> types.Content | None:
        """A message that answers signoff's confirmations goes on only when it answers every
        call of the pause, each is decided, and nobody continued (or continues) the pause
        already — else ADK would spend the confirmations (a call left waiting could never
        run), call the model while calls wait, or call it once per client that sends the same
        answer. With `client_decisions`, a client's answer (kagent's UI, ``adk web``) is first
        taken as the session's user's decision, held to the policy's rules like anyone's — and
        not taken if the version its payload sends back (the request's ``signoff.version``)
        changed since."""
        sent = {
            p.function_response.id: p.function_response.response or {}
            for p in user_message.parts or []
            if p.function_response
            and p.function_response.name == CONFIRMATION
            and p.function_response.id
        }
        asked = await self._asked(invocation_context, set(sent)) if sent else {}
        if not asked:
            return None
        session = invocation_context.session
        pause = await self.runs.open_pause(list(asked.values()))
        if pause is None:
            raise ConflictError("signoff: this pause was continued already")
        missing = set(pause.data["confirmations"]) - set(asked)
        if missing:
            raise ConflictError(
                f"signoff: answer every call of the pause at once ({len(missing)} more)"
            )
        found = {a.id: a for a in await self.runs.near(
            self.runs.store.get_approvals(list(asked.values())))}  # fmt: skip
        undecided = [a for a in asked.values() if a not in found or found[a].pending]
        if undecided and self.client_decisions:
            answers = {approval: _decision(sent[call_id])
                       for call_id, approval in asked.items() if approval in undecided}  # fmt: skip
            taken_as = {approval: found for approval, found in answers.items() if found}
            decisions = {approval: decision for approval, (decision, _) in taken_as.items()}
            versions = {approval: version for approval, (_, version) in taken_as.items()
                        if version is not None}  # fmt: skip
            taken = await self.runs.decide(decisions, actor=session.user_id, versions=versions)
            undecided = [a for a in undecided if a not in taken or taken[a].pending]
        if undecided:
            raise ConflictError(
                f"signoff: {len(undecided)} of the calls answered here wait for a person's "
                f"decision ({', '.join(undecided)}); answer them once they are decided"
            )
        if _RESUMING.get() != pause.id:  # the resumer holds the pause's claim itself
            await self._claim(pause, invocation_context.invocation_id)
        # ADK runs the calls again only where confirmed; signoff's callback then runs, answers
        # or refuses each as decided (a rejection with its reason, not ADK's own words).
        return types.Content(
            role=user_message.role,
            parts=[
                _confirmed(p) if p.function_response and p.function_response.id in asked else p
                for p in user_message.parts or []
            ],
        )

    async def _claim(self, pause: Pause, invocation: str) -> None:
        """Take the pause for this invocation, as the resumer takes one: a pause is continued
        once, whoever sends its confirmations. The claim's lease fences a process that died
        holding it; the invocation gives it back when it ends (`after_run_callback`)."""
        owner = f"{self.runs.ledger.owner}/{invocation}"
        store = self.runs.store
        claimed = await self.runs.near(
            store.claim_pause(pause.id, owner=owner, now=store.now(), lease=LEASE)
        )
        if claimed is None:
            raise ConflictError("signoff: this pause is being continued, or was continued already")
        self._claims[invocation] = (pause.id, owner, pause.approvals)

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        """The invocation that continued a pause went on past it: the pause is done."""
        claim = self._claims.pop(invocation_context.invocation_id, None)
        if claim is not None:
            pause_id, owner, approvals = claim
            await self.runs.near(self.runs.store.release_pause(
                pause_id, owner=owner, status="done", now=self.runs.store.now()))  # fmt: skip
            await self.runs.went_on(list(approvals))

    async def on_run_error_callback(
        self, *, invocation_context: InvocationContext, error: Exception
    ) -> None:
        """The invocation that continued a pause failed: the pause may be continued again."""
        claim = self._claims.pop(invocation_context.invocation_id, None)
        if claim is not None:
            pause_id, owner, _ = claim
            await self.runs.near(self.runs.store.release_pause(
                pause_id, owner=owner, status="waiting",
                now=self.runs.store.now()))  # fmt: skip

    async def _asked(
        self, invocation_context: InvocationContext, call_ids: set[str]
    ) -> dict[str, str]:
        """The signoff approvals that the session's confirmation calls `call_ids` ask about:
        only calls ADK made for signoff's `request_confirmation` (never one a model wrote)."""
        session = invocation_context.session
        claimed: dict[str, tuple[str, str]] = {}
        for event in session.events:
            for call_id, (approval, original) in _confirmation_calls(event).items():
                if call_id in call_ids:
                    claimed[call_id] = (approval, original)
        return await self._verified(session, claimed)

    async def _verified(self, session: Any, claimed: dict[str, tuple[str, str]]) -> dict[str, str]:
        """Of confirmation calls and the (approval, original call) each names, those whose
        original call — of its model response in the session — signoff holds under that
        approval."""
        verified: dict[str, str] = {}
        for call_id, (approval, original) in claimed.items():
            turn = _turn(session.events, original)
            held = await self.runs.held(_thread(session), [original], turn=turn)
            if original in held and held[original].record.approval_id == approval:
                verified[call_id] = approval
        return verified

    # -- the pause -------------------------------------------------------------------------

    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: Event
    ) -> Event | None:
        """A confirmation ADK asks for: record the pause the resumer finds, with what resuming
        it takes (the session, its user and app, the confirmations' call ids)."""
        session = invocation_context.session
        asked = await self._verified(session, _confirmation_calls(event))
        if asked:
            await self.runs.pause(
                thread=_thread(session),
                approvals=sorted(asked.values()),
                data={
                    "app": session.app_name,
                    "user": session.user_id,
                    "session": session.id,
                    "confirmations": asked,
                },
                agent=getattr(invocation_context.agent, "name", None),
                conversation=_transcript([*session.events, event]),
            )
        return None

    def resumer(
        self, runner: Runner, *, on_resumed: Callable[[Resumed], Any] | None = None
    ) -> Resumer:
        """A `Resumer` that sends `runner` the confirmations of a paused session once every call
        it waits on is decided — in any signoff channel. The events of each resumed invocation
        (a list) reach `on_resumed`, and ``wait(session_id)`` / ``await resumed(session_id)``."""

        async def resume(pause: Pause) -> Resumed | None:
            data = pause.data
            session = await runner.session_service.get_session(
                app_name=data["app"], user_id=data["user"], session_id=data["session"]
            )
            events: list[Event] | None = None
            if session is not None:
                message = confirmations(data["confirmations"])
                token = _RESUMING.set(pause.id)
                try:
                    events = [
                        event
                        async for event in runner.run_async(
                            user_id=data["user"], session_id=data["session"], new_message=message
                        )
                    ]
                finally:
                    _RESUMING.reset(token)
            else:  # not this runner's (an agent run as a tool keeps its session in memory)
                logger.warning("no session %s of %s for the pause %s: not resumed",
                               data["session"], data["app"], pause.id)  # fmt: skip
            await self.runs.went_on(list(data["confirmations"].values()))
            return None if events is None else Resumed(data["session"], events)

        return Resumer(self.runs, resume, on_resumed=on_resumed)


def confirmations(asked: dict[str, str]) -> types.Content:
    """The message that answers ADK's confirmations (by their call ids): ``confirmed`` so that
    ADK runs each call again, which signoff then runs, answers or refuses as decided."""
    return types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    name=CONFIRMATION,
                    id=call_id,
                    response={"confirmed": True, "payload": {"signoff": {"approval": approval}}},
                )
            )
            for call_id, approval in asked.items()
        ],
    )


def _confirmed(part: types.Part) -> types.Part:
    answer = part.function_response
    assert answer is not None
    payload = (answer.response or {}).get("payload")
    return types.Part(
        function_response=types.FunctionResponse(
            name=answer.name, id=answer.id, response={"confirmed": True, "payload": payload}
        )
    )


def _confirmation_calls(event: Event) -> dict[str, tuple[str, str]]:
    """The confirmation calls ADK made in `event` for signoff (long-running calls of its own,
    whose payload names an approval): call id → (approval, the original call's id)."""
    ours = set(event.long_running_tool_ids or ())
    found: dict[str, tuple[str, str]] = {}
    for call in event.get_function_calls():
        approval = _approval(call.args)
        original = ((call.args or {}).get("originalFunctionCall") or {}).get("id")
        if call.name == CONFIRMATION and call.id in ours and approval and isinstance(original, str):
            found[call.id] = (approval, original)
    return found


def _decision(answer: dict[str, Any]) -> tuple[Decision, int | None] | None:
    """A client's answer to a confirmation, as a decision (a malformed one rejects), and the
    version of the call it was made on where its payload names one — the request's payload
    sent back (``{"signoff": {"approval": ..., "version": ...}}``). None, and nothing taken,
    when that version is not a whole number from 1."""
    try:
        confirmation = ToolConfirmation.from_response_dict(answer)
    except (ValueError, TypeError):
        return Reject(reason="the confirmation could not be read"), None
    payload = confirmation.payload if isinstance(confirmation.payload, dict) else {}
    ours = payload.get("signoff")
    named = ours.get("version") if isinstance(ours, dict) else None
    version = version_of(named)
    if named is not None and version is None:
        logger.warning("a confirmation naming version %.40r was not taken", named)
        return None
    if confirmation.confirmed:
        return Approve(), version
    reason = payload.get("reason")
    return Reject(reason=reason if isinstance(reason, str) else ""), version


def _turn(events: Sequence[Event], call_id: str) -> str | None:
    """The id of the session's event — the model response — that made the call `call_id`: the
    newest that did (a provider may number every response's calls ``call_0``)."""
    for event in reversed(events):
        if any(c.id == call_id and c.name != CONFIRMATION for c in event.get_function_calls()):
            return event.id
    return None


def _thread(session: Any) -> str:
    """The signoff thread of an ADK session (ids are unique per app and user)."""
    return f"{session.app_name}/{session.user_id}/{session.id}"


def _approval(args: dict[str, Any] | None) -> str | None:
    """The signoff approval a confirmation call asks about."""
    payload = ((args or {}).get("toolConfirmation") or {}).get("payload") or {}
    found = (payload.get("signoff") or {}).get("approval") if isinstance(payload, dict) else None
    return found if isinstance(found, str) else None


def _path(tool_context: ToolContext) -> str:
    """The calling agent's path from the root (``coordinator/researcher``)."""
    agent = getattr(getattr(tool_context, "_invocation_context", None), "agent", None)
    names: list[str] = []
    while agent is not None:
        names.append(agent.name)
        agent = agent.parent_agent
    return "/".join(reversed(names)) or tool_context.agent_name


def _transcript(events: Sequence[Event]) -> list[dict[str, Any]]:
    """The session's events as `transcript` messages, each the agent's that wrote it (ADK's
    confirmation requests and answers left out: the card is that request)."""
    found: list[dict[str, Any]] = []
    for event in transcript.tail(events):
        parts = event.content.parts if event.content is not None else None
        if not parts:
            continue
        user = event.author == "user"
        agent = None if user else event.author
        texts = [p.text for p in parts if p.text and not p.thought]
        calls = [
            transcript.call(p.function_call.id, p.function_call.name or "", p.function_call.args)
            for p in parts
            if p.function_call and p.function_call.name != CONFIRMATION
        ]
        if texts or calls:
            role: transcript.Role = "user" if user and not calls else "assistant"
            found.append(transcript.message(role, "\n".join(texts), tool_calls=calls,
                                            agent=agent))  # fmt: skip
        for part in parts:
            answer = part.function_response
            if answer is None or answer.name == CONFIRMATION:
                continue
            found.append(transcript.message("tool", to_jsonable_python(answer.response),
                                            tool_call_id=answer.id, name=answer.name))  # fmt: skip
    return found
