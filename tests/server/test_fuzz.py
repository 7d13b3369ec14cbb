"""schemathesis against the server's own OpenAPI schema: generated requests, valid and not,
never get a 5xx answer (over a thousand of them, on a live server)."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
import uvicorn
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from signoff import Policy
from signoff.agent import Agent, ModelTurn, tool
from signoff.gate import Gate
from signoff.server import Auth, Principal, Service, create_app
from signoff.store import open_store
from signoff.testing import ScriptedModel, call
from tests.deadline import HANG

# Live streams: not request/response.
STREAMS = {"/v1/events", "/v1/runs/{run_id}/events", "/v1/approvals/changes"}
HEADERS = {"Authorization": "Bearer fuzz"}


@tool
def delete_pod(name: str) -> str:
    """Delete a pod."""
    return f"deleted {name}"


def app_for(store: Any) -> Any:
    model = ScriptedModel([ModelTurn(tool_calls=(call("delete_pod", name="a"),))] * 1000)
    service = Service(
        store=store,
        gate=Gate(Policy.from_dict({"rules": [{"ask": "delete_pod"}]}), store),
        agents=[Agent(name="ops", model=model, tools=[delete_pod])],
    )
    return create_app(service, Auth(tokens={"fuzz": Principal(name="fuzz")}))


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, Any]]]:
    """A live server (its own thread and event loop) and its OpenAPI schema."""
    url = f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'fuzz.db'}"
    started = threading.Event()
    box: dict[str, Any] = {}

    async def main() -> None:
        async with open_store(url) as store:
            app = app_for(store)
            box["schema"] = app.openapi()
            server = uvicorn.Server(
                uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error")
            )
            box["server"] = server

            async def announce() -> None:
                while not server.started:
                    await asyncio.sleep(0.01)
                box["port"] = server.servers[0].sockets[0].getsockname()[1]
                started.set()

            watcher = asyncio.create_task(announce())
            await server.serve()
            watcher.cancel()

    thread = threading.Thread(target=lambda: asyncio.run(main()), daemon=True)
    thread.start()
    assert started.wait(HANG)
    yield f"http://127.0.0.1:{box['port']}", box["schema"]
    box["server"].should_exit = True
    thread.join(HANG)


EXAMPLES = 150 if os.environ.get("CI") else 25
"""Per operation: over a thousand requests in all under CI (CI=true there, with time to spare);
a developer's `make test` sends a few hundred, to keep the whole suite within minutes."""


def test_no_generated_request_gets_a_server_error(live: tuple[str, dict[str, Any]]):
    base, document = live
    schema = schemathesis.openapi.from_dict(document)
    every = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    operations = [operation for operation in every if operation.path not in STREAMS]
    assert len(operations) >= 10
    sent = 0
    statuses: dict[int, int] = {}
    failures: list[str] = []
    with httpx.Client(base_url=base, headers=HEADERS, timeout=HANG) as client:
        for operation in operations:

            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
                database=None,
            )
            @given(case=operation.as_strategy(), wait=st.just(0))
            def probe(case: Any, wait: int) -> None:
                nonlocal sent
                if case.query and "wait" in case.query:
                    case.query["wait"] = wait  # a long-poll answers; it does not hang the fuzz
                kwargs = case.as_transport_kwargs(base_url=base)
                kwargs.pop("headers", None)
                method, target = kwargs.pop("method"), kwargs.pop("url")
                response = client.request(method, target, **_httpx(kwargs))
                sent += 1
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
                if response.status_code >= 500:
                    failures.append(f"{method} {target} {kwargs} -> {response.status_code}")

            probe()
    assert failures == []
    assert sent >= EXAMPLES * len(operations) // 2, (sent, statuses)
    assert {200, 404, 422} <= set(statuses), statuses  # it reached the handlers, and past them


def _httpx(kwargs: dict[str, Any]) -> dict[str, Any]:
    """requests-style keyword arguments, as httpx takes them."""
    out: dict[str, Any] = {}
    if "params" in kwargs:
        out["params"] = kwargs["params"]
    if "json" in kwargs:
        out["json"] = kwargs["json"]
    if "data" in kwargs:
        out["content"] = kwargs["data"]
    return out
