"""A2A through the official `a2a-sdk` (``pip install 'signoff[a2a]'``): every signoff agent as an
A2A agent whose held tool calls put its task in ``input-required`` (ARCHITECTURE §7; seeds 000 and
001). `mount_a2a` adds the routes to a server's app; `signoff serve` and `signoff demo` do so."""

from signoff.protocols.a2a.handler import SignoffRequestHandler
from signoff.protocols.a2a.hitl import EXTENSION
from signoff.protocols.a2a.routes import agent_card, mount_a2a

__all__ = ["EXTENSION", "SignoffRequestHandler", "agent_card", "mount_a2a"]
