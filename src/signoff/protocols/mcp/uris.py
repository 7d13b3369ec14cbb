"""The one spelling of a resource URI that the gateway judges, holds and forwards.

A policy's URI globs match text, and a server reads a resource: ``file:///public/../secrets/key``,
``FILE://127.0.0.1/secrets/key`` and ``file:///%73ecrets/key`` are one file to a server that
reads the URI's path and three texts to a glob. So a read is judged by its canonical form, and
that form, nothing else, is what the server is asked for:

- the scheme and the host in lower case; percent-encodings decoded where they stand for a
  character that needs none, the others written one way (upper-case hex);
- ``file:`` names a file on the gateway's own machine: its authority is empty, and ``localhost``,
  ``127.0.0.1`` and ``[::1]`` (however written) are that empty authority;
- an IPv6 host in its one short form (``[0:0::1]`` is ``[::1]``), a port without leading zeros,
  and the scheme's default port (80 for ``http``, 443 for ``https``…) left out.

What has no one reading is refused (`ValueError`), never passed on: a path that climbs (``.``
or ``..`` segments), doubles a slash or holds a backslash or NUL, written plainly or
percent-encoded; a control character anywhere; user information (``user@host``: whose the host
is, is for the server to guess); a ``file:`` URI with any other host, a port, a query or a
fragment, or a relative path; a host that is neither a name, a dotted IPv4 address nor an IPv6
address (``127.1``, ``0x7f.0.0.1``, a zone, a trailing dot, non-ASCII); and a URI longer than
`MAX_URI_BYTES`.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import quote, unquote, urlsplit, urlunsplit

__all__ = ["MAX_URI_BYTES", "canonical_uri"]

MAX_URI_BYTES = 2048
"""A URI is judged, held and indexed by its text: past this, it is refused before anything is
kept (a database index holds a few kilobytes a row)."""
_KEPT = "/:@!$&'()*+,;=~-._"
"""What a canonical path writes as it is (RFC 3986's reserved and unreserved characters, but
``%`` itself and ``?``/``#``, which would end the path)."""
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}
_LOCAL = {"", "localhost", "127.0.0.1", "[::1]"}
"""The authorities a ``file:`` URI may have: all of them this machine."""
_NAME = re.compile(r"[a-z0-9\-._~!$&'()*+,;=]+")
"""A host name (RFC 3986's reg-name, decoded and in lower case)."""
_NUMBER = re.compile(r"[0-9]+|0x[0-9a-f]*")
"""A label a resolver may read as a number (``127.1``, ``0x7f.1``): not a name."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def canonical_uri(uri: str) -> str:
    """The canonical form of `uri`; `ValueError` saying why when it has none."""
    if len(uri.encode("utf-8", "surrogatepass")) > MAX_URI_BYTES:
        raise ValueError(f"the uri is longer than {MAX_URI_BYTES} bytes")
    # urlsplit drops tabs and newlines anywhere and controls at either end: two spellings.
    if _CONTROL.search(uri) or uri != uri.strip():
        raise ValueError("the uri holds a control character or a NUL, or starts or ends blank")
    parts = urlsplit(uri)
    if not parts.scheme:
        raise ValueError("the uri has no scheme")
    scheme = parts.scheme.lower()
    netloc = _authority(scheme, parts.netloc)
    path = unquote(parts.path, errors="strict")
    if "\\" in path or "\x00" in path:
        raise ValueError("the uri's path holds a backslash or a NUL")
    segments = path.split("/")
    if any(s in (".", "..") for s in segments):
        raise ValueError("the uri's path has '.' or '..' segments")
    if "" in segments[1:-1] or path.startswith("//"):
        raise ValueError("the uri's path doubles a slash")
    if scheme == "file":
        if "?" in uri or "#" in uri:
            raise ValueError("a file uri has no query or fragment")
        if not path.startswith("/"):
            raise ValueError("a file uri's path is absolute: file:///path")
    canonical = urlunsplit((scheme, netloc, quote(path, safe=_KEPT), parts.query, parts.fragment))
    # urlunsplit drops an empty authority ("db:///x" would come back "db:/x"): keep it.
    if uri[len(scheme) + 1 :].startswith("//") and not canonical.startswith(f"{scheme}://"):
        canonical = f"{scheme}://{netloc}{canonical[len(scheme) + 1 :]}"
    return canonical


def _authority(scheme: str, raw: str) -> str:
    """The canonical authority (``host[:port]``) of a URI of `scheme`, from its `raw` one."""
    authority = unquote(raw, errors="strict")
    if any(c in authority for c in "/\\\x00?#"):
        raise ValueError("the uri's authority holds a slash, a backslash, a NUL, '?' or '#'")
    if "@" in authority:
        raise ValueError("the uri names a user ('user@host'): write it without one")
    host, port = _host_and_port(authority.lower())
    if scheme == "file":
        if port is not None or authority.endswith(":"):
            raise ValueError("a file uri has no port: file:///path")
        if host not in _LOCAL:
            raise ValueError(
                f"a file uri names a file of this machine: file:///path, not a host ({host!r})"
            )
        return ""
    if port is not None and not host:
        raise ValueError("the uri has a port but no host")
    if port is None or port == DEFAULT_PORTS.get(scheme):
        return host
    return f"{host}:{port}"


def _host_and_port(authority: str) -> tuple[str, int | None]:
    """The canonical host of a (decoded, lower-case) authority, and its port if it has one."""
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            raise ValueError("the uri's IPv6 host has no closing ']'")
        literal, rest = authority[1:end], authority[end + 1 :]
        try:
            address = ipaddress.IPv6Address(literal)  # refuses IPvFuture ("[v1.x]")
        except ValueError:
            raise ValueError(f"the uri's host [{literal}] is no IPv6 address") from None
        if address.scope_id is not None:
            raise ValueError(f"the uri's IPv6 host [{literal}] names a zone")
        host = f"[{address.compressed}]"
    else:
        host, colon, after = authority.partition(":")
        rest = colon + after
        if host and not _NAME.fullmatch(host):
            raise ValueError(f"the uri's host {host!r} is not a plain ASCII name or address")
        if host.endswith(".") or ".." in host or host.startswith("."):
            raise ValueError(f"the uri's host {host!r} has an empty label (a dot too many)")
        if _NUMBER.fullmatch(host.rsplit(".", 1)[-1]):
            try:
                host = str(ipaddress.IPv4Address(host))  # refuses 127.1, 0x7f.0.0.1, 010.0.0.1
            except ValueError:
                raise ValueError(f"the uri's host {host!r} is no dotted IPv4 address") from None
    if rest in ("", ":"):
        return host, None  # an empty port is the default one (RFC 3986 §6.2.3)
    digits = rest[1:]
    if not rest.startswith(":") or not digits.isascii() or not digits.isdigit():
        raise ValueError(f"the uri's port {rest!r} is not a number")
    if int(digits) > 65535:
        raise ValueError(f"the uri's port {int(digits)} is past 65535")
    return host, int(digits)
