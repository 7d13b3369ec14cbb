"""Every agent of a server as an A2A agent under ``/a2a/{agent}``: its card at
``/a2a/{agent}/.well-known/agent-card.json`` (public, as discovery is), the JSON-RPC binding at
``/a2a/{agent}`` and the REST binding under it (a2a-sdk's own routes; A2A 0.3 clients such as
kagent's UI are served too). Every request but the card's carries the server's bearer token.
A ListTasks state filter is checked as sent, before the SDK parses the request: the SDK would
read one it does not know as no filter at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import (
    agent_card_to_dict,
    build_error_response,
)
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
from a2a.utils.error_handlers import rest_error_handler
from a2a.utils.errors import InvalidParamsError
from fastapi import FastAPI, HTTPException, Request
from google.protobuf.struct_pb2 import Struct
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from signoff.agent import Agent
from signoff.protocols.a2a.handler import PRINCIPAL, SignoffRequestHandler, state_filter_problem
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
        for rpc in create_jsonrpc_routes(
            handler, rpc_url=base, context_builder=context, enable_v0_3_compat=True
        ):
            app.router.routes.append(Route(rpc.path, _rpc_checked(rpc.endpoint), methods=["POST"]))
        for rest in create_rest_routes(
            handler, context_builder=context, path_prefix=base, enable_v0_3_compat=True
        ):
            if isinstance(rest, Mount):
                continue  # the SDK's tenant mount: it would sit at the root of the whole app
            if isinstance(rest, Route) and rest.path == f"{base}/tasks":  # ListTasks
                rest = Route(rest.path, _listing_checked(rest.endpoint), methods=["GET"])
            app.router.routes.append(rest)


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


_Endpoint = Callable[[Request], Awaitable[Response]]


def _listing_checked(endpoint: _Endpoint) -> _Endpoint:
    """The SDK's REST ListTasks endpoint, refusing first a ``status`` that names no task state
    (`state_filter_problem`), in the SDK's own error format."""

    @rest_error_handler
    async def list_tasks(request: Request) -> Response:
        for value in request.query_params.getlist("status"):
            if (problem := state_filter_problem(value)) is not None:
                raise InvalidParamsError(problem)
        return await endpoint(request)

    return list_tasks


def _rpc_checked(endpoint: _Endpoint) -> _Endpoint:
    """The SDK's JSON-RPC endpoint, refusing first a ListTasks ``status`` that names no task
    state (`state_filter_problem`), in the SDK's own error format."""

    async def rpc(request: Request) -> Response:
        try:
            body = await request.json()  # kept on the request: the SDK reads this very parse
        except ValueError:
            body = None  # not JSON: the SDK's own error says so
        if isinstance(body, dict) and body.get("method") == "ListTasks":
            params = body.get("params")
            problem = (
                state_filter_problem(params.get("status")) if isinstance(params, dict) else None
            )
            if problem is not None:
                asked = body.get("id")
                valid = isinstance(asked, str | int) and not isinstance(asked, bool)
                refusal = build_error_response(
                    asked if valid else None, InvalidParamsError(problem)
                )
                return JSONResponse(refusal)
        return await endpoint(request)

    return rpc


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
