"""`SignoffMiddleware`: Agent Framework's function middleware that judges each call of a run
before it runs — run once through signoff's ledger, answered, or held as the framework's own
function approval request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from agent_framework import Content, FunctionInvocationContext, FunctionMiddleware
from pydantic import BaseModel

from signoff.gate.answers import edited_text
from signoff.gate.external import ExternalRuns, Step
from signoff.integrations._calls import Schemas, Unrun, run_once
from signoff.types import ToolCall

__all__ = ["NO_SESSION", "SignoffMiddleware"]

NO_SESSION = "-"
"""The thread of a run without an `AgentSession` (its calls are still told apart by their
occurrence ids; the framework resumes no approval without a session)."""


class SignoffMiddleware(FunctionMiddleware):
    """Judges every call the agent's model makes by signoff's policy with its arguments, in the
    thread of the run's `AgentSession` (its ``session_id``): an allowed call runs once, a
    denied one gives the model the reason, an asked one becomes an approval in signoff's store
    and the run ends with the framework's ``function_approval_request`` for it. When the run is
    resumed with that request's approval response, the decision is read from signoff's store,
    never from the response: an approval runs the call, an edit runs it with the edited
    arguments, a response is the tool's result, a rejection's reason reaches the model."""

    def __init__(
        self,
        runs: ExternalRuns,
        *,
        path: str | None = None,
        requested_by: str | None = None,
        idempotent: Iterable[str] = (),
    ) -> None:
        """`path` is the agent path the policy's ``agents:`` section judges the calls by;
        `requested_by` who starts the runs (a rule may forbid them approving their own);
        `idempotent` the tools safe to run again when a worker died inside them."""
        self.runs = runs
        self.path = path
        self.requested_by = requested_by
        self.idempotent = frozenset(idempotent)
        self._schemas = Schemas(runs)

    async def process(
        self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
    ) -> None:
        tool, meta = context.function, context.metadata
        schema = tool.parameters()
        self._schemas.register(tool.name, schema, agent=self.path)
        thread = context.session.session_id if context.session is not None else NO_SESSION
        # The framework's identity of this call in this model response: a provider that
        # numbers every response's calls ``call_0`` still gets each judged.
        turn = meta.get("function_call_occurrence_id")
        proposed = ToolCall(id=str(meta.get("call_id") or ""), name=tool.name,
                            args=_args(context.arguments), agent=self.path)  # fmt: skip
        resumed = meta.get("approval_response") is not None
        found = await self.runs.held_call(thread, proposed, turn) if resumed else None
        step = await self.runs.step_of(proposed, thread=thread, turn=turn, schema=schema,
                                       requested_by=self.requested_by, found=found)  # fmt: skip
        if step.kind == "wait":
            context.result = request_of(proposed, turn, step)
        elif step.kind == "answer":
            context.result = step.text
        else:
            context.result = await self._once(context, call_next, step)

    async def _once(
        self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]],
        step: Step,
    ) -> Any:  # fmt: skip
        """Run the call as `step` lets it run, once (its recorded result when it ran before)."""
        assert step.call is not None  # a call to run is named
        call, tool = step.call, context.function

        async def execute() -> Any:
            if step.edited is None:
                await call_next()
                value = context.result
            else:
                # The edit runs on its own context: the framework's own approval binds the
                # call's arguments as the model proposed them to the run's context.
                own = FunctionInvocationContext(function=tool, arguments=call.args,
                                                session=context.session, kwargs=context.kwargs,
                                                tools=context.tools)  # fmt: skip
                value = await tool.invoke(arguments=call.args, context=own, tool_call_id=call.id)
            if isinstance(value, list) and all(isinstance(c, Content) for c in value):
                return {"contents": [c.to_dict() for c in value]}
            return {"text": str(value)}

        ran = await run_once(self.runs, step.key, call, execute,
                             idempotent=call.name in self.idempotent)  # fmt: skip
        if isinstance(ran, Unrun):
            return ran.text
        if "text" in ran:
            value: Any = ran["text"]
        else:
            value = [Content.from_dict(c) for c in ran["contents"]]
        if step.edited is None:
            return value
        text = value if isinstance(value, str) else "".join(c.text or "" for c in value)
        return edited_text(step.edited, text)


def request_of(call: ToolCall, turn: Any, step: Step) -> Content:
    """The framework's approval request for a held call: its ``additional_properties`` name
    the call's signoff approval and the version of it shown."""
    assert step.approval is not None  # a call that waits has its approval
    occurrence = turn if isinstance(turn, str) else None
    shown = {"approval": step.approval.id, "version": step.approval.version}
    return Content.from_function_approval_request(
        id=occurrence or call.id,
        function_call=Content.from_function_call(call_id=call.id, name=call.name,
                                                 arguments=call.args, id=occurrence),  # fmt: skip
        additional_properties={"signoff": shown},
    )


def _args(arguments: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(arguments, BaseModel):
        return arguments.model_dump(mode="json")
    return dict(arguments)
