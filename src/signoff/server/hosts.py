"""Which ``Host`` names a server answers to.

Without authentication, a request is answered only when its ``Host`` names this machine's
loopback (``localhost``, ``127.0.0.1``, ``[::1]``; any port) or a host the config allows: a web
page whose DNS name an attacker points at 127.0.0.1 (DNS rebinding) is same-origin with itself,
and its requests carry its own name as ``Host``. Read here: a ``Host`` header's host, a config's
``allowed_hosts`` entry, and whether an address is this machine's loopback.
"""

from __future__ import annotations

import ipaddress
import re

__all__ = ["LOOPBACK_NAMES", "allowed_host", "host_name", "is_loopback"]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
"""The loopback names a server without authentication answers to, as a browser writes them."""


def is_loopback(host: str) -> bool:
    """Whether `host` is ``localhost`` or a loopback address (``127.0.0.0/8``, ``::1``).
    ``*.localhost`` is not: not every resolver keeps those names off DNS, and a name DNS
    answers for can be pointed anywhere."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_HOST = re.compile(r"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9_.-]+))(?::[0-9]{1,5})?")
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_NAME = re.compile(rf"(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*")


def host_name(header: str) -> str | None:
    """The host a ``Host`` header names — lower case, without its port, an IPv6 address
    without its brackets — or None when the header is no ``host[:port]``."""
    found = _HOST.fullmatch(header.lower())
    if found is None:
        return None
    if found["v6"] is None:
        return str(found["name"])
    try:
        return str(ipaddress.IPv6Address(found["v6"]))
    except ValueError:
        return None


def allowed_host(text: str) -> str:
    """`text` — a DNS name or an IP address (IPv6 with or without brackets), alone — as
    `host_name` gives it; ValueError saying what is wrong."""
    if text == "*":
        raise ValueError(
            "'*' would let any web page reach the server through a DNS name of its own: "
            "name the hosts, or configure auth.tokens"
        )
    try:
        return str(ipaddress.ip_address(text.removeprefix("[").removesuffix("]")))
    except ValueError:
        pass
    if _NAME.fullmatch(text.lower()):
        return text.lower()
    raise ValueError(
        f"{text!r} is not a host name: give the name alone, such as inbox.internal "
        "(no scheme, port or path: every port is served)"
    )
