"""A live signoff server for the protocol tests: `create_app` over the agents of
`a2a_agents` on a real uvicorn server, and the file their tools write each execution to."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import uvicorn

from signoff import Policy
from signoff.gate import Gate
from signoff.redaction import Redaction
from signoff.server import Auth, Principal, Service, create_app
from signoff.store import SQLStore
from tests.deadline import HANG
from tests.protocols.a2a_agents import POLICY, agents

__all__ = ["TOKENS", "ran", "serving", "side"]

TOKENS = {
    "alice-token": Principal(name="alice", roles=frozenset({"ops"})),
    "bob-token": Principal(name="bob"),
    "carol-token": Principal(name="carol", roles=frozenset({"ops"})),
}


@pytest.fixture
def side(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file the agent's tools write each real execution to."""
    path = tmp_path / "side.txt"
    path.touch()
    monkeypatch.setenv("SIGNOFF_TEST_SIDE_FILE", str(path))
    return path


def ran(side: Path) -> list[str]:
    return side.read_text().splitlines()


@contextlib.asynccontextmanager
async def serving(
    store: SQLStore, *, redaction: Redaction | None = None, policy: Policy = POLICY
) -> AsyncIterator[tuple[str, Service]]:
    """`create_app` on a real uvicorn server on a free loopback port (the agents' `policy`, or
    another)."""
    service = Service(
        store=store,
        gate=Gate(policy, store),
        agents=agents(),
        poll_interval=0.05,
        redaction=redaction or Redaction(),
    )
    app = create_app(service, Auth(tokens=TOKENS))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    running = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(HANG):
            while not server.started:
                await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}", service
    finally:
        server.should_exit = True
        await running
