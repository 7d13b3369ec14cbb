"""The config file's ``notify:`` section: where signoff tells people that a call waits for them.

```yaml
notify:
  base_url: https://signoff.internal        # links open <base_url>/approvals/<id>
  retry: {attempts: 12, backoff: 2s, max_backoff: 10m}
  webhooks:
    - url: https://hooks.example.com/signoff
      secret_env: SIGNOFF_WEBHOOK_SECRET    # signs each body (HMAC-SHA256)
      events: [requested, expired]          # default: requested, decided, expired, unknown,
                                            # assigned, escalated (voted, edited, rejudged
                                            # only when listed)
      agents: ["ops*"]                      # globs; default: every agent, tool and rule
      tools: ["*_delete*"]
  slack:
    - url_env: SLACK_WEBHOOK_URL            # an incoming webhook; or token_env + channel
      signing_secret_env: SLACK_SIGNING_SECRET   # Approve / Reject buttons
      users: {U0123ABCD: olga}              # Slack user -> signoff principal
  email:
    - host: smtp.example.com
      port: 587                             # STARTTLS unless starttls: false
      username_env: SMTP_USERNAME
      password_env: SMTP_PASSWORD
      sender: signoff@example.com
      to: [oncall@example.com]
      people: {olga: olga@example.com}      # an approval assigned to olga: to her alone
```

Secrets are read from the environment (``*_env``); the same keys without ``_env`` take the value
itself, for tests and local setups.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from signoff.policy.glob import compile_glob
from signoff.policy.reader import Reader
from signoff.policy.source import Path

__all__ = [
    "CHANGES",
    "DEFAULT_EVENTS",
    "EVENTS",
    "EmailSettings",
    "EventKind",
    "Filters",
    "NotifySettings",
    "Retry",
    "SlackSettings",
    "SlackUser",
    "WebhookSettings",
    "read_notify",
]

EventKind = Literal[
    "requested", "decided", "expired", "unknown", "assigned", "escalated",
    "voted", "edited", "rejudged",
]  # fmt: skip
EVENTS: tuple[EventKind, ...] = get_args(EventKind)
DEFAULT_EVENTS: frozenset[EventKind] = frozenset(EVENTS[:6])
"""What a sink with no ``events:`` hears of. The kinds added since (a vote, an edit among
several approvals, a call judged again by a new policy) only when listed: a receiver set up
before them is not sent what it never asked for."""
CHANGES: frozenset[EventKind] = frozenset(EVENTS) - {"requested", "unknown"}
"""The events that change a waiting approval (or end its wait): what a message kept up to date
in place is updated for."""

_TOP = frozenset({"base_url", "retry", "webhooks", "slack", "email"})
_RETRY = frozenset({"attempts", "backoff", "max_backoff"})
_FILTERS = frozenset({"name", "events", "agents", "tools", "rules"})
_WEBHOOK = _FILTERS | {"url", "secret", "secret_env", "timeout"}
_SLACK = _FILTERS | {
    "url", "url_env", "token", "token_env", "channel", "api_url",
    "signing_secret", "signing_secret_env", "users", "timeout",
}  # fmt: skip
_EMAIL = _FILTERS | {
    "host", "port", "starttls", "ssl", "username", "username_env", "password", "password_env",
    "sender", "to", "timeout", "people",
}  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Filters:
    """Which events a sink hears of: all of `events`, for calls whose agent, tool and rule
    match one of the globs given (no globs: any)."""

    name: str
    events: frozenset[EventKind] = DEFAULT_EVENTS
    agents: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()

    def wants(
        self,
        kind: str,
        *,
        agent: str | None,
        tool: str | None,
        rule: str | None,
        loose: bool = False,
    ) -> bool:
        """Whether to tell of this event; `loose`: the agent and rule are not known, and their
        globs do not apply."""
        return (
            kind in self.events
            and (loose or _any(self.agents, agent))
            and _any(self.tools, tool)
            and (loose or _any(self.rules, rule))
        )


@dataclass(frozen=True, kw_only=True)
class Retry:
    attempts: int = 12
    """Sends of one notification before it is given up (kept as ``failed`` in the outbox)."""
    backoff: float = 2.0
    """Seconds before the second attempt; each later wait doubles, up to `max_backoff`."""
    max_backoff: float = 600.0

    def delay(self, attempts: int) -> float:
        """The wait after the `attempts`-th failed send."""
        return float(min(self.backoff * 2 ** min(max(attempts - 1, 0), 60), self.max_backoff))


@dataclass(frozen=True, kw_only=True)
class WebhookSettings:
    filters: Filters
    url: str
    secret: str | None = None
    timeout: float = 10.0


@dataclass(frozen=True, kw_only=True)
class SlackUser:
    principal: str
    roles: frozenset[str] | None = None
    """None: the roles of that principal's tokens in ``auth:``."""


@dataclass(frozen=True, kw_only=True)
class SlackSettings:
    filters: Filters
    url: str | None = None
    """An incoming webhook's URL; else `token` and `channel` post through `api_url`."""
    token: str | None = None
    channel: str | None = None
    api_url: str = "https://slack.com/api"
    signing_secret: str | None = None
    """Set: messages carry Approve / Reject buttons, and interactions signed with it decide."""
    users: Mapping[str, SlackUser] = field(default_factory=dict)
    timeout: float = 10.0


@dataclass(frozen=True, kw_only=True)
class EmailSettings:
    filters: Filters
    host: str
    port: int = 587
    starttls: bool = True
    ssl: bool = False
    username: str | None = None
    password: str | None = None
    sender: str
    to: tuple[str, ...]
    timeout: float = 30.0
    people: Mapping[str, str] = field(default_factory=dict)
    """Principal → address: an approval assigned to one of them is mailed to them alone."""


@dataclass(frozen=True, kw_only=True)
class NotifySettings:
    base_url: str | None = None
    """Where links point; None: the server's own address."""
    retry: Retry = field(default_factory=Retry)
    webhooks: tuple[WebhookSettings, ...] = ()
    slack: tuple[SlackSettings, ...] = ()
    email: tuple[EmailSettings, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.webhooks or self.slack or self.email)


def read_notify(
    reader: Reader, value: Any, *, environment: Mapping[str, str] | None = None
) -> NotifySettings:
    """The ``notify:`` section; every problem recorded in `reader` with its place."""
    env = os.environ if environment is None else environment
    top = reader.section(value, "notify", _TOP)
    if top is None:
        return NotifySettings()
    base_url = None
    if "base_url" in top:
        base_url = _url(reader, top["base_url"], ("notify", "base_url"), "base_url")
        base_url = base_url.rstrip("/") if base_url else None
    names: set[str] = set()
    hooks = tuple(
        h for h in _each(reader, top, "webhooks", _WEBHOOK, names, env, _webhook) if h is not None
    )
    slack = tuple(
        s for s in _each(reader, top, "slack", _SLACK, names, env, _slack) if s is not None
    )
    email = tuple(
        e for e in _each(reader, top, "email", _EMAIL, names, env, _email) if e is not None
    )
    return NotifySettings(
        base_url=base_url,
        retry=_retry(reader, top.get("retry")),
        webhooks=hooks,
        slack=slack,
        email=email,
    )


def _each(
    reader: Reader,
    top: dict[str, Any],
    key: str,
    allowed: frozenset[str],
    names: set[str],
    env: Mapping[str, str],
    build: Any,
) -> list[Any]:
    value = top.get(key, [])
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        reader.error(("notify", key), f"notify.{key} must be a list of {key}")
        return []
    out = []
    for index, entry in enumerate(value):
        where = ("notify", key, index)
        item = reader.mapping(entry, where, f"a notify.{key} entry")
        if item is None:
            continue
        reader.keys(item, where, allowed, f"a notify.{key} entry")
        filters = _filters(reader, item, where, f"{key}[{index}]")
        if filters.name in names:
            reader.error((*where, "name"), f"another sink is named {filters.name!r}")
        names.add(filters.name)
        out.append(build(reader, item, where, filters, env))
    return out


def _filters(reader: Reader, item: dict[str, Any], where: Path, default: str) -> Filters:
    name = default
    if "name" in item:
        name = reader.string(item["name"], (*where, "name"), "name") or default
        if len(name) > 64:
            reader.error((*where, "name"), "a sink's name has at most 64 characters")
    events = DEFAULT_EVENTS
    if "events" in item:
        given = reader.strings(item["events"], (*where, "events"), "events") or ()
        wrong = [e for e in given if e not in EVENTS]
        if wrong:
            reader.error(
                (*where, "events"),
                f"unknown event {wrong[0]!r}; events are {', '.join(EVENTS)}",
            )
        events = frozenset(e for e in EVENTS if e in given)
    globs = {
        key: reader.globs(item[key], (*where, key), key) or () if key in item else ()
        for key in ("agents", "tools", "rules")
    }
    return Filters(name=name, events=events, **globs)


def _retry(reader: Reader, value: Any) -> Retry:
    if value is None:
        return Retry()
    section = reader.mapping(value, ("notify", "retry"), "notify.retry")
    if section is None:
        return Retry()
    reader.keys(section, ("notify", "retry"), _RETRY, "notify.retry")
    found: dict[str, Any] = {}
    if "attempts" in section:
        attempts = reader.integer(section["attempts"], ("notify", "retry", "attempts"), "attempts")
        if attempts is not None and attempts < 1:
            reader.error(("notify", "retry", "attempts"), "attempts must be at least 1")
        elif attempts is not None:
            found["attempts"] = attempts
    for key in ("backoff", "max_backoff"):
        if key in section:
            seconds = reader.duration(section[key], ("notify", "retry", key), key)
            if seconds is not None:
                found[key] = seconds
    return Retry(**found)


def _webhook(
    reader: Reader, item: dict[str, Any], where: Path, filters: Filters, env: Mapping[str, str]
) -> WebhookSettings | None:
    url = _url(reader, item.get("url"), (*where, "url"), "url")
    secret = _secret(reader, item, where, "secret", env, required=False)
    timeout = _timeout(reader, item, where, 10.0)
    if url is None:
        return None
    return WebhookSettings(filters=filters, url=url, secret=secret, timeout=timeout)


def _slack(
    reader: Reader, item: dict[str, Any], where: Path, filters: Filters, env: Mapping[str, str]
) -> SlackSettings | None:
    url = _secret(reader, item, where, "url", env, required=False)
    if url is not None and _url(reader, url, (*where, "url"), "url", secret=True) is None:
        url = None
    token = _secret(reader, item, where, "token", env, required=False)
    channel = None
    if "channel" in item:
        channel = reader.string(item["channel"], (*where, "channel"), "channel")
    if (url is None) == (token is None):
        reader.error(where, "give either 'url_env' (an incoming webhook) or 'token_env' and "
                     "'channel' (a bot)")  # fmt: skip
        return None
    if token is not None and channel is None:
        reader.error(where, "a Slack bot token needs the 'channel' to post in")
        return None
    api_url = "https://slack.com/api"
    if "api_url" in item:
        api_url = _url(reader, item["api_url"], (*where, "api_url"), "api_url") or api_url
    signing = _secret(reader, item, where, "signing_secret", env, required=False)
    users = _users(reader, item.get("users", {}), (*where, "users"))
    return SlackSettings(
        filters=filters,
        url=url,
        token=token,
        channel=channel,
        api_url=api_url.rstrip("/"),
        signing_secret=signing,
        users=users,
        timeout=_timeout(reader, item, where, 10.0),
    )


def _users(reader: Reader, value: Any, where: Path) -> dict[str, SlackUser]:
    section = reader.mapping(value, where, "users")
    users: dict[str, SlackUser] = {}
    for user, entry in (section or {}).items():
        here = (*where, user)
        if isinstance(entry, str) and entry:
            users[str(user)] = SlackUser(principal=entry)
            continue
        item = reader.mapping(entry, here, "a Slack user (a principal, or principal and roles)")
        if item is None:
            continue
        reader.keys(item, here, frozenset({"principal", "roles"}), "a Slack user")
        name = reader.string(item.get("principal"), (*here, "principal"), "principal")
        roles = None
        if "roles" in item:
            given = reader.strings(item["roles"], (*here, "roles"), "roles", allow_empty=True)
            roles = frozenset(given or ())
        if name is not None:
            users[str(user)] = SlackUser(principal=name, roles=roles)
    return users


def _email(
    reader: Reader, item: dict[str, Any], where: Path, filters: Filters, env: Mapping[str, str]
) -> EmailSettings | None:
    host = reader.string(item.get("host"), (*where, "host"), "host")
    port = 587
    if "port" in item:
        port = reader.integer(item["port"], (*where, "port"), "port") or 0
        if not 0 < port < 65536:
            reader.error((*where, "port"), f"port must be 1 to 65535, not {item['port']!r}")
    flags = {}
    for key, default in (("starttls", True), ("ssl", False)):
        flag = reader.boolean(item[key], (*where, key), key) if key in item else default
        flags[key] = default if flag is None else flag
    if flags["ssl"] and "starttls" in item and flags["starttls"]:
        reader.error((*where, "ssl"), "ssl (SMTPS) and starttls exclude each other")
    sender = reader.string(item.get("sender"), (*where, "sender"), "sender")
    to = reader.strings(item.get("to"), (*where, "to"), "to")
    for key, found in (("sender", (sender,) if sender else ()), ("to", to or ())):
        if any("\r" in a or "\n" in a or "@" not in a for a in found):
            reader.error((*where, key), f"{key} must be email addresses, one per line")
            return None
    people: dict[str, str] = {}
    if "people" in item:
        listed = reader.mapping(item["people"], (*where, "people"), "people") or {}
        for name, address in listed.items():
            address = reader.string(address, (*where, "people", name), "an email address")
            if address is not None and ("\r" in address or "\n" in address or "@" not in address):
                reader.error((*where, "people", name), "people maps principals to email addresses")
            elif address is not None:
                people[name] = address
    username = _secret(reader, item, where, "username", env, required=False)
    password = _secret(reader, item, where, "password", env, required=False)
    if (username is None) != (password is None):
        reader.error(where, "give both a username and a password, or neither")
    if host is None or sender is None or to is None:
        return None
    return EmailSettings(
        filters=filters,
        host=host,
        port=port,
        starttls=flags["starttls"] and not flags["ssl"],
        ssl=flags["ssl"],
        username=username,
        password=password,
        sender=sender,
        to=to,
        timeout=_timeout(reader, item, where, 30.0),
        people=people,
    )


def _secret(
    reader: Reader,
    item: dict[str, Any],
    where: Path,
    key: str,
    env: Mapping[str, str],
    *,
    required: bool,
) -> str | None:
    named = f"{key}_env"
    if key in item and named in item:
        reader.error(where, f"give either {named!r} (an environment variable) or {key!r}")
        return None
    if key in item:
        return reader.string(item[key], (*where, key), key)
    if named not in item:
        if required:
            reader.error(where, f"{named!r} is required")
        return None
    return reader.variable(item[named], (*where, named), named, env)


def _url(reader: Reader, value: Any, where: Path, what: str, *, secret: bool = False) -> str | None:
    text = reader.string(value, where, what)
    if text is None:
        return None
    try:
        parts = urlsplit(text)
        good = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        good = False
    if not good:
        shown = "the value given" if secret else text
        reader.error(where, f"{what} must be an http(s) URL, not {shown!r}")
        return None
    return text


def _timeout(reader: Reader, item: dict[str, Any], where: Path, default: float) -> float:
    if "timeout" not in item:
        return default
    return reader.duration(item["timeout"], (*where, "timeout")) or default


def _any(globs: tuple[str, ...], value: str | None) -> bool:
    if not globs:
        return True
    return value is not None and any(compile_glob(g).matches(value) for g in globs)
