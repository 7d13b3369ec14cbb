"""`SignoffPlugin`: signoff on an ADK runner. Its tool callback judges each call (or reads how it
was decided) and runs it once, answers it, or pauses with ADK's `request_confirmation`; its event
callback records the pause; its `resumer` sends ADK the confirmations once the pause's calls are
decided. Confirmations from ADK's own clients: `continuing`."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from pydantic_core import to_jsonable_python

from signoff.gate.answers import blocked_text, edited_text
from signoff.gate.external import ExternalRuns, Pause, Resumed, Resumer
from signoff.integrations._calls import Schemas, Unrun, run_once
from signoff.integrations.google_adk.confirmation import (
    CONFIRMATION,
    confirmation_calls,
    confirmations,
)
from signoff.integrations.google_adk.continuing import RESUMING, Continuations
from signoff.integrations.google_adk.session import path_of, thread_of, transcript_of, turn_of
from signoff.types import ToolCall

__all__ = ["SignoffPlugin"]

logger = logging.getLogger("signoff.google_adk")


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
        self._continuations = Continuations(runs, client_decisions=client_decisions)

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
        thread = thread_of(session)
        call_id = tool_context.function_call_id or ""
        # The model response is the session's event that holds the call: ADK re-runs a
        # confirmed tool from that same event in a later invocation (the same turn), while a
        # provider that numbers every response's calls call_0 makes a new event (a new turn).
        turn = turn_of(session.events, call_id)
        path = path_of(tool_context)
        name, server = self._named(tool)
        schema = self._register(tool, name, path)
        proposed = ToolCall(id=call_id, name=name, args=tool_args, server=server, agent=path)
        # Confirmed: the call was judged when it was proposed. What runs is what signoff's
        # store says, whatever the confirmation carried.
        step = await self.runs.step_of(
            proposed,
            thread=thread,
            turn=turn,
            requested_by=self.requested_by or tool_context.user_id,
            schema=schema,
            resumed=tool_context.tool_confirmation is not None,
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
        return self._schemas.register(name, schema if isinstance(schema, dict) else None,
                                      agent=path)  # fmt: skip

    # -- confirmations from ADK clients -----------------------------------------------------

    async def on_user_message_callback(
        self, *, invocation_context: InvocationContext, user_message: types.Content
    ) -> types.Content | None:
        """A message that answers signoff's confirmations goes on only when it answers every
        call of the pause, each is decided, and nobody continued the pause already
        (`Continuations.answered`)."""
        return await self._continuations.answered(invocation_context, user_message)

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        """The invocation that continued a pause went on past it: the pause is done."""
        await self._continuations.done(invocation_context.invocation_id)

    async def on_run_error_callback(
        self, *, invocation_context: InvocationContext, error: Exception
    ) -> None:
        """The invocation that continued a pause failed: the pause may be continued again."""
        await self._continuations.failed(invocation_context.invocation_id)

    # -- the pause -------------------------------------------------------------------------

    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: Event
    ) -> Event | None:
        """A confirmation ADK asks for: record the pause the resumer finds, with what resuming
        it takes (the session, its user and app, the confirmations' call ids)."""
        session = invocation_context.session
        asked = await self._continuations.verified(session, confirmation_calls(event))
        if asked:
            await self.runs.pause(
                thread=thread_of(session),
                approvals=sorted(asked.values()),
                data={
                    "app": session.app_name,
                    "user": session.user_id,
                    "session": session.id,
                    "confirmations": asked,
                },
                agent=getattr(invocation_context.agent, "name", None),
                conversation=transcript_of([*session.events, event]),
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
                token = RESUMING.set(pause.id)
                try:
                    events = [
                        event
                        async for event in runner.run_async(
                            user_id=data["user"], session_id=data["session"], new_message=message
                        )
                    ]
                finally:
                    RESUMING.reset(token)
            else:  # not this runner's (an agent run as a tool keeps its session in memory)
                logger.warning("no session %s of %s for the pause %s: not resumed",
                               data["session"], data["app"], pause.id)  # fmt: skip
            await self.runs.went_on(list(data["confirmations"].values()))
            return None if events is None else Resumed(data["session"], events)

        return Resumer(self.runs, resume, on_resumed=on_resumed)
