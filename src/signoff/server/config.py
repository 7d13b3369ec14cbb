"""The config file `signoff serve` reads: the policy (ARCHITECTURE §4) plus the server's own
keys, in one YAML document; every mistake is reported with its file, line and column.

```yaml
database: postgresql://signoff@db/signoff     # default: sqlite:///signoff.db
auth:
  tokens:
    - principal: olga
      roles: [ops, admin]
      token_env: SIGNOFF_TOKEN_OLGA              # the token itself stays out of the file
  oidc:                                        # people sign in (see signoff.server.sso)
    issuer: https://login.example.com
    client_id: signoff
    session_key_env: SIGNOFF_SESSION_KEY
redact: ["**.password", "**.*token*"]          # argument paths the API shows masked
limits: {body: 16MiB, arguments: 8MiB, preview: 2s}  # biggest body, call arguments; preview time
allowed_hosts: [inbox.internal]                # Host names served besides localhost's
notify: {webhooks: [{url: "https://hooks.example.com/signoff", secret_env: HOOK_SECRET}]}
web: {undo_seconds: 5}                         # the inbox's window to undo a decision; 0: none
runs: {lease: 5m}                              # a dead replica's runs are taken over after this
retention: {audit: 365d, outbox: 7d}           # what `signoff prune` removes, by age
default: ask
rules:
  - ask: delete_pod
```
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from hashlib import sha256
from pathlib import Path
from typing import Any

from signoff.agent.runner import LEASE
from signoff.errors import PolicyError, Problem
from signoff.gate.preview import PREVIEW_SECONDS
from signoff.limits import MAX_ARGS_BYTES
from signoff.names import name_key, name_refusal, same_person
from signoff.notify.settings import NotifySettings, read_notify
from signoff.policy import Policy
from signoff.policy.loader import load_data, locate
from signoff.policy.reader import Reader
from signoff.policy.sections import OTHER_TOP_KEYS
from signoff.policy.source import parse_text
from signoff.protocols.hooks.settings import HookSettings, read_hooks
from signoff.protocols.mcp.settings import GatewaySettings, UpstreamSpec, read_gateway, read_servers
from signoff.redaction import Redaction
from signoff.server.hosts import allowed_host
from signoff.server.intake import MAX_BODY
from signoff.server.metrics import MetricsSettings, read_metrics
from signoff.server.retention import RetentionSettings, read_retention
from signoff.server.service import UNDO_SECONDS, Principal
from signoff.server.sso.settings import OidcSettings, read_oidc
from signoff.types import AUTOMATIC

__all__ = ["ServerConfig", "load_config"]

_AUTH_KEYS = frozenset({"tokens", "oidc"})
_LIMIT_KEYS = frozenset({"body", "arguments", "preview"})
_MOST_PREVIEW_SECONDS = 60.0
_TOKEN_KEYS = frozenset({"principal", "roles", "token", "token_env"})
_WEB_KEYS = frozenset({"undo_seconds"})
_MOST_UNDO_SECONDS = 60
_RUNS_KEYS = frozenset({"lease"})
_LEASES = (timedelta(seconds=1), timedelta(days=1))


@dataclass(frozen=True, kw_only=True)
class ServerConfig:
    database: str | None
    """The store's URL; None for the default (``SIGNOFF_DATABASE_URL``, else a SQLite file)."""
    policy: Policy
    document: dict[str, Any]
    """The policy's part of the file, as written: what editing through the API starts from."""
    tokens: dict[str, Principal]
    """Bearer token → principal; empty when the file configures no authentication."""
    oidc: OidcSettings | None = None
    """Sign-on through an OpenID provider (``auth.oidc``; see `signoff.server.sso`)."""
    redact: tuple[str, ...] = ()
    """Argument paths shown masked (see `signoff.redaction`)."""
    servers: dict[str, UpstreamSpec] = field(default_factory=dict)
    """The MCP servers the gateway reaches (those of ``servers:`` with a command or a url)."""
    gateway: GatewaySettings = field(default_factory=GatewaySettings)
    body_bytes: int = MAX_BODY
    """The biggest request body (or WebSocket message) the server reads (``limits.body``)."""
    argument_bytes: int = MAX_ARGS_BYTES
    """The biggest arguments, as JSON, a call may have (``limits.arguments``): the gate blocks
    a bigger call and refuses a bigger edit."""
    preview_seconds: float = PREVIEW_SECONDS
    """How long the preview of one of the agents' tools may take (``limits.preview``)."""
    allowed_hosts: tuple[str, ...] = ()
    """Hosts a request may name (its ``Host``) besides the loopback ones: without
    authentication only those are served; with tokens, any host unless some are given."""
    notify: NotifySettings = field(default_factory=NotifySettings)
    """Who is told of requests and decisions (``notify:``; see `signoff.notify`)."""
    undo_seconds: int = UNDO_SECONDS
    """How long the web inbox holds an approval or a rejection back, undoable, before it sends
    it (``web.undo_seconds``); 0 sends at once."""
    run_lease: timedelta = LEASE
    """How long a replica holds a run it works on without renewing it (``runs.lease``): a run
    whose replica died, or lost the database, is taken over by another once this runs out. A
    live replica renews it every third of it, so a shorter lease costs more writes."""
    retention: RetentionSettings = field(default_factory=RetentionSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    """Where else ``/metrics`` is served, without authentication (``metrics.listen``)."""
    hooks: HookSettings = field(default_factory=HookSettings)
    """How coding agents' hooks wait for decisions (``hooks:``)."""


def load_config(path: Path, *, gateway: bool = False, secrets: bool = True) -> ServerConfig:
    """Read and check the config file; `PolicyError` lists every problem with its place. For
    the MCP gateway (`gateway`), the servers' ``${VAR}`` are read from the environment and
    its state key checked there; other commands never reach those servers, nor need them.

    Without `secrets` (a command that serves nothing, as `signoff prune`), no secret the file
    names is read from the environment, nor need it be set there: the file is checked
    whole, and the config has no tokens, sign-on or notifications: never serve it."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(
            [Problem(message=f"cannot read the config: {exc}", source=source)]
        ) from None
    data = parse_text(text, source=source, json_only=path.suffix == ".json")
    reader = Reader()
    top = reader.mapping({} if data is None else data, (), "the config") or {}
    database = None
    if "database" in top:
        database = reader.string(top["database"], ("database",), "database")
        if database is not None and not _url(database):
            reader.error(("database",), f"database must be a database URL, not {database!r}")
            database = None
    environment: Mapping[str, str] = os.environ if secrets else _StandIns()
    tokens = _tokens(reader, top.get("auth"), environment)
    auth, oidc = top.get("auth"), None
    if not gateway and isinstance(auth, dict) and "oidc" in auth:  # the gateway: no people
        oidc = read_oidc(reader, auth["oidc"], environment=environment)
    redact = _redact(reader, top.get("redact", []))
    limits = _limits(reader, top.get("limits", {}))
    hosts = _hosts(reader, top.get("allowed_hosts", []))
    web = _web(reader, top.get("web", {}))
    run_lease = _run_lease(reader, top.get("runs", {}))
    retention = read_retention(reader, top.get("retention"))
    metrics = read_metrics(reader, top.get("metrics"))
    hooks = read_hooks(reader, top.get("hooks"))
    upstream = os.environ if gateway else None
    servers = read_servers(reader, top.get("servers"), environment=upstream)
    settings = read_gateway(reader, top.get("gateway"), environment=upstream)
    # The gateway tells no one: its notifications' secrets need not be set where it runs.
    notify = (
        NotifySettings()
        if gateway
        else read_notify(reader, top.get("notify"), environment=environment)
    )
    problems = locate(reader.problems, source, text)
    try:
        policy = load_data(data, source=source, text=text)
    except PolicyError as exc:
        problems += exc.problems
    if problems:
        raise PolicyError(sorted(problems, key=lambda p: (p.line or 0, p.column or 0)))
    document = {k: v for k, v in top.items() if k not in OTHER_TOP_KEYS}
    if not secrets:  # made of stand-ins
        tokens, oidc, notify = {}, None, NotifySettings()
    return ServerConfig(
        database=database,
        policy=policy,
        document=document,
        tokens=tokens,
        oidc=oidc,
        redact=redact,
        servers=servers,
        gateway=settings,
        **limits,
        allowed_hosts=hosts,
        notify=notify,
        **web,
        run_lease=run_lease,
        retention=retention,
        metrics=metrics,
        hooks=hooks,
    )


def _limits(reader: Reader, value: Any) -> dict[str, Any]:
    section = reader.mapping(value, ("limits",), "limits")
    if section is None:
        return {}
    reader.keys(section, ("limits",), _LIMIT_KEYS, "limits")
    found: dict[str, Any] = {}
    if "preview" in section:
        seconds = reader.duration(section["preview"], ("limits", "preview"), "limits.preview")
        if seconds is not None and not 0 < seconds <= _MOST_PREVIEW_SECONDS:
            reader.error(
                ("limits", "preview"),
                f"limits.preview must be more than 0 and at most {_MOST_PREVIEW_SECONDS:g}s, "
                f"not {seconds:g}s",
            )
        elif seconds is not None:
            found["preview_seconds"] = seconds
    for key, name in (("body", "body_bytes"), ("arguments", "argument_bytes")):
        if key in section:
            size = reader.size(section[key], ("limits", key), f"limits.{key}")
            if size is not None:
                found[name] = size
    return found


def _web(reader: Reader, value: Any) -> dict[str, int]:
    section = reader.mapping(value, ("web",), "web")
    if section is None:
        return {}
    reader.keys(section, ("web",), _WEB_KEYS, "web")
    if "undo_seconds" not in section:
        return {}
    where = ("web", "undo_seconds")
    seconds = reader.integer(section["undo_seconds"], where, "web.undo_seconds")
    if seconds is None:
        return {}
    if not 0 <= seconds <= _MOST_UNDO_SECONDS:
        reader.error(
            where,
            f"web.undo_seconds must be from 0 (no undo) to {_MOST_UNDO_SECONDS}, not {seconds}",
        )
        return {}
    return {"undo_seconds": seconds}


def _run_lease(reader: Reader, value: Any) -> timedelta:
    section = reader.mapping(value, ("runs",), "runs")
    if section is None:
        return LEASE
    reader.keys(section, ("runs",), _RUNS_KEYS, "runs")
    if "lease" not in section:
        return LEASE
    seconds = reader.duration(section["lease"], ("runs", "lease"), "runs.lease")
    if seconds is None:
        return LEASE
    lease = timedelta(seconds=seconds)
    if not _LEASES[0] <= lease <= _LEASES[1]:
        reader.error(("runs", "lease"), f"runs.lease must be from 1s to 1d, not {seconds:g}s")
    return lease


def _redact(reader: Reader, value: Any) -> tuple[str, ...]:
    patterns = reader.strings(value, ("redact",), "redact", allow_empty=True) or ()
    for index, pattern in enumerate(patterns):
        try:
            Redaction([pattern])
        except ValueError as exc:
            reader.error(("redact", index) if isinstance(value, list) else ("redact",), str(exc))
            return ()
    return patterns


def _hosts(reader: Reader, value: Any) -> tuple[str, ...]:
    names = reader.strings(value, ("allowed_hosts",), "allowed_hosts", allow_empty=True) or ()
    hosts = []
    for index, name in enumerate(names):
        try:
            hosts.append(allowed_host(name))
        except ValueError as exc:
            where = ("allowed_hosts", index) if isinstance(value, list) else ("allowed_hosts",)
            reader.error(where, str(exc))
    return tuple(hosts)


def _url(text: str) -> bool:
    from sqlalchemy import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        make_url(text)
    except ArgumentError:
        return False
    return True


class _StandIns(Mapping[str, str]):
    """The environment a command that serves nothing checks its config in: every variable is
    set, to a stand-in of its own with the form a secret is checked for (a URL, of more than
    32 characters), so the file is checked whole while no secret is read."""

    def __getitem__(self, variable: str) -> str:
        return f"https://stand-in.invalid/{sha256(variable.encode()).hexdigest()}"

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _tokens(reader: Reader, auth: Any, environment: Mapping[str, str]) -> dict[str, Principal]:
    if auth is None:
        return {}
    section = reader.mapping(auth, ("auth",), "auth")
    if section is None:
        return {}
    reader.keys(section, ("auth",), _AUTH_KEYS, "auth")
    entries = section.get("tokens", [])
    if not isinstance(entries, list):
        reader.error(("auth", "tokens"), "auth.tokens must be a list of tokens")
        return {}
    tokens: dict[str, Principal] = {}
    names: dict[str, str] = {}  # name_key -> the name as first written
    for index, entry in enumerate(entries):
        where = ("auth", "tokens", index)
        item = reader.mapping(entry, where, "a token")
        if item is None:
            continue
        reader.keys(item, where, _TOKEN_KEYS, "a token")
        name = reader.string(item.get("principal"), (*where, "principal"), "principal")
        roles = reader.strings(item.get("roles", []), (*where, "roles"), "roles", allow_empty=True)
        token = _secret(reader, item, where, environment)
        if name is not None and not _principal_name(reader, name, names, (*where, "principal")):
            continue
        if name is None or roles is None or token is None:
            continue
        if token in tokens:
            reader.error(where, f"this token is also {tokens[token].name!r}'s")
            continue
        tokens[token] = Principal(name=name, roles=frozenset(roles))
    return tokens


def _principal_name(
    reader: Reader, name: str, names: dict[str, str], where: tuple[Any, ...]
) -> bool:
    """Whether `name` may name a principal (told to `reader` if not): one that could pass for
    another (`name_refusal`), signoff's own, or another principal's spelt otherwise is not —
    people are compared by their names' keys, and two spellings would be one principal. The
    same name twice is one principal with several tokens."""
    problem = name_refusal(name)
    if problem is not None:
        reader.error(where, f"{problem}: name the principal otherwise")
        return False
    if same_person(name, AUTOMATIC):
        reader.error(
            where,
            f"{name!r} is who signoff decides as itself ({AUTOMATIC!r}: an expiry, a decision "
            "on timeout): name the principal otherwise",
        )
        return False
    known = names.setdefault(name_key(name), name)
    if known != name:
        reader.error(
            where,
            f"{name!r} and {known!r} are one principal to signoff (names are compared "
            "ignoring case and Unicode's compatibility forms): spell them the same",
        )
        return False
    return True


def _secret(
    reader: Reader, item: dict[str, Any], where: tuple[Any, ...], environment: Mapping[str, str]
) -> str | None:
    if ("token" in item) == ("token_env" in item):
        reader.error(where, "give either 'token_env' (an environment variable) or 'token'")
        return None
    if "token" in item:
        return reader.string(item["token"], (*where, "token"), "token")
    variable = reader.string(item["token_env"], (*where, "token_env"), "token_env")
    if variable is None:
        return None
    value = environment.get(variable)
    if not value:
        reader.error((*where, "token_env"), f"the environment variable {variable} is not set")
        return None
    return value
