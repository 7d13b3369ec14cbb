"""The agent graph of one Agents SDK run behind signoff: every agent reachable by handoffs,
cloned with its function tools and MCP tools wrapped (`calls`), each known by its path, and the
count of the run's model responses — the turn a call came from."""

from __future__ import annotations

import dataclasses
import json
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from agents import (
    Agent,
    ApplyPatchTool,
    ComputerTool,
    CustomTool,
    FunctionTool,
    Handoff,
    LocalShellTool,
    RunContextWrapper,
    ShellTool,
)
from agents.items import ModelResponse, ToolApprovalItem
from agents.lifecycle import AgentHooksBase
from agents.sandbox import SandboxAgent
from agents.tool_context import ToolContext

from signoff.errors import SignoffError
from signoff.gate.answers import blocked_text
from signoff.gate.ids import new_id
from signoff.integrations.openai_agents.calls import Calls
from signoff.types import ToolCall

__all__ = ["Wrapping"]


class Wrapping:
    """The agent graph of one run on one thread: every agent reachable by handoffs, cloned with
    its function tools and MCP tools wrapped (the policy decides ``needs_approval``; signoff
    runs the call). Each agent's path is the chain of handoffs that first reaches it."""

    def __init__(
        self,
        agent: Agent[Any],
        path: str,
        calls: Calls,
        thread: str,
        context: Any,
        run: dict[str, Any] | None = None,
    ) -> None:
        """`agent` at `path` is the graph's root; `run` the kept entry of the paused run this
        resumes, else a new run."""
        self.agent = agent
        self.path = path
        self.calls = calls
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
            self._root = await self._agent(self.agent, self.path)
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
        calls, thread, invoke = self.calls, self.thread, tool.on_invoke_tool
        schema = tool.params_json_schema
        calls.register(path, name, schema)

        def proposed(call_id: str, args: dict[str, Any]) -> ToolCall:
            return ToolCall(id=call_id, name=name, args=args, server=server, agent=path)

        async def needs_approval(_ctx: Any, params: dict[str, Any], call_id: str) -> bool:
            return await calls.asks(thread, proposed(call_id, params), self.turn)

        async def on_invoke_tool(ctx: ToolContext[Any], raw: str) -> Any:
            args = _object(raw)
            if args is None:
                return blocked_text("its arguments are not a JSON object")
            call = proposed(ctx.tool_call_id, args)
            return await calls.execute(thread, self.turn, ctx, raw, call, schema, invoke)

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
        path = self.paths.get(item.agent.name, f"{self.path}/{item.agent.name}")
        name, server, path = self.tools.get((item.agent.name, tool), (tool, None, path))
        return ToolCall(
            id=item.call_id or "",
            name=name,
            args=_arguments(item.arguments),
            server=server,
            agent=path,
        )


class _Responses(AgentHooksBase[Any, Any]):
    """An agent's own hooks, and the count of the run's model responses (`Wrapping.turn`)."""

    def __init__(self, inner: Any, wrapping: Wrapping) -> None:
        self.inner = inner
        self.wrapping = wrapping

    async def on_llm_end(self, context: Any, agent: Any, response: ModelResponse) -> None:
        self.wrapping.responses += 1
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)


def _forwarded(name: str) -> Callable[..., Awaitable[None]]:
    """The hook `name` of `_Responses`: the agent's own, where it has hooks."""

    async def hook(self: _Responses, *args: Any, **kwargs: Any) -> None:
        if self.inner is not None:
            await getattr(self.inner, name)(*args, **kwargs)

    return hook


for _hook in ("on_start", "on_end", "on_handoff", "on_tool_start", "on_tool_end", "on_llm_start"):
    setattr(_Responses, _hook, _forwarded(_hook))


def _arguments(raw: str | None) -> dict[str, Any]:
    """A call's arguments as the policy judges them: an object as such, anything else as the
    text the model gave (a policy fails closed on it)."""
    found = _object(raw or "")
    return {"arguments": raw} if found is None else found


def _object(raw: str) -> dict[str, Any] | None:
    """Arguments as the model gave them, when they are a JSON object."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
