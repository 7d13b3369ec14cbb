"""OpenAI Agents SDK agents behind signoff: the agent as it is, run through `SignoffAgent`.

    runs = connect("policy.yaml", origin="openai-agents", database="sqlite:///signoff.db")
    agent = SignoffAgent(my_agent, runs)
    result = await agent.run("Mail the notes to Bob", thread="notes-1")
    # result.final_output, or result.interruptions while calls wait for a person
    ...                                   # decided in the web inbox, the API, the terminal
    result = await agent.resume("notes-1")  # or agent.resumer().start() next to the app

Each run wraps the agent's function tools and its MCP servers' tools — and those of every agent
it hands off to — so that signoff's policy judges every call with its arguments (the tool's
``needs_approval``): allowed calls run once, through signoff's ledger; denied ones give the model
the reason; asked ones become approvals in signoff's store and the run ends with the SDK's
interruptions. signoff keeps the thread (its conversation, appended; a paused run's `RunState`)
so that any process resumes it with the decisions read from signoff's store: an approval runs
the call, an edit runs it with the edited arguments (checked against the tool's schema and the
policy), a response is the tool's result, a rejection's reason reaches the model — what the SDK
itself cannot do (it has no edit, and answers only with a rejection). Approve-always is a
signoff grant, so it holds across runs and threads as its scope says. Resumed twice, by two
processes at once, each tool still runs once; a pause is continued at most once.

signoff holds what runs through `SignoffAgent`: an Agents SDK `Agent` of your own, unwrapped,
run on a paused `RunState` (`Runner.run(agent, state)`) runs its tools without signoff.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from signoff.errors import ConflictError, MissingExtraError, SignoffError
from signoff.gate import transcript
from signoff.gate.answers import answer_text, blocked_text, edited_text
from signoff.gate.external import LEASE, ExternalRuns, Held, Resumed, Resumer, connect
from signoff.gate.ids import new_id
from signoff.integrations._calls import Schemas, Unrun, held_call, run_once, step_of
from signoff.integrations._threads import Append, Hold, appender, busy, now, resumer, unmarked
from signoff.types import ToolCall

try:
    from agents import (
        Agent,
        ApplyPatchTool,
        ComputerTool,
        CustomTool,
        FunctionTool,
        Handoff,
        LocalShellTool,
        RunContextWrapper,
        Runner,
        RunState,
        ShellTool,
    )
    from agents.items import ModelResponse, ToolApprovalItem
    from agents.lifecycle import AgentHooksBase
    from agents.result import RunResult, RunResultStreaming
    from agents.sandbox import SandboxAgent
    from agents.stream_events import StreamEvent
    from agents.tool_context import ToolContext
    from pydantic_core import to_jsonable_python
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise MissingExtraError("signoff.integrations.openai_agents", "openai-agents") from exc

__all__ = ["ORIGIN", "SignoffAgent", "connect"]

ORIGIN = "openai-agents"

Invoke = Callable[[ToolContext[Any], str], Awaitable[Any]]


class SignoffAgent:
    """An OpenAI Agents SDK `Agent` with signoff's policy, approvals, grants, ledger and
    audit, and its threads kept in signoff's store."""

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
        """`runs` from `connect(policy, origin="openai-agents", database=...)`; `path` the agent
        path the policy's ``agents:`` section judges its calls by (default: the agent's name;
        an agent it hands off to is judged as ``path/its-name``); `requested_by` who starts its
        threads (a rule may forbid them approving their own); `idempotent` the tools safe to run
        again when a worker died inside them (any other is then ``unknown``, not re-run);
        `lease` how long a resume holds its thread unrenewed (renewed every third of it)."""
        self.agent = agent
        self.runs = runs
        self.path = path or agent.name
        self.requested_by = requested_by
        self.idempotent = frozenset(idempotent)
        self.lease = lease
        self._schemas = Schemas(runs)

    # -- running ---------------------------------------------------------------------------

    async def run(self, input: str | list[Any], *, thread: str, **kwargs: Any) -> RunResult:
        """Run the agent on `thread`: its conversation so far, then `input`; what the run adds
        is appended to it. Ends with the agent's output, or with `interruptions` while calls
        wait for a person. `kwargs` go to `Runner.run` (context, max_turns, run_config, ...)."""
        entries, conversation, _ = await self._thread(thread, waiting=False)
        wrapping = _Wrapping(self, thread, kwargs.get("context"))
        wrapped = await wrapping.root()
        result = await Runner.run(wrapped, [*conversation, *_items(input)], **kwargs)
        append = self._appender(thread, len(entries))
        kept: RunResult = await self._settle(wrapping, append, conversation, result, kwargs)
        return kept

    async def resume(self, thread: str, **kwargs: Any) -> RunResult | None:
        """Resume `thread` with the decisions signoff's store holds for its waiting calls (an
        undecided one waits on). None when nothing waits, nothing it waits on is decided, or
        another process resumes it now. `context` (when the run's context could not be kept)
        and `kwargs` go to the SDK."""
        result, _ = await self._resume(thread, **kwargs)
        return result

    async def _resume(self, thread: str, **kwargs: Any) -> tuple[RunResult | None, bool]:
        """`resume`, and whether the thread's pause is over (False: it waits on)."""
        entries, conversation, paused = await self._thread(thread, waiting=True)
        if paused is None:
            return None, True  # nothing waits: the run went on already
        context = kwargs.pop("context", None)
        wrapping = _Wrapping(self, thread, context, run=paused)
        wrapped = await wrapping.root()
        state = await RunState.from_json(wrapped, paused["state"], context_override=context)
        held = await self._judged(wrapping, state.get_interruptions())
        answered, decided = _answer(state, held, wrapping)
        if not answered:
            return None, False  # nothing it waits on is decided: it waits on, untouched
        hold = await Hold.take(self.runs, ORIGIN, thread, entries, lease=self.lease)
        if hold is None:
            return None, False  # another process resumes it
        try:
            result = await Runner.run(wrapped, state, **kwargs)
            kept: RunResult = await self._settle(wrapping, hold.keep, conversation, result, kwargs)
        finally:
            await hold.release()  # a no-op once kept
        await self.runs.went_on(decided)
        return kept, True

    async def stream(
        self, input: str | list[Any], *, thread: str, **kwargs: Any
    ) -> AsyncIterator[StreamEvent]:
        """`run`, streamed: the SDK's events as they come (`Runner.run_streamed`); the thread
        is kept once the stream ends, as `run` keeps it."""
        entries, conversation, _ = await self._thread(thread, waiting=False)
        wrapping = _Wrapping(self, thread, kwargs.get("context"))
        wrapped = await wrapping.root()
        streamed = Runner.run_streamed(wrapped, [*conversation, *_items(input)], **kwargs)
        async for event in streamed.stream_events():
            yield event
        await self._settle(wrapping, self._appender(thread, len(entries)), conversation,
                           streamed, kwargs)  # fmt: skip

    def run_sync(self, input: str | list[Any], *, thread: str, **kwargs: Any) -> RunResult:
        """`run` from synchronous code (not inside a running event loop)."""
        return asyncio.run(self.run(input, thread=thread, **kwargs))

    def resume_sync(self, thread: str, **kwargs: Any) -> RunResult | None:
        """`resume` from synchronous code (not inside a running event loop)."""
        return asyncio.run(self.resume(thread, **kwargs))

    def resumer(self, *, on_resumed: Callable[[Resumed], Any] | None = None) -> Resumer:
        """A `Resumer` that resumes this agent's waiting threads once every call a pause waits
        on is decided — in any channel, with no code of the user's: ``.start()`` it next to
        the app, or ``await ....work()`` in a task. Each resumed run's `RunResult` reaches
        `on_resumed`, and ``wait(thread)`` / ``await resumed(thread)``."""
        return resumer(self.runs, self._resume, on_resumed)

    def _appender(self, thread: str, after: int) -> Append:
        return appender(self.runs, ORIGIN, thread, after)

    async def _thread(
        self, thread: str, *, waiting: bool
    ) -> tuple[list[str], list[Any], dict[str, Any] | None]:
        """The thread's entries, its conversation, and the entry of its run that waits on
        people — which takes no new input (`waiting` False) until it is resumed.

        Each entry is ``{"item": ...}`` (one input item of the conversation), ``{"state": ...,
        "run": ..., "responses": n}`` (a paused run's state, the conversation so far inside it,
        and which model response its calls came from), ``{"conversation": [...]}``
        (the whole conversation anew, after a run that rewrote it: a handoff's input filter),
        or a resume mark."""
        entries = await self.runs.near(self.runs.store.history(ORIGIN, thread))
        if not waiting and busy(entries, now(self.runs)):
            raise ConflictError(f"thread {thread!r} is being resumed")
        conversation: list[Any] = []
        paused: dict[str, Any] | None = None
        for entry in unmarked(entries):
            parsed = json.loads(entry)
            paused = parsed if "state" in parsed else None
            if "item" in parsed:
                conversation.append(parsed["item"])
            elif "conversation" in parsed:
                conversation = list(parsed["conversation"])
        if paused is not None and not waiting:
            raise ConflictError(
                f"thread {thread!r} waits on calls a person has not all answered: resume it "
                "(SignoffAgent.resume) once they are decided"
            )
        return entries, conversation, paused

    async def _settle(
        self,
        wrapping: _Wrapping,
        append: Append,
        conversation: Sequence[Any],
        result: RunResult | RunResultStreaming,
        kwargs: dict[str, Any],
    ) -> Any:
        """Go on while every call the run stopped on is answered without a person (a verdict
        the SDK could not ask for, a grant given meanwhile); then `append` what the run added
        to the thread."""
        thread, wrapped = wrapping.thread, await wrapping.root()
        held: dict[str, Held] = {}
        while result.interruptions:
            held = await self._judged(wrapping, result.interruptions)
            state = result.to_state()
            answered, _ = _answer(state, held, wrapping)
            if answered < len(result.interruptions):
                break  # a call waits for a person
            kwargs = {k: v for k, v in kwargs.items() if k != "context"}
            result = await Runner.run(wrapped, state, **kwargs)
        pause = None
        if result.interruptions:
            new = [json.dumps({"state": result.to_state().to_json(), **wrapping.where()})]
            asked = [h.approval.id for h in held.values() if h.approval is not None]
            pause = self.runs.pause_of(
                thread=thread,
                approvals=asked,
                data={"thread_id": thread, "asked": asked},
                agent=self.path,
                conversation=_transcript(result.to_input_list(), self.path),
            )
        else:
            new = _added(conversation, result.to_input_list())
        if not await append(new, pause):  # the pause, if any, with the entries: one write
            raise ConflictError(
                f"thread {thread!r} was extended by another run meanwhile; this run was not "
                "kept (its tools ran once all the same)"
            )
        return result

    async def _judged(
        self, wrapping: _Wrapping, items: Sequence[ToolApprovalItem]
    ) -> dict[str, Held]:
        """How each call the run stopped on stands, by call id (judged now when the SDK
        stopped on it without asking the tool: arguments it could not read, say)."""
        calls = [wrapping.proposed(item) for item in items]
        return await self.runs.judged(calls, thread=wrapping.thread, requested_by=self.requested_by,
                                      turn=wrapping.turn)  # fmt: skip

    # -- one call --------------------------------------------------------------------------

    async def asks(self, thread: str, call: ToolCall, turn: str) -> bool:
        """The tool's ``needs_approval``: judge the call; True when it waits for a person."""
        found = await self.runs.judged(
            [call], thread=thread, requested_by=self.requested_by, turn=turn
        )
        return found[call.id].record.kind == "hold"

    async def execute(
        self,
        thread: str,
        turn: str,
        ctx: ToolContext[Any],
        raw: str,
        proposed: ToolCall,
        schema: dict[str, Any],
        invoke: Invoke,
    ) -> Any:
        """Run one call as it was judged and decided, or answer it."""
        found = await held_call(self.runs, thread, proposed, turn)
        if found is None and self.runs.gate.engine.evaluate(proposed).kind != "allow":
            # The SDK runs it without having asked the tool (an approval given outside signoff,
            # an `on_approval` callback): it runs only where the policy allows it outright.
            return blocked_text("the SDK ran it without signoff's policy asked first")
        step = await step_of(
            self.runs,
            proposed,
            thread=thread,
            turn=turn,
            requested_by=self.requested_by,
            schema=schema,
            found=found,
        )
        if step.kind == "wait":
            return blocked_text("it waits for a person's decision")
        if step.kind == "answer":
            return step.text
        assert step.call is not None  # a call to run is named
        # The SDK cannot change a call's arguments: an edit is invoked with the person's
        # arguments, and the model is told.
        edited = step.edited
        arguments = raw if edited is None else json.dumps(edited)
        return await self._once(step.key, step.call, ctx, arguments, invoke, edited=edited)

    async def _once(
        self,
        key: str,
        call: ToolCall,
        ctx: ToolContext[Any],
        raw: str,
        invoke: Invoke,
        *,
        edited: dict[str, Any] | None,
    ) -> Any:
        """Invoke the tool once under `key` (its recorded result when it ran); a call signoff
        refuses is answered, never run."""

        async def execute() -> Any:
            return {"result": to_jsonable_python(await invoke(ctx, raw))}

        idempotent = call.name in self.idempotent
        value = await run_once(self.runs, key, call, execute, idempotent=idempotent)
        if isinstance(value, Unrun):
            return value.text
        result = value["result"]
        if edited is None:
            return result
        if isinstance(result, list):  # content parts (an MCP tool's): the note comes first
            note = edited_text(edited, "").rstrip()
            return [{"type": "text", "text": note}, *result]
        return edited_text(edited, result if isinstance(result, str) else json.dumps(result))

    def register(self, path: str, name: str, schema: dict[str, Any]) -> None:
        """Edits of this agent's calls are checked against its tools' schemas when decided."""
        self._schemas.register(name, schema, agent=path)


class _Wrapping:
    """The agent graph of one run on one thread: every agent reachable by handoffs, cloned with
    its function tools and MCP tools wrapped (the policy decides ``needs_approval``; signoff
    runs the call). Each agent's path is the chain of handoffs that first reaches it."""

    def __init__(
        self, owner: SignoffAgent, thread: str, context: Any, run: dict[str, Any] | None = None
    ) -> None:
        """`run`: the kept entry of the paused run this resumes, else a new run."""
        self.owner = owner
        self.thread = thread
        self.context = RunContextWrapper(context=context)
        # A call is known by the model response it came from: this run's id and the response's
        # number in it, counted as the SDK reports each response (`on_llm_end`) and kept with
        # a paused run's state. The provider's `response_id` is not used: a custom `Model` may
        # give none, and the SDK's call item ids default to the call ids.
        self.run: str = run["run"] if run else new_id()
        self.responses: int = run["responses"] if run else 0
        self.clones: dict[int, Agent[Any]] = {}
        self._root: Agent[Any] | None = None
        self.tools: dict[tuple[str, str], tuple[str, str | None, str]] = {}
        """(agent name, tool name) → (the call's name, its MCP server, its agent path), for
        the tools signoff wrapped."""
        self.paths: dict[str, str] = {}
        """agent name → its path."""

    @property
    def turn(self) -> str:
        """The model response the calls now judged or run came from: the run's newest (the SDK
        runs a response's tools before it asks the model again)."""
        return f"{self.run}:{self.responses}"

    def where(self) -> dict[str, Any]:
        """What a paused run's entry keeps to know its calls again when resumed."""
        return {"run": self.run, "responses": self.responses}

    async def root(self) -> Agent[Any]:
        if self._root is None:
            self._root = await self._agent(self.owner.agent, self.owner.path)
        return self._root

    async def _agent(self, agent: Agent[Any], path: str) -> Agent[Any]:
        if id(agent) in self.clones:
            return self.clones[id(agent)]
        if agent.name in self.paths:
            # The SDK finds a paused run's agents by name: two would share one's tools.
            raise SignoffError(f"two agents of this graph are named {agent.name!r}")
        if isinstance(agent, SandboxAgent):
            raise SignoffError(
                f"{agent.name!r} is a SandboxAgent: its tools are added as it runs, where "
                "signoff cannot put its policy in front of them"
            )
        clone = agent.clone(mcp_servers=[], hooks=_Responses(agent.hooks, self))
        self.clones[id(agent)] = clone  # before its handoffs: they may lead back to it
        self.paths[agent.name] = path
        tools = list(agent.tools)
        if agent.mcp_servers:
            tools += await agent.get_mcp_tools(self.context)
        clone.tools = [self._tool(clone, tool, path) for tool in tools]
        clone.handoffs = [await self._handoff(h, path) for h in agent.handoffs]
        return clone

    async def _handoff(self, handoff: Agent[Any] | Handoff[Any, Any], path: str) -> Any:
        if isinstance(handoff, Agent):
            return await self._agent(handoff, f"{path}/{handoff.name}")
        reference = getattr(handoff, "_agent_ref", None)
        target = reference() if callable(reference) else None
        if not isinstance(target, Agent):
            raise SignoffError(
                f"the handoff to {handoff.agent_name!r} does not say which agent it leads to: "
                "signoff cannot put its policy in front of that agent's tools"
            )
        clone = await self._agent(target, f"{path}/{target.name}")
        original = handoff.on_invoke_handoff

        async def invoke(ctx: RunContextWrapper[Any], raw: str) -> Agent[Any]:
            await original(ctx, raw)  # the handoff's own callback (its on_handoff)
            return clone

        wrapped = dataclasses.replace(handoff, on_invoke_handoff=invoke)
        wrapped._agent_ref = weakref.ref(clone)
        return wrapped

    def _tool(self, agent: Agent[Any], tool: Any, path: str) -> Any:
        if isinstance(tool, ShellTool | ApplyPatchTool | CustomTool):
            environment: Any = getattr(tool, "environment", None) or {}
            if environment.get("type", "local") != "local":
                return tool  # a shell hosted at the model's provider
            # These run where the SDK runs them: each call stops the run for the policy (and a
            # person) to answer — run as proposed, never edited.
            return dataclasses.replace(tool, needs_approval=True, on_approval=None)
        if isinstance(tool, LocalShellTool | ComputerTool):
            raise SignoffError(
                f"the tool {getattr(tool, 'name', type(tool).__name__)!r} of {agent.name!r} "
                "runs without asking anyone: signoff cannot put its policy in front of it"
            )
        if not isinstance(tool, FunctionTool):
            return tool  # hosted tools run at the model's provider
        sub = getattr(tool, "_agent_instance", None)
        if getattr(tool, "_is_agent_tool", False) and (
            sub is None or sub.tools or sub.handoffs or sub.mcp_servers
        ):
            raise SignoffError(
                f"the tool {tool.name!r} of {agent.name!r} runs an agent with tools of its own "
                "(Agent.as_tool), whose calls signoff cannot put its policy in front of: hand "
                "off to that agent instead"
            )
        binding = getattr(tool, "_mcp_tool_binding", None)
        server, name = (binding[0], binding[1]) if binding else (None, tool.name)
        self.tools[(agent.name, tool.name)] = (name, server, path)
        owner, thread, invoke = self.owner, self.thread, tool.on_invoke_tool
        schema = tool.params_json_schema
        owner.register(path, name, schema)

        def proposed(call_id: str, args: dict[str, Any]) -> ToolCall:
            return ToolCall(id=call_id, name=name, args=args, server=server, agent=path)

        async def needs_approval(_ctx: Any, params: dict[str, Any], call_id: str) -> bool:
            return await owner.asks(thread, proposed(call_id, params), self.turn)

        async def on_invoke_tool(ctx: ToolContext[Any], raw: str) -> Any:
            args = _object(raw)
            if args is None:
                return blocked_text("its arguments are not a JSON object")
            call = proposed(ctx.tool_call_id, args)
            return await owner.execute(thread, self.turn, ctx, raw, call, schema, invoke)

        return dataclasses.replace(
            tool, needs_approval=needs_approval, on_invoke_tool=on_invoke_tool
        )

    def wrapped(self, item: ToolApprovalItem) -> bool:
        """Whether the call an interruption stands for is of a tool signoff wrapped."""
        return (item.agent.name, item.tool_name or "") in self.tools

    def proposed(self, item: ToolApprovalItem) -> ToolCall:
        """The call an interruption stands for, as the wrapped tool proposes it (a tool signoff
        did not wrap — a shell, computer or hosted MCP tool asking on its own — by its name)."""
        tool = item.tool_name or ""
        path = self.paths.get(item.agent.name, f"{self.owner.path}/{item.agent.name}")
        name, server, path = self.tools.get((item.agent.name, tool), (tool, None, path))
        return ToolCall(
            id=item.call_id or "",
            name=name,
            args=_arguments(item.arguments),
            server=server,
            agent=path,
        )


class _Responses(AgentHooksBase[Any, Any]):
    """An agent's own hooks, and the count of the run's model responses (`_Wrapping.turn`)."""

    def __init__(self, inner: Any, wrapping: _Wrapping) -> None:
        self.inner = inner
        self.wrapping = wrapping

    async def on_llm_end(self, context: Any, agent: Any, response: ModelResponse) -> None:
        self.wrapping.responses += 1
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)

    async def on_start(self, *args: Any, **kwargs: Any) -> None:
        if self.inner is not None:
            await self.inner.on_start(*args, **kwargs)

    async def on_end(self, *args: Any, **kwargs: Any) -> None:
        if self.inner is not None:
            await self.inner.on_end(*args, **kwargs)

    async def on_handoff(self, *args: Any, **kwargs: Any) -> None:
        if self.inner is not None:
            await self.inner.on_handoff(*args, **kwargs)

    async def on_tool_start(self, *args: Any, **kwargs: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_start(*args, **kwargs)

    async def on_tool_end(self, *args: Any, **kwargs: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_end(*args, **kwargs)

    async def on_llm_start(self, *args: Any, **kwargs: Any) -> None:
        if self.inner is not None:
            await self.inner.on_llm_start(*args, **kwargs)


# -- small things ------------------------------------------------------------------------------


def _answer(
    state: RunState[Any, Any], held: dict[str, Held], wrapping: _Wrapping
) -> tuple[int, list[str]]:
    """Approve or reject, in `state`, each call it waits on that is answered: how many were,
    and the approvals decided among them. A wrapped tool's approved, edited or responded call
    is approved in the SDK: the wrapper runs it as decided, or gives the person's response as
    its result. A tool signoff did not wrap runs only as proposed: an edit or a response of its
    call reaches the model as a rejection's text (the SDK's one way to answer it)."""
    answered, decided = 0, []
    for item in state.get_interruptions():
        found = held.get(item.call_id or "")
        record = found.record if found is not None else None
        approval = found.approval if found is not None else None
        if record is None:
            state.reject(item, rejection_message=blocked_text("signoff holds no such call"))
        elif record.kind == "run":
            state.approve(item)
        elif record.kind == "block":
            state.reject(item, rejection_message=blocked_text(record.reason))
        elif approval is None or approval.pending:
            continue  # waits on
        else:
            decided.append(approval.id)
            if approval.status == "approved" or (
                approval.status in ("edited", "responded") and wrapping.wrapped(item)
            ):
                state.approve(item)
            elif approval.status == "edited":
                problem = "a person edited it, and signoff cannot change this tool's arguments"
                state.reject(item, rejection_message=blocked_text(problem))
            else:
                state.reject(item, rejection_message=answer_text(approval)[0])
        answered += 1
    return answered, decided


def _items(input: str | list[Any]) -> list[Any]:
    if isinstance(input, str):
        return [{"role": "user", "content": input}]
    return list(input)


def _arguments(raw: str | None) -> dict[str, Any]:
    """A call's arguments as the policy judges them: an object as such, anything else as the
    text the model gave (a policy fails closed on it)."""
    found = _object(raw or "")
    return {"arguments": raw} if found is None else found


def _added(conversation: Sequence[Any], everything: list[Any]) -> list[str]:
    """The entries that bring the thread's `conversation` to `everything` a run ended with:
    the new items, or — when the run rewrote what came before (a handoff's input filter) — the
    whole conversation anew."""
    jsonable = [to_jsonable_python(item) for item in everything]
    if jsonable[: len(conversation)] == list(conversation):
        return [json.dumps({"item": item}) for item in jsonable[len(conversation) :]]
    return [json.dumps({"conversation": jsonable})]


def _object(raw: str) -> dict[str, Any] | None:
    """Arguments as the model gave them, when they are a JSON object."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _transcript(items: Sequence[Any], agent: str | None) -> list[dict[str, Any]]:
    """The conversation's input items (the Responses API's) as `transcript` messages: the
    model's are `agent`'s."""
    found: list[dict[str, Any]] = []
    for item in transcript.tail(items):
        if not isinstance(item, Mapping):
            continue
        kind, role = item.get("type", "message"), item.get("role")
        if kind == "message" and role in ("user", "system", "developer"):
            found.append(transcript.message(
                "user" if role == "user" else "system", item.get("content")))  # fmt: skip
        elif kind == "message" and role == "assistant":
            found.append(transcript.message("assistant", item.get("content"), agent=agent))
        elif kind == "function_call":
            call = transcript.call(item.get("call_id"), item.get("name", ""), item.get("arguments"))
            found.append(transcript.message("assistant", tool_calls=[call], agent=agent))
        elif kind == "function_call_output":
            found.append(transcript.message("tool", item.get("output"),
                                            tool_call_id=item.get("call_id")))  # fmt: skip
    return found
