"""The AG-UI endpoint over HTTP: ``POST /agui/{agent}`` authenticates the request, takes its
``RunAgentInput`` and streams the agent's run (`agent`) as server-sent events, with a comment
now and then while nothing happens, so that the stream stays open."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from ag_ui.core import RunAgentInput
from ag_ui.encoder import EventEncoder
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from signoff.errors import NotFoundError
from signoff.protocols.agui.agent import AguiAgent
from signoff.server.auth import Auth
from signoff.server.service import Service

__all__ = ["KEEP_ALIVE", "mount_agui"]

KEEP_ALIVE = 15.0
"""Seconds without an event after which the stream sends a comment, to stay open."""


def mount_agui(app: FastAPI, service: Service, auth: Auth) -> None:
    """``POST /agui/{agent}`` for each of the service's agents."""
    endpoints = {agent.name: AguiAgent(service, agent.name) for agent in service.agents}
    encoder = EventEncoder()

    @app.post("/agui/{agent}", tags=["AG-UI"])
    async def agui(agent: str, body: RunAgentInput, request: Request) -> StreamingResponse:
        """Run the agent (AG-UI ``RunAgentInput``); its events as server-sent events."""
        who = await auth.principal(request)
        endpoint = endpoints.get(agent)
        if endpoint is None:
            raise NotFoundError(f"no agent named {agent!r}; the agents are {sorted(endpoints)}")

        encoded = (encoder.encode(event) async for event in endpoint.run(body, who))
        return StreamingResponse(
            _kept_alive(encoded, every=KEEP_ALIVE), media_type=encoder.get_content_type()
        )


async def _kept_alive(lines: AsyncIterator[str], *, every: float) -> AsyncIterator[str]:
    """`lines`, with an SSE comment whenever `every` seconds pass without one (a long tool call):
    proxies that cut idle connections keep the stream, and clients ignore comments."""
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for line in lines:
                await queue.put(line)
        finally:
            queue.put_nowait(None)

    pumping = asyncio.create_task(pump())
    getting: asyncio.Future[str | None] | None = None
    try:
        while True:
            getting = getting or asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getting}, timeout=every)
            if not done:
                yield ": keep-alive\n\n"
                continue
            line, getting = getting.result(), None
            if line is None:
                break
            yield line
        await pumping  # its failure, if it failed
    finally:
        for task in (pumping, getting):
            if task is not None and not task.done():
                task.cancel()
