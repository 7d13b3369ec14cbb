"""What `create_app` keeps on ``app.state`` for its routes — ``service``, ``auth``, ``limits`` —
read back as FastAPI dependencies: a route names what it needs in its signature
(``service: Served``), as it names its principal (`signoff.server.auth.Who`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends
from starlette.requests import HTTPConnection

from signoff.server.auth import Auth
from signoff.server.intake import BodyLimits
from signoff.server.service import Service

__all__ = ["Authority", "Limits", "Served"]


def _service(connection: HTTPConnection) -> Service:
    service: Service = connection.app.state.service
    return service


def _auth(connection: HTTPConnection) -> Auth:
    auth: Auth = connection.app.state.auth
    return auth


def _limits(connection: HTTPConnection) -> BodyLimits:
    limits: BodyLimits = connection.app.state.limits
    return limits


Served = Annotated[Service, Depends(_service)]
"""The service the API is over."""
Authority = Annotated[Auth, Depends(_auth)]
"""Who the server lets in: for a long-lived answer, to end it once its opener may no longer."""
Limits = Annotated[BodyLimits, Depends(_limits)]
"""How large and deep a request's body (or a WebSocket's frame) may be."""
