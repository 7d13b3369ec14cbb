"""The one spelling of a resource URI that the gateway judges, holds and forwards.

A policy's URI globs match text, and a server reads a path: ``file:///public/../secrets/key``,
``FILE://localhost/secrets/key`` and ``file:///%73ecrets/key`` are one file to the server and three
texts to a glob. So a read is judged by its canonical form — scheme and authority in lower case,
``file://localhost/`` as ``file:///``, percent-encodings decoded where they stand for a character
that needs none, spaces and the like encoded one way — and that form is what the server is asked
for. A URI whose path climbs (``.`` or ``..`` segments), doubles a slash or holds a backslash or
NUL, written plainly or percent-encoded, is refused: there is no one reading of it to judge.
"""

from __future__ import annotations

from urllib.parse import quote, unquote, urlsplit, urlunsplit

__all__ = ["MAX_URI_BYTES", "canonical_uri"]

MAX_URI_BYTES = 2048
"""A URI is judged, held and indexed by its text: past this, it is refused before anything is
kept (a database index holds a few kilobytes a row)."""
_KEPT = "/:@!$&'()*+,;=~-._"
"""What a canonical path writes as it is (RFC 3986's reserved and unreserved characters, but
``%`` itself and ``?``/``#``, which would end the path)."""


def canonical_uri(uri: str) -> str:
    """The canonical form of `uri`; `ValueError` saying why when it has none."""
    if len(uri.encode("utf-8", "surrogatepass")) > MAX_URI_BYTES:
        raise ValueError(f"the uri is longer than {MAX_URI_BYTES} bytes")
    parts = urlsplit(uri)
    if not parts.scheme:
        raise ValueError("the uri has no scheme")
    scheme = parts.scheme.lower()
    netloc = unquote(parts.netloc, errors="strict").lower()
    if any(c in netloc for c in "/\\\x00?#"):
        raise ValueError("the uri's authority holds a slash, a backslash, a NUL, '?' or '#'")
    if scheme == "file" and netloc == "localhost":
        netloc = ""
    netloc = quote(netloc, safe=_KEPT + "[]")
    path = unquote(parts.path, errors="strict")
    if "\\" in path or "\x00" in path:
        raise ValueError("the uri's path holds a backslash or a NUL")
    segments = path.split("/")
    if any(s in (".", "..") for s in segments):
        raise ValueError("the uri's path has '.' or '..' segments")
    if "" in segments[1:-1] or path.startswith("//"):
        raise ValueError("the uri's path doubles a slash")
    canonical = urlunsplit((scheme, netloc, quote(path, safe=_KEPT), parts.query, parts.fragment))
    # urlunsplit drops an empty authority ("file:///x" would come back "file:/x"): keep it.
    if uri.lower().startswith(f"{scheme}://") and not canonical.startswith(f"{scheme}://"):
        canonical = f"{scheme}://{netloc}{canonical[len(scheme) + 1 :]}"
    return canonical
