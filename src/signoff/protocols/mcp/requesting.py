"""What each request to a server behind carries of the client it is made for, over 2026-07-28:
the capabilities that client declared (`declaring`) — so a server asks back only what that client
can answer — and, when the request is made again, the client's answers to what the server asked
(`Round`).

A 2025-era connection declares its client's capabilities once, when it is opened (`peer`)."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mcp import types
from mcp_types import CLIENT_CAPABILITIES_META_KEY

__all__ = ["Round", "declare_per_request", "declaring", "undeclared"]

_DECLARED: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "signoff.mcp.declared", default=None
)
"""The capabilities the client of the request being made declared (2026-07-28): each request
tells the server these, not the gateway's own."""
_FORWARDED_CAPABILITIES = ("elicitation", "sampling", "roots")
"""What a client declares that the gateway passes on: what a server may ask back, which the
gateway relays."""


@dataclass(frozen=True)
class Round:
    """A 2026-07-28 request made again with what its server asked for: the client's
    `responses` to its input requests, and the `state` the server gave with them."""

    responses: Mapping[str, Any] | None = None
    state: str | None = None
    number: int = 0
    """How many times the server asked before (0: the request as the client first made it)."""

    def answers(self) -> types.InputResponses | None:
        """The responses as the SDK sends them."""
        return None if self.responses is None else dict(self.responses)


@contextlib.contextmanager
def declaring(capabilities: types.ClientCapabilities | None) -> Iterator[None]:
    """Requests made meanwhile (in this task) declare `capabilities` — those of the client
    they are made for — to a 2026-07-28 server: it asks back only what that client can
    answer, and refuses (-32021) what needs what it lacks."""
    declared = {} if capabilities is None else _declared(capabilities)
    token = _DECLARED.set(declared)
    try:
        yield
    finally:
        _DECLARED.reset(token)


def _declared(capabilities: types.ClientCapabilities) -> dict[str, Any]:
    wire = capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)
    return {k: wire[k] for k in _FORWARDED_CAPABILITIES if k in wire}


def undeclared() -> contextvars.Context:
    """A context for a task that outlives the request starting it (a connection's): it declares
    no client's capabilities."""
    context = contextvars.copy_context()
    context.run(_DECLARED.set, None)
    return context


def declare_per_request(session: Any) -> None:
    """Make each request of `session` declare the capabilities of the client it is made for
    (`declaring`), over 2026-07-28, where a request declares them itself. The SDK's client
    declares its own on every request, in a stamp it sets once connected; the stamp is wrapped
    (the SDK has no public hook for it)."""
    stamp = getattr(session, "_stamp", None)
    if stamp is None:
        return

    def stamped(data: dict[str, Any], options: Any) -> None:
        stamp(data, options)
        declared = _DECLARED.get()
        meta = (data.get("params") or {}).get("_meta")
        if declared is not None and meta is not None and CLIENT_CAPABILITIES_META_KEY in meta:
            meta[CLIENT_CAPABILITIES_META_KEY] = declared

    session._stamp = stamped
