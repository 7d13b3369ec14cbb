"""`subscriptions/listen` through the gateway (2026-07-28, SEP-2575).

A 2026-07-28 client has no session to be told things on: it opens a listen stream naming the
changes it wants — tool, prompt and resource list changes, updates of the resources it names —
and the stream carries them. Each listen of the gateway's client gets subscriptions of its own
to the servers behind, opened before it is acknowledged (so a change made once the client holds
the acknowledgment reaches it; a server slow to acknowledge its own is waited for `ACKNOWLEDGED`
seconds at most) and closed with it:

- a server that speaks 2026-07-28 is asked for a listen stream of its own, on the gateway's
  connection to it, with the same filter (a URI only to the server that offers it);
- a 2025-era server gets a connection of this listen's own, where it tells its list changes
  unasked, and a ``resources/subscribe`` for each URI of it; what it tells on the gateway's own
  connection to it (where 2026-07-28 clients' calls go, and many a server tells only the
  session whose call changed something) goes to each listen too.

What a server tells goes through the SDK's `ListenHandler` (the acknowledgment first, the
subscription id on every frame, nothing the client did not ask for). A URI the policy denies
reading is not honored: the acknowledgment leaves it out and no update of it is delivered, even
if the policy changes to deny it while the stream is open. When a 2026-07-28 server's listen
stream ends (the server went away), the client's stream ends with an error: it listens again and
refetches. (A 2025-era server's connection that breaks is not noticed: the stream goes quiet.)

Each listen costs a stream to each server (a connection, for a 2025-era one): at most `limit`
are open at once, and one names at most `URIS` resources.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
from mcp import Client, types
from mcp.client.session import MessageHandlerFnT
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, REQUEST_TIMEOUT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from signoff.protocols.mcp.upstream import Callbacks, Upstream, UpstreamError
from signoff.protocols.mcp.uris import canonical_uri

__all__ = ["ACKNOWLEDGED", "LISTENS", "URIS", "Listening"]

logger = logging.getLogger("signoff.mcp.gateway")

LISTENS = 64
"""How many listen streams the gateway holds open at once, by default."""
URIS = 100
"""The most resources one listen may name."""
ACKNOWLEDGED = 0.5
"""How long a client's acknowledgment waits for the servers' own, once connected (seconds)."""

Where = Callable[[Any, str], Awaitable[Upstream | None]]
"""The server of a (canonical) URI, for the request of a context; None when none offers it."""
Hidden = Callable[[Upstream, str], bool]
"""Whether the policy denies reading a URI of a server, whatever is asked."""
Told = Callable[[ServerEvent], Awaitable[None]]


class Listening:
    """Serves `subscriptions/listen` over `upstreams` (a lowlevel `Server`'s
    ``on_subscriptions_listen``)."""

    def __init__(
        self, upstreams: Sequence[Upstream], *, where: Where, hidden: Hidden, limit: int = LISTENS
    ) -> None:
        self.upstreams = list(upstreams)
        self._where = where
        self._hidden = hidden
        self.limit = limit
        self.acknowledged = ACKNOWLEDGED
        self.open = 0
        """How many listen streams are open now."""
        self._told: dict[str, set[Told]] = {u.name: set() for u in self.upstreams}
        """Where what each server tells on the gateway's own connection goes: the feeds of
        the open listens."""
        for upstream in self.upstreams:
            upstream.callbacks = dataclasses.replace(
                upstream.callbacks, notified=self._relay(upstream.name)
            )

    def _relay(self, server: str) -> MessageHandlerFnT:
        async def notified(message: Any) -> None:
            event = _event(message)
            if event is not None:
                for told in list(self._told[server]):
                    await told(event)

        return notified

    async def __call__(
        self, ctx: Any, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        if self.open >= self.limit:
            raise MCPError(INTERNAL_ERROR, f"Subscription limit reached ({self.limit} listen "
                           "streams are open): close one, or listen again later")  # fmt: skip
        self.open += 1
        try:
            return await self._listen(ctx, params.notifications)
        finally:
            self.open -= 1

    async def _listen(
        self, ctx: Any, asked: types.SubscriptionFilter
    ) -> types.SubscriptionsListenResult:
        uris = await self._honored_uris(ctx, asked.resource_subscriptions or [])
        lists = asked.model_copy(update={"resource_subscriptions": None})
        wanted = any((lists.tools_list_changed, lists.prompts_list_changed,
                      lists.resources_list_changed))  # fmt: skip
        honored = asked.model_copy(update={"resource_subscriptions": [u for u, _ in uris] or None})
        bus = InMemorySubscriptionBus()
        named = {u.name: [uri for uri, server in uris if server is u] for u in self.upstreams}
        feeds = [
            _Feed(u, lists, named[u.name], bus, self._hidden, self._told[u.name])
            for u in self.upstreams
            if wanted or named[u.name]
        ]
        handler = ListenHandler(bus, max_subscriptions=1)
        params = types.SubscriptionsListenRequestParams(notifications=honored)
        try:
            async with anyio.create_task_group() as running:
                for feed in feeds:
                    running.start_soon(feed.run)
                await _subscribed(feeds, self.acknowledged)
                result = await handler(ctx, params)
                running.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            ended = group.subgroup(MCPError)
            if ended is None:
                raise
            raise ended.exceptions[0] from None
        return result

    async def _honored_uris(self, ctx: Any, asked: list[str]) -> list[tuple[str, Upstream]]:
        """The URIs asked for that the stream honors, each with its server: in its canonical
        form, offered by a server, and readable by the policy (the others are left out of
        the acknowledgment)."""
        if len(asked) > URIS:
            raise MCPError(INVALID_PARAMS, f"notifications.resourceSubscriptions names "
                           f"{len(asked)} resources: listen to at most {URIS}")  # fmt: skip
        honored: list[tuple[str, Upstream]] = []
        for given in dict.fromkeys(asked):
            try:
                uri = canonical_uri(given)
            except ValueError as exc:
                raise MCPError(INVALID_PARAMS, f"notifications.resourceSubscriptions: {exc}: "
                               "name the resource by its plain URI") from None  # fmt: skip
            upstream = await self._where(ctx, uri)
            if upstream is None or self._hidden(upstream, uri):
                continue
            honored.append((uri, upstream))
        return honored


class _Feed:
    """What one server tells one listen stream (`bus`), for as long as the stream is open."""

    def __init__(
        self,
        upstream: Upstream,
        lists: types.SubscriptionFilter,
        uris: list[str],
        bus: InMemorySubscriptionBus,
        hidden: Hidden,
        told: set[Told],
    ) -> None:
        self.upstream = upstream
        self.lists = lists
        self.uris = uris
        self.bus = bus
        self.hidden = hidden
        self.told = told
        """The feeds told what the server tells on the gateway's own connection."""
        self.connected = anyio.Event()
        self.subscribed = anyio.Event()

    async def run(self) -> None:
        """Connect (`connected`), subscribe (`subscribed`), then pass on what the server
        tells until the stream closes. A server that cannot be subscribed to is left out (and
        said so); one whose subscription ends ends the stream (`MCPError`)."""
        try:
            if await self._modern():
                self.connected.set()
                await self.upstream.ask(self._listened)
            else:
                await self._legacy()
        except (UpstreamError, MCPError, RuntimeError) as exc:
            if self.subscribed.is_set():
                raise MCPError(INTERNAL_ERROR, f"MCP server {self.upstream.name!r} ended its "
                               f"subscription ({exc}): listen again") from exc  # fmt: skip
            logger.warning("MCP server %r: no subscription to what it tells (%s)",
                           self.upstream.name, exc)  # fmt: skip
            return
        finally:
            self.connected.set()
            self.subscribed.set()
        raise MCPError(INTERNAL_ERROR, f"MCP server {self.upstream.name!r} ended its "
                       "subscription: listen again")  # fmt: skip

    async def _modern(self) -> bool:
        """Whether the gateway's connection to the server speaks 2026-07-28."""

        async def version(client: Client) -> str | None:
            return client.session.protocol_version

        return await self.upstream.ask(version) in MODERN_PROTOCOL_VERSIONS

    async def _listened(self, client: Client) -> None:
        """The server's own listen stream, with this stream's filter (a timeout is the
        server's answer, not a broken connection)."""
        lists = self.lists
        listening = client.listen(
            tools_list_changed=bool(lists.tools_list_changed),
            prompts_list_changed=bool(lists.prompts_list_changed),
            resources_list_changed=bool(lists.resources_list_changed),
            resource_subscriptions=self.uris,
        )
        try:
            async with listening as subscription:
                self.subscribed.set()
                async for event in subscription:
                    await self._publish(event)
        except TimeoutError:
            raise MCPError(REQUEST_TIMEOUT, "no acknowledgment of its listen stream") from None

    async def _legacy(self) -> None:
        """A connection of this stream's own to a 2025-era server, subscribed to its URIs;
        closed with the stream."""

        async def notified(message: Any) -> None:
            event = _event(message)
            if event is not None:
                await self._publish(event)

        link = self.upstream.bound(Callbacks(notified=notified, legacy=True))
        self.told.add(self._publish)
        try:
            await link.connect()
            self.connected.set()
            for uri in self.uris:
                await _subscribe(link, uri)
            self.subscribed.set()
            await anyio.sleep_forever()
        finally:
            self.told.discard(self._publish)
            with anyio.CancelScope(shield=True):
                await link.close()

    async def _publish(self, event: ServerEvent) -> None:
        """Pass `event` on, in the canonical spelling of its URI; never an update of a
        resource the policy now denies reading."""
        if isinstance(event, ResourceUpdated):
            try:
                event = ResourceUpdated(uri=canonical_uri(event.uri))
            except ValueError:
                return
            if self.hidden(self.upstream, event.uri):
                return
        await self.bus.publish(event)


async def _subscribe(link: Upstream, uri: str) -> None:
    request = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
    try:
        await link.ask(lambda c: c.session.send_request(request, types.EmptyResult))
    except UpstreamError as exc:  # it may tell updates unasked: those are passed on
        logger.info("MCP server %r: %s (subscribing to %s)", link.name, exc, uri)


async def _subscribed(feeds: list[_Feed], bound: float) -> None:
    """Once every server is connected to (or left out), until each has acknowledged its
    subscription — `bound` seconds at most: the client's acknowledgment does not wait for a
    server that is slow to give its own (what it tells before it does is not passed on)."""
    for feed in feeds:
        await feed.connected.wait()
    with anyio.move_on_after(bound):
        for feed in feeds:
            await feed.subscribed.wait()
    for feed in feeds:
        if not feed.subscribed.is_set():
            logger.warning("MCP server %r has not acknowledged a subscription within %.1fs: the "
                           "client's is acknowledged without it", feed.upstream.name,
                           bound)  # fmt: skip


def _event(message: Any) -> ServerEvent | None:
    """The change a 2025-era server's notification tells, if any."""
    if isinstance(message, types.ToolListChangedNotification):
        return ToolsListChanged()
    if isinstance(message, types.PromptListChangedNotification):
        return PromptsListChanged()
    if isinstance(message, types.ResourceListChangedNotification):
        return ResourcesListChanged()
    if isinstance(message, types.ResourceUpdatedNotification):
        return ResourceUpdated(uri=str(message.params.uri))
    return None
