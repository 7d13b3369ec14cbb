"""The policy: the one in force, a new one put in force (the admin role), one tool's toggle
switched ("Require approval?"), and a call explained — the verdict it would get, the rule that
decides it, the rules it shadows and the grants that would or would not let it through."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter

from signoff.errors import ConflictError, ForbiddenError, NotFoundError
from signoff.server.auth import Who
from signoff.server.routes.agents import agent_paths
from signoff.server.routes.depends import Served
from signoff.server.service import Principal, Service
from signoff.server.shapes import ExplainBody, ExplainContext, PolicyBody, ToggleBody, verdict_json
from signoff.types import Context, ToolCall

__all__ = ["router"]

router = APIRouter()


@router.get("/v1/policy")
async def policy(_: Who, service: Served) -> dict[str, Any]:
    """The policy in force: its version, default and rules as a file would write them, and
    the document it was written as (null when it was given in code: not editable)."""
    return _policy(service)


@router.put("/v1/policy")
async def put_policy(body: PolicyBody, who: Who, service: Served) -> dict[str, Any]:
    """Put a new policy in force (the admin role): a new version, audited, on every
    replica. A document with mistakes gets 422 listing each of them; one made from a
    `version` that another change replaced since, 409."""
    _admin(who)
    async with service.policy_lock:
        await service.set_policy(body.document, actor=who.name, replaces=body.version)
    return _policy(service)


@router.put("/v1/policy/tools/{tool}")
async def toggle(
    tool: str, body: ToggleBody, who: Who, service: Served, agent: str | None = None
) -> dict[str, Any]:
    """Allow, ask or deny one tool ("Require approval?"): the ``tools:`` toggle for it —
    of the agent's section with `agent`, else of the whole policy — as a new policy
    version (the admin role). Rules that name the tool still apply as the policy's
    precedence says; `POST /v1/policy/explain` shows the outcome."""
    _admin(who)
    paths = agent_paths(service.agents)
    if agent is not None and agent not in paths:
        raise NotFoundError(f"no agent {agent!r}; the agents are {paths}")
    async with service.policy_lock:  # two switches at once: both changes are kept
        current = service.gate.engine.version
        if body.version is not None and body.version != current:
            raise ConflictError(
                f"the policy changed (version {current}, not {body.version}): reload it"
            )
        if service.policy_document is None:
            raise ConflictError("this server's policy was given in code: it cannot be edited")
        document = json.loads(json.dumps(service.policy_document))  # a copy to change
        section = document
        if agent is not None:
            section = _section(_section(document, "agents"), agent)
        _toggle(_section(section, "tools"), tool, body.verdict)
        # Saved only if no replica saved another version since this one's copy was made.
        await service.set_policy(document, actor=who.name, replaces=current)
    return _policy(service)


@router.post("/v1/policy/explain")
async def explain(body: ExplainBody, _: Who, service: Served) -> dict[str, Any]:
    """The verdict a call would get, the rule that decides it and the rules it shadows;
    the grant that would let it through (for the call's `context`), and why each other
    grant of its tool would not."""
    call = ToolCall(
        id="", name=body.tool, args=body.args, server=body.server, agent=body.agent,
        kind=body.kind,
    )  # fmt: skip
    where = body.context or ExplainContext()
    stored = await service.store.list_grants(tool=body.tool)
    current = [service.gate.grant_now(g) for g in stored]
    context = Context(
        run_id=where.run_id,
        thread_id=where.thread_id,
        requested_by=where.requested_by,
        grants=tuple(g for g in current if g is not None),
    )
    explanation = service.gate.engine.explain(call, context, limits=service.gate.limits)
    weighed = explanation.grants_json()
    weighed["grants_passed_over"] += [
        {"id": g.id, "granted_by": g.created_by, "scope": g.scope,
         "why": service.gate.grant_inactive(g)}
        for g, now in zip(stored, current, strict=True)
        if now is None
    ]  # fmt: skip
    return (
        verdict_json(explanation.verdict)
        | {"shadowed": [rule.id for rule in explanation.shadowed]}
        | weighed
    )


def _section(document: dict[str, Any], key: str) -> dict[str, Any]:
    """The mapping under `key`, made when missing; 409 when it is something else."""
    section = document.setdefault(key, {})
    if not isinstance(section, dict):
        raise ConflictError(f"the policy's {key!r} section is not a mapping")
    return section


def _toggle(tools: dict[str, Any], tool: str, verdict: str) -> None:
    """Set the tool's toggle to `verdict`, keeping what else it says (a timeout, approvers)."""
    toggle = tools.get(tool)
    kept = (
        {k: v for k, v in toggle.items() if k not in ("verdict", "require_approval")}
        if isinstance(toggle, dict)
        else {}
    )
    tools[tool] = {"verdict": verdict, **kept}


def _admin(who: Principal) -> None:
    if "admin" not in who.roles:
        raise ForbiddenError(f"{who.name!r} may not change the policy: it needs the admin role")


def _policy(service: Service) -> dict[str, Any]:
    current = service.gate.engine.policy
    return {
        "version": current.version,
        "source": current.source,
        "default": current.default,
        "rules": [rule.to_dict() for rule in current.rules],
        "document": service.policy_document,
    }
