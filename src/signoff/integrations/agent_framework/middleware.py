"""`SignoffMiddleware`: Agent Framework's function middleware that judges each call before it
runs — run once through signoff's ledger, answered, or held as the framework's approval request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from agent_framework import Content, FunctionInvocationContext, FunctionMiddleware
from pydantic import BaseModel

from signoff.gate.answers import edited_text
from signoff.gate.external import ExternalRuns, Step
from signoff.gate.ids import new_id
from signoff.integrations._calls import Schemas, Unrun, run_once
from signoff.types import ToolCall

__all__ = ["SignoffMiddleware"]


class SignoffMiddleware(FunctionMiddleware):
    """Judges every call by signoff's policy with its arguments, in the thread of the run's
    `AgentSession`: allowed, it runs once; denied, the model reads why; asked, it is held and
    answered with the framework's ``function_approval_request`` (``additional_properties`` name
    the approval and version shown). Approved there, it runs as signoff's store has it decided."""

    def __init__(self, runs: ExternalRuns, *, path: str | None = None,
                 requested_by: str | None = None,
                 idempotent: Iterable[str] = ()) -> None:  # fmt: skip
        """`path`: the calls' agent path; `requested_by`: who starts the runs; `idempotent`: the
        tools safe to run again when a worker died inside them."""
        self.runs, self.path, self.requested_by = runs, path, requested_by
        self.idempotent, self._schemas = frozenset(idempotent), Schemas(runs)

    async def process(self, context: FunctionInvocationContext,
                      call_next: Callable[[], Awaitable[None]]) -> None:  # fmt: skip
        tool, meta = context.function, context.metadata
        schema = self._schemas.register(tool.name, tool.parameters(), agent=self.path)
        turn = meta.get("function_call_occurrence_id")  # a provider's ``call_0`` of each response
        # Without a session, each call is a thread of its own: a grant there covers no other run.
        thread = f"-/{turn or new_id()}" if context.session is None else context.session.session_id
        args = a.model_dump() if isinstance(a := context.arguments, BaseModel) else dict(a)
        proposed = ToolCall(id=str(meta.get("call_id") or ""), name=tool.name, args=args,
                            agent=self.path)  # fmt: skip
        step = await self.runs.step_of(proposed, thread=thread, turn=turn, schema=schema,
                                       requested_by=self.requested_by,
                                       resumed="approval_response" in meta)  # fmt: skip
        if step.kind == "wait":
            assert step.approval is not None  # a call that waits has its approval
            shown = {"approval": step.approval.id, "version": step.approval.version}
            request = Content.from_function_call(call_id=proposed.id, name=tool.name,
                                                 arguments=proposed.args, id=turn)  # fmt: skip
            context.result = Content.from_function_approval_request(
                turn or proposed.id, request, additional_properties={"signoff": shown}
            )
        elif step.kind == "answer":
            context.result = step.text
        else:
            context.result = await self._once(context, step)

    async def _once(self, context: FunctionInvocationContext, step: Step) -> Any:
        """Run the call as `step` lets it run, once (its recorded result when it ran before)."""
        assert step.call is not None  # a call to run is named
        call, tool = step.call, context.function

        async def execute() -> Any:
            # The tool itself, on a context of its own with the arguments judged: the rest of
            # the run's chain (a context provider's middleware, after signoff's) could change them.
            own = FunctionInvocationContext(function=tool, arguments=call.args,
                                            session=context.session, kwargs=context.kwargs,
                                            tools=context.tools)  # fmt: skip
            value = await tool.invoke(arguments=call.args, context=own, tool_call_id=call.id)
            if isinstance(value, list) and all(isinstance(c, Content) for c in value):
                return {"contents": [c.to_dict() for c in value]}
            return {"text": str(value)}  # as the framework makes any other result a text

        ran = await run_once(self.runs, step.key, call, execute,
                             idempotent=call.name in self.idempotent)  # fmt: skip
        if isinstance(ran, Unrun):
            return ran.text
        value = ran["text"] if "text" in ran else [Content.from_dict(c) for c in ran["contents"]]
        if step.edited is None:
            return value
        text = value if isinstance(value, str) else "".join(c.text or "" for c in value)
        return edited_text(step.edited, text)
