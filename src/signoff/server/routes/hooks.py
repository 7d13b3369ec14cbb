"""Coding agents' hooks: ``POST /v1/hooks/claude-code`` (Claude Code's ``PreToolUse`` and
``PostToolUse`` HTTP hooks) and ``POST /v1/hooks/gemini-cli``. The call is judged by the
server's policy as the token's principal's; one that asks waits here for a decision from any
channel, up to the config's ``hooks.wait`` (`signoff.protocols.hooks`)."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from signoff.errors import NotFoundError
from signoff.protocols.hooks import AGENTS, HookInputError, Hooks, output, read_call
from signoff.protocols.hooks.settings import MOST_WAIT
from signoff.server.auth import Who
from signoff.server.routes.depends import Served
from signoff.server.service import Service

__all__ = ["router"]

router = APIRouter()


@router.post("/v1/hooks/{agent}")
async def hook(
    agent: str,
    request: Request,
    who: Who,
    service: Served,
    wait: Annotated[float | None, Query(gt=0, le=MOST_WAIT)] = None,
) -> dict[str, Any]:
    """The hook's answer to a coding agent's report of one tool call: for a call about to run,
    whether it may (``allow``; ``deny`` with the reason the model reads; ``ask`` the person at
    the terminal when nobody decided in time — Gemini CLI is told ``deny``); after one ran,
    ``{}`` (it is audited). `wait`: the most seconds the hook waits for the answer, when
    that is less than the config's ``hooks.wait`` (an agent that runs the call when its hook
    times out must be answered before then)."""
    if agent not in AGENTS:
        raise NotFoundError(f"no hook for {agent!r}: one of {list(AGENTS)}")
    try:
        body = json.loads(await request.body())
    except ValueError as exc:
        raise HookInputError(f"the hook's input is not JSON: {exc}") from None
    call = read_call(agent, body)
    answer = await _hooks(request, service).answer(call, requested_by=who.name, wait=wait)
    return output(agent, answer)


def _hooks(request: Request, service: Service) -> Hooks:
    """The app's `Hooks`, made on its loop at the first hook."""
    hooks: Hooks | None = getattr(request.app.state, "hooks", None)
    if hooks is None:
        settings = service.hooks
        hooks = Hooks(service.gate, wait=settings.wait, on_timeout=settings.on_timeout,
                      inbox=str(request.base_url).rstrip("/"),
                      per_principal=True)  # fmt: skip
        request.app.state.hooks = hooks
    return hooks
