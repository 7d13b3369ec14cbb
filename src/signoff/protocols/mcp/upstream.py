"""One MCP server behind the gateway: a connection that lives in its own task (the SDK's
transports must be opened and closed by the same task), is opened again after the server
fails, and asks the server for what a client of the gateway asks.

A connection may be bound to one client of the gateway (`Callbacks`): it then declares what that
client declared (sampling, elicitation, roots), and what the server asks of its client or tells
it on that connection goes to that client. A 2026-07-28 connection is shared, and each request on
it declares the capabilities of the client it is made for (`requesting`): what a server asks back
comes in its result (an input-required result), which is the caller's to pass on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

import httpx2
from mcp import Client, StdioServerParameters, types
from mcp.client.session import (
    ElicitationFnT,
    ListRootsFnT,
    LoggingFnT,
    MessageHandlerFnT,
    SamplingFnT,
)
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR, METHOD_NOT_FOUND
from pydantic import ValidationError

from signoff.errors import SignoffError
from signoff.protocols.mcp.requesting import Round, declare_per_request, undeclared
from signoff.protocols.mcp.settings import UpstreamSpec

__all__ = ["Answer", "Callbacks", "Logs", "Upstream", "UpstreamError"]

logger = logging.getLogger("signoff.mcp.gateway")

CONNECT_TIMEOUT = 30.0
PAGES = 1000
"""The most pages of one list a server may answer (a server that pages for ever is cut off)."""
T = TypeVar("T")
Answer: TypeAlias = (
    types.CallToolResult
    | types.ReadResourceResult
    | types.GetPromptResult
    | types.InputRequiredResult
)
"""What a server answers a call, a read or a prompt with: its result, or (2026-07-28) what it
needs first."""


class UpstreamError(SignoffError):
    """The server could not be reached, failed while it had the request, or answered it with
    an error (`answer`: its own, to pass on as it is). `answered`: the server did answer, with
    something the gateway refused (the request ran there)."""

    def __init__(
        self, message: str, *, answer: MCPError | None = None, answered: bool = False
    ) -> None:
        super().__init__(message)
        self.answer = answer
        self.answered = answered or answer is not None


@dataclass(frozen=True, kw_only=True)
class Callbacks:
    """What a connection does with what its server sends unasked: its requests of the client
    (each declared as a capability only when given) and its notifications."""

    sampling: SamplingFnT | None = None
    sampling_capabilities: types.SamplingCapability | None = None
    elicitation: ElicitationFnT | None = None
    roots: ListRootsFnT | None = None
    logging: LoggingFnT | None = None
    notified: MessageHandlerFnT | None = None
    legacy: bool = False
    """Speak the 2025-era protocol (the initialize handshake) to the server, as the client
    does: only that era lets a server ask its client things in the middle of a request."""


@dataclass(frozen=True, kw_only=True)
class Logs:
    """One request's own opt-in to the server's log messages (a 2026-07-28 client's
    ``io.modelcontextprotocol/logLevel``)."""

    level: types.LoggingLevel
    """The least level the request takes (a 2026-07-28 server is told it with the request)."""
    to: LoggingFnT
    """Where the server's log messages go while it answers the request."""


class Upstream:
    """A connection to one server, opened on first use and again after it breaks."""

    def __init__(self, spec: UpstreamSpec, callbacks: Callbacks | None = None) -> None:
        self.spec = spec
        self.callbacks = callbacks or Callbacks()
        self.tools: list[types.Tool] = []
        """The server's tools, as it last listed them (kept while it is away)."""
        self.capabilities: types.ServerCapabilities | None = None
        """What the server said it offers when this connection was opened."""
        self.opened = 0
        """How many times this connection was opened (a server that restarted forgot what it
        was told)."""
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    def bound(self, callbacks: Callbacks) -> Upstream:
        """A connection of its own to the same server, with `callbacks`."""
        return Upstream(self.spec, callbacks)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def connected(self) -> bool:
        return self._client is not None

    def offers(self, feature: str) -> bool:
        """Whether the server declared `feature` (``resources``, ``prompts``, ``logging``,
        ``completions``): asked for only when it did (known once connected)."""
        return self.capabilities is not None and getattr(self.capabilities, feature) is not None

    async def connect(self) -> None:
        """Connect (when not connected) and read the server's tools; `UpstreamError` if the
        server cannot be reached within `CONNECT_TIMEOUT`."""
        async with self._lock:
            if self._client is not None and _alive(self._task):
                return
            await self._stop()
            ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
            # The connection outlives the request that opens it: it declares no client's.
            self._task = asyncio.create_task(
                self._hold(ready), name=f"mcp upstream {self.name}", context=undeclared()
            )
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT):
                    client = await asyncio.shield(ready)
                    tools = await _every(client.session.list_tools, "tools")
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
            self.capabilities = client.server_capabilities
            self.opened += 1

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
    async def session(
        self, *, headers: Mapping[str, str] | None = None, logs: Logs | None = None
    ) -> AsyncIterator[Client]:
        """A connected client of the server, with `headers` added for an HTTP one; its log
        messages to `logs` when given."""
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
            back = self.callbacks
            # The gateway lists whenever it is asked: no client-side cache.
            client = Client(
                target,
                cache=None,
                read_timeout_seconds=spec.timeout,
                sampling_callback=back.sampling,
                sampling_capabilities=back.sampling_capabilities,
                elicitation_callback=back.elicitation,
                list_roots_callback=back.roots,
                logging_callback=back.logging if logs is None else logs.to,
                log_level=None if logs is None else logs.level,
                message_handler=back.notified,
                mode="legacy" if back.legacy else "auto",
            )
            entered = await stack.enter_async_context(client)
            declare_per_request(entered.session)
            yield entered

    async def ask(
        self,
        asking: Callable[[Client], Awaitable[T]],
        *,
        headers: Mapping[str, str] | None = None,
        logs: Logs | None = None,
    ) -> T:
        """`asking` done with a client of the server; `UpstreamError` when the server is
        unreachable, fails meanwhile, or answers with an error. A request with `headers`, or
        with `logs` of its own, goes over a connection of its own: what a connection carries
        goes with it alone (a server's log messages say nothing of which request they are
        of)."""
        if headers or logs is not None:
            try:
                async with self.session(headers=headers, logs=logs) as client:
                    return await asking(client)
            except ValidationError as exc:
                raise self._refused(exc) from exc
            except MCPError as exc:
                raise UpstreamError(f"MCP server {self.name!r}: {_say(exc)}", answer=exc) from exc
            except Exception as exc:
                raise UpstreamError(f"MCP server {self.name!r}: {_say(exc)}") from exc
        await self.connect()
        connected, task = self._client, self._task
        if connected is None:
            raise UpstreamError(f"MCP server {self.name!r} went away")
        try:
            return await asking(connected)
        except ValidationError as exc:
            raise self._refused(exc) from exc  # it answered: the connection stands
        except Exception as exc:
            if not isinstance(exc, MCPError) or exc.code == CONNECTION_CLOSED or not _alive(task):
                await self._drop(task)
                raise UpstreamError(
                    f"MCP server {self.name!r} failed during the call: {_say(exc)}"
                ) from exc
            # The server answered with an error (a JSON-RPC error, a timeout): its answer.
            raise UpstreamError(f"MCP server {self.name!r}: {_say(exc)}", answer=exc) from exc

    def _refused(self, exc: ValidationError) -> UpstreamError:
        """The server answered with what its protocol does not allow: refused, saying what."""
        errors = exc.errors()
        said = "; ".join(
            f"{'.'.join(str(part) for part in e['loc']) or exc.title}: {e['msg']}"
            for e in errors[:3]
        )
        return UpstreamError(
            f"MCP server {self.name!r} answered with an invalid {exc.title} ({said}), which "
            "signoff does not pass on",
            answered=True,
        )

    async def call(
        self,
        tool: str,
        args: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        progress: ProgressFnT | None = None,
        logs: Logs | None = None,
        again: Round | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Call `tool` (telling `progress` what the server reports of it); `again`: with what
        the server asked for the last time."""
        again = again or Round()

        async def calling(client: Client) -> types.CallToolResult | types.InputRequiredResult:
            result = await client.session.call_tool(
                tool, args, progress_callback=progress, allow_input_required=True,
                input_responses=again.answers(), request_state=again.state,
            )  # fmt: skip
            assert isinstance(result, types.CallToolResult | types.InputRequiredResult)
            return result

        return await self.ask(calling, headers=headers, logs=logs)

    async def read(
        self,
        uri: str,
        *,
        headers: Mapping[str, str] | None = None,
        logs: Logs | None = None,
        again: Round | None = None,
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        again = again or Round()
        return await self.ask(
            lambda c: c.session.read_resource(
                uri, allow_input_required=True, input_responses=again.answers(),
                request_state=again.state,
            ),
            headers=headers, logs=logs,
        )  # fmt: skip

    async def prompt(
        self,
        name: str,
        arguments: dict[str, str],
        *,
        headers: Mapping[str, str] | None = None,
        logs: Logs | None = None,
        again: Round | None = None,
    ) -> types.GetPromptResult | types.InputRequiredResult:
        again = again or Round()
        return await self.ask(
            lambda c: c.session.get_prompt(
                name, arguments, allow_input_required=True, input_responses=again.answers(),
                request_state=again.state,
            ),
            headers=headers, logs=logs,
        )  # fmt: skip

    async def listed(self, what: str, *, headers: Mapping[str, str] | None = None) -> list[Any]:
        """Everything the server lists of `what` (``tools``, ``resources``,
        ``resource_templates``, ``prompts``), page after page; none of what it does not
        offer. `UpstreamError` when it takes longer than `CONNECT_TIMEOUT`."""
        feature = "resources" if what == "resource_templates" else what
        await self.connect()
        if what != "tools" and not self.offers(feature):
            return []

        async def listing(client: Client) -> list[Any]:
            method = getattr(client.session, f"list_{what}")
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT):
                    return await _every(method, what)
            except TimeoutError:
                raise MCPError(INTERNAL_ERROR, f"no whole answer to list {what} in time") from None

        try:
            found = await self.ask(listing, headers=headers)
        except UpstreamError as exc:
            if exc.answer is None or exc.answer.code != METHOD_NOT_FOUND:
                raise
            return []  # resources without templates, say: it offers none of them
        if what == "tools":
            self.tools = found
        return found

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


async def _every(method: Callable[..., Awaitable[Any]], what: str) -> list[Any]:
    """Every page of a list request (`method` takes the paginated params), up to `PAGES`; a
    cursor given twice ends it."""
    found: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(PAGES):
        page = await method(params=types.PaginatedRequestParams(cursor=cursor))
        found += getattr(page, what)
        cursor = page.next_cursor
        if cursor is None or cursor in seen:
            return found
        seen.add(cursor)
    logger.warning("a server listed %s in more than %d pages: the rest is left out", what, PAGES)
    return found


def _alive(task: asyncio.Task[None] | None) -> bool:
    return task is not None and not task.done()


def _say(exc: BaseException) -> str:
    """One line for an error, the innermost of a group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
