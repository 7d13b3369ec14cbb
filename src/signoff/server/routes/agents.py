"""``GET /v1/agents``: every agent that runs here, by path, with its model, its tools and its
sub-agents — what the inbox offers to start a run of, and the policy's toggles name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter

from signoff.agent import Agent
from signoff.server.auth import Who
from signoff.server.routes.depends import Served
from signoff.server.service import Service
from signoff.server.shapes import verdict_json
from signoff.types import ToolCall

__all__ = ["agent_paths", "router"]

router = APIRouter()


@router.get("/v1/agents")
async def agents(_: Who, service: Served) -> dict[str, Any]:
    """Every agent that runs here, with its model, its tools (their argument schemas and
    the verdict a call with no arguments gets) and its sub-agents, each by path."""
    return {"items": [_agent_json(service, agent, agent.name) for agent in service.agents]}


def agent_paths(agents: Sequence[Agent], parent: str = "") -> list[str]:
    """The path of every agent in the trees."""
    found = []
    for agent in agents:
        path = f"{parent}{agent.name}"
        found += [path, *agent_paths(agent.subagents, f"{path}/")]
    return found


def _agent_json(service: Service, agent: Agent, path: str) -> dict[str, Any]:
    engine = service.gate.engine
    model = agent.model
    return {
        "name": agent.name,
        "path": path,
        "description": agent.description,
        "model": getattr(model, "label", None) or type(model).__name__,
        "tools": [
            {
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.parameters,
                "verdict": verdict_json(
                    engine.evaluate(ToolCall(id="", name=spec.name, args={}, agent=path))
                ),
            }
            for spec in agent.specs
        ],
        "subagents": [_agent_json(service, a, f"{path}/{a.name}") for a in agent.subagents],
    }
