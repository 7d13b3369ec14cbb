"""Real signoff processes for the tests: ``signoff_command()`` starts one; ``signoff_server``
(async) and ``served`` run ``signoff serve|demo … --port 0`` for the length of a block; and a
WebSocket handshake sent byte by byte, as a browser on any host would send it."""

from __future__ import annotations

import asyncio
import atexit
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from tests.deadline import HANG

__all__ = ["served", "signoff_command", "signoff_server", "typed_here", "websocket_handshake"]

ZYGOTE = Path(__file__).with_name("zygote.py")
_zygote: list[str] = []


def typed_here(folder: Path | None = None) -> str:
    """How a signoff process the tests start (as ``python -m signoff``) in `folder` (default:
    this one) names itself in the commands it tells a person to run."""
    import signoff
    from signoff.cli.program import typed

    main = str(Path(signoff.__file__).with_name("__main__.py"))
    return typed(main, search=os.environ.get("PATH"), folder=str(folder or os.getcwd()))


def signoff_command() -> list[str]:
    """The command line of ``python -m signoff``, as the tests start it: a real process, but
    forked from a zygote that has imported signoff once (tests/zygote.py), started on first
    use and stopped with the test session. ``SIGNOFF_TEST_COLD=1`` starts each cold instead."""
    if os.environ.get("SIGNOFF_TEST_COLD"):
        return [sys.executable, "-m", "signoff"]
    if not _zygote:
        path = os.path.join(tempfile.mkdtemp(prefix="signoff-zygote-"), "socket")
        zygote = subprocess.Popen(
            [sys.executable, str(ZYGOTE), "serve", path],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        )  # fmt: skip
        assert zygote.stdout is not None
        said = zygote.stdout.readline()
        zygote.stdout.close()
        assert said == b"ready\n", f"the zygote said {said!r}"
        atexit.register(_stop, zygote)
        _zygote.append(path)
    return [sys.executable, "-S", str(ZYGOTE), _zygote[0]]


async def signoff_says(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """What ``signoff ARGS``, run as a command in `cwd`, exits with and prints (out, err)."""
    process = await asyncio.create_subprocess_exec(
        *signoff_command(), *args, cwd=cwd,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def _stop(zygote: subprocess.Popen[bytes]) -> None:
    zygote.terminate()
    zygote.wait()


@asynccontextmanager
async def signoff_server(
    *arguments: str, env: Mapping[str, str] | None = None, cold: bool = False
) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    """Run ``python -m signoff ARGUMENTS`` (a command that serves and prints its URL first) for
    as long as the block lasts; yields the URL and the process. Stopped with SIGINT, as Ctrl+C.
    `cold`: a process of its own, not forked from the zygote (what `env` says of how a program
    is loaded — ``LD_PRELOAD`` — applies only to a process started afresh)."""
    command = [sys.executable, "-m", "signoff"] if cold else signoff_command()
    process = await asyncio.create_subprocess_exec(
        *command, *arguments,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env=env,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        said: list[str] = []  # what comes before the URL (a child process's notices)
        async with asyncio.timeout(HANG):
            while not (found := re.search(r"http://127(?:\.\d+){3}:\d+", "".join(said[-1:]))):
                line = (await process.stdout.readline()).decode()
                assert line, "the process ended before serving:\n" + "".join(said)
                said.append(line)
        yield found.group(0), process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
            async with asyncio.timeout(HANG):
                await process.wait()


@contextmanager
def served(
    arguments: list[str], env: Mapping[str, str], *, cwd: Path | None = None
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`signoff ARGUMENTS --port 0` as a process (in `cwd`), until the block ends: its URL, and
    the process (what it prints after its first line is the block's to read). Stopped with
    SIGINT."""
    process = subprocess.Popen(
        [*signoff_command(), *arguments, "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        first = process.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+", first)
        assert found, first + process.stdout.read()
        yield found.group(0), process
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=HANG)
        process.stdout.close()


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
        async with asyncio.timeout(HANG):
            return (await reader.readline()).decode().strip()
    finally:
        writer.close()
