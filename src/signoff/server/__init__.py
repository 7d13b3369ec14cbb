"""signoff's server (``pip install 'signoff[server]'``): the HTTP API over the store, the gate
and the agents' runners, for the web inbox, the terminal inbox and any client."""

from signoff.server.app import create_app
from signoff.server.auth import Auth
from signoff.server.service import Principal, Service

__all__ = ["Auth", "Principal", "Service", "create_app"]
