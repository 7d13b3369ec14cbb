"""The one spelling of a resource URI (`signoff.protocols.mcp.uris`): every way of writing one
resource comes to one text, and what has no one reading is refused."""

from __future__ import annotations

import pytest

from signoff.protocols.mcp.uris import canonical_uri

CANONICAL = [
    # file: is this machine's file: localhost and the loopback addresses are no authority
    ("file:///srv/data/secrets/x", "file:///srv/data/secrets/x"),
    ("file:/srv/data/secrets/x", "file:///srv/data/secrets/x"),
    ("file://localhost/srv/data/secrets/x", "file:///srv/data/secrets/x"),
    ("FILE://LocalHost/srv/data/secrets/x", "file:///srv/data/secrets/x"),
    ("file://127.0.0.1/srv/data/secrets/x", "file:///srv/data/secrets/x"),
    ("file://[::1]/srv/data/secrets/x", "file:///srv/data/secrets/x"),
    ("file://[0:0:0:0:0:0:0:1]/srv/data/secrets/x", "file:///srv/data/secrets/x"),
    ("file://%6Cocalhost/srv/data/secrets/x", "file:///srv/data/secrets/x"),
    ("file://%5B::1%5D/srv/data/secrets/x", "file:///srv/data/secrets/x"),
    # percent-encodings: decoded where they need not be, written one way where they must
    ("file:///srv/data/%73ecrets/x", "file:///srv/data/secrets/x"),
    ("file:///srv/data/secrets%2Fx", "file:///srv/data/secrets/x"),
    ("file:///%7e/%7E/%41", "file:///~/~/A"),
    ("file:///My Docs/%e2%82%ac", "file:///My%20Docs/%E2%82%AC"),
    ("file:///My%20Docs/%E2%82%AC", "file:///My%20Docs/%E2%82%AC"),
    # other schemes: scheme and host in lower case, the default port left out
    ("HTTP://Example.COM:80/a?b=1#f", "http://example.com/a?b=1#f"),
    ("http://example.com:/a", "http://example.com/a"),
    ("https://example.com:443/", "https://example.com/"),
    ("https://example.com:0443/", "https://example.com/"),
    ("https://example.com:8443/", "https://example.com:8443/"),
    ("http://[::FFFF:127.0.0.1]:80/", "http://[::ffff:7f00:1]/"),
    ("http://[0:0::1]:8080/x", "http://[::1]:8080/x"),
    ("http://10.0.0.1/x", "http://10.0.0.1/x"),
    ("TEST://Static-Text", "test://static-text"),
    ("test://static-%74ext", "test://static-text"),
    ("TEST://template/%37/data", "test://template/7/data"),
    ("db://main:5432/t", "db://main:5432/t"),
    ("db:///t", "db:///t"),
    ("urn:isbn:0451450523", "urn:isbn:0451450523"),
]


@pytest.mark.parametrize(("spelled", "canonical"), CANONICAL)
def test_every_spelling_of_a_resource_comes_to_its_one_canonical_form(
    spelled: str, canonical: str
) -> None:
    assert canonical_uri(spelled) == canonical
    assert canonical_uri(canonical) == canonical  # the canonical form is its own


REFUSED = [
    # file: names no other machine, and has no port, user, query or fragment
    ("file://localhost:80/srv/data/secrets/x", "a file uri has no port"),
    ("file://[::1]:80/srv/data/secrets/x", "a file uri has no port"),
    ("file://localhost:/srv/data/secrets/x", "a file uri has no port"),
    ("file://anyone@localhost/srv/data/secrets/x", "names a user"),
    ("file://anyone%40localhost/srv/data/secrets/x", "names a user"),
    ("file://@/srv/data/secrets/x", "names a user"),
    ("file://example.com/srv/data/secrets/x", "not a host"),
    ("file://127.0.0.2/srv/data/secrets/x", "not a host"),
    ("file://[::ffff:127.0.0.1]/srv/data/secrets/x", "not a host"),
    ("file://server/share/x", "not a host"),
    ("file:///srv/data/secrets/x?raw", "no query or fragment"),
    ("file:///srv/data/secrets/x?", "no query or fragment"),
    ("file:///srv/data/secrets/x#top", "no query or fragment"),
    ("file:srv/data/secrets/x", "path is absolute"),
    # a user, or a host a resolver reads one way and a glob another
    ("http://user:pw@example.com/x", "names a user"),
    ("db://anyone@main/t", "names a user"),
    ("http://127.1/x", "no dotted IPv4 address"),
    ("http://0x7f.0.0.1/x", "no dotted IPv4 address"),
    ("http://2130706433/x", "no dotted IPv4 address"),
    ("http://0127.0.0.1/x", "no dotted IPv4 address"),
    ("http://example.com./x", "a dot too many"),
    ("http://exa..mple.com/x", "a dot too many"),
    ("http://[fe80::1%25eth0]/x", "names a zone"),
    ("http://[v1.x]/x", "no IPv6 address"),
    ("http://[::1/x", "IPv6"),
    ("http://[::1]x/", "is not a number"),
    ("http://example.com:+80/x", "is not a number"),
    ("http://example.com:99999/x", "past 65535"),
    ("http://:80/x", "a port but no host"),
    ("http://ex%C3%A4mple.com/x", "not a plain ASCII name"),
    ("test://static%2Ftext", "authority holds a slash"),
    # a path with no one reading
    ("file:///srv/data/public/../secrets/x", "'.' or '..' segments"),
    ("file:///srv/data/%2e%2e/secrets/x", "'.' or '..' segments"),
    ("file:///srv/data//secrets/x", "doubles a slash"),
    ("file:////srv/data/secrets/x", "doubles a slash"),
    ("file:///srv/data/secrets%5Cx", "backslash or a NUL"),
    ("file:///srv/data/secrets/x%00", "backslash or a NUL"),
    ("file:///srv/data/secr\tets/x", "control character"),
    ("file:///srv/data/secrets/x\n", "control character"),
    (" file:///srv/data/secrets/x", "starts or ends blank"),
    ("file:///srv/data/%ff", "can't decode"),
    ("file:///" + "a" * 3000, "longer than 2048 bytes"),
    ("static-text", "no scheme"),
]


@pytest.mark.parametrize(("spelled", "why"), REFUSED)
def test_a_uri_with_no_one_reading_is_refused_saying_why(spelled: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        canonical_uri(spelled)
