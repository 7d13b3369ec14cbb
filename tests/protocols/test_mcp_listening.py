"""A 2026-07-28 client listens through the gateway (`subscriptions/listen`): it hears what the
server behind tells — its list changes, updates of the resources the client named — whether
that server speaks 2026-07-28 (its own listen streams) or only the 2025-era protocol (a
session's notifications), never an update of a resource the policy denies reading."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.subscriptions import (
    ResourceUpdated,
    ServerEvent,
    Subscription,
    SubscriptionLost,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from signoff import Policy
from signoff.gate import Gate
from signoff.protocols.mcp.gateway import Gateway
from signoff.protocols.mcp.listening import URIS
from signoff.protocols.mcp.settings import GatewaySettings, UpstreamSpec
from signoff.protocols.mcp.upstream import Upstream
from signoff.store import open_store
from tests.deadline import HANG

UPSTREAM = Path(__file__).with_name("mcp_upstream.py")
ERAS = {"2026-07-28": ("stdio",), "2025-11-25": ("stdio", "legacy")}
"""How the server behind is started, by the protocol revision it speaks."""
ALLOW = {"default": "allow"}
DENY_SECRETS = {"default": "allow", "rules": [{"deny": {"resource": "memo://secret/*"}}]}


@contextlib.asynccontextmanager
async def gateway(tmp_path: Path, policy: dict[str, Any], era: str) -> AsyncIterator[Gateway]:
    spec = UpstreamSpec(name="up", command=sys.executable, args=(str(UPSTREAM), *ERAS[era]))
    async with open_store(f"sqlite+aiosqlite:///{tmp_path / 'listen.db'}") as store:
        gate = Gate(Policy.from_dict(policy), store)
        settings = GatewaySettings(principal="carol")
        async with Gateway(gate, [Upstream(spec)], settings=settings).running() as front:
            # What is passed on, not a slow server: a loaded machine may take longer than the
            # half second a server's acknowledgment is waited for.
            front.listening.acknowledged = HANG
            yield front


async def heard_until(subscription: Subscription, last: ServerEvent) -> list[ServerEvent]:
    """The events of `subscription`, in order, up to `last`."""
    heard: list[ServerEvent] = []
    async with asyncio.timeout(HANG):
        async for event in subscription:
            heard.append(event)
            if event == last:
                return heard
    raise AssertionError(f"the stream ended before {last}: {heard}")


async def announce(client: Client, uri: str) -> None:
    """The server tells that its tools changed and that `uri` was updated."""
    await client.call_tool("announce", {"uri": uri})


@pytest.mark.parametrize("era", ERAS)
async def test_a_listening_client_hears_the_list_changes_and_updates_it_asked_for(
    tmp_path: Path, era: str
) -> None:
    async with (
        gateway(tmp_path, ALLOW, era) as front,
        Client(front.server, mode="auto") as client,
    ):
        capabilities = client.server_capabilities
        assert capabilities is not None and capabilities.tools is not None
        assert capabilities.tools.list_changed is True
        wanted = ["memo://folder/a"]
        async with client.listen(tools_list_changed=True, resource_subscriptions=wanted) as sub:
            assert sub.honored.resource_subscriptions == wanted
            await announce(client, "memo://folder/a")
            heard = await heard_until(sub, ResourceUpdated(uri="memo://folder/a"))
    assert heard == [ToolsListChanged(), ResourceUpdated(uri="memo://folder/a")]


@pytest.mark.parametrize("era", ERAS)
async def test_a_resource_the_policy_denies_is_not_honored_and_its_updates_never_arrive(
    tmp_path: Path, era: str
) -> None:
    async with (
        gateway(tmp_path, DENY_SECRETS, era) as front,
        Client(front.server, mode="auto") as client,
    ):
        asked = ["memo://secret/c", "memo://folder/a"]
        async with client.listen(resource_subscriptions=asked) as sub:
            assert sub.honored.resource_subscriptions == ["memo://folder/a"]
            await announce(client, "memo://secret/c")
            await announce(client, "memo://folder/a")
            heard = await heard_until(sub, ResourceUpdated(uri="memo://folder/a"))
    assert heard == [ResourceUpdated(uri="memo://folder/a")]


@pytest.mark.parametrize("era", ERAS)
async def test_two_listening_clients_each_hear_what_they_asked_for_and_no_more(
    tmp_path: Path, era: str
) -> None:
    """The first asks for tool list changes and one resource, the second for another
    resource: each hears its own, nothing of the other's (told to the server first)."""
    async with (
        gateway(tmp_path, ALLOW, era) as front,
        Client(front.server, mode="auto") as first,
        Client(front.server, mode="auto") as second,
        first.listen(tools_list_changed=True, resource_subscriptions=["memo://folder/a"]) as a,
        second.listen(resource_subscriptions=["memo://folder/b"]) as b,
    ):
        await announce(first, "memo://folder/a")
        await announce(first, "memo://folder/b")
        heard_a = await heard_until(a, ResourceUpdated(uri="memo://folder/a"))
        heard_b = await heard_until(b, ResourceUpdated(uri="memo://folder/b"))
    assert heard_a == [ToolsListChanged(), ResourceUpdated(uri="memo://folder/a")]
    assert heard_b == [ResourceUpdated(uri="memo://folder/b")]


async def test_listen_streams_past_the_gateways_limit_are_refused_until_one_closes(
    tmp_path: Path,
) -> None:
    async with (
        gateway(tmp_path, ALLOW, "2026-07-28") as front,
        Client(front.server, mode="auto") as client,
    ):
        front.listening.limit = 1
        async with client.listen(tools_list_changed=True):
            with pytest.raises(MCPError, match="Subscription limit reached"):
                async with client.listen(tools_list_changed=True):
                    pass
        async with asyncio.timeout(HANG):
            while front.listening.open:  # the gateway ends its side of the stream in its time
                await asyncio.sleep(0)
        async with client.listen(tools_list_changed=True) as sub:
            await announce(client, "memo://folder/a")
            assert await heard_until(sub, ToolsListChanged()) == [ToolsListChanged()]


@pytest.mark.parametrize(
    ("uris", "said"),
    [
        ([f"memo://folder/{n}" for n in range(URIS + 1)], f"at most {URIS}"),
        (["memo://folder/%2e%2e/secret/c"], "plain URI"),
    ],
)
async def test_a_listen_naming_too_many_or_unjudgeable_resources_is_refused(
    tmp_path: Path, uris: list[str], said: str
) -> None:
    async with (
        gateway(tmp_path, DENY_SECRETS, "2026-07-28") as front,
        Client(front.server, mode="auto") as client,
    ):
        with pytest.raises(MCPError, match=said) as refused:
            async with client.listen(resource_subscriptions=uris):
                pass
        assert refused.value.code == INVALID_PARAMS
        assert "resourceSubscriptions" in str(refused.value)
        assert front.listening.open == 0


async def test_a_listening_client_is_told_when_the_server_behind_goes_away(
    tmp_path: Path,
) -> None:
    """Its stream ends abruptly (the SDK's `SubscriptionLost`): it listens again and
    refetches, rather than waiting for changes nobody will tell."""
    async with (
        gateway(tmp_path, ALLOW, "2026-07-28") as front,
        Client(front.server, mode="auto") as client,
        client.listen(tools_list_changed=True) as sub,
    ):
        crashed = await client.call_tool("crash", {})
        assert crashed.is_error
        with pytest.raises(SubscriptionLost):
            await heard_until(sub, ToolsListChanged())
