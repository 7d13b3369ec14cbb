"""The config file's ``auth.oidc:`` section: sign-in through an OpenID Connect provider.

```yaml
auth:
  oidc:
    issuer: https://login.example.com/realms/ops   # its /.well-known/openid-configuration
    client_id: signoff-inbox
    client_secret_env: SIGNOFF_OIDC_SECRET          # none for a public client (PKCE alone)
    audience: https://signoff.example.com/api       # the API accepts access tokens for it
    redirect_uri: https://signoff.example.com/auth/callback   # default: from the request
    roles_claim: groups
    roles: {sre: [ops], signoff-admins: [admin, ops]}
    session_key_env: SIGNOFF_SESSION_KEY            # seals the session cookie
    session_hours: 8
```

Secrets are read from the environment only (``*_env``): the file names the variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from signoff.policy.reader import Reader
from signoff.server.hosts import is_loopback

__all__ = ["DEFAULT_PRINCIPAL_CLAIMS", "MIN_SESSION_KEY", "OidcSettings", "read_oidc"]

DEFAULT_PRINCIPAL_CLAIMS = ("preferred_username", "email", "sub")
"""The claims a principal's name is taken from, the first one present."""
MIN_SESSION_KEY = 32
"""The fewest characters the session key may have."""
_MOST_SESSION_HOURS = 24 * 7
_KEYS = frozenset(
    {
        "issuer",
        "name",
        "client_id",
        "client_secret_env",
        "audience",
        "scopes",
        "redirect_uri",
        "principal_claim",
        "roles_claim",
        "roles",
        "session_key_env",
        "session_hours",
    }
)


@dataclass(frozen=True, kw_only=True)
class OidcSettings:
    issuer: str
    """The provider's issuer URL, exactly as its tokens name it (``iss``)."""
    client_id: str
    """The inbox's client at the provider; the ID tokens' audience."""
    session_key: str = field(repr=False)
    """The secret that seals session cookies (every replica has the same)."""
    client_secret: str | None = field(default=None, repr=False)
    """None for a public client: PKCE alone proves the code is ours."""
    audience: str | None = None
    """The audience (``aud``) of the access tokens the API accepts; None: it accepts none."""
    name: str | None = None
    """What the inbox's button says: "Sign in with NAME" (default: the issuer's host)."""
    scopes: tuple[str, ...] = ("openid", "profile", "email")
    redirect_uri: str | None = None
    """The callback's URL as people reach it; None: the request's own ``/auth/callback``."""
    principal_claims: tuple[str, ...] = DEFAULT_PRINCIPAL_CLAIMS
    """A principal is named by the first of these claims a token has."""
    roles_claim: str = "groups"
    roles: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """A group (a value of `roles_claim`) → the signoff roles it gives; other groups give none."""
    session_hours: float = 8.0

    @property
    def shown_name(self) -> str:
        return self.name or (urlsplit(self.issuer).hostname or self.issuer)

    def roles_of(self, groups: object) -> frozenset[str]:
        """The signoff roles `groups` (a claim's value: a list, or one string) give."""
        names = [groups] if isinstance(groups, str) else groups
        if not isinstance(names, list):
            return frozenset()
        found: set[str] = set()
        for group in names:
            if isinstance(group, str):
                found |= self.roles.get(group, frozenset())
        return frozenset(found)


def read_oidc(
    reader: Reader, value: Any, *, environment: Mapping[str, str] | None = None
) -> OidcSettings | None:
    """``auth.oidc`` as settings; None, with the problems told to `reader`, when it is wrong."""
    env = os.environ if environment is None else environment
    where = ("auth", "oidc")
    section = reader.mapping(value, where, "auth.oidc")
    if section is None:
        return None
    reader.keys(section, where, _KEYS, "auth.oidc")
    before = len(reader.problems)
    issuer = _url(reader, section.get("issuer"), (*where, "issuer"), "auth.oidc.issuer")
    client_id = reader.string(section.get("client_id"), (*where, "client_id"), "client_id")
    found: dict[str, Any] = {}
    for key in ("audience", "name"):
        if key in section:
            found[key] = reader.string(section[key], (*where, key), key)
    if "redirect_uri" in section:
        found["redirect_uri"] = _url(
            reader, section["redirect_uri"], (*where, "redirect_uri"), "redirect_uri"
        )
    if "scopes" in section:
        scopes = reader.strings(section["scopes"], (*where, "scopes"), "scopes")
        if scopes is not None and "openid" not in scopes:
            reader.error((*where, "scopes"), "scopes must include 'openid'")
        found["scopes"] = scopes
    if "principal_claim" in section:
        found["principal_claims"] = reader.strings(
            section["principal_claim"], (*where, "principal_claim"), "principal_claim"
        )
    if "roles_claim" in section:
        found["roles_claim"] = reader.string(
            section["roles_claim"], (*where, "roles_claim"), "roles_claim"
        )
    found["roles"] = _roles(reader, section.get("roles", {}), (*where, "roles"))
    if "session_hours" in section:
        found["session_hours"] = _hours(reader, section["session_hours"], (*where, "session_hours"))
    if "client_secret_env" in section:
        found["client_secret"] = _environment(reader, section, where, "client_secret_env", env)
    session_key = None
    if "session_key_env" not in section:
        reader.error(
            where,
            "auth.oidc needs session_key_env: the environment variable holding the secret "
            f"(at least {MIN_SESSION_KEY} characters) that seals the session cookies",
        )
    else:
        session_key = _environment(reader, section, where, "session_key_env", env)
        if session_key is not None and len(session_key) < MIN_SESSION_KEY:
            reader.error(
                (*where, "session_key_env"),
                f"the session key must have at least {MIN_SESSION_KEY} characters, not "
                f"{len(session_key)}: make one with `openssl rand -base64 48`",
            )
    if len(reader.problems) > before or issuer is None or client_id is None or not session_key:
        return None
    return OidcSettings(issuer=issuer, client_id=client_id, session_key=session_key, **found)


def _url(reader: Reader, value: Any, where: tuple[Any, ...], what: str) -> str | None:
    """An https URL, or http on a loopback host (a provider on this machine, for tests)."""
    text = reader.string(value, where, what)
    if text is None:
        return None
    parts = urlsplit(text)
    secure = parts.scheme == "https" or (
        parts.scheme == "http" and is_loopback(parts.hostname or "")
    )
    if not parts.hostname or not secure or parts.query or parts.fragment:
        reader.error(
            where,
            f"{what} must be an https:// URL (http:// only on this machine's loopback), "
            f"without a query, not {text!r}",
        )
        return None
    return text


def _roles(reader: Reader, value: Any, where: tuple[Any, ...]) -> dict[str, frozenset[str]]:
    section = reader.mapping(value, where, "auth.oidc.roles")
    if section is None:
        return {}
    roles: dict[str, frozenset[str]] = {}
    for group, given in section.items():
        found = reader.strings(given, (*where, group), "the roles a group gives", allow_empty=True)
        if found is not None:
            roles[group] = frozenset(found)
    return roles


def _hours(reader: Reader, value: Any, where: tuple[Any, ...]) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        reader.error(where, f"session_hours must be a number of hours, not {value!r}")
        return None
    if not 0 < value <= _MOST_SESSION_HOURS:
        reader.error(
            where,
            f"session_hours must be more than 0 and at most {_MOST_SESSION_HOURS}, not {value}",
        )
        return None
    return float(value)


def _environment(
    reader: Reader,
    section: dict[str, Any],
    where: tuple[Any, ...],
    key: str,
    env: Mapping[str, str],
) -> str | None:
    return reader.variable(section[key], (*where, key), key, env)
