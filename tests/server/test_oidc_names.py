"""One person, one name, through the API: people sign in at a real OpenID provider
(tests/js/oidc_provider.mjs) under names that differ only in case — ``Mallory`` and ``mallory``
are two accounts there, and one person here — and decide through the API, on both stores. Names
that could pass for another's, or for a machine's, are refused at sign-in with the reason, in
the provider's access tokens, and among the config's principals."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from signoff import Policy
from signoff.agent import Agent, Message, ModelTurn, ToolSpec, tool
from signoff.errors import PolicyError
from signoff.gate import Gate
from signoff.server import Auth, Principal, Service, create_app
from signoff.server.config import load_config
from signoff.server.sso import OidcSettings, SignOn
from signoff.server.sso.session import SESSION_COOKIE
from signoff.store import SQLStore
from signoff.types import ToolCall
from tests.deadline import HANG
from tests.server.oidc_provider import (
    AUDIENCE,
    RunningProvider,
    free_port,
    provider_running,
    sign_in_by_hand,
    signed_in_by_hand,
)

POLICY = {
    "rules": [
        {"ask": "pay", "approvals": {"count": 2, "distinct": True}},
        {"ask": "charge", "approvers": ["ops"], "forbid_self_approval": True},
        {"ask": "restart"},
    ]
}
MACHINE = {"machine-token": Principal(name="machine", roles=frozenset({"ops"}))}
ran: list[str] = []


@tool
def pay(target: str) -> str:
    """Pay someone."""
    ran.append(f"pay {target}")
    return "paid"


@tool
def charge(target: str) -> str:
    """Charge a card."""
    ran.append(f"charge {target}")
    return "charged"


@tool
def restart(target: str) -> str:
    """Restart a service."""
    ran.append(f"restart {target}")
    return "restarted"


class Model:
    """Calls the tool the user names on what they name ("pay bob"), then says it is done."""

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        last = messages[-1]
        if last.role == "tool":
            return ModelTurn(text="done")
        name, target = last.content.split()
        return ModelTurn(tool_calls=(ToolCall(id="c1", name=name, args={"target": target}),))


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProvider]:
    folder = tmp_path_factory.mktemp("provider")
    with provider_running(folder, port=free_port(), inbox="http://signoff") as running:
        yield running


@pytest.fixture(autouse=True)
def nothing_ran() -> None:
    ran.clear()


class People:
    """Clients of one in-process server, each with its own cookies: one per person."""

    def __init__(self, app: Any, stack: contextlib.AsyncExitStack) -> None:
        self.app = app
        self.stack = stack

    async def client(self, **headers: str) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=self.app)
        client = httpx.AsyncClient(transport=transport, base_url="http://signoff", headers=headers)
        return await self.stack.enter_async_context(client)

    async def signed_in(self, name: str) -> httpx.AsyncClient:
        """A client signed in as `name` at the provider, sending what a page of the inbox
        sends (its ``Origin``)."""
        client = await self.client(Origin="http://signoff")
        await signed_in_by_hand(client, name)
        return client


@contextlib.asynccontextmanager
async def people(provider: RunningProvider, store: SQLStore) -> AsyncIterator[People]:
    settings = OidcSettings(
        issuer=provider.issuer,
        client_id="inbox",
        client_secret="inbox-secret",
        audience=AUDIENCE,
        session_key="k" * 40,
        roles={"robots": frozenset({"ops"}), "sre": frozenset({"ops", "admin"})},
    )
    service = Service(
        store=store,
        gate=Gate(Policy.from_dict(POLICY), store),
        agents=[Agent(name="desk", model=Model(), tools=[pay, charge, restart])],
        poll_interval=0.05,
    )
    auth = Auth(tokens=MACHINE, sign_on=SignOn(settings, sessions=store))
    app = create_app(service, auth)
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(app.router.lifespan_context(app))
        yield People(app, stack)


async def started(client: httpx.AsyncClient, text: str, *, thread: str = "t1") -> dict[str, Any]:
    """A run of the desk agent started by `client`'s person, once it paused or ended."""
    answer = await client.post(
        f"/v1/threads/{thread}/runs", params={"wait": 10}, json={"agent": "desk", "input": text}
    )
    assert answer.status_code == 201, answer.text
    run: dict[str, Any] = answer.json()
    return run


async def ended(client: httpx.AsyncClient, run_id: str) -> None:
    """Once the run has ended: its event stream ends with it."""
    async with asyncio.timeout(HANG):
        stream = await client.get(f"/v1/runs/{run_id}/events")
    assert stream.status_code == 200, stream.text


async def decide(client: httpx.AsyncClient, approval_id: str, **body: Any) -> httpx.Response:
    return await client.post(
        f"/v1/approvals/{approval_id}/decision", json={"kind": "approve"} | body
    )


async def test_four_eyes_count_mallory_and_mallory_in_another_case_as_one_person(
    provider: RunningProvider, store: SQLStore
):
    async with people(provider, store) as at:
        machine = await at.client(Authorization="Bearer machine-token")
        upper, lower, ada = [await at.signed_in(n) for n in ("Mallory", "mallory", "ada")]
        run = await started(machine, "pay bob")
        [held] = run["pending_approvals"]
        assert (await decide(upper, held)).json()["status"] == "pending"
        again = await decide(lower, held)  # the same person: it changes nothing
        assert again.status_code == 200, again.text
        assert (again.json()["status"], len(again.json()["votes"])) == ("pending", 1)
        assert ran == []
        done = await decide(ada, held)
        assert (done.json()["status"], done.json()["decided_by"]) == ("approved", "ada")
        votes = (await store.get_approval(held)).votes
        assert [v.by for v in votes] == ["Mallory", "ada"]


async def test_the_requester_under_another_spelling_is_never_one_of_the_four_eyes(
    provider: RunningProvider, store: SQLStore
):
    async with people(provider, store) as at:
        upper, lower = await at.signed_in("Mallory"), await at.signed_in("mallory")
        run = await started(upper, "pay carol")
        [held] = run["pending_approvals"]
        refused = await decide(lower, held)
        assert refused.status_code == 403, refused.text
        assert refused.json()["detail"].startswith("'mallory'")
        assert not (await store.get_approval(held)).votes


async def test_self_approval_is_refused_under_another_spelling_of_the_requester(
    provider: RunningProvider, store: SQLStore
):
    async with people(provider, store) as at:
        asker, approver = await at.signed_in("Ada"), await at.signed_in("ada")  # ada: ops
        run = await started(asker, "charge card-1")
        [held] = run["pending_approvals"]
        refused = await decide(approver, held)
        assert refused.status_code == 403, refused.text
        assert "'ada' started this run (as 'Ada')" in refused.json()["detail"]
        assert "forbids self-approval" in refused.json()["detail"]
        assert (await store.get_approval(held)).pending
        assert ran == []


async def test_a_grant_never_covers_its_granter_s_own_call_under_another_spelling(
    provider: RunningProvider, store: SQLStore
):
    async with people(provider, store) as at:
        machine = await at.client(Authorization="Bearer machine-token")
        ada, asker = await at.signed_in("ada"), await at.signed_in("ADA")
        first = await started(machine, "charge card-2")
        [held] = first["pending_approvals"]
        always = {"scope": "agent", "with_args": True}
        granted = await decide(ada, held, always=always)
        assert granted.json()["status"] == "approved", granted.text
        own = await started(asker, "charge card-2", thread="t2")  # ada's own call, shouted
        assert own["status"] == "paused", own
        await ended(machine, first["id"])
        assert ran == ["charge card-2"]  # the first call's run only


async def test_a_thread_grant_covers_its_requester_under_another_spelling(
    provider: RunningProvider, store: SQLStore
):
    async with people(provider, store) as at:
        upper, lower, ada = [await at.signed_in(n) for n in ("Mallory", "mallory", "ada")]
        first = await started(upper, "restart web", thread="t3")
        [held] = first["pending_approvals"]
        always = {"scope": "thread", "with_args": True}
        assert (await decide(ada, held, always=always)).json()["status"] == "approved"
        await ended(upper, first["id"])
        later = await started(lower, "restart web", thread="t3")  # the same person asks again
        assert later["status"] == "completed", later
        assert ran == ["restart web", "restart web"]


async def test_an_approval_handed_to_a_name_is_in_that_person_s_inbox_however_spelt(
    provider: RunningProvider, store: SQLStore
):
    async with people(provider, store) as at:
        machine = await at.client(Authorization="Bearer machine-token")
        lower = await at.signed_in("mallory")
        run = await started(machine, "restart db")
        [held] = run["pending_approvals"]
        handed = await machine.post(f"/v1/approvals/{held}/assign", json={"to": "MALLORY"})
        assert handed.status_code == 200, handed.text
        assert handed.json()["assigned"]["to"] == "MALLORY"  # shown as it was written
        mine = await lower.get("/v1/approvals", params={"assigned": "me"})
        assert [a["id"] for a in mine.json()["items"]] == [held]
        named = await machine.get("/v1/approvals", params={"assigned": "Mallory"})
        assert [a["id"] for a in named.json()["items"]] == [held]
        invisible = await machine.post(f"/v1/approvals/{held}/assign", json={"to": "mal\u200blory"})
        assert invisible.status_code == 422, invisible.text
        assert "U+200B ZERO WIDTH SPACE" in invisible.json()["detail"]


REFUSED = {
    "machine ": "'machine ' has white space around it",
    "Machine": "'Machine' is the name of one of auth.tokens' principals",
    "Signoff": "'Signoff' is signoff itself ('signoff'), never a person",
    "mal\u200blory": "(U+200B ZERO WIDTH SPACE)",
    "mal\u202elory": "(U+202E RIGHT-TO-LEFT OVERRIDE)",
    "mal\nlory": "has a control character (U+000A)",
    "mal\u2028lory": "has a line separator (U+2028 LINE SEPARATOR)",
    "role:ops": "reads as an assignment to a role",
}


@pytest.mark.parametrize("name", list(REFUSED))
async def test_a_name_that_could_pass_for_another_is_refused_at_sign_in_with_the_reason(
    provider: RunningProvider, store: SQLStore, caplog: pytest.LogCaptureFixture, name: str
):
    caplog.set_level(logging.INFO, logger="signoff.server.sso")
    async with people(provider, store) as at:
        client = await at.client()
        refused = await sign_in_by_hand(client, name)
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"] == "Forbidden"
        assert REFUSED[name] in refused.json()["detail"]
        assert SESSION_COOKIE not in client.cookies
        assert (await client.get("/v1/me")).status_code == 401
    assert REFUSED[name] in caplog.text  # told in the log too


LOOK_ALIKE_TOKENS = {
    "Machine": "'Machine' is the name of one of auth.tokens' principals",
    "SIGNOFF": "'SIGNOFF' is signoff itself",
    "ma\u200bchine": "(U+200B ZERO WIDTH SPACE)",
    "machine\u00a0": "has white space around it",
}


@pytest.mark.parametrize("name", list(LOOK_ALIKE_TOKENS))
async def test_an_access_token_naming_a_look_alike_gets_401_and_the_reason_is_logged(
    provider: RunningProvider, store: SQLStore, caplog: pytest.LogCaptureFixture, name: str
):
    now = int(time.time())
    claims = {"iss": provider.issuer, "aud": AUDIENCE, "sub": name, "iat": now, "exp": now + 600}
    token = provider.mint(claims)
    caplog.set_level(logging.INFO, logger="signoff.server.sso")
    async with people(provider, store) as at:
        client = await at.client(Authorization=f"Bearer {token}")
        assert (await client.get("/v1/me")).status_code == 401
    assert LOOK_ALIKE_TOKENS[name] in caplog.text


FULL_WIDTH_ADA = "\uff41\uff44\uff41"
TOKENS_CONFIG = """\
auth:
  tokens:
{tokens}
rules:
  - ask: delete_pod
"""


@pytest.mark.parametrize(
    ("principals", "problem"),
    [
        (["ada", "Ada"], "4:19: auth.tokens[1].principal: 'Ada' and 'ada' are one principal"),
        (["ada", FULL_WIDTH_ADA], f"4:19: auth.tokens[1].principal: '{FULL_WIDTH_ADA}' and 'ada'"),
        (["Signoff"], "3:19: auth.tokens[0].principal: 'Signoff' is who signoff decides as"),
        (["machine "], "3:19: auth.tokens[0].principal: 'machine ' has white space around it"),
        (["ma\u200bchine"], "'ma\\u200bchine' has an invisible formatting character (U+200B"),
        (["role:ops"], "'role:ops' reads as an assignment to a role (role:NAME)"),
    ],
)  # fmt: skip
def test_the_config_refuses_principals_that_could_pass_for_another(
    tmp_path: Path, principals: list[str], problem: str
):
    tokens = "\n".join(
        f"    - {{principal: {json.dumps(name)}, token: t{index}}}"
        for index, name in enumerate(principals)
    )
    path = tmp_path / "signoff.yaml"
    path.write_text(TOKENS_CONFIG.format(tokens=tokens), encoding="utf-8")
    with pytest.raises(PolicyError) as raised:
        load_config(path)
    assert problem in str(raised.value), str(raised.value)


def test_one_principal_may_have_several_tokens_under_one_spelling(tmp_path: Path):
    tokens = "    - {principal: ada, token: t0}\n    - {principal: ada, token: t1}"
    path = tmp_path / "signoff.yaml"
    path.write_text(TOKENS_CONFIG.format(tokens=tokens))
    assert {p.name for p in load_config(path).tokens.values()} == {"ada"}


async def test_a_grant_is_revoked_by_its_granter_under_another_spelling(
    provider: RunningProvider, store: SQLStore
):
    async with people(provider, store) as at:
        machine = await at.client(Authorization="Bearer machine-token")
        upper, lower = await at.signed_in("Mallory"), await at.signed_in("mallory")
        run = await started(machine, "restart api")
        [held] = run["pending_approvals"]
        await decide(upper, held, always={"scope": "agent", "with_args": True})
        [grant] = (await machine.get("/v1/grants")).json()["items"]
        revoked = await lower.delete(f"/v1/grants/{grant['id']}")
        assert revoked.status_code == 200, revoked.text
        assert revoked.json()["revoked_by"] == "mallory"


async def test_the_requester_is_told_that_four_eyes_need_others_under_another_spelling(
    provider: RunningProvider, store: SQLStore
):
    async with people(provider, store) as at:
        upper, lower = await at.signed_in("Mallory"), await at.signed_in("mallory")
        [held] = (await started(upper, "pay dave"))["pending_approvals"]
        refused = await decide(lower, held)
        assert refused.status_code == 403, refused.text
        assert "people other than the one who asked" in refused.json()["detail"]
