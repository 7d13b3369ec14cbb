"""One client of the gateway, as the servers behind see it.

Each client connection (a 2025-era session: stdio, or one ``mcp-session-id`` over HTTP) gets
connections of its own to the servers behind, opened when first needed and closed with it. They
declare what the client declared — sampling, elicitation, roots — so a server asks of its
client only what this client can answer, and what it asks or tells on them reaches this client:

- ``sampling/createMessage``, ``elicitation/create`` and ``roots/list`` from a server are sent
  to the client (on the stream of the request the client is waiting on, when there is one), its
  answer returned to the server, and each relay audited (``relay``: the server, the method,
  whether the client answered) — except a form elicitation the client cannot answer (or any,
  as ``gateway.server_questions`` says), which is asked in signoff's inbox (`questions`): a
  connection then declares elicitation whatever its client declared;
- log messages, progress, list changes and resource updates are passed on as they come.

A 2026-07-28 request has no session and no back channel: it shares the gateway's own connections,
which declare none of those capabilities. One that opts into log messages (``_meta``'s
``io.modelcontextprotocol/logLevel``) has its call forwarded over a connection of its own, opting
into the same level, and the server's messages on it at that level or above go on the request's
stream (`Peer.logs`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, get_args

import anyio
from mcp import types
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, LOG_LEVEL_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from signoff.protocols.mcp.questions import ServerQuestions
from signoff.protocols.mcp.screen import Screen
from signoff.protocols.mcp.upstream import Callbacks, Logs, Upstream, UpstreamError
from signoff.store import AuditRecord, Store

__all__ = ["Peer"]

logger = logging.getLogger("signoff.mcp.gateway")

_LEVELS: tuple[types.LoggingLevel, ...] = get_args(types.LoggingLevel)
"""The log levels, least severe first."""


class Peer:
    """A client of the gateway: its connections to the servers behind and its requests in
    flight. `bound` False: the gateway's shared connections, relaying nothing."""

    def __init__(
        self,
        store: Store,
        screen: Screen,
        *,
        asker: str,
        several: bool,
        bound: bool = True,
        questions: ServerQuestions | None = None,
    ) -> None:
        """`questions`: where a server's elicitation goes when not to the client (None: only
        to the client)."""
        self.store = store
        self.screen = screen
        self.questions = questions
        self.asker = asker
        self.bound = bound
        self.closed = False
        self._several = several
        self._links: dict[str, Upstream] = {}
        self._lock = asyncio.Lock()
        self._waiting: list[Any] = []
        """The contexts of the client's requests in flight, the latest last."""
        self._session: Any = None
        """A session of the client's connection, for what goes on its standalone stream."""
        self._capabilities: types.ClientCapabilities | None = None
        self.log_level: types.LoggingLevel | None = None
        self._levels: dict[str, tuple[types.LoggingLevel, int]] = {}
        """The log level each server was last told, and on which opening of its connection."""

    @contextlib.contextmanager
    def serving(self, ctx: Any) -> Iterator[None]:
        """While the gateway answers the request of `ctx`: what a server asks or tells goes on
        its stream."""
        self._session = ctx.session
        self._capabilities = ctx.session.client_capabilities
        self._waiting.append(ctx)
        try:
            yield
        finally:
            self._waiting.remove(ctx)

    async def link(self, upstream: Upstream) -> Upstream:
        """The client's own connection to `upstream`'s server (`upstream` itself, unbound)."""
        if not self.bound:
            await upstream.connect()
            return upstream
        async with self._lock:
            if self.closed:
                raise UpstreamError("the client of the gateway has gone")
            link = self._links.get(upstream.name)
            if link is None:
                link = self._links[upstream.name] = upstream.bound(self._callbacks(upstream.name))
        await link.connect()
        await self._tell_level(link)
        return link

    async def _tell_level(self, link: Upstream) -> None:
        """Tell the server the client's log level, unless this connection was told it."""
        level = self.log_level
        if level is None or not link.offers("logging"):
            return
        if self._levels.get(link.name) != (level, link.opened):
            self._levels[link.name] = (level, link.opened)
            await _set_level(link, level)

    async def set_level(self, level: types.LoggingLevel) -> None:
        """The client's log level: told to each server it is connected to that logs, and to
        each it connects to later."""
        self.log_level = level
        for link in list(self._links.values()):
            if link.connected:
                await self._tell_level(link)

    async def roots_changed(self) -> None:
        """The client's roots changed: each server it has a connection to is told."""
        for link in list(self._links.values()):
            if link.connected:
                with contextlib.suppress(UpstreamError):
                    await link.ask(
                        lambda c: c.session.send_notification(types.RootsListChangedNotification())
                    )

    async def close(self) -> None:
        async with self._lock:
            self.closed = True
            links, self._links = list(self._links.values()), {}
        await asyncio.gather(*(link.close() for link in links), return_exceptions=True)

    def logs(self, ctx: Any, server: str) -> Logs | None:
        """Where `server`'s log messages go while it answers the 2026-07-28 request of `ctx`,
        when the request opted into them; None for any other (a 2025-era client's come on its
        own connections, at the level it set)."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return None
        level = (ctx.meta or {}).get(LOG_LEVEL_META_KEY)
        if level not in _LEVELS:
            return None
        taken = _LEVELS[_LEVELS.index(level) :]

        async def to(params: types.LoggingMessageNotificationParams) -> None:
            if params.level not in taken:  # a 2025-era server is not told the level: it says all
                return
            notification = types.LoggingMessageNotification(params=self._named(params, server))
            with contextlib.suppress(Exception):  # a log message is a courtesy: never fail for it
                await ctx.session.send_notification(notification, related_request_id=ctx.request_id)

        return Logs(level=level, to=to)

    def _named(
        self, params: types.LoggingMessageNotificationParams, server: str
    ) -> types.LoggingMessageNotificationParams:
        """A server's log message, its logger prefixed with the server's name when several."""
        if not self._several:
            return params
        named = f"{server}/{params.logger}" if params.logger else server
        return params.model_copy(update={"logger": named})

    # -- relayed to the client -------------------------------------------------------------

    def _callbacks(self, server: str) -> Callbacks:
        declared = self._capabilities or types.ClientCapabilities()

        async def sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
            result: type[Any] = types.CreateMessageResult
            if params.tools or params.tool_choice:
                result = types.CreateMessageResultWithTools
            # What it asks the client's model carries no contents the client may not read.
            wire = params.model_dump(mode="json", by_alias=True, exclude_none=True)
            screened = types.CreateMessageRequestParams.model_validate(
                self.screen.answer(wire, server)
            )
            return await self._ask(server, types.CreateMessageRequest(params=screened), result)

        questions = self.questions

        async def elicitation(context: Any, params: types.ElicitRequestParams) -> Any:
            if (
                isinstance(params, types.ElicitRequestFormParams)
                and questions is not None
                and questions.to_inbox(declared)
            ):
                return await questions.ask(server, self.asker, params)
            if isinstance(params, types.ElicitRequestURLParams) and not _opens_urls(declared):
                return types.ErrorData(
                    code=INVALID_PARAMS, message="the client does not open URLs for elicitation"
                )
            request = types.ElicitRequest(params=params)
            return await self._ask(server, request, types.ElicitResult)

        async def roots(context: Any) -> Any:
            return await self._ask(server, types.ListRootsRequest(), types.ListRootsResult)

        async def logged(params: types.LoggingMessageNotificationParams) -> None:
            notification = types.LoggingMessageNotification(params=self._named(params, server))
            await self._tell(notification, related=True)

        async def notified(message: Any) -> None:
            if isinstance(message, Exception):
                logger.info("MCP server %r: %s", server, message)
            elif isinstance(message, _PASSED_ON):
                await self._tell(message, related=False)

        elicits = declared.elicitation is not None or (
            questions is not None and questions.possible()
        )
        return Callbacks(
            sampling=sampling if declared.sampling is not None else None,
            sampling_capabilities=declared.sampling,
            elicitation=elicitation if elicits else None,
            roots=roots if declared.roots is not None else None,
            logging=logged,
            notified=notified,
            legacy=True,
        )

    async def _ask(self, server: str, request: Any, result: type[Any]) -> Any:
        """Send a server's request to the client and give back its answer (or its error),
        audited."""
        session, related = self._where()
        answered = False
        try:
            if session is None:
                raise MCPError(INTERNAL_ERROR, "the client of the gateway has gone")
            metadata = (
                None if related is None else ServerMessageMetadata(related_request_id=related)
            )
            answer = await session.send_request(request, result, metadata=metadata)
            answered = True
            return answer
        except MCPError as exc:
            return exc.error
        except Exception as exc:  # the client's odd answer: the server hears it as an error
            return types.ErrorData(code=INTERNAL_ERROR, message=f"the client failed: {exc}")
        finally:
            record = AuditRecord(
                actor=self.asker,
                action="relay",
                subject=server,
                at=datetime.now(UTC),
                data={"server": server, "method": request.method, "answered": answered},
            )
            with anyio.CancelScope(shield=True):
                await self.store.append_audit([record])

    async def _tell(self, notification: Any, *, related: bool) -> None:
        session, request = self._where() if related else (self._session, None)
        if session is None:
            return
        with contextlib.suppress(Exception):  # a notification is a courtesy: never fail for it
            await session.send_notification(notification, related_request_id=request)

    def _where(self) -> tuple[Any, Any]:
        """Where to send: the stream of the client's latest request in flight, else its
        connection's own."""
        if self._waiting:
            ctx = self._waiting[-1]
            return ctx.session, ctx.request_id
        return self._session, None


_PASSED_ON = (
    types.ToolListChangedNotification,
    types.PromptListChangedNotification,
    types.ResourceListChangedNotification,
    types.ResourceUpdatedNotification,
)


def _opens_urls(declared: types.ClientCapabilities) -> bool:
    elicitation = declared.elicitation
    return elicitation is not None and elicitation.url is not None


async def _set_level(link: Upstream, level: types.LoggingLevel) -> None:
    request = types.SetLevelRequest(params=types.SetLevelRequestParams(level=level))
    try:
        await link.ask(lambda c: c.session.send_request(request, types.EmptyResult))
    except UpstreamError as exc:
        logger.info("%s (setting its log level)", exc)
