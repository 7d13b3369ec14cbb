"""One request of a client, as the gateway takes it: who asks (`Asker`), what it asks of which
server behind, judged as one call (`Action`), and the connection it came on (`Asked`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from signoff.protocols.mcp.peer import Peer
from signoff.protocols.mcp.upstream import Upstream
from signoff.types import ToolCall

__all__ = ["Action", "Asked", "Asker", "modern"]


@dataclass(frozen=True)
class Asker:
    """Who makes the calls: a token's principal over HTTP, the configured user over stdio."""

    name: str
    roles: frozenset[str] = frozenset()


@dataclass(frozen=True, kw_only=True)
class Action:
    """What a client's request asks of a server behind, judged as one call."""

    call: ToolCall
    """The server's own name for it (a tool's or prompt's name, a resource's URI), its
    arguments, the server, the kind."""
    upstream: Upstream | None
    """The server it goes to; None: the gateway answers it itself (its ask tool's question)."""
    schema: Mapping[str, Any] | None = None
    """What an edit of the arguments must fit (a tool's input schema, a prompt's arguments);
    None: nothing to edit (a resource read)."""
    idempotent: bool = False
    """Whether it may run again after it was cut off midway (read-only tools, reads)."""


@dataclass(kw_only=True)
class Asked:
    """One request of a client, as the gateway answers it."""

    ctx: Any
    asker: Asker
    peer: Peer
    headers: Mapping[str, str]
    """The client's headers passed on to the server."""
    waited: float | None = None
    """The last progress the wait reported, if it reported any: the server's own progress is
    counted on from past it (progress only grows)."""


def modern(ctx: Any) -> bool:
    """Whether the request came over 2026-07-28 (no session: a form goes back as a result)."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
