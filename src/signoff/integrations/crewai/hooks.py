"""`SignoffHooks`: CrewAI's before- and after-tool-call hooks, judging each call with signoff's
policy, approvals and grants — a held call waits in memory for its decision — and running the
calls signoff lets through once, through its ledger."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from signoff.errors import MissingExtraError
from signoff.gate.answers import blocked_text, edited_text
from signoff.gate.external import ExternalRuns, Step
from signoff.gate.ids import new_id
from signoff.gate.transcript import call as transcript_call
from signoff.gate.transcript import message, tail
from signoff.integrations._calls import Schemas, Unrun, decided, run_once
from signoff.types import Approval, ToolCall

if TYPE_CHECKING:
    from crewai.hooks import ToolCallHookContext

__all__ = ["SignoffHooks"]

logger = logging.getLogger("signoff.crewai")


class SignoffHooks:
    """CrewAI's tool-call hooks, deciding with signoff's policy, approvals and grants."""

    def __init__(
        self,
        runs: ExternalRuns,
        *,
        thread: str | None = None,
        requested_by: str | None = None,
        timeout: float | None = None,
        idempotent: Sequence[str] = (),
    ) -> None:
        """`runs` from `connect(policy, origin="crewai", database=...)`; `thread` what the
        approvals are grouped by in the inbox (and a thread-scoped grant applies to; default:
        the crew's id); `requested_by` who runs the crew (a rule may forbid them approving
        their own calls); `timeout` the seconds a call waits for a person at most (default:
        the rule's timeout, or no limit) before its approval expires; `idempotent` the tools
        that may run again when a worker died inside them. Calls are judged by the tool's
        name as the model sees it, and the agent's role as its path."""
        self.runs = runs
        self.thread = thread
        self.requested_by = requested_by
        self.timeout = timeout
        self.idempotent = frozenset(idempotent)
        self.waiting: dict[str, Approval] = {}
        """The calls that wait for a person now, by approval id, as they stand."""
        self._schemas = Schemas(runs)
        self._said = threading.local()  # before and after a call run in CrewAI's one thread

    def register(self) -> SignoffHooks:
        """Register the hooks with CrewAI, for every crew and agent of the process; after the
        app's own hooks, so that signoff judges the call as they leave it."""
        try:
            from crewai import hooks
        except ImportError as exc:  # pragma: no cover - exercised without the extra installed
            raise MissingExtraError("signoff.integrations.crewai", "crewai") from exc
        hooks.register_before_tool_call_hook(self.before_tool_call)
        hooks.register_after_tool_call_hook(self.after_tool_call)
        return self

    def unregister(self) -> None:
        """Take the hooks out of CrewAI's."""
        from crewai import hooks

        hooks.unregister_before_tool_call_hook(self.before_tool_call)
        hooks.unregister_after_tool_call_hook(self.after_tool_call)

    def before_tool_call(self, context: ToolCallHookContext) -> bool:
        """Judge the call, wait for a person where the policy asks, and run it once through
        signoff's ledger — or answer it. Always False: CrewAI never runs the call itself, and
        reads what `after_tool_call` hands it instead."""
        try:
            text = _run_sync(self._settle(context))
        except Exception as exc:  # CrewAI would run a call whose hook raised: blocked instead
            logger.exception("signoff could not judge a CrewAI call of %r", context.tool_name)
            text = blocked_text(f"signoff could not judge it ({type(exc).__name__})")
        self._said.text = text
        return False

    def after_tool_call(self, context: ToolCallHookContext) -> str | None:
        """What the agent reads of the call `before_tool_call` settled: the tool's result, or
        signoff's answer in its place (None for a call it did not see: another hook blocked it
        first, and CrewAI's words stand)."""
        text: str | None = self._said.__dict__.pop("text", None)
        return text

    async def _settle(self, context: ToolCallHookContext) -> str:
        tool = context.tool
        original = getattr(tool, "_original_tool", None) or tool
        if original is None:
            return blocked_text("it names no tool of this agent")
        agent = context.agent
        path: str | None = getattr(agent, "role", None)
        thread = self.thread or _thread_of(context)
        schema = _schema_of(tool)
        self._schemas.register(context.tool_name, schema, agent=path)
        said = _messages_of(agent)
        proposed = ToolCall(id=_call_id(said, context) or new_id(), name=context.tool_name,
                            args=dict(context.tool_input), agent=path)  # fmt: skip
        # CrewAI's run lives in memory and never calls a tool again for the same model
        # response: each call it makes is one of its own, however its provider numbers them.
        turn = new_id()
        judging: dict[str, Any] = {"thread": thread, "turn": turn, "schema": schema,
                                   "requested_by": self.requested_by}  # fmt: skip
        step = await self.runs.step_of(proposed, **judging)
        if step.kind == "wait":
            assert step.approval is not None  # a call waits on its approval
            await self._wait(step.approval, thread, path, said)
            step = await self.runs.step_of(proposed, **judging)
        if step.kind != "run":
            return step.text
        return await self._run(step, original)

    async def _wait(
        self, approval: Approval, thread: str, path: str | None, said: list[Any]
    ) -> None:
        """Wait for the approval's decision, its call listed in `waiting` and kept — with the
        conversation so far, for the people who decide — as the run's pause meanwhile."""
        await self.runs.pause(thread=thread, approvals=[approval.id], data={}, agent=path,
                              conversation=_transcript(said, path))  # fmt: skip
        self.waiting[approval.id] = approval
        try:
            await decided(self.runs, approval, self.timeout,
                          lambda found: self.waiting.__setitem__(found.id, found))  # fmt: skip
        finally:
            self.waiting.pop(approval.id, None)
            await self.runs.went_on([approval.id])

    async def _run(self, step: Step, tool: Any) -> str:
        """Run the call once under its key through signoff's ledger — refused unless it is the
        call judged allowed, approved or edited — and give the agent its result as CrewAI
        would (with a person's edit noted), or signoff's answer when it did not run."""
        call = step.call
        assert call is not None  # a call to run is named
        ran: list[Any] = []

        async def run() -> dict[str, Any]:
            # Off this loop: a CrewAI tool may run an event loop of its own (asyncio.run).
            ran.append(await asyncio.to_thread(lambda: tool.run(**call.args)))
            return {"output": to_jsonable_python(ran[0], fallback=repr)}

        try:
            value = await run_once(self.runs, step.key, call, run,
                                   idempotent=call.name in self.idempotent)  # fmt: skip
        except Exception as exc:  # the tool's own error: the agent reads it, as in CrewAI
            return f"Error executing tool: {exc}"
        if isinstance(value, Unrun):
            return value.text
        raw = ran[0] if ran else value["output"]
        shown = getattr(tool, "format_output_for_agent", None)  # how CrewAI shows it the agent
        text = str(shown(raw)) if callable(shown) else str(raw)
        return text if step.edited is None else edited_text(step.edited, text)


def _run_sync(coro: Any) -> Any:
    """Run `coro` to its end from CrewAI's synchronous hook: on this thread, or on one of its
    own where the thread already runs a loop (an ``akickoff``)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _thread_of(context: ToolCallHookContext) -> str:
    """The crew's own thread (an agent's, kicked off alone)."""
    owner = context.crew if context.crew is not None else context.agent
    return f"crewai-{getattr(owner, 'id', None) or 'run'}"


def _schema_of(tool: Any) -> dict[str, Any] | None:
    """The JSON schema of the tool's arguments, which a person's edit is checked against."""
    model = getattr(tool, "args_schema", None)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return model.model_json_schema()
    return None


def _messages_of(agent: Any) -> list[Any]:
    """The agent's conversation so far, as its executor keeps it."""
    messages = getattr(getattr(agent, "agent_executor", None), "messages", None)
    return list(messages) if isinstance(messages, list) else []


def _call_id(messages: Sequence[Any], context: ToolCallHookContext) -> str | None:
    """The id the model gave the call, in the last response that made calls: the call of that
    tool with these arguments (or, where a hook changed them, the first of that tool)."""
    from crewai.utilities.string_utils import sanitize_tool_name

    for said in reversed(messages):
        if isinstance(said, Mapping) and said.get("role") == "assistant" and said.get("tool_calls"):
            named = [c for c in said["tool_calls"] if isinstance(c, Mapping)
                     and sanitize_tool_name(c.get("function", {}).get("name", "")) ==
                     context.tool_name]  # fmt: skip
            same = [c for c in named if _args(c) == context.tool_input]
            found = (same or named or [{}])[0].get("id")
            return found if isinstance(found, str) else None
    return None


def _args(call: Mapping[str, Any]) -> Any:
    arguments = call.get("function", {}).get("arguments")
    try:
        return json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return None


def _transcript(messages: Sequence[Any], agent: str | None) -> list[dict[str, Any]]:
    """The conversation in signoff's shape, for the people who decide."""
    found = []
    for said in tail(messages):
        role = said.get("role") if isinstance(said, Mapping) else None
        if role not in ("system", "user", "assistant", "tool"):
            continue
        calls = [transcript_call(c.get("id"), c.get("function", {}).get("name", ""), _args(c))
                 for c in said.get("tool_calls") or () if isinstance(c, Mapping)]  # fmt: skip
        found.append(message(role, said.get("content") or "", tool_calls=calls,
                             tool_call_id=said.get("tool_call_id"), name=said.get("name"),
                             agent=agent if role == "assistant" else None))  # fmt: skip
    return found
