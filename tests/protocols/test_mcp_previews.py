"""The MCP gateway's previews: a held call is previewed by its server — a companion tool, or the
tool itself as a dry run, as the config's ``preview:`` says — and the preview is kept with its
approval. A ``signoff serve`` of its own cannot preview an edit (the tool is the gateway's); a
server that runs the gateway in its process can."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from mcp import Client

from signoff import Policy
from signoff.errors import PolicyError
from signoff.gate import Gate
from signoff.protocols.mcp.gateway import Gateway
from signoff.protocols.mcp.settings import GatewaySettings, PreviewSpec, UpstreamSpec
from signoff.protocols.mcp.upstream import Upstream
from signoff.server import Auth, Principal, Service, create_app
from signoff.server.config import load_config
from signoff.store import open_store
from tests.deadline import HANG
from tests.protocols.test_mcp_gateway import UPSTREAM, api, gateway, pending, ran, text


def plan(path: str) -> str:
    """What the upstream's ``plan_rm`` (and ``rm`` as a dry run) answers for `path`."""
    return f"--- a/listing\n+++ b/listing\n@@ -1,2 +1 @@\n-{path}\n keep.txt\n"


def gateway_config(tmp_path: Path, counted: Path) -> Path:
    document = {
        "database": f"sqlite+aiosqlite:///{tmp_path / 'signoff.db'}",
        "auth": {"tokens": [{"principal": "alice", "token": "alice-token"}]},
        "servers": {
            "up": {
                "command": sys.executable,
                "args": [str(UPSTREAM), "stdio"],
                "env": {"UPSTREAM_COUNT_FILE": str(counted)},
                "preview": {"rm": {"tool": "plan_rm"}},
            }
        },
        "rules": [{"ask": "rm"}],
        "gateway": {"wait": "20s", "principal": "carol", "preview_timeout": "5s"},
    }
    path = tmp_path / "signoff.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


async def test_a_companion_tool_previews_a_held_call_and_the_serve_api_shows_it(
    tmp_path: Path,
) -> None:
    counted = tmp_path / "count.txt"
    path = gateway_config(tmp_path, counted)
    async with api(path) as http, gateway(path) as client:
        call = asyncio.create_task(client.call_tool("rm", {"path": "old.txt"}))
        [held] = await pending(http)
        assert held["preview"] == {
            "kind": "diff", "body": plan("old.txt"), "truncated": False, "error": None,
        }  # fmt: skip
        assert ran(counted) == []  # the companion runs nothing

        # The tool is the gateway's, in another process: this server cannot preview an edit.
        assert held["preview_edits"] is False
        fresh = await http.post(
            f"/v1/approvals/{held['id']}/preview", json={"args": {"path": "new.txt"}}
        )
        assert fresh.status_code == 409
        assert "no preview of edited arguments here" in fresh.json()["detail"]

        decided = await http.post(f"/v1/approvals/{held['id']}/decision", json={"kind": "approve"})
        assert decided.status_code == 200
        assert text(await call) == "removed"
    assert ran(counted) == ["rm old.txt"]


@contextlib.asynccontextmanager
async def served_with_gateway(
    tmp_path: Path, how: PreviewSpec
) -> AsyncIterator[tuple[Gateway, httpx.AsyncClient, Path]]:
    """A `Gateway` over `mcp_upstream.py` whose ``rm`` is previewed `how`, and the API of a
    server running it in its own process (`Service.edit_previews`), as alice."""
    counted = tmp_path / "count.txt"
    spec = UpstreamSpec(
        name="up", command=sys.executable, args=(str(UPSTREAM), "stdio"),
        env={"UPSTREAM_COUNT_FILE": str(counted)}, previews={"rm": how},
    )  # fmt: skip
    async with open_store(f"sqlite+aiosqlite:///{tmp_path / 'in-process.db'}") as store:
        gate = Gate(Policy.from_dict({"rules": [{"ask": "rm"}]}), store)
        front = Gateway(gate, [Upstream(spec)], settings=GatewaySettings(principal="carol"))
        service = Service(store=store, gate=gate, agents=[], edit_previews=[front.edit_previews])
        app = create_app(service, Auth(tokens={"alice-token": Principal(name="alice")}))
        async with front.running(), app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://signoff",
                headers={"Authorization": "Bearer alice-token"},
            ) as http:  # fmt: skip
                yield front, http, counted


async def held(http: httpx.AsyncClient) -> dict[str, Any]:
    [item] = await pending(http)
    return item


async def test_a_dry_run_previews_a_held_call_and_an_edit_in_process(tmp_path: Path) -> None:
    async with (
        served_with_gateway(tmp_path, PreviewSpec(argument="dry_run")) as (front, http, counted),
        Client(front.server) as client,
    ):
        call = asyncio.create_task(client.call_tool("rm", {"path": "old.txt"}))
        approval = await held(http)
        assert approval["preview"]["body"] == plan("old.txt")
        assert approval["preview_edits"] is True

        fresh = await http.post(
            f"/v1/approvals/{approval['id']}/preview", json={"args": {"path": "new.txt"}}
        )
        assert fresh.status_code == 200, fresh.text
        assert fresh.json()["preview"] == {
            "kind": "diff", "body": plan("new.txt"), "truncated": False, "error": None,
        }  # fmt: skip

        edited = await http.post(
            f"/v1/approvals/{approval['id']}/decision",
            json={"kind": "edit", "args": {"path": "new.txt"}},
        )
        assert edited.status_code == 200
        async with asyncio.timeout(HANG):
            assert text(await call) == "removed"
    assert ran(counted) == ["rm new.txt"]  # the dry runs ran nothing


async def test_a_preview_the_server_refuses_says_so_and_the_call_still_waits(
    tmp_path: Path,
) -> None:
    async with (
        served_with_gateway(tmp_path, PreviewSpec(tool="plan_rm")) as (front, http, counted),
        Client(front.server) as client,
    ):
        call = asyncio.create_task(client.call_tool("rm", {"path": "/"}))
        approval = await held(http)
        assert approval["preview"]["error"] == "preview failed: refusing to plan /"
        rejected = await http.post(
            f"/v1/approvals/{approval['id']}/decision", json={"kind": "reject", "reason": "no"}
        )
        assert rejected.status_code == 200
        async with asyncio.timeout(HANG):
            assert (await call).is_error
    assert ran(counted) == []


def test_the_preview_config_is_read_and_its_mistakes_placed(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(
        "servers:\n"
        "  k8s:\n"
        "    command: kube-mcp\n"
        "    preview: {delete_pods: {argument: dry_run}, apply: {tool: diff}}\n"
        "gateway: {preview_timeout: 3s}\n"
    )
    loaded = load_config(path, gateway=True)
    assert loaded.servers["k8s"].previews == {
        "delete_pods": PreviewSpec(argument="dry_run"),
        "apply": PreviewSpec(tool="diff"),
    }
    assert loaded.gateway.preview_timeout == 3.0

    path.write_text(
        "servers:\n"
        "  k8s:\n"
        "    command: kube-mcp\n"
        "    preview: {delete_pods: {argument: dry_run, tool: diff}, apply: {tool: 3}}\n"
    )
    with pytest.raises(PolicyError) as caught:
        load_config(path, gateway=True)
    said = str(caught.value)
    assert "servers.k8s.preview.delete_pods: the preview of 'delete_pods' is either" in said
    assert "servers.k8s.preview.apply.tool: tool must be a non-empty string" in said
