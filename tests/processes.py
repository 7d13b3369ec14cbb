"""Real signoff server processes for the tests: ``python -m signoff serve|demo … --port 0``."""

from __future__ import annotations

import asyncio
import re
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

__all__ = ["signoff_server"]


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
