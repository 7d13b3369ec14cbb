"""``signoff mcp-gateway --config FILE``: the config's MCP servers behind the policy, for any
MCP client (over stdio, or streamable HTTP at ``/mcp``)."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections import OrderedDict
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from signoff.cli.listen import check_port, check_port_free, run_server
from signoff.cli.serve import checked_auth
from signoff.errors import MissingExtraError

if TYPE_CHECKING:
    from signoff.protocols.mcp.gateway import Asker, Gateway
    from signoff.server.auth import Auth
    from signoff.server.config import ServerConfig
    from signoff.server.intake import BodyLimits

__all__ = ["mcp_gateway"]

PRINCIPAL = "signoff.principal"


class Transport(StrEnum):
    stdio = "stdio"
    http = "http"


def mcp_gateway(
    config: Annotated[
        Path, typer.Option(help="The config file: servers, policy, database, gateway, auth.")
    ],
    transport: Annotated[
        Transport, typer.Option(help="stdio (an MCP client starts the gateway) or http.")
    ] = Transport.stdio,
    host: Annotated[str, typer.Option(help="Address to listen on (http).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (http); 0 picks one.")] = 8080,
    no_auth: Annotated[
        bool,
        typer.Option("--no-auth", help="Serve everyone as the local user (http, loopback only)."),
    ] = False,
) -> None:
    """Front the config's MCP servers: allowed calls run, denied ones are refused, the rest
    wait for a person (the inbox, or the MCP client's own dialog)."""
    if transport is Transport.http:
        check_port("mcp-gateway", port)
    try:
        from signoff.protocols.mcp.gateway import Gateway  # noqa: F401  (the mcp extra)
        from signoff.server.config import load_config
    except ImportError:
        raise MissingExtraError("signoff mcp-gateway", "mcp,server") from None

    settings = load_config(config, gateway=True)
    if not settings.servers:
        raise typer.BadParameter(
            f"{config} names no MCP server to front: give a server under 'servers:' a "
            "'command' (stdio) or a 'url' (streamable HTTP)",
            param_hint="--config",
        )
    auth: Auth | None = None
    if transport is Transport.http:
        auth = checked_auth(
            config, settings.tokens, host=host, no_auth=no_auth, hosts=settings.allowed_hosts
        )
        check_port_free("mcp-gateway", host, port)
    # stdout is the MCP channel over stdio: everything said goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="signoff: %(message)s")
    for warning in settings.policy.warnings:
        logging.getLogger("signoff.mcp.gateway").warning("%s", warning)

    with contextlib.suppress(KeyboardInterrupt):
        run_server(_serve(settings, auth, host=host, port=port))


async def _serve(settings: ServerConfig, auth: Auth | None, *, host: str, port: int) -> None:
    from signoff.gate import Gate
    from signoff.limits import ArgumentLimits
    from signoff.protocols.mcp.gateway import Gateway
    from signoff.protocols.mcp.upstream import Upstream
    from signoff.redaction import Redaction
    from signoff.server.intake import BodyLimits
    from signoff.server.service import Service
    from signoff.store import open_store

    key_env = settings.gateway.state_key_env
    redaction = Redaction(settings.redact)
    async with open_store(settings.database) as store:
        # The gate words what it refuses (a decision on a call changed since) masked too.
        gate = Gate(
            settings.policy,
            store,
            limits=ArgumentLimits(max_bytes=settings.argument_bytes),
            redaction=redaction,
        )
        # The Service keeps the policy in step with the API's edits, and expires approvals.
        service = Service(store=store, gate=gate, agents=[], policy_document=settings.document)
        gateway = Gateway(
            gate,
            [Upstream(spec) for spec in settings.servers.values()],
            settings=settings.gateway,
            asker=None if auth is None else _asker,
            forwarded=_forwarded,
            show_args=redaction.call_args,
            state_keys=[os.environ[key_env]] if key_env else None,
        )
        async with service.running(), gateway.running():
            if auth is None:
                await _stdio(gateway, limit=settings.body_bytes)
            else:
                limits = BodyLimits(max_bytes=settings.body_bytes)
                await _http(gateway, auth, limits, host=host, port=port)


async def _stdio(gateway: Gateway, *, limit: int) -> None:
    """Over the loop's own pipes where it can (`signoff.protocols.mcp.stdio`), a message of
    the client at most `limit` bytes, as an HTTP request's body."""
    from mcp.server.stdio import stdio_server

    from signoff.protocols.mcp.stdio import stdio_pipes

    server = gateway.server
    async with stdio_pipes(limit=limit) as pipes:
        wire = (None, None) if pipes is None else pipes
        async with stdio_server(*wire) as (read, write):
            await server.run(read, write, server.create_initialization_options())


async def _http(gateway: Gateway, auth: Auth, limits: BodyLimits, *, host: str, port: int) -> None:
    from signoff.server.intake import Intake
    from signoff.server.run import run_app

    app = gateway.server.streamable_http_app(streamable_http_path="/mcp", host=host)
    await run_app(
        _Authenticated(Intake(app, auth=auth, limits=limits), auth),
        host=host,
        port=port,
        ready=lambda url: typer.echo(f"signoff MCP gateway on {url}/mcp", err=True),
    )


def _asker(request: Any) -> Asker:
    from signoff.protocols.mcp.gateway import Asker

    principal = None if request is None else request.scope.get(PRINCIPAL)
    if principal is None:  # _Authenticated lets no request through without one
        raise PermissionError("the request carries no principal")
    return Asker(principal.name, principal.roles)


def _forwarded(request: Any, upstream: Any) -> dict[str, str]:
    """The client's headers the server's config lets through (none unless listed)."""
    allowed = upstream.spec.allowed_headers
    if request is None or not allowed:
        return {}
    return {name: value for name, value in request.headers.items() if name.lower() in allowed}


class _Authenticated:
    """Every request needs a known bearer token (401 otherwise); its principal is who asks. A
    session (``mcp-session-id``) belongs to the principal that opened it: another's token
    cannot use it (404, as an unknown session). Without authentication (or with
    ``allowed_hosts``), a request for a host the gateway does not answer to is refused (421):
    a page whose DNS name was pointed at this machine names its own host."""

    SESSIONS = 10_000
    """Sessions remembered (the oldest forgotten first; the SDK ends idle ones anyway)."""

    def __init__(self, app: Any, auth: Auth) -> None:
        self.app = app
        self.auth = auth
        self.owners: OrderedDict[bytes, str] = OrderedDict()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            return  # no other kind of connection is served
        headers = dict(scope.get("headers") or [])
        if self.auth.checks_hosts:
            from signoff.server.hosts import host_name

            host = host_name(headers.get(b"host", b"").decode("latin-1"))
            if host is None or not self.auth.serves(host):
                await _answer(send, 421, b"this gateway does not answer to that host")
                return
        principal = self.auth.identify(
            {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in headers.items()}
        )
        if principal is None:
            await _answer(send, 401, b"send Authorization: Bearer <token>", bearer=True)
            return
        session = headers.get(b"mcp-session-id")
        if session is not None and self.owners.get(session, principal.name) != principal.name:
            await _answer(send, 404, b"no such session")
            return
        owners = self.owners

        async def remember(message: Any) -> None:
            if message["type"] == "http.response.start":
                opened = dict(message.get("headers") or []).get(b"mcp-session-id")
                if opened is not None and opened not in owners:
                    owners[opened] = principal.name
                    while len(owners) > self.SESSIONS:
                        owners.popitem(last=False)
            await send(message)

        await self.app({**scope, PRINCIPAL: principal}, receive, remember)


async def _answer(send: Any, status: int, detail: bytes, *, bearer: bool = False) -> None:
    headers = [(b"content-type", b"application/json")]
    if bearer:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    error = {401: b"Unauthorized", 404: b"Not Found", 421: b"MisdirectedRequest"}[status]
    body = b'{"error": "' + error + b'", '
    await send({"type": "http.response.body", "body": body + b'"detail": "' + detail + b'"}'})
