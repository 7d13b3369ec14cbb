"""Every agent of a server as an A2A agent under ``/a2a/{agent}``: its card at
``/a2a/{agent}/.well-known/agent-card.json`` (public, as discovery is), the JSON-RPC binding at
``/a2a/{agent}`` and the REST binding under it (a2a-sdk's own routes; A2A 0.3 clients such as
kagent's UI are served too). Every request but the card's carries the server's bearer token.
"""

from __future__ import annotations

import json
import re
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import (
    DefaultServerCallContextBuilder,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import (
    AGENT_CARD_WELL_KNOWN_PATH,
    PROTOCOL_VERSION_0_3,
    PROTOCOL_VERSION_1_0,
    TransportProtocol,
)
from fastapi import FastAPI, HTTPException, Request
from google.protobuf.struct_pb2 import Struct
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from signoff.agent import Agent
from signoff.protocols.a2a.handler import PRINCIPAL, SignoffRequestHandler
from signoff.protocols.a2a.hitl import APPROVALS, EXTENSION, FORM, FORM_RESPONSE
from signoff.protocols.a2a.tasks import MARK
from signoff.server.auth import Auth
from signoff.server.service import Service

__all__ = ["PREFIX", "agent_card", "mount_a2a"]

PREFIX = "/a2a"
_CARD = re.compile(rf"{PREFIX}/[^/]+{re.escape(AGENT_CARD_WELL_KNOWN_PATH)}")


def mount_a2a(app: FastAPI, service: Service, auth: Auth) -> None:
    """Serve each of the service's agents over A2A (see the module's docstring)."""
    app.add_middleware(_Authenticated, auth=auth)
    context = _Context()
    for agent in service.agents:
        base = f"{PREFIX}/{agent.name}"
        handler = SignoffRequestHandler(service, agent.name)
        app.router.routes.append(
            Route(
                f"{base}{AGENT_CARD_WELL_KNOWN_PATH}", _card_endpoint(agent, auth), methods=["GET"]
            )
        )
        app.router.routes += create_jsonrpc_routes(
            handler, rpc_url=base, context_builder=context, enable_v0_3_compat=True
        )
        # Without the SDK's tenant mount: it would sit at the root of the whole app.
        app.router.routes += [
            route
            for route in create_rest_routes(
                handler, context_builder=context, path_prefix=base, enable_v0_3_compat=True
            )
            if not isinstance(route, Mount)
        ]


def agent_card(agent: Agent, url: str, *, secured: bool) -> AgentCard:
    """The card of `agent`, served at `url`: what it does, how to reach it, and how it asks
    for approval (the HITL extension)."""
    from signoff import __version__

    params = Struct()
    params.update(
        {
            "requestParts": [APPROVALS, "adk_request_confirmation", FORM],
            "decisionParts": ["decision_type", FORM_RESPONSE, "decisions"],
            "messageMark": MARK,
        }
    )
    card = AgentCard(
        name=agent.name,
        # Public: the agent's description, never its instructions (a system prompt).
        description=agent.description or f"The signoff agent {agent.name}.",
        version=__version__,
        supported_interfaces=[
            AgentInterface(
                url=url,
                protocol_binding=TransportProtocol.JSONRPC,
                protocol_version=PROTOCOL_VERSION_1_0,
            ),
            AgentInterface(
                url=url,
                protocol_binding=TransportProtocol.HTTP_JSON,
                protocol_version=PROTOCOL_VERSION_1_0,
            ),
            AgentInterface(
                url=url,
                protocol_binding=TransportProtocol.JSONRPC,
                protocol_version=PROTOCOL_VERSION_0_3,
            ),
        ],
        capabilities=AgentCapabilities(
            streaming=True,
            push_notifications=False,
            extensions=[
                AgentExtension(
                    uri=EXTENSION,
                    description=(
                        "Tool calls the policy holds for a person: the task goes input-required "
                        "with the held calls (a signoff.approvals list, kagent "
                        "adk_request_confirmation calls, an a2a.hitl.form); a message on the "
                        "same task decides them."
                    ),
                    required=False,
                    params=params,
                )
            ],
        ),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[
            AgentSkill(
                id=agent.name,
                name=agent.name,
                description=agent.description or f"The signoff agent {agent.name}.",
                tags=[agent.name],  # not its tools: the card is public, /v1/agents is not
            )
        ],
    )
    if secured:
        card.security_schemes["bearer"].CopyFrom(
            SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))
        )
        card.security_requirements.append(SecurityRequirement(schemes={"bearer": StringList()}))
    return card


def _card_endpoint(agent: Agent, auth: Auth) -> Any:
    async def card(request: Request) -> Response:
        url = f"{str(request.base_url).rstrip('/')}{PREFIX}/{agent.name}"
        served = agent_card(agent, url, secured=auth.anonymous is None)
        return JSONResponse(agent_card_to_dict(served))

    return card


class _Context(DefaultServerCallContextBuilder):
    """The SDK's call context, with the principal `_Authenticated` found."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[PRINCIPAL] = request.scope.get(PRINCIPAL)
        return context


class _Authenticated:
    """Every A2A request but an agent card's needs the server's bearer token: 401 otherwise."""

    def __init__(self, app: Any, *, auth: Auth) -> None:
        self.app = app
        self.auth = auth

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path: str = scope.get("path", "")
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]  # as the router sees it: the app may be mounted under root
        if (
            scope["type"] == "http"
            and (path == PREFIX or path.startswith(f"{PREFIX}/"))
            and not _CARD.fullmatch(path)
        ):
            try:
                scope[PRINCIPAL] = await self.auth.principal(Request(scope))
            except HTTPException as exc:
                body = json.dumps(exc.detail).encode()
                headers = [(b"content-type", b"application/json")]
                headers += [
                    (k.lower().encode(), v.encode()) for k, v in (exc.headers or {}).items()
                ]
                await send(
                    {"type": "http.response.start", "status": exc.status_code, "headers": headers}
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
