"""The API of several people's approvals, handing an approval on, and a decision signoff takes on
timeout: what every channel sees, and what a bad request gets (a 4xx, nothing written)."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from signoff import Policy, ToolCall
from signoff.agent import Agent, ModelTurn, tool
from signoff.gate import CheckContext, Gate
from signoff.server import Auth, Principal, Service, create_app
from signoff.store import SQLStore
from signoff.testing import ScriptedModel, call
from tests.deadline import HANG
from tests.server.test_policy_api import client_of

POLICY = Policy.from_dict(
    {
        "rules": [
            {"ask": "wire", "approvals": {"count": 2, "from": ["ops", "finance"]}},
            {"ask": "drain", "approvers": ["ops"]},
            {"ask": "restart", "on_timeout": {"after": "10m", "decide": "approve"}},
        ]
    }
)
TOKENS = {
    "olga": Principal(name="olga", roles=frozenset({"ops"})),
    "fay": Principal(name="fay", roles=frozenset({"finance"})),
    "otto": Principal(name="otto", roles=frozenset({"ops"})),
    "bob": Principal(name="bob"),
}


class Clock:
    now = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def service(store: SQLStore, clock: Clock) -> Service:
    return Service(store=store, gate=Gate(POLICY, store, clock=clock), agents=[])


def client(
    service: Service, token: str
) -> contextlib.AbstractAsyncContextManager[httpx.AsyncClient]:
    return client_of(service, token, TOKENS)


async def held(service: Service, tool: str, by: str = "bob") -> str:
    context = CheckContext(thread_id="t", requested_by=by, origin="langgraph")
    [outcome] = await service.gate.check([ToolCall(id=tool, name=tool, args={"n": 1})], context)
    assert outcome.approval is not None
    return outcome.approval.id


async def test_each_approval_counts_and_the_card_says_who_is_still_needed(service: Service):
    approval_id = await held(service, "wire")
    async with client(service, "olga") as olga, client(service, "otto") as otto:
        first = await olga.post(f"/v1/approvals/{approval_id}/decision", json={"kind": "approve"})
        assert first.status_code == 200, first.text
        shown = first.json()
        assert shown["status"] == "pending"
        assert [v["by"] for v in shown["votes"]] == ["olga"]
        assert shown["quorum"] == {"count": 2, "roles": ["ops", "finance"]}
        assert shown["needed"] == {"people": 1, "roles": ["finance"]}
        # otto has only ops, which olga stands for already: his approval cannot help.
        refused = await otto.post(f"/v1/approvals/{approval_id}/decision", json={"kind": "approve"})
        assert refused.status_code == 403 and "finance" in refused.json()["detail"]
        always = {"kind": "approve", "always": {"scope": "global"}}
        refused = await otto.post(f"/v1/approvals/{approval_id}/decision", json=always)
        assert refused.status_code in (403, 422)
    async with client(service, "fay") as fay:
        done = await fay.post(f"/v1/approvals/{approval_id}/decision", json={"kind": "approve"})
        assert done.json()["status"] == "approved"
        assert [v["by"] for v in done.json()["votes"]] == ["olga", "fay"]
        assert done.json()["needed"] is None


async def test_batch_decisions_count_the_same_way(service: Service):
    approval_id = await held(service, "wire")
    async with client(service, "olga") as olga:
        body = {"decisions": {approval_id: {"kind": "approve"}}}
        answer = await olga.post("/v1/approvals/decisions", json=body)
        assert answer.status_code == 200
        [shown] = answer.json()["items"]
        assert (shown["status"], shown["needed"]["people"]) == ("pending", 1)


async def test_an_approval_handed_on_is_in_the_assignees_view(service: Service):
    approval_id = await held(service, "drain")
    other = await held(service, "restart")
    async with client(service, "otto") as otto, client(service, "olga") as olga:
        note = {"to": "olga", "note": "the node in rack 4"}
        answer = await otto.post(f"/v1/approvals/{approval_id}/assign", json=note)
        assert answer.status_code == 200, answer.text
        assert answer.json()["assigned"]["to"] == "olga"
        mine = (await olga.get("/v1/approvals", params={"assigned": "me"})).json()["items"]
        assert [a["id"] for a in mine] == [approval_id]
        assert mine[0]["assigned"]["note"] == "the node in rack 4"
        assert (await otto.get("/v1/approvals", params={"assigned": "me"})).json()["items"] == []
        everyone = (await olga.get("/v1/approvals", params={"status": "pending"})).json()
        assert {a["id"] for a in everyone["items"]} == {approval_id, other}
        # To a role: everyone with it sees it as theirs.
        await olga.post(f"/v1/approvals/{approval_id}/assign", json={"to": "role:ops"})
        mine = (await otto.get("/v1/approvals", params={"assigned": "me"})).json()["items"]
        assert [a["id"] for a in mine] == [approval_id]
        log = (await olga.get("/v1/audit")).json()["items"]
        assert [e["data"]["to"] for e in log if e["action"] == "assign"] == ["olga", "role:ops"]


@pytest.mark.parametrize(
    ("token", "body", "status"),
    [
        ("bob", {"to": "olga"}, 403),  # bob may not decide a drain: he cannot hand it on
        ("otto", {"to": "bob"}, 422),  # nor may bob decide it: not his to be handed
        ("otto", {"to": "nobody"}, 422),  # no such principal
        ("otto", {"to": "role:dev"}, 422),
        ("otto", {}, 422),
        ("otto", {"to": ""}, 422),
        ("otto", {"to": "olga", "note": "x" * 2001}, 422),
        ("otto", {"to": "olga", "extra": 1}, 422),
        ("otto", {"to": ["olga"]}, 422),
    ],
)
async def test_a_bad_assignment_gets_a_4xx_and_writes_nothing(
    service: Service, token: str, body: dict[str, Any], status: int
):
    approval_id = await held(service, "drain")
    async with client(service, token) as http:
        answer = await http.post(f"/v1/approvals/{approval_id}/assign", json=body)
        assert answer.status_code == status, answer.text
        shown = (await http.get(f"/v1/approvals/{approval_id}")).json()
        assert shown["assigned"] is None


async def test_a_call_handed_to_a_name_no_token_gives_says_where_the_names_come_from(
    service: Service,
):
    approval_id = await held(service, "drain")
    async with client(service, "otto") as otto:
        answer = await otto.post(f"/v1/approvals/{approval_id}/assign", json={"to": "olgaa"})
    assert (answer.status_code, answer.json()["detail"]) == (
        422,
        "'olgaa' is not a known principal: the principals are the names auth.tokens gives in "
        "the server's config",
    )


async def test_without_authentication_a_call_handed_to_anyone_but_local_says_how_to_name_people(
    service: Service,
):
    approval_id = await held(service, "restart")
    app = create_app(service, Auth.none(roles=["admin"]))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
        ) as local,
    ):
        answer = await local.post(f"/v1/approvals/{approval_id}/assign", json={"to": "olga"})
    assert (answer.status_code, answer.json()["detail"]) == (
        422,
        "'olga' is not a known principal: without authentication (the demo, `signoff serve "
        "--no-auth`) the only principal is 'local'; to hand calls to people, serve a config "
        "whose auth.tokens name them",
    )


async def test_assigning_an_unknown_or_decided_approval(service: Service):
    approval_id = await held(service, "restart")
    async with client(service, "olga") as olga:
        missing = await olga.post("/v1/approvals/nope/assign", json={"to": "fay"})
        assert missing.status_code == 404
        await olga.post(f"/v1/approvals/{approval_id}/decision", json={"kind": "approve"})
        late = await olga.post(f"/v1/approvals/{approval_id}/assign", json={"to": "fay"})
        assert late.status_code == 409


async def test_a_decision_on_timeout_is_shown_as_signoffs_own(service: Service, clock: Clock):
    approval_id = await held(service, "restart")
    async with client(service, "olga") as olga:
        shown = (await olga.get(f"/v1/approvals/{approval_id}")).json()
        assert shown["on_timeout"] == {"decide": "approve", "reason": None}
        clock.now += timedelta(minutes=11)
        await service.gate.expire_due()
        shown = (await olga.get(f"/v1/approvals/{approval_id}")).json()
        assert (shown["status"], shown["decided_by"], shown["automatic"]) == (
            "approved",
            "signoff",
            True,
        )


def test_no_token_may_name_signoff_itself(tmp_path):
    from signoff.errors import PolicyError
    from signoff.server.config import load_config

    path = tmp_path / "signoff.yaml"
    path.write_text("auth:\n  tokens:\n    - {principal: signoff, token: t}\n")
    with pytest.raises(PolicyError, match="signoff decides as itself"):
        load_config(path)


wired: list[int] = []


@tool
def wire(n: int) -> str:
    """Wire money."""
    wired.append(n)
    return f"wired {n}"


async def test_a_run_of_signoffs_own_resumes_only_after_the_second_person(store: SQLStore):
    wired.clear()
    turns = [ModelTurn(tool_calls=(call("wire", n=5),)), ModelTurn(text="sent")]
    agent = Agent(name="payer", model=ScriptedModel(turns), tools=[wire])
    own = Service(store=store, gate=Gate(POLICY, store), agents=[agent], poll_interval=0.05)
    async with (
        client(own, "bob") as bob,
        client(own, "olga") as olga,
        client(own, "fay") as fay,
    ):
        started = await bob.post(
            "/v1/threads/t1/runs", params={"wait": 5}, json={"agent": "payer", "input": "pay"}
        )
        run = started.json()
        [pending] = run["pending_approvals"]
        first = await olga.post(f"/v1/approvals/{pending}/decision", json={"kind": "approve"})
        assert first.json()["status"] == "pending"
        assert (await olga.get(f"/v1/runs/{run['id']}")).json()["status"] == "paused"
        assert wired == []
        done = await fay.post(f"/v1/approvals/{pending}/decision", json={"kind": "approve"})
        assert done.json()["status"] == "approved"
        async with asyncio.timeout(HANG):
            while (await olga.get(f"/v1/runs/{run['id']}")).json()["status"] != "completed":
                await asyncio.sleep(0.02)
    assert wired == [5]
