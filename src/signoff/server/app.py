"""The HTTP API of ARCHITECTURE §7, assembled: its rooms (`signoff.server.routes`, one router
per resource), the guards every request passes first, and the protocols served beside it.

Every error is JSON naming the problem — 400, 401, 403, 404, 409 or 422 — never a 500 for bad
input (`signoff.server.refusals`). The decider of a decision is the authenticated principal.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI

from signoff.server.auth import Auth
from signoff.server.guards import KnownHost, NoNul, SameOrigin
from signoff.server.intake import BodyLimits, Intake
from signoff.server.metrics import install_metrics
from signoff.server.probes import mount_probes
from signoff.server.quick import QuickDecision
from signoff.server.refusals import install_refusals
from signoff.server.routes import (
    agents,
    approvals,
    audit,
    catalog,
    changes,
    conversation,
    grants,
    hooks,
    insights,
    me,
    policy,
    runs,
    web,
)
from signoff.server.service import Service
from signoff.server.slack import INTERACTIONS, mount_slack
from signoff.server.sso.routes import install_sign_on

__all__ = ["create_app"]

ROOMS = (
    web,
    changes,
    catalog,
    conversation,
    insights,
    me,
    agents,
    runs,
    approvals,
    policy,
    grants,
    audit,
    hooks,
)
"""The API's routers, in the order their routes are matched: the changes' and the catalog's
paths are no ids, and go before ``/v1/approvals/{id}``."""
logger = logging.getLogger(__name__)


def create_app(service: Service, auth: Auth, *, limits: BodyLimits | None = None) -> FastAPI:
    """The API over `service`; its workers run for the app's lifetime. Request bodies are held
    to `limits` (size and nesting), and read only once the token is known."""
    # No /docs or /redoc: their pages load from a CDN, blank offline. /openapi.json stays.
    app = FastAPI(
        title="signoff", version=_version(), lifespan=_lifespan, docs_url=None, redoc_url=None
    )
    shown = approvals.Approvals(service)  # as every route shows them; decisions taken
    app.state.service, app.state.auth, app.state.approvals = service, auth, shown
    app.state.limits = limits = limits or BodyLimits()
    if service.gate.roles_of is None:
        # Grants are judged by their granters' roles as this server's tokens give them now:
        # a token removed or a role taken away in the config takes the grant's power with it.
        service.gate.roles_of = auth.roles_of
        service.gate.principals_from = auth.principals_from
    install_refusals(app)
    app.add_middleware(QuickDecision, auth=auth, take=shown.take)  # inside Intake: after it
    # A Slack interaction is authenticated by its signature, which its route checks.
    signed = frozenset({INTERACTIONS}) if service.notifications is not None else frozenset()
    app.add_middleware(Intake, auth=auth, limits=limits, signed=signed)
    app.add_middleware(NoNul)
    install_sign_on(app, auth)  # with sign-on: /auth/*, and the cookie's guard outside Intake
    if auth.anonymous is not None:
        app.add_middleware(SameOrigin, auth=auth)
    if auth.checks_hosts:
        app.add_middleware(KnownHost, auth=auth)  # outermost: before anything else is read

    mount_probes(app, service.store)
    for room in ROOMS:
        # Flat, as if declared on the app: an included router answers each request two frames
        # deeper (FastAPI dispatching through it), and the stack left to a request bounds how
        # deep a JSON it reads (the audit's damaged entries) can be.
        app.router.routes.extend(room.router.routes)
    if service.notifications is not None:
        mount_slack(app, service, service.notifications, auth.roles_of)
    _mount_protocols(app, service, auth)  # after /v1: its routes are matched first
    install_metrics(app, service)  # GET /metrics; each request in its caller's trace
    return app


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    service: Service = app.state.service
    async with service.running():
        yield


_PROTOCOLS = (
    # name, module and its mount function, the packages its extra installs, the extra
    ("A2A", "signoff.protocols.a2a", "mount_a2a", ("a2a", "google"), "a2a"),
    ("AG-UI", "signoff.protocols.agui", "mount_agui", ("ag_ui", "jsonpatch"), "ag-ui"),
)


def _mount_protocols(app: FastAPI, service: Service, auth: Auth) -> None:
    """Serve the agents over A2A and AG-UI too, each when its extra is installed."""
    for name, module, function, packages, extra in _PROTOCOLS:
        try:
            mount = getattr(importlib.import_module(module), function)
        except ImportError as exc:
            if exc.name is None or not exc.name.startswith(packages):
                raise
            logger.info("%s is not served: install it with pip install 'signoff[%s]'", name, extra)
            continue
        mount(app, service, auth)


def _version() -> str:
    import signoff

    return signoff.__version__
