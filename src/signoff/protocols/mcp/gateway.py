"""The MCP gateway: any MCP client in front, the config's MCP servers behind, the policy and a
person in between (ARCHITECTURE §7; `signoff mcp-gateway`).

The gateway is a full MCP proxy: it offers what its servers offer — tools, resources and their
templates, prompts, completions, logging, resource subscriptions — and passes on what they ask
of their client and tell it (`peer`), under the names of `catalog`.

Policy applies where it means something: a tool call, a resource read (by its URI's one
spelling, `uris`) and a prompt got (by name, with its arguments) are each a call the policy
allows, asks about or denies (`held`); what the policy denies whatever the arguments is not even
listed, and resource contents a client may not read do not reach it in other answers (`screen`).
Listing, completing and subscribing pass through (a subscription to a resource the policy
denies is refused, a completion never names one); a 2026-07-28 client listens (`listening`).
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

from mcp import types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate
from mcp_types import INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from signoff.gate import Gate
from signoff.gate.ids import new_id
from signoff.gate.preview import Previews
from signoff.gate.questions import ASK_TOOL
from signoff.protocols.mcp.answers import REFUSED, RESOURCE_NOT_FOUND, not_offered
from signoff.protocols.mcp.asking import ask_tool, asking
from signoff.protocols.mcp.catalog import Catalog, Offered, prompt_schema
from signoff.protocols.mcp.dialog import ShowArgs
from signoff.protocols.mcp.held import ORIGIN, Holding
from signoff.protocols.mcp.listening import Listening
from signoff.protocols.mcp.peer import Peer
from signoff.protocols.mcp.preview import upstream_previews
from signoff.protocols.mcp.questions import ServerQuestions
from signoff.protocols.mcp.request import Action, Asked, Asker
from signoff.protocols.mcp.settings import GatewaySettings
from signoff.protocols.mcp.upstream import Upstream, UpstreamError
from signoff.protocols.mcp.uris import canonical_uri
from signoff.store import Store
from signoff.types import Approval, CallKind, ToolCall

__all__ = ["ORIGIN", "Asker", "Gateway"]

logger = logging.getLogger("signoff.mcp.gateway")

_PEER = "signoff.peer"
"""Where a client connection keeps its `Peer` (the SDK's per-connection state)."""
R = TypeVar("R")


class _GatewayServer(Server[Any]):
    """Says its lists change: the servers' changes are passed on."""

    def create_initialization_options(self, *args: Any, **kwargs: Any) -> Any:
        changes = NotificationOptions(prompts_changed=True, resources_changed=True,
                                      tools_changed=True)  # fmt: skip
        return super().create_initialization_options(changes)


class Gateway:
    """The gateway's MCP server (`server`), over `upstreams`, judged by `gate`."""

    def __init__(
        self,
        gate: Gate,
        upstreams: list[Upstream],
        *,
        settings: GatewaySettings | None = None,
        asker: Callable[[Any], Asker] | None = None,
        forwarded: Callable[[Any, Upstream], Mapping[str, str]] | None = None,
        show_args: ShowArgs = lambda args: args,
        state_keys: list[str] | None = None,
    ) -> None:
        """`asker` tells who sent a request (default: the configured principal, or the OS
        user); `forwarded` which of its headers go upstream; `show_args` masks what the client's
        dialog shows; `state_keys` seal 2026-07-28 request state (default: a key per process)."""
        self.gate = gate
        self.store: Store = gate.store
        self.upstreams = {u.name: u for u in upstreams}
        self.settings = settings or GatewaySettings()
        local = Asker(self.settings.principal or _os_user(), frozenset(self.settings.roles))
        self._asker = asker or (lambda _request: local)
        self._forwarded = forwarded or (lambda _request, _upstream: {})
        self.holding = Holding(gate, self.settings, show_args=show_args)
        self.questions = ServerQuestions(gate, self.settings)
        self._several = len(self.upstreams) > 1
        self._shared = Peer(self.store, self.holding.screen, asker=local.name, bound=False,
                            several=self._several, questions=self.questions)  # fmt: skip
        self._sessions = 0
        """How many client sessions have connections of their own now (`settings.sessions`)."""
        self.catalog = Catalog(several=self._several, engine=lambda: gate.engine)
        self.listening = Listening(
            upstreams,
            where=lambda ctx, uri: self._resource(ctx, self._shared, uri),
            hidden=lambda upstream, uri: self.catalog.hidden(upstream, uri, "resource"),
        )
        server = _GatewayServer(
            self.settings.name,
            version=_version(),
            instructions=(
                "Tools, resources and prompts of other MCP servers, behind signoff: a call may "
                "wait for a person's approval. A result with structuredContent.status "
                "'pending_approval' (an error with data.status 'pending_approval' for a read "
                "or a prompt) did not run; ask again with the same arguments to pick up the "
                "decision."
            ),
            on_list_tools=self._served(self._list_tools),
            on_call_tool=self._served(self._call_tool),
            on_list_resources=self._served(self._list_resources),
            on_list_resource_templates=self._served(self._list_templates),
            on_read_resource=self._served(self._read_resource),
            on_subscribe_resource=self._served(self._subscribe),
            on_unsubscribe_resource=self._served(self._unsubscribe),
            on_list_prompts=self._served(self._list_prompts),
            on_get_prompt=self._served(self._get_prompt),
            on_completion=self._served(self._complete),
            on_subscriptions_listen=self.listening,
        )
        # Logging and roots are deprecated as of 2026-07-28, but 2025-era clients use them.
        server.add_request_handler(
            "logging/setLevel", types.SetLevelRequestParams, self._served(self._set_level)
        )
        server.add_notification_handler(
            "notifications/roots/list_changed", types.NotificationParams, self._roots_changed
        )
        self.server: Server[Any] = server
        security = (
            RequestStateSecurity(keys=list(state_keys), ttl=3600.0)
            if state_keys
            else RequestStateSecurity.ephemeral(ttl=3600.0)
        )
        # The approval, or the server's question passed on, names its asker: checked on every
        # retry.
        security.bind_principal = None
        self.server.middleware.append(
            RequestStateBoundary(security, default_audience=self.settings.name)
        )

    # -- the servers behind ----------------------------------------------------------------

    async def start(self) -> None:
        """Nothing to do at once: each client connects to the servers when it first needs
        them (with its own capabilities), and a server that cannot be reached is tried again
        at the next request."""

    async def close(self) -> None:
        await asyncio.gather(*(u.close() for u in self.upstreams.values()))

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        await self.start()
        try:
            yield self
        finally:
            await self.close()

    def _peer(self, ctx: Any) -> Peer:
        """The client connection the request came on; the gateway's own for a 2026-07-28
        request (it has no session)."""
        connection = _connection(ctx)
        if connection is None or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return self._shared
        peer: Peer | None = connection.state.get(_PEER)
        if peer is None:
            if self._sessions >= self.settings.sessions:
                # Each session's connections are processes: past the limit, a session shares
                # the gateway's own, and what its servers ask of a client is refused.
                logger.warning("%d client sessions have connections of their own: this one "
                               "shares the gateway's", self._sessions)  # fmt: skip
                connection.state[_PEER] = peer = self._shared
                return peer
            asker = self._asker(ctx.request)
            peer = Peer(self.store, self.holding.screen, asker=asker.name,
                        several=self._several, questions=self.questions)  # fmt: skip
            connection.state[_PEER] = peer
            self._sessions += 1
            connection.exit_stack.push_async_callback(self._ended, peer)
        return peer

    async def _ended(self, peer: Peer) -> None:
        self._sessions -= 1
        await peer.close()

    def _served(
        self, handler: Callable[[Any, Peer, Any], Awaitable[R]]
    ) -> Callable[[Any, Any], Awaitable[R]]:
        """`handler` with the request's client; what a server asks or tells meanwhile goes on
        the request's stream."""

        async def serve(ctx: Any, params: Any) -> R:
            peer = self._peer(ctx)
            with peer.serving(ctx):
                return await handler(ctx, peer, params)

        return serve

    async def _each(
        self, ctx: Any, peer: Peer, what: str, feature: str | None
    ) -> list[tuple[Upstream, list[Any]]]:
        """What each server lists of `what` (those offering `feature`), over the client's
        connections; a server that cannot be reached is left out (and said so)."""

        async def listing(upstream: Upstream) -> tuple[Upstream, list[Any]]:
            link = await peer.link(upstream)
            upstream.capabilities = link.capabilities  # what the server offers, as last seen
            if feature is not None and not link.offers(feature):
                return upstream, []
            found = await link.listed(what, headers=self._forwarded(ctx.request, upstream))
            if what == "tools":
                upstream.tools = found  # kept while the server is away
            return upstream, found

        upstreams = list(self.upstreams.values())
        results = await asyncio.gather(*(listing(u) for u in upstreams), return_exceptions=True)
        listed = []
        for upstream, result in zip(upstreams, results, strict=True):
            if isinstance(result, UpstreamError):
                logger.warning("%s; what it offers is listed once it answers", result)
                listed.append((upstream, upstream.tools if what == "tools" else []))
            elif isinstance(result, BaseException):
                raise result
            else:
                listed.append(result)
        return listed

    # -- tools -----------------------------------------------------------------------------

    async def _list_tools(self, ctx: Any, peer: Peer, params: Any) -> types.ListToolsResult:
        tools = self.catalog.list_tools(await self._each(ctx, peer, "tools", None))
        if self.settings.ask_tool:  # signoff's own, in place of a server's of the same name
            tools = [ask_tool(), *(t for t in tools if t.name != ASK_TOOL)]
        return types.ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: Any, peer: Peer, params: types.CallToolRequestParams) -> Any:
        if self.settings.ask_tool and params.name == ASK_TOOL:
            return await self._hold(ctx, peer, asking(params.arguments), params)
        offered = self.catalog.tools.get(params.name)
        if offered is None:
            await self._list_tools(ctx, peer, None)
            offered = self.catalog.tools.get(params.name)
        if offered is None:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}")
        tool = offered.item
        hints = tool.annotations
        # Kept with the approval of a held call: an edit is checked when decided, in any process.
        self.gate.register_schemas({tool.name: tool.input_schema}, server=offered.upstream.name)
        call = _call(offered.upstream, "tool", tool.name, dict(params.arguments or {}))
        hinted = hints is not None and (hints.idempotent_hint or hints.read_only_hint)
        action = Action(
            call=call,
            upstream=offered.upstream,
            schema=tool.input_schema,
            # The server's hints, or the policy's own mark (a rule's ``idempotent: true``).
            idempotent=bool(hinted) or self.gate.idempotent(call),
        )
        return await self._hold(ctx, peer, action, params)

    # -- prompts ---------------------------------------------------------------------------

    async def _list_prompts(self, ctx: Any, peer: Peer, params: Any) -> types.ListPromptsResult:
        listed = await self._each(ctx, peer, "prompts", "prompts")
        return types.ListPromptsResult(prompts=self.catalog.list_prompts(listed))

    async def _prompt(self, ctx: Any, peer: Peer, name: str) -> Offered | None:
        """The prompt offered under `name` (the prompts listed again when none is)."""
        offered = self.catalog.prompts.get(name)
        if offered is None:
            await self._list_prompts(ctx, peer, None)
            offered = self.catalog.prompts.get(name)
        return offered

    async def _get_prompt(self, ctx: Any, peer: Peer, params: types.GetPromptRequestParams) -> Any:
        offered = await self._prompt(ctx, peer, params.name)
        if offered is None:
            return not_offered("prompt", params.name)
        prompt = offered.item
        action = Action(
            call=_call(offered.upstream, "prompt", prompt.name, dict(params.arguments or {})),
            upstream=offered.upstream,
            schema=prompt_schema(prompt),
            idempotent=True,
        )
        return await self._hold(ctx, peer, action, params)

    # -- resources -------------------------------------------------------------------------

    async def _list_resources(self, ctx: Any, peer: Peer, params: Any) -> types.ListResourcesResult:
        listed = await self._each(ctx, peer, "resources", "resources")
        return types.ListResourcesResult(resources=self.catalog.list_resources(listed))

    async def _list_templates(
        self, ctx: Any, peer: Peer, params: Any
    ) -> types.ListResourceTemplatesResult:
        listed = await self._each(ctx, peer, "resource_templates", "resources")
        return types.ListResourceTemplatesResult(
            resource_templates=self.catalog.list_templates(listed)
        )

    async def _resource(self, ctx: Any, peer: Peer, uri: str) -> Upstream | None:
        """The server of a resource: the one that lists it, or a template matching it (listed
        again when none does), or the only server that offers resources."""
        found = self.catalog.server_of(uri)
        if found is None:
            await self._list_resources(ctx, peer, None)
            await self._list_templates(ctx, peer, None)
            found = self.catalog.server_of(uri)
        if found is not None:
            return found
        serving = [u for u in self.upstreams.values() if u.offers("resources")]
        return serving[0] if len(serving) == 1 else None

    async def _read_resource(
        self, ctx: Any, peer: Peer, params: types.ReadResourceRequestParams
    ) -> Any:
        uri = _judged(str(params.uri))
        upstream = await self._resource(ctx, peer, uri)
        if upstream is None:
            return types.ErrorData(code=RESOURCE_NOT_FOUND, message=f"Resource not found: {uri}")
        action = Action(call=_call(upstream, "resource", uri, {}), upstream=upstream,
                        idempotent=True)  # fmt: skip
        return await self._hold(ctx, peer, action, params)

    async def _subscribe(self, ctx: Any, peer: Peer, params: types.SubscribeRequestParams) -> Any:
        return await self._subscription(ctx, peer, _judged(str(params.uri)), types.SubscribeRequest)

    async def _unsubscribe(
        self, ctx: Any, peer: Peer, params: types.UnsubscribeRequestParams
    ) -> Any:
        uri = _judged(str(params.uri))
        return await self._subscription(ctx, peer, uri, types.UnsubscribeRequest)

    async def _subscription(self, ctx: Any, peer: Peer, uri: str, kind: type[Any]) -> Any:
        """A (un)subscription passed to the resource's server over the client's connection,
        which brings its updates to this client. Refused for a resource the policy denies."""
        upstream = await self._resource(ctx, peer, uri)
        if upstream is None:
            return types.ErrorData(code=RESOURCE_NOT_FOUND, message=f"Resource not found: {uri}")
        if self.catalog.hidden(upstream, uri, "resource"):
            verdict = self.gate.engine.evaluate(_call(upstream, "resource", uri, {}))
            return types.ErrorData(
                code=REFUSED,
                message=f"signoff blocked this read: {verdict.reason}",
                data={"status": "blocked"},
            )
        request = kind(params={"uri": uri})
        return await self._forward(peer, upstream, lambda c: c.session.send_request(
            request, types.EmptyResult))  # fmt: skip

    # -- completions and logging -----------------------------------------------------------

    async def _complete(self, ctx: Any, peer: Peer, params: types.CompleteRequestParams) -> Any:
        ref = params.ref
        if isinstance(ref, types.PromptReference):
            offered = await self._prompt(ctx, peer, ref.name)
            if offered is None:
                return not_offered("prompt", ref.name)
            upstream = offered.upstream
            ref = ref.model_copy(update={"name": offered.item.name})
        else:
            template = self.catalog.template(ref.uri)
            if template is None:
                await self._list_templates(ctx, peer, None)
                template = self.catalog.template(ref.uri)
            if template is None:
                return not_offered("resource template", ref.uri)
            upstream = template.upstream
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = None if params.context is None else params.context.arguments
        answer = await self._forward(peer, upstream, lambda c: c.complete(ref, argument, context))
        if isinstance(ref, types.ResourceTemplateReference) and isinstance(
            answer, types.CompleteResult
        ):
            answer = self._unhidden(answer, upstream, ref.uri, argument["name"], context or {})
        return answer

    def _unhidden(
        self,
        answer: types.CompleteResult,
        upstream: Upstream,
        template: str,
        name: str,
        context: Mapping[str, str],
    ) -> types.CompleteResult:
        """The completions of a template's argument without those naming a resource the
        policy denies (or a URI it cannot judge): a completion never lists what a deny hides."""
        try:
            matcher = UriTemplate.parse(template)
        except InvalidUriTemplate:
            return types.CompleteResult(completion=types.Completion(values=[]))
        kept = []
        for value in answer.completion.values:
            try:
                uri = canonical_uri(matcher.expand({**context, name: value}))
            except ValueError:
                continue
            if not self.catalog.hidden(upstream, uri, "resource"):
                kept.append(value)
        if len(kept) == len(answer.completion.values):
            return answer
        return types.CompleteResult(completion=types.Completion(values=kept, has_more=False))

    async def _set_level(self, ctx: Any, peer: Peer, params: types.SetLevelRequestParams) -> Any:
        await peer.set_level(params.level)
        return types.EmptyResult()

    async def _roots_changed(self, ctx: Any, params: Any) -> None:
        await self._peer(ctx).roots_changed()

    # -- shared ----------------------------------------------------------------------------

    def edit_previews(self, approval: Approval) -> Previews | None:
        """The preview of `approval`'s call with other arguments, for a server that runs this
        gateway in its own process (`Service.edit_previews`): over the gateway's own
        connection to the call's server. None for another origin's call, or a tool whose
        server's config names no preview."""
        upstream = self.upstreams.get(approval.call.server or "")
        if approval.origin != ORIGIN or upstream is None:
            return None
        return upstream_previews(
            self._shared, upstream, approval.call, headers={},
            timeout=self.settings.preview_timeout,
        )  # fmt: skip

    async def _hold(self, ctx: Any, peer: Peer, action: Action, params: Any) -> Any:
        upstream = action.upstream
        headers = {} if upstream is None else self._forwarded(ctx.request, upstream)
        asked = Asked(ctx=ctx, asker=self._asker(ctx.request), peer=peer, headers=headers)
        return await self.holding.answer(asked, action, params)

    async def _forward(
        self, peer: Peer, upstream: Upstream, asking: Callable[[Any], Awaitable[Any]]
    ) -> Any:
        """What the server answers, over the client's connection; its own error as it is."""
        try:
            link = await peer.link(upstream)
            return await link.ask(asking)
        except UpstreamError as exc:
            if exc.answer is not None:
                return exc.answer.error
            raise MCPError(REFUSED, str(exc), {"status": "failed"}) from exc


def _call(upstream: Upstream, kind: CallKind, name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(id=new_id(), name=name, args=args, server=upstream.name, kind=kind)


def _judged(uri: str) -> str:
    """The URI a client's request names, in the form it is judged, held and forwarded in;
    refused before anything is kept when it has none (`uris`)."""
    try:
        return canonical_uri(uri)
    except ValueError as exc:
        raise MCPError(INVALID_PARAMS, f"{exc}: read the resource by its plain URI") from None


def _connection(ctx: Any) -> Any:
    """The SDK's `Connection` of the request: its per-connection state and teardown. The
    runner hands handlers a context without it (`mcp.server.context.Context.connection` is not
    built yet), so it is read off the request's session."""
    return getattr(ctx.session, "_connection", None)


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "local"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("signoff")
    except PackageNotFoundError:
        return "0"
