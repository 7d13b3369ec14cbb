"""What the MCP gateway reads from the config file: how to reach each server of ``servers:``
and the ``gateway:`` section. Pure: it needs no `mcp`, so `signoff serve` checks these keys too.

```yaml
servers:
  fs:
    command: npx                        # a stdio server ...
    args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"]
    exclude_tools: ["*delete*"]         # (the tool filters are the policy's: see the loader)
  github:
    url: http://127.0.0.1:9000/mcp      # ... or a streamable-HTTP one
    headers: {Authorization: "Bearer ${GITHUB_TOKEN}"}
    allowed_headers: [X-Request-Id]     # taken from the client's request, passed upstream
    preview:                            # what a held call would change, shown on its card:
      create_pull_request: {tool: diff_branches}   # another tool called with the same arguments
      delete_repo: {argument: dry_run}             # the same tool with dry_run: true
gateway:
  wait: 30s
  elicitation: true
  preview_timeout: 2s
  server_questions: auto                # a server's form elicitation: the client's, else the inbox
  ask_tool: false                       # offer signoff's ask_person tool
```
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from signoff.policy.reader import Reader
from signoff.policy.source import Path

__all__ = [
    "GatewaySettings",
    "PreviewSpec",
    "ServerQuestions",
    "UpstreamSpec",
    "read_gateway",
    "read_servers",
]

ServerQuestions = Literal["auto", "inbox", "client"]
"""Where a server's form elicitation goes: ``auto`` the client when it can answer it, else
signoff's inbox; ``inbox`` always the inbox; ``client`` only the client (none when it cannot)."""

_GATEWAY_KEYS = frozenset(
    {
        "wait",
        "elicitation",
        "name",
        "principal",
        "roles",
        "state_key_env",
        "progress_every",
        "sessions",
        "preview_timeout",
        "server_questions",
        "ask_tool",
    }
)
_HTTP_TRANSPORTS = frozenset({"http", "streamable-http", "streamable_http", "streamableHttp"})
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, kw_only=True)
class PreviewSpec:
    """How the gateway previews a held call of one tool, on the tool's own server: by calling
    a companion `tool` with the call's arguments, or the tool itself with `argument` set to
    true (a ``dry_run`` flag)."""

    tool: str | None = None
    argument: str | None = None


@dataclass(frozen=True, kw_only=True)
class UpstreamSpec:
    """How the gateway reaches one MCP server."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    """Sent with every request to an HTTP server (``${VAR}`` read from the environment)."""
    allowed_headers: tuple[str, ...] = ()
    """Headers of the client's own request passed on upstream; none unless listed."""
    prefix: str | None = None
    """The prefix of its tools' names when the gateway fronts several servers."""
    timeout: float | None = None
    """How long one call upstream may take."""
    previews: dict[str, PreviewSpec] = field(default_factory=dict)
    """How a held call of each tool (by the server's name for it) is previewed."""


@dataclass(frozen=True, kw_only=True)
class GatewaySettings:
    wait: float = 30.0
    """How long a held call waits for a decision before answering "pending"."""
    elicitation: bool = True
    """Also ask through the client (MCP elicitation) when it supports it and the rule allows."""
    name: str = "signoff"
    principal: str | None = None
    """Who asks, over stdio (HTTP clients are who their token says); default: the OS user."""
    roles: tuple[str, ...] = ()
    state_key_env: str | None = None
    """The environment variable holding the key that seals 2026-07-28 request state, so a
    retry is understood after a restart or by another replica; default: a key per process."""
    progress_every: float = 5.0
    preview_timeout: float = 2.0
    """How long a held call's preview (`UpstreamSpec.previews`) may take."""
    sessions: int = 64
    """How many client sessions at once get connections of their own to the servers (what the
    servers ask of their client reaches them; each is a process per stdio server); the others
    share the gateway's."""
    server_questions: ServerQuestions = "auto"
    """Where a server's form elicitation goes (`ServerQuestions`)."""
    ask_tool: bool = False
    """Whether `tools/list` offers signoff's ask tool (``ask_person``), held as a question."""


def read_servers(
    reader: Reader, value: Any, *, environment: Mapping[str, str] | None = None
) -> dict[str, UpstreamSpec]:
    """The servers of ``servers:`` that say how to reach them (a section without ``command``
    or ``url`` is only policy). With `environment` (the gateway's), ``${VAR}`` in their
    ``headers`` and ``env`` is read from it; without (``signoff serve``, which never reaches
    them), only the shape is checked and the text kept as written."""
    if value is None or not isinstance(value, dict):
        return {}  # the policy loader reports what is wrong with the section itself
    specs = {}
    for name, body in value.items():
        if not isinstance(body, dict) or ("command" not in body and "url" not in body):
            continue
        where: Path = ("servers", name)
        spec = _server(reader, str(name), body, where, environment)
        if spec is not None:
            specs[spec.name] = spec
    return specs


def _server(
    reader: Reader,
    name: str,
    body: dict[str, Any],
    where: Path,
    environment: Mapping[str, str] | None,
) -> UpstreamSpec | None:
    problems = len(reader.problems)
    if not _NAME.match(name):
        reader.error(
            where,
            f"a server the gateway connects to needs a plain name (letters, digits, _ and -), "
            f"not {name!r}: its tools are offered as <name>_<tool>",
            at_key=True,
        )
    if "command" in body and "url" in body:
        reader.error(where, f"server {name!r}: give either 'command' or 'url', not both")
        return None
    command = url = None
    args: tuple[str, ...] = ()
    if "command" in body:
        command, args = _stdio(reader, body, where)
    else:
        url = _url(reader, body, where)
    env = _text_map(reader, body.get("env"), (*where, "env"), "env", environment)
    headers = _text_map(reader, body.get("headers"), (*where, "headers"), "headers", environment)
    cwd = reader.string(body["cwd"], (*where, "cwd"), "cwd") if "cwd" in body else None
    allowed = reader.strings(
        body.get("allowed_headers", []), (*where, "allowed_headers"), "allowed_headers",
        allow_empty=True,
    )  # fmt: skip
    prefix = _prefix(reader, body, where)
    timeout = None
    if "timeout_seconds" in body:
        timeout = reader.duration(body["timeout_seconds"], (*where, "timeout_seconds"))
    previews = _previews(reader, body.get("preview"), (*where, "preview"))
    if len(reader.problems) > problems:
        return None
    return UpstreamSpec(
        name=name,
        command=command,
        args=args,
        env=env,
        cwd=cwd,
        url=url,
        headers=headers or {},
        allowed_headers=tuple(h.lower() for h in allowed or ()),
        prefix=prefix,
        timeout=timeout,
        previews=previews,
    )


def _stdio(reader: Reader, body: dict[str, Any], where: Path) -> tuple[str | None, tuple[str, ...]]:
    """The command and arguments of a server started as a process, spoken to over stdio."""
    command = reader.string(body["command"], (*where, "command"), "command")
    args = reader.strings(body.get("args", []), (*where, "args"), "args", allow_empty=True) or ()
    transport = _transport(body)
    if transport is not None and transport != "stdio":
        key = "transport" if "transport" in body else "transport_type"
        reader.error((*where, key), f"a server with a command speaks stdio, not {transport!r}")
    for key in ("headers", "allowed_headers", "path"):
        if key in body:
            reader.error(
                (*where, key),
                f"{key} is for a server reached by url; this one is started by a command "
                "(give it credentials in 'env')",
                at_key=True,
            )
    return command, tuple(args)


def _url(reader: Reader, body: dict[str, Any], where: Path) -> str | None:
    """The URL of a server reached over streamable HTTP (with its ``path``, if given)."""
    url = reader.string(body["url"], (*where, "url"), "url")
    if url is not None and not url.startswith(("http://", "https://")):
        reader.error((*where, "url"), f"url must be an http:// or https:// URL, not {url!r}")
    if "path" in body and url is not None:
        path = reader.string(body["path"], (*where, "path"), "path")
        url = url.rstrip("/") + "/" + (path or "").lstrip("/")
    transport = _transport(body)
    if transport is not None and transport not in _HTTP_TRANSPORTS:
        key = "transport" if "transport" in body else "transport_type"
        reader.error(
            (*where, key),
            f"the gateway reaches URLs over streamable HTTP, not {transport!r}"
            + (" (the SSE transport is deprecated)" if transport == "sse" else ""),
        )
    return url


def _transport(body: dict[str, Any]) -> Any:
    return body.get("transport", body.get("transport_type"))


def _prefix(reader: Reader, body: dict[str, Any], where: Path) -> str | None:
    """``tool_name_prefix``: what begins the server's tools' names behind a gateway of several."""
    if "tool_name_prefix" not in body:
        return None
    prefix = reader.string(body["tool_name_prefix"], (*where, "tool_name_prefix"), "prefix")
    if prefix is not None and not _NAME.match(prefix):
        reader.error(
            (*where, "tool_name_prefix"),
            f"tool_name_prefix must be letters, digits, _ and - (it begins tool names), "
            f"not {prefix!r}",
        )
    return prefix


def _previews(reader: Reader, value: Any, where: Path) -> dict[str, PreviewSpec]:
    """``preview:``: for each tool, ``{tool: NAME}`` or ``{argument: NAME}``."""
    if value is None:
        return {}
    data = reader.mapping(value, where, "preview")
    if data is None:
        return {}
    found = {}
    for tool, body in data.items():
        at: Path = (*where, tool)
        how = reader.mapping(body, at, f"preview of {tool!r}")
        if how is None:
            continue
        if len(how) != 1 or next(iter(how)) not in ("tool", "argument"):
            reader.error(
                at,
                f"the preview of {tool!r} is either {{tool: NAME}} (another tool, called with "
                f"the same arguments) or {{argument: NAME}} (the tool itself, NAME set to true), "
                f"not {how!r}",
            )
            continue
        [(key, name)] = how.items()
        text = reader.string(name, (*at, key), key)
        if text is not None:
            spec = PreviewSpec(tool=text) if key == "tool" else PreviewSpec(argument=text)
            found[str(tool)] = spec
    return found


def _text_map(
    reader: Reader, value: Any, where: Path, what: str, environment: Mapping[str, str] | None
) -> dict[str, str] | None:
    if value is None:
        return None
    data = reader.mapping(value, where, what)
    if data is None:
        return None
    out = {}
    for key, item in data.items():
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            reader.error((*where, key), f"{what} values must be text, not {item!r}")
            continue
        text = str(item)
        if environment is not None:
            missing = [v for v in _VARIABLE.findall(text) if v not in environment]
            if missing:
                reader.error((*where, key), f"the environment variable {missing[0]} is not set")
                continue
            text = _VARIABLE.sub(lambda m: environment[m.group(1)], text)
        out[key] = text
    return out


def read_gateway(
    reader: Reader, value: Any, *, environment: Mapping[str, str] | None = None
) -> GatewaySettings:
    """The ``gateway:`` section; with `environment` (the gateway's own), its state key is
    checked there too."""
    data = reader.section(value, "gateway", _GATEWAY_KEYS)
    if data is None:
        return GatewaySettings()
    found: dict[str, Any] = {}
    for key in ("wait", "progress_every", "preview_timeout"):
        if key in data and (seconds := reader.duration(data[key], ("gateway", key), key)):
            found[key] = seconds
    for key in ("elicitation", "ask_tool"):
        if key in data and (flag := reader.boolean(data[key], ("gateway", key), key)) is not None:
            found[key] = flag
    if "server_questions" in data:
        routes = get_args(ServerQuestions)
        route = data["server_questions"]
        if route in routes:
            found["server_questions"] = route
        else:
            said = f"server_questions is one of {', '.join(routes)}, not {route!r}"
            reader.error(("gateway", "server_questions"), said)
    for key in ("name", "principal", "state_key_env"):
        if key in data and (text := reader.string(data[key], ("gateway", key), key)):
            found[key] = text
    if "sessions" in data:
        count = reader.integer(data["sessions"], ("gateway", "sessions"), "sessions")
        if count is not None and count < 0:
            reader.error(("gateway", "sessions"), f"sessions must be 0 or more, not {count}")
        elif count is not None:
            found["sessions"] = count
    if "roles" in data:
        found["roles"] = (
            reader.strings(data["roles"], ("gateway", "roles"), "roles", allow_empty=True) or ()
        )
    key_env = found.get("state_key_env")
    if environment is not None and key_env and len(environment.get(key_env, "")) < 32:
        reader.error(
            ("gateway", "state_key_env"),
            f"the environment variable {key_env} must hold a secret of at least 32 characters",
        )
    return GatewaySettings(**found)
