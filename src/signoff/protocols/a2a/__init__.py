"""A2A through the official `a2a-sdk` (``pip install 'signoff[a2a]'``): every signoff agent as an
A2A agent whose held tool calls put its task in ``input-required`` (ARCHITECTURE §7; seeds 000 and
001). `mount_a2a` adds the routes to a server's app; `signoff serve` and `signoff demo` do so.

The SDK is imported only with what needs it (`mount_a2a`, the request handler): `hitl` and
`tasks` — the held calls as parts, a run's log read as a task — work without it, and AG-UI uses
them so."""

from __future__ import annotations

from typing import TYPE_CHECKING

from signoff._lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from signoff.protocols.a2a.handler import SignoffRequestHandler
    from signoff.protocols.a2a.hitl import EXTENSION
    from signoff.protocols.a2a.routes import agent_card, mount_a2a

__all__ = ["EXTENSION", "SignoffRequestHandler", "agent_card", "mount_a2a"]

__getattr__ = _lazy_exports(
    __name__,
    {
        "EXTENSION": "signoff.protocols.a2a.hitl",
        "SignoffRequestHandler": "signoff.protocols.a2a.handler",
        **dict.fromkeys(("agent_card", "mount_a2a"), "signoff.protocols.a2a.routes"),
    },
)
