"""Real signoff server processes for the tests: ``python -m signoff serve|demo … --port 0``; and
a WebSocket handshake sent byte by byte, as a browser on any host would send it."""

from __future__ import annotations

import asyncio
import re
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

__all__ = ["signoff_server", "websocket_handshake"]


@asynccontextmanager
async def signoff_server(
    *arguments: str, env: Mapping[str, str] | None = None
) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    """Run ``python -m signoff ARGUMENTS`` (a command that serves and prints its URL first) for
    as long as the block lasts; yields the URL and the process. Stopped with SIGINT, as Ctrl+C."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "signoff", *arguments,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env=env,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        said: list[str] = []  # what comes before the URL (a child process's notices)
        async with asyncio.timeout(30):
            while not (found := re.search(r"http://127\.0\.0\.1:\d+", "".join(said[-1:]))):
                line = (await process.stdout.readline()).decode()
                assert line, "the process ended before serving:\n" + "".join(said)
                said.append(line)
        yield found.group(0), process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
            async with asyncio.timeout(20):
                await process.wait()


async def websocket_handshake(port: int, host: str, origin: str | None = None) -> str:
    """The status line that a WebSocket handshake on ``/v1/ws`` of the server on 127.0.0.1:`port`
    gets, sent with `host` as its ``Host`` (and `origin` as its ``Origin``)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    lines = [
        "GET /v1/ws HTTP/1.1", f"Host: {host}", "Upgrade: websocket", "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
    ]  # fmt: skip
    if origin is not None:
        lines.append(f"Origin: {origin}")
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    try:
        async with asyncio.timeout(10):
            return (await reader.readline()).decode().strip()
    finally:
        writer.close()
