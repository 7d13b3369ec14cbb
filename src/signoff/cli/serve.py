"""``signoff serve --config FILE``: the API over the config's database and policy."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from signoff.cli.listen import check_port, check_port_free, run_server
from signoff.cli.program import program
from signoff.errors import MissingExtraError

if TYPE_CHECKING:
    from signoff.agent import Agent
    from signoff.notify import Notifications
    from signoff.server import Auth, Principal, Service
    from signoff.server.config import ServerConfig
    from signoff.server.sso import OidcSettings
    from signoff.store import Store

__all__ = ["LogFormatOption", "serve"]

LogFormatOption = Annotated[
    Literal["text", "json"],
    typer.Option(
        "--log-format",
        help="text: warnings and errors, plain; json: every record as one JSON object a line, "
        "with approval and run ids, never argument values (request logs included).",
    ),
]


def serve(
    config: Annotated[
        Path, typer.Option(help="The config file: database, auth and the policy, in YAML.")
    ],
    agents: Annotated[
        list[str] | None,
        typer.Option("--agents", help="The agents to run, as module:attribute (repeat for more)."),
    ] = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(help="Port to listen on; 0 picks a free one.", envvar="SIGNOFF_PORT")
    ] = 8000,
    no_auth: Annotated[
        bool,
        typer.Option("--no-auth", help="Serve everyone as the local user (loopback only)."),
    ] = False,
    allowed_hosts: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="A Host name served besides localhost's, as allowed_hosts in the config "
            "(repeat for more).",
        ),
    ] = None,
    log_format: LogFormatOption = "text",
) -> None:
    """Serve the API: runs, approvals, decisions, audit."""
    check_port("serve", port)
    try:
        from signoff.server.config import load_config
        from signoff.server.run import import_agents
        from signoff.server.tracing import export_spans
    except ImportError:
        raise MissingExtraError("signoff serve", "server") from None

    from signoff.store import store_url

    settings = load_config(config)
    try:
        export_spans()
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="OTEL_TRACES_EXPORTER") from None
    auth = checked_auth(
        config,
        settings.tokens,
        host=host,
        no_auth=no_auth,
        roles=["admin"],
        hosts=[*settings.allowed_hosts, *(allowed_hosts or ())],
        oidc=settings.oidc,
    )
    try:
        loaded = [a for spec in agents or () for a in import_agents(spec)]
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--agents") from None
    check_port_free("serve", host, port)
    if settings.metrics.listen is not None:
        where = "choose another metrics.listen in the config"
        check_port_free("serve", *settings.metrics.listen, instead=where)
    database = store_url(settings.database)
    listening = _Listening(host=host, port=port, log_format=log_format)
    with contextlib.suppress(KeyboardInterrupt):
        run_server(_serve(settings, auth, loaded, database, listening))


@dataclass(frozen=True, kw_only=True)
class _Listening:
    """Where the server listens, and how it logs."""

    host: str
    port: int
    log_format: Literal["text", "json"]


async def _serve(
    settings: ServerConfig,
    auth: Auth,
    agents: list[Agent],
    database: str,
    listening: _Listening,
) -> None:
    """Open the database, assemble the app over it and serve it (and the metrics, when the
    config asks for them) until stopped."""
    from signoff.server import create_app
    from signoff.server.intake import BodyLimits
    from signoff.server.metrics import serve_metrics
    from signoff.server.run import run_app
    from signoff.store import open_store

    async with open_store(database) as store:
        if auth.sign_on is not None:  # signing out ends the session on every replica
            auth.sign_on.sessions = store
        service = _service(store, settings, agents)
        app = create_app(service, auth, limits=BodyLimits(max_bytes=settings.body_bytes))
        if settings.metrics.listen is not None:
            serve_metrics(app, settings.metrics.listen)
        notifications = service.notifications
        await run_app(
            app,
            host=listening.host,
            port=listening.port,
            ready=lambda url: ready(
                url, notifications, database=database, agents=agents, auth=auth
            ),
            max_message=settings.body_bytes,
            log_format=listening.log_format,
        )


def _service(store: Store, settings: ServerConfig, agents: list[Agent]) -> Service:
    """The gate over `store` and the config's policy, with the agents, the redaction and the
    notifications the config asks for."""
    from signoff.gate import Gate
    from signoff.limits import ArgumentLimits
    from signoff.notify import Notifications
    from signoff.redaction import Redaction
    from signoff.server import Service
    from signoff.server.shapes import approval_json, shown

    limits = ArgumentLimits(max_bytes=settings.argument_bytes)
    gate = Gate(settings.policy, store, limits=limits)
    redaction = Redaction(settings.redact)
    notifications = None
    if settings.notify:
        notifications = Notifications(
            store,
            settings.notify,
            notifier=gate.notifier,
            describe=lambda approval, inputs: shown(approval_json(approval, inputs), redaction),
        )
    return Service(
        store=store,
        gate=gate,
        agents=agents,
        policy_document=settings.document,
        redaction=redaction,
        notifications=notifications,
        undo_seconds=settings.undo_seconds,
        preview_timeout=settings.preview_seconds,
        run_lease=settings.run_lease,
        hooks=settings.hooks,
    )


def ready(
    url: str,
    notifications: Notifications | None,
    *,
    database: str,
    agents: Sequence[Agent],
    auth: Auth,
) -> None:
    """Say where the server listens and what it serves; links in notifications point there
    unless the config's ``notify.base_url`` names the address people reach it at."""
    if notifications is not None and notifications.base_url is None:
        notifications.base_url = url
    for line in banner(url, database=database, agents=agents, auth=auth):
        typer.echo(line)


def banner(url: str, *, database: str, agents: Sequence[Agent], auth: Auth) -> list[str]:
    """What ``signoff serve`` says when it starts: where, on what, for whom."""
    names = ", ".join(agent.name for agent in agents)
    token = "" if auth.anonymous is not None else " --token T"
    sign_on = auth.sign_on
    if sign_on is not None:
        static = f" or the config's auth.tokens ({len(auth.tokens)})" if auth.tokens else ""
        who = (
            f"  auth:       sign-on through {sign_on.settings.issuer}: people at "
            f"{url}/auth/login, machines with its access tokens{static}"
        )
    elif auth.anonymous is not None:
        who = "  auth:       no sign-in: anyone who can reach this address can decide (--no-auth)"
    else:
        who = f"  auth:       a bearer token from the config's auth.tokens ({len(auth.tokens)})"
    return [
        f"signoff on {url}",
        f"  web inbox:  {url}/",
        f"  database:   {shown_database(database)}",
        f"  agents:     {names}"
        if agents
        else "  agents:     no agents of its own: framework runs and the MCP gateway show up in "
        "the inbox once they connect to the same database",
        who,
        f"  decide in a terminal: {program()} inbox --server {url}{token}   (Ctrl+C stops)",
    ]


def shown_database(url: str) -> str:
    """The database as a person can find it: a SQLite file's path, else its URL with any
    password masked."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        return f"{Path(parsed.database).resolve()} (SQLite)"
    return parsed.render_as_string(hide_password=True)


def checked_auth(
    config: Path,
    tokens: Mapping[str, Principal],
    *,
    host: str,
    no_auth: bool,
    roles: Sequence[str] = (),
    hosts: Sequence[str] = (),
    oidc: OidcSettings | None = None,
) -> Auth:
    """The config's tokens and sign-on (`oidc`); or, with ``--no-auth`` (on loopback only),
    everyone as the local user with `roles`. A server without either does not start, nor one
    given both sign-on and ``--no-auth`` (which would let everyone past it). `hosts` are those
    served besides the loopback names (every host is, with tokens and none given)."""
    from signoff.server.auth import Auth
    from signoff.server.hosts import is_loopback

    if no_auth and not is_loopback(host):
        raise typer.BadParameter(
            f"--no-auth serves loopback only, not {host!r}", param_hint="--host"
        )
    if no_auth and oidc is not None:
        raise typer.BadParameter(
            f"{config} configures sign-on (auth.oidc): --no-auth would let everyone past it; "
            "leave out one or the other",
            param_hint="--no-auth",
        )
    if oidc is not None:
        from signoff.server.sso import SignOn

        try:
            return Auth(tokens=tokens, hosts=frozenset(hosts), sign_on=SignOn(oidc))
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--allowed-host") from None
    if not no_auth and not tokens:
        raise typer.BadParameter(
            f"{config} configures no tokens (auth.tokens); add some, or use --no-auth on loopback",
            param_hint="--config",
        )
    try:
        if no_auth:
            return Auth.none(roles=roles, hosts=hosts)
        return Auth(tokens=tokens, hosts=frozenset(hosts))
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--allowed-host") from None
