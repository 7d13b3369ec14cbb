"""One MCP server behind the gateway: a connection that lives in its own task (the SDK's
transports must be opened and closed by the same task), is opened again after the server
fails, and lists and calls the server's tools."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from signoff.errors import SignoffError
from signoff.protocols.mcp.settings import UpstreamSpec
from signoff.protocols.mcp.tools import list_tools as _list_tools

__all__ = ["Upstream", "UpstreamError"]

logger = logging.getLogger("signoff.mcp.gateway")

CONNECT_TIMEOUT = 30.0


class UpstreamError(SignoffError):
    """The server could not be reached, or failed while it had the call."""


class Upstream:
    """A connection to one server, opened on first use and again after it breaks."""

    def __init__(self, spec: UpstreamSpec) -> None:
        self.spec = spec
        self.tools: list[types.Tool] = []
        """The server's tools, as it last listed them (kept while it is away)."""
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def connected(self) -> bool:
        return self._client is not None

    async def connect(self) -> None:
        """Connect (when not connected) and read the server's tools; `UpstreamError` if the
        server cannot be reached within `CONNECT_TIMEOUT`."""
        async with self._lock:
            if self._client is not None and _alive(self._task):
                return
            await self._stop()
            ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._hold(ready), name=f"mcp upstream {self.name}")
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT):
                    client = await asyncio.shield(ready)
                    tools = await _list_tools(client)
            except BaseException as exc:  # a failure, or the caller's cancel: stop it all
                await asyncio.shield(self._stop())
                if ready.done() and not ready.cancelled():
                    ready.exception()  # seen: the error said below is this one
                if isinstance(exc, Exception):
                    raise UpstreamError(
                        f"cannot reach MCP server {self.name!r}: {_say(exc)}"
                    ) from exc
                raise
            self._client, self.tools = client, tools

    async def _hold(self, ready: asyncio.Future[Client]) -> None:
        """The connection's own task: open it, then hold it until it breaks or is closed."""
        try:
            async with self.session() as client:
                ready.set_result(client)
                await asyncio.Event().wait()  # until cancelled (closed), or the transport fails
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # the transport's task group fails as a group
            if not ready.done():
                ready.set_exception(UpstreamError(_say(exc)))
            logger.warning("MCP server %r went away: %s", self.name, _say(exc))
        finally:
            if self._task is asyncio.current_task():  # not a newer connection's
                self._client = None
            if not ready.done():
                ready.set_exception(UpstreamError("the connection closed"))

    @contextlib.asynccontextmanager
    async def session(self, *, headers: Mapping[str, str] | None = None) -> AsyncIterator[Client]:
        """A connected client of the server, with `headers` added for an HTTP one."""
        spec = self.spec
        async with contextlib.AsyncExitStack() as stack:
            target: Any
            if spec.command is not None:
                target = StdioServerParameters(
                    command=spec.command, args=list(spec.args), env=spec.env, cwd=spec.cwd
                )
            else:
                assert spec.url is not None  # settings give every server a command or a url
                target = spec.url
                sent = {**spec.headers, **(headers or {})}
                if sent:
                    # The SDK's own timeouts: a response stream may stay open a while.
                    timeout = httpx2.Timeout(30.0, read=300.0)
                    http = await stack.enter_async_context(
                        httpx2.AsyncClient(headers=sent, timeout=timeout)
                    )
                    target = streamable_http_client(spec.url, http_client=http)
            # The gateway lists the tools whenever it is asked: no client-side cache.
            client = Client(target, cache=None, read_timeout_seconds=spec.timeout)
            yield await stack.enter_async_context(client)

    async def call(
        self, tool: str, args: dict[str, Any], *, headers: Mapping[str, str] | None = None
    ) -> types.CallToolResult:
        """Call `tool`; `UpstreamError` when the server is unreachable or fails meanwhile (a
        call with `headers` goes over a connection of its own)."""
        if headers:
            try:
                async with self.session(headers=headers) as client:
                    return await client.call_tool(tool, args)
            except Exception as exc:
                raise UpstreamError(f"MCP server {self.name!r}: {_say(exc)}") from exc
        await self.connect()
        connected, task = self._client, self._task
        if connected is None:
            raise UpstreamError(f"MCP server {self.name!r} went away")
        try:
            return await connected.call_tool(tool, args)
        except Exception as exc:
            closed = not isinstance(exc, MCPError) or exc.code == CONNECTION_CLOSED
            if closed or not _alive(task):
                await self._drop(task)
                raise UpstreamError(
                    f"MCP server {self.name!r} failed during the call: {_say(exc)}"
                ) from exc
            # The server answered with an error (a JSON-RPC error, a timeout): its answer.
            raise UpstreamError(f"MCP server {self.name!r}: {_say(exc)}") from exc

    async def refresh(self) -> None:
        """Read the tools again (connecting first when needed)."""
        await self.connect()
        client, task = self._client, self._task
        if client is None:
            return
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                self.tools = await _list_tools(client)
        except Exception as exc:
            await self._drop(task)
            raise UpstreamError(f"MCP server {self.name!r}: {_say(exc)}") from exc

    async def _drop(self, task: asyncio.Task[None] | None) -> None:
        """Close the connection `task` holds, unless a newer one replaced it already."""
        async with self._lock:
            if self._task is task:
                await self._stop()

    async def _stop(self) -> None:
        """Close the current connection (the lock held): its task ends, and its process."""
        task, self._task, self._client = self._task, None, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task})  # a cancel of the caller's own still reaches it

    async def close(self) -> None:
        async with self._lock:
            await self._stop()


def _alive(task: asyncio.Task[None] | None) -> bool:
    return task is not None and not task.done()


def _say(exc: BaseException) -> str:
    """One line for an error, the innermost of a group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
