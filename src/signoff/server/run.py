"""Serving an app with uvicorn inside the caller's event loop, announcing its URL when ready."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

from signoff.agent import Agent
from signoff.server.intake import MAX_BODY
from signoff.server.logs import LogFormat, configure_logs

__all__ = ["import_agents", "run_app"]


async def run_app(
    app: FastAPI | Any,
    *,
    host: str,
    port: int,
    ready: Callable[[str], None],
    max_message: int = MAX_BODY,
    log_format: LogFormat = "text",
) -> None:
    """Serve `app` until interrupted; `ready` gets the URL once it listens (port 0 picks one).
    A WebSocket message bigger than `max_message` bytes closes its connection (code 1009).
    Logs are plain warnings, or with `log_format` json every record as a JSON line
    (`signoff.server.logs`)."""
    import uvicorn

    # Event streams never end by themselves: on shutdown they get a moment, then are closed.
    # `http` is uvicorn's "auto": httptools when installed (the server extra brings it), else h11;
    # the event loop is the caller's (`signoff.cli.listen.run_server` picks uvloop).
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        timeout_graceful_shutdown=2,
        ws_max_size=max_message,
        **configure_logs(log_format),
    )
    server = uvicorn.Server(config)

    async def announce() -> None:
        while not server.started:
            if server.should_exit:
                return
            await asyncio.sleep(0.02)
        bound = server.servers[0].sockets[0].getsockname()[1]
        ready(f"http://{host}:{bound}")

    watcher = asyncio.create_task(announce())
    try:
        await server.serve()
    finally:
        watcher.cancel()


def import_agents(spec: str) -> list[Agent]:
    """The agents that ``module:attribute`` names: an `Agent`, a list of them, or a function
    returning either."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{spec!r}: name the agents as module:attribute")
    try:
        found: Any = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{spec!r}: {exc}") from None
    try:
        if callable(found) and not isinstance(found, Agent):
            found = found()
        agents = [found] if isinstance(found, Agent) else list(found)
    except Exception as exc:  # the user's code: say what it did, not where
        raise ValueError(f"{spec!r}: {type(exc).__name__}: {exc}") from None
    wrong = [a for a in agents if not isinstance(a, Agent)]
    if wrong:
        raise ValueError(f"{spec!r} gives {wrong[0]!r}, not an Agent")
    return agents
