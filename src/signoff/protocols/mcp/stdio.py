"""The gateway's own stdio: its client's lines read, and its answers written, on the event loop.

The SDK's `stdio_server` reads and writes the standard streams through worker threads: a hop to
a thread for each line read and two for each written (the write, the flush). The gateway sits
in the middle of every call, so it waits on the loop's own pipes instead, handing the SDK
streams of the same shape (`stdio_server(stdin, stdout)`). As the SDK does, the descriptors the
wire came on are kept for it alone while it serves: handlers and child processes find the null
device on 0 and stderr on 1, so a stray read or print never touches the wire.

A stream that is not a pipe, a socket or a terminal (a file given as stdin), or Windows, gets
the SDK's own transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator

__all__ = ["Lines", "Writes", "stdio_pipes"]

logger = logging.getLogger("signoff.mcp.gateway")


class Lines:
    """The client's lines, as the SDK's reader takes them; one longer than `limit` bytes is
    dropped (said on stderr) and handed on as an empty line, which the SDK refuses as it
    refuses any line that is not JSON."""

    def __init__(self, reader: asyncio.StreamReader, limit: int) -> None:
        self._reader = reader
        self._limit = limit

    def __aiter__(self) -> Lines:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                raise StopAsyncIteration from None
            line = exc.partial
        except asyncio.LimitOverrunError:
            await self._skip_line()
            logger.warning("a message of the client over %d bytes was dropped", self._limit)
            return ""
        return line.decode("utf-8", errors="replace")

    async def _skip_line(self) -> None:
        """Drop what is left of the line being read, through its end."""
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as exc:
                await self._reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                return


class Writes:
    """The wire to the client, as the SDK's writer takes it: a write is sent at once when the
    pipe has room (else buffered), a flush waits while the client is behind."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


@contextlib.asynccontextmanager
async def stdio_pipes(*, limit: int) -> AsyncIterator[tuple[Lines, Writes] | None]:
    """The client's wire on the loop's pipes, each message at most `limit` bytes; None where
    the SDK's own transport must serve."""
    if sys.platform == "win32" or not (_streams(0) and _streams(1)):
        yield None
        return
    loop = asyncio.get_running_loop()
    wire_in, wire_out = os.dup(0), os.dup(1)
    opened: list[asyncio.BaseTransport] = []
    try:
        reader = asyncio.StreamReader(limit=limit, loop=loop)
        reading, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
            os.fdopen(wire_in, "rb", buffering=0, closefd=False),
        )
        opened.append(reading)
        writing, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin,
            os.fdopen(wire_out, "wb", buffering=0, closefd=False),
        )
        opened.append(writing)
    except (OSError, ValueError):  # not a stream the loop can wait on after all
        _release(opened, wire_in, wire_out, diverted=False)
        yield None
        return
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        yield Lines(reader, limit), Writes(asyncio.StreamWriter(writing, protocol, None, loop))
    finally:
        _release(opened, wire_in, wire_out, diverted=True)


def _release(
    opened: list[asyncio.BaseTransport], wire_in: int, wire_out: int, *, diverted: bool
) -> None:
    """Close the transports and give the wire its descriptors back (`diverted`: 0 and 1)."""
    for transport in opened:
        transport.close()
    for wire, fd in ((wire_in, 0), (wire_out, 1)):
        with contextlib.suppress(OSError):
            os.set_blocking(wire, True)
            if diverted:
                os.dup2(wire, fd)
        os.close(wire)


def _streams(fd: int) -> bool:
    """Whether the loop can wait on `fd`: a pipe, a socket or a terminal."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)
