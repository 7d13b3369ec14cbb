"""Sign-on with a provider that keeps people's groups out of their ID tokens (OIDC Core 5.4, as
oidc-provider does by default, and Auth0 or Okta may): the inbox asks the userinfo endpoint."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from signoff.server.sso import SignOn
from signoff.store import SQLStore, open_store
from tests.server.oidc_provider import (
    RunningProvider,
    free_port,
    provider_running,
    signed_in_by_hand,
)
from tests.server.test_oidc import served, settings_for


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProvider]:
    folder = tmp_path_factory.mktemp("provider")
    with provider_running(folder, port=free_port(), inbox="http://signoff", conform=True) as op:
        yield op


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLStore]:
    async with open_store(f"sqlite:///{tmp_path / 'signoff.db'}") as opened:
        yield opened


async def test_groups_only_the_userinfo_endpoint_gives_still_give_roles(
    provider: RunningProvider, store: SQLStore
):
    async with served(store, SignOn(settings_for(provider))) as client:
        await signed_in_by_hand(client, "ada")
        me = await client.get("/v1/me")
        assert me.json() == {"name": "ada", "roles": ["admin", "ops"], "authenticated": True}
