"""An agent: a model with tools, instructions, and agents it may hand work to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from signoff.agent.model import Model, ToolSpec
from signoff.agent.tools import Tool

__all__ = ["Agent"]


@dataclass(frozen=True, kw_only=True)
class Agent:
    """A model with tools, instructions, and agents it may hand work to.

    A sub-agent is offered to the model as a tool named after it, taking one string `input`.
    Its calls carry the agent path (``coordinator/researcher``), so the policy's ``agents:``
    section for that path applies to them; when one is held, the approval surfaces on the root
    run and the whole tree pauses.
    """

    name: str
    model: Model
    tools: Sequence[Tool] = ()
    instructions: str = ""
    description: str = ""
    """What the agent does, for a parent agent's model deciding whether to call it."""
    subagents: Sequence[Agent] = ()
    max_turns: int = 50
    """Model turns per run before it fails: a loop that never ends is a bug, not a plan."""
    _by_name: dict[str, Tool] = field(init=False, repr=False, compare=False)
    _subagents: dict[str, Agent] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if "/" in self.name or not self.name:
            raise ValueError(f"an agent's name must be non-empty and without '/': {self.name!r}")
        object.__setattr__(self, "_by_name", {t.name: t for t in self.tools})
        object.__setattr__(self, "_subagents", {a.name: a for a in self.subagents})
        both = sorted(set(self._by_name) & set(self._subagents))
        if both:
            raise ValueError(f"agent {self.name!r}: {both} name both a tool and a sub-agent")

    def tool(self, name: str) -> Tool | None:
        return self._by_name.get(name)

    def subagent(self, name: str) -> Agent | None:
        return self._subagents.get(name)

    @property
    def specs(self) -> list[ToolSpec]:
        """Every tool on offer to the model: the agent's tools, then its sub-agents."""
        return [t.spec for t in self.tools] + [subagent_spec(a) for a in self.subagents]

    def schemas(self, path: str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
        """The argument schemas of the tools of every agent in the tree, by agent path (this
        agent's is `path`, its name by default), then by tool name."""
        path = path or self.name
        found = {path: {s.name: s.parameters for s in self.specs}}
        for agent in self.subagents:
            found |= agent.schemas(f"{path}/{agent.name}")
        return found


def subagent_spec(agent: Agent) -> ToolSpec:
    """A sub-agent as its parent's model sees it: a tool taking the task in words."""
    return ToolSpec(
        name=agent.name,
        description=agent.description or agent.instructions or f"Hand a task to {agent.name}.",
        parameters={
            "type": "object",
            "properties": {"input": {"type": "string", "description": "The task, in words."}},
            "required": ["input"],
            "additionalProperties": False,
        },
    )
