"""The guard on an Agno agent's models: every call a guarded model hands Agno to run — proposed
in a turn, or confirmed on a continue — gets a function of its own that judges it with signoff's
policy (or reads how it was decided) and runs it once through the ledger, or answers it;
confirmation is asked where the policy may ask. `Guard.settle` judges the calls a paused run
waits on, and says what to tell Agno of each."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from agno.agent import Agent
from agno.models.base import Model
from agno.models.response import ToolExecution
from agno.run.agent import RunOutput
from agno.tools.function import Function, FunctionCall, ToolResult
from pydantic_core import to_jsonable_python

from signoff.errors import SignoffError
from signoff.gate.answers import blocked_text, edited_text
from signoff.gate.external import ExternalRuns
from signoff.integrations._calls import Tools, Unrun
from signoff.types import Approval, ToolCall

__all__ = ["Answer", "Guard", "guardable", "turn_of"]

_MARK = "_signoff_agent"
"""The attribute of a guarded model naming the `Guard` that guards it."""

Answer = tuple[Literal["confirm", "reject"], str | None]

_REFUSED_TOOLKITS = {
    "CodeMode": "its code calls the toolkits it wraps without the model, unjudged",
    "UserControlFlowTools": "Agno pauses its calls for a user's input, which signoff cannot judge",
    "UserFeedbackTools": "Agno pauses its calls for a user's answer, which signoff cannot judge",
}
"""Toolkits whose calls would run, or wait, around signoff's guard."""


def guardable(agent: Agent) -> list[Model]:
    """The models to guard of `agent` (its model, and its fallback models); `SignoffError` when
    a call of the agent could run around the guard."""
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
    return [m for m in [agent.model, *fallbacks] if isinstance(m, Model)]  # all are


class Guard(Tools):
    """The calls of one `SignoffAgent`'s agent, judged and run once."""

    def __init__(
        self,
        agent: Agent,
        runs: ExternalRuns,
        *,
        path: str | None,
        requested_by: str | None,
        idempotent: Iterable[str],
        servers: Mapping[str, Any],
    ) -> None:
        super().__init__(runs, path=path, requested_by=requested_by, idempotent=idempotent)
        self.agent = agent
        self._servers = dict(servers)

    def guard(self, model: Model) -> None:
        """Have `model` hand every call it runs — proposed in a turn, or confirmed on a
        continue — to this guard first: the model's own methods replaced on this instance
        (Agno asks the model for both), each asking the guard the model names now."""
        cls = type(model)

        def calls(  # Agno names the arguments
            assistant_message: Any, messages: Any, functions: Any = None
        ) -> list[FunctionCall]:
            found = cls.get_function_calls_to_run(model, assistant_message, messages, functions)
            turn = getattr(assistant_message, "id", None)
            return [getattr(model, _MARK).guarded(c, turn) for c in found]

        def confirmed(tool_execution: ToolExecution, functions: Any = None) -> FunctionCall:
            call = cls.get_function_call_to_run_from_tool_execution(model, tool_execution,
                                                                    functions)  # fmt: skip
            return getattr(model, _MARK).guarded(call)  # type: ignore[no-any-return]

        setattr(model, _MARK, self)
        # A method of this instance only (mypy would refuse assigning to a method).
        setattr(model, "get_function_calls_to_run", calls)  # noqa: B010
        setattr(model, "get_function_call_to_run_from_tool_execution", confirmed)  # noqa: B010

    async def settle(
        self, out: RunOutput, session_id: str, user_id: str | None
    ) -> tuple[dict[str, Answer], dict[str, Approval] | None, list[str]]:
        """Judge the calls the paused run waits on (or read how they were decided): what to
        tell Agno of each requirement, by its id; the approvals still undecided, by
        requirement id — None when none is and the run can go on, empty when it waits on
        something that is not signoff's (a user's input: answered through Agno); and the
        approvals decided."""
        pending = out.active_requirements
        foreign = [r for r in pending if not r.needs_confirmation]
        asked = [(r.id, r.tool_execution) for r in pending
                 if r.needs_confirmation and r.tool_execution is not None]  # fmt: skip
        answers: dict[str, Answer] = {}
        by_turn: dict[str | None, dict[str, ToolCall]] = {}
        for rid, execution in asked:
            if not (out.run_id and execution.tool_call_id):  # it cannot be kept once
                answers[rid] = ("reject", blocked_text("a call without an id is not run"))
                continue
            call = self._call_of(execution.tool_name or "", execution.tool_call_id,
                                 execution.tool_args or {})  # fmt: skip
            by_turn.setdefault(turn_of(out.messages, call.id), {})[rid] = call
        waiting: dict[str, Approval] = {}
        decided: list[str] = []
        for turn, calls in by_turn.items():
            steps = await self.runs.steps(list(calls.values()), thread=session_id, turn=turn,
                                          requested_by=self.requested_by or user_id)  # fmt: skip
            for rid, call in calls.items():
                step = steps[call.id]
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

        @functools.wraps(original)
        async def entry(*args: Any, **kwargs: Any) -> Any:
            return await self.execute(call, original, args, kwargs, turn)

        @functools.wraps(original)
        def entry_sync(*args: Any, **kwargs: Any) -> Any:
            return asyncio.run(entry(*args, **kwargs))

        try:
            asyncio.get_running_loop()
            mine.entrypoint = entry
        except RuntimeError:  # Agno's synchronous run: no loop in this thread
            mine.entrypoint = entry_sync
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
        if context is None or context.session_id is None or not context.run_id or not call.call_id:
            return blocked_text("a call outside a session's run, or without an id, is not run")
        thread, run_id = context.session_id, context.run_id
        if turn is None:  # a confirmed call Agno continues: its message is in the saved run
            saved = await self.agent.aget_run_output(run_id=run_id, session_id=thread)
            turn = turn_of(saved.messages if saved is not None else None, call.call_id)
        proposed = self._call_of(call.function.name, call.call_id, call.arguments or {})
        schema = self._register(call.function, proposed.name)
        requested_by = self.requested_by or context.user_id
        step = await self.runs.step_of(
            proposed, thread=thread, turn=turn, requested_by=requested_by, schema=schema
        )
        if step.kind == "wait":
            return "signoff: this call waits for a person's decision; it did not run."
        if step.kind == "answer":
            return step.text
        assert step.call is not None  # a call to run is named
        if step.edited is None:
            return await self._once(step.key, step.call, lambda: original(*args, **kwargs))
        edit = step.edited
        edited = {**{k: v for k, v in kwargs.items() if k not in proposed.args}, **edit}
        value = await self._once(step.key, step.call, lambda: original(*args, **edited))
        if isinstance(value, ToolResult):
            return value.model_copy(update={"content": edited_text(edit, value.content)})
        return edited_text(edit, value) if isinstance(value, str) else value

    async def _once(self, key: str, call: ToolCall, call_tool: Callable[[], Any]) -> Any:
        """Run the tool once under `key` (or read its result); a refused call is answered."""

        async def run() -> Any:
            value = await _outcome(call_tool())
            kind = "tool_result" if isinstance(value, ToolResult) else "result"
            return {kind: to_jsonable_python(value, fallback=str)}

        value = await self.once(key, call, run)
        if isinstance(value, Unrun):
            return value.text
        if "tool_result" in value:  # an MCP tool's, or one with media: kept as Agno's own
            return ToolResult.model_validate(value["tool_result"])
        return value["result"]

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
        """Edits of the agent's calls are checked against its tools' schemas when decided."""
        schema = function.parameters if isinstance(function.parameters, dict) else None
        return self._schemas.register(name, schema, agent=self.path)


def turn_of(messages: Sequence[Any] | None, call_id: str) -> str | None:
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
