"""A server behind the MCP gateway asks a person (2025-11-25 elicitation in the middle of a
call) and its client cannot answer: the question waits in signoff's inbox, is answered through
the API from another store, and the answer goes back to the server. The official `mcp` client
(declaring no elicitation), in-process, in front of the SDK server of `mcp_asking.py`, on both
stores."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, types

from signoff import Policy
from signoff.gate import Gate
from signoff.protocols.mcp.forward import MAX_ROUNDS
from signoff.protocols.mcp.gateway import Gateway
from signoff.protocols.mcp.questions import MAX_WAITING
from signoff.protocols.mcp.settings import GatewaySettings, UpstreamSpec
from signoff.protocols.mcp.upstream import Upstream
from signoff.store import SQLStore
from signoff.types import Answer, Approval, Reject
from tests.deadline import HANG
from tests.integrations.harness import until
from tests.integrations.inbox import inbox_api
from tests.protocols.test_mcp_gateway import UPSTREAM, ran, text

ASKING = Path(__file__).with_name("mcp_asking.py")
POLICY = Policy.from_dict(
    {
        "default": "allow",
        "rules": [{"ask": {"question": "elicitation"}, "server": "billing",
                   "approvers": ["finance"]}],
    }
)  # fmt: skip
"""The server's tools run; its questions are answered by finance (bob, in `inbox_api`)."""


@contextlib.asynccontextmanager
async def fronting(store: SQLStore, **chosen: Any) -> AsyncIterator[Gateway]:
    spec = UpstreamSpec(name="billing", command=sys.executable, args=(str(ASKING),))
    settings = GatewaySettings(**{"principal": "carol", "wait": HANG, **chosen})
    front = Gateway(Gate(POLICY, store), [Upstream(spec)], settings=settings)
    async with front.running():
        yield front


async def asked(store: SQLStore) -> Approval:
    """The one question waiting, once it waits."""

    async def waits() -> bool:
        return bool(await store.list_approvals(status="pending"))

    await until(waits)
    [question] = await store.list_approvals(status="pending")
    return question


async def test_a_servers_question_waits_in_the_inbox_and_its_answer_goes_back(
    store: SQLStore, store_url: str
) -> None:
    async with (
        fronting(store) as front,
        Client(front.server, mode="legacy") as client,  # it declares no elicitation
        inbox_api(store_url, POLICY) as api,  # another store, as `signoff serve`'s
    ):
        call = asyncio.ensure_future(client.call_tool("invoice", {"customer": "acme"}))
        question = await asked(store)
        listed = (await api.get("/v1/approvals", params={"status": "pending"})).json()
        [shown] = listed["items"]
        url = f"/v1/approvals/{question.id}/decision"
        answered = await api.post(url, json={"kind": "answer", "value": {"email": "ap@acme.com"}})
        result = await call

    assert (shown["kind"], shown["tool"], shown["server"]) == ("question", "elicitation", "billing")
    assert shown["args"]["question"] == "Where do invoices for acme go?"
    assert (question.requested_by, question.origin) == ("carol", "mcp-gateway")
    assert answered.status_code == 200, answered.text
    assert text(result) == "accepted ap@acme.com"
    [relay] = [e.data for e in await store.audit_log() if e.action == "relay"]
    assert relay == {"server": "billing", "method": "elicitation/create", "answered": True,
                     "to": "inbox", "approval": question.id}  # fmt: skip


async def test_a_declined_question_is_the_servers_decline(store: SQLStore, store_url: str) -> None:
    async with (
        fronting(store) as front,
        Client(front.server, mode="legacy") as client,
        inbox_api(store_url, POLICY) as api,
    ):
        call = asyncio.ensure_future(client.call_tool("invoice", {"customer": "acme"}))
        question = await asked(store)
        declined = await api.post(
            f"/v1/approvals/{question.id}/decision", json={"kind": "reject", "reason": "no"}
        )
        result = await call

    assert declined.status_code == 200, declined.text
    assert text(result) == "declined"


async def test_an_answer_that_does_not_fit_the_servers_form_is_refused_and_nothing_written(
    store: SQLStore, store_url: str
) -> None:
    async with (
        fronting(store) as front,
        Client(front.server, mode="legacy") as client,
        inbox_api(store_url, POLICY) as api,
    ):
        call = asyncio.ensure_future(client.call_tool("invoice", {"customer": "acme"}))
        question = await asked(store)
        before = await store.audit_log()
        url = f"/v1/approvals/{question.id}/decision"
        refused = await api.post(url, json={"kind": "answer", "value": {"email": "nope"}})
        still = await store.get_approval(question.id)
        after = await store.audit_log()
        await api.post(url, json={"kind": "answer", "value": {"email": "ap@acme.com"}})
        result = await call

    assert refused.status_code == 422, refused.text
    assert "answer.email: not an email" in refused.text
    assert (still.status, still.version) == ("pending", question.version)
    assert after == before
    assert text(result) == "accepted ap@acme.com"


async def test_nobody_answering_in_time_cancels_and_the_question_expires(store: SQLStore) -> None:
    async with (
        fronting(store, wait=0.0) as front,
        Client(front.server, mode="legacy") as client,
    ):
        result = await client.call_tool("invoice", {"customer": "acme"})

    assert text(result) == "cancelled"
    [question] = await store.list_approvals()
    assert (question.call.kind, question.status) == ("question", "expired")


async def test_a_form_outside_the_flat_subset_is_refused_and_nothing_held(store: SQLStore) -> None:
    async with (
        fronting(store) as front,
        Client(front.server, mode="legacy") as client,
    ):
        result = await client.call_tool("nested", {})

    said = text(result)
    assert said.startswith("refused: signoff cannot ask a person this through its inbox: ")
    assert "question.schema.properties.address.type" in said
    assert await store.list_approvals() == []
    [relay] = [e.data for e in await store.audit_log() if e.action == "relay"]
    assert relay["answered"] is False and "question.schema" in relay["refused"]


@pytest.mark.heavy
async def test_a_server_asking_more_at_once_than_the_inbox_holds_is_refused_the_rest(
    store: SQLStore,
) -> None:
    """A server may ask as many questions at once as it likes: past `MAX_WAITING` of its own
    waiting in the asker's name, one is refused, nothing held."""
    gate = Gate(POLICY, store)
    spec = UpstreamSpec(name="billing", command=sys.executable, args=(str(ASKING),))
    settings = GatewaySettings(principal="carol", wait=HANG)
    front = Gateway(gate, [Upstream(spec)], settings=settings)
    async with front.running(), Client(front.server, mode="legacy") as client:
        call = asyncio.ensure_future(client.call_tool("flood", {"count": MAX_WAITING + 3}))

        async def refused_and_held() -> bool:
            refusals = [e for e in await store.audit_log() if "refused" in e.data]
            return len(refusals) == 3 and len(await store.list_approvals()) == MAX_WAITING

        await until(refused_and_held)
        for question in await store.list_approvals(status="pending"):
            await gate.decide(question.id, Reject(reason="no"), actor="bob", roles=("finance",))
        result = await call

    assert text(result) == f"{MAX_WAITING} declined, 3 refused"
    assert len(await store.list_approvals()) == MAX_WAITING


@pytest.mark.parametrize("route", ["client", "auto"])
async def test_a_client_that_answers_forms_is_asked_itself_unless_the_config_says_inbox(
    store: SQLStore, route: str
) -> None:
    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"email": "me@carol.org"})

    async with (
        fronting(store, server_questions=route) as front,
        Client(front.server, mode="legacy", elicitation_callback=person) as client,
    ):
        result = await client.call_tool("invoice", {"customer": "acme"})

    assert text(result) == "accepted me@carol.org"
    assert await store.list_approvals() == []


@pytest.mark.heavy
async def test_with_the_inbox_route_even_a_client_that_answers_forms_is_not_asked(
    store: SQLStore, store_url: str
) -> None:
    asked_client: list[str] = []

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked_client.append(params.message)
        return types.ElicitResult(action="accept", content={"email": "me@carol.org"})

    async with (
        fronting(store, server_questions="inbox") as front,
        Client(front.server, mode="legacy", elicitation_callback=person) as client,
        inbox_api(store_url, POLICY) as api,
    ):
        call = asyncio.ensure_future(client.call_tool("invoice", {"customer": "acme"}))
        question = await asked(store)
        await api.post(f"/v1/approvals/{question.id}/decision",
                       json={"kind": "answer", "value": {"email": "ap@acme.com"}})  # fmt: skip
        result = await call

    assert (text(result), asked_client) == ("accepted ap@acme.com", [])


@pytest.mark.heavy
async def test_with_the_client_route_a_client_without_elicitation_is_not_asked(
    store: SQLStore,
) -> None:
    async with (
        fronting(store, server_questions="client") as front,
        Client(front.server, mode="legacy") as client,
    ):
        result = await client.call_tool("invoice", {"customer": "acme"})

    assert result.is_error  # the server could not ask: as before the inbox route
    assert await store.list_approvals() == []


async def test_a_policy_that_denies_a_servers_questions_refuses_them_saying_why(
    store: SQLStore,
) -> None:
    deny = {"deny": {"question": "elicitation"}, "server": "billing", "reason": "no questions"}
    policy = Policy.from_dict({"default": "allow", "rules": [deny]})
    spec = UpstreamSpec(name="billing", command=sys.executable, args=(str(ASKING),))
    front = Gateway(Gate(policy, store), [Upstream(spec)], settings=GatewaySettings(wait=HANG))
    async with front.running(), Client(front.server, mode="legacy") as client:
        result = await client.call_tool("invoice", {"customer": "acme"})

    assert result.is_error
    assert "signoff blocked this: the agent may not ask this: no questions" in text(result)
    assert await store.list_approvals() == []


# -- 2026-07-28: a server's input requests, answered from the inbox ---------------------------


@pytest.mark.parametrize("held", [False, True], ids=["allowed", "approved"])
async def test_a_2026_servers_input_request_is_asked_in_the_inbox_and_the_call_goes_on_once(
    store: SQLStore, store_url: str, tmp_path: Path, held: bool
) -> None:
    """A 2026-07-28 client that declared no elicitation: the request declares form elicitation
    for it, the server's input-required result is held as a question, and once answered the
    gateway makes the request again with the answer — the server asks once, sends once. Where
    the policy holds the call, the approval comes first."""
    counted = tmp_path / "count.txt"
    rules = [{"ask": {"question": "elicitation"}, "approvers": ["finance"]}]
    rules += [{"ask": "transfer", "approvers": ["finance"]}] if held else []
    policy = {"default": "allow", "rules": rules}
    async with (
        fronting_2026(store, counted, policy) as front,
        Client(front.server, mode="auto") as client,
        inbox_api(store_url, Policy.from_dict(policy)) as api,
    ):
        assert client.protocol_version == "2026-07-28"
        call = asyncio.ensure_future(client.call_tool("transfer", {"to": "bob"}))
        if held:
            approval = await asked(store)
            assert approval.call.kind == "tool" and ran(counted) == []
            approved = await api.post(f"/v1/approvals/{approval.id}/decision",
                                      json={"kind": "approve"})  # fmt: skip
            assert approved.status_code == 200, approved.text
        question = await asked(store)
        answered = await api.post(f"/v1/approvals/{question.id}/decision",
                                  json={"kind": "answer", "value": {"confirm": True}})  # fmt: skip
        result = await call

    assert answered.status_code == 200, answered.text
    assert (question.call.kind, question.call.server) == ("question", "up")
    assert question.call.args["question"] == "Send it to bob?"
    assert text(result) == "sent to bob"
    assert ran(counted) == ["asked bob", "sent bob"]


@pytest.mark.heavy
async def test_a_2026_servers_input_request_declined_in_the_inbox_is_its_decline(
    store: SQLStore, store_url: str, tmp_path: Path
) -> None:
    counted = tmp_path / "count.txt"
    policy = {"default": "allow", "rules": [{"ask": {"question": "*"}}]}
    async with (
        fronting_2026(store, counted, policy) as front,
        Client(front.server, mode="auto") as client,
        inbox_api(store_url, Policy.from_dict(policy)) as api,
    ):
        call = asyncio.ensure_future(client.call_tool("transfer", {"to": "bob"}))
        question = await asked(store)
        await api.post(f"/v1/approvals/{question.id}/decision",
                       json={"kind": "reject", "reason": "not today"})  # fmt: skip
        result = await call

    assert text(result) == "not sent"
    assert ran(counted) == ["asked bob"]


@pytest.mark.heavy
@pytest.mark.parametrize("sample", [False, True], ids=["forms", "forms-and-sampling"])
async def test_a_2026_server_that_asks_for_ever_is_refused_after_the_rounds_of_a_call(
    store: SQLStore, tmp_path: Path, sample: bool
) -> None:
    """The inbox answers `MAX_ROUNDS` rounds of one call, counted through the client's own
    retries; then the call is refused — the client, which declared no elicitation, is never
    handed the form."""
    counted = tmp_path / "count.txt"
    policy = {"default": "allow", "rules": [{"ask": {"question": "*"}}]}

    async def model(context: Any, params: types.CreateMessageRequestParams) -> Any:
        said = types.TextContent(type="text", text="rent")
        return types.CreateMessageResult(role="assistant", content=said, model="m")

    async with (
        fronting_2026(store, counted, policy, wait=0.0) as front,
        Client(
            front.server, mode="auto", sampling_callback=model, input_required_max_rounds=99
        ) as client,
    ):
        result = await client.call_tool("transfer", {"to": "bob", "nag": True, "sample": sample})

    assert result.is_error
    assert f"asked for input more than {MAX_ROUNDS} times" in text(result)
    assert len(await store.list_approvals()) == MAX_ROUNDS
    assert ran(counted) == ["asked bob"] * (MAX_ROUNDS + 1)


@contextlib.asynccontextmanager
async def fronting_2026(
    store: SQLStore, counted: Path, policy: dict[str, Any], **chosen: Any
) -> AsyncIterator[Gateway]:
    """The gateway over `mcp_upstream.py`, whose ``transfer`` asks to confirm: over 2026-07-28
    in an input-required result."""
    spec = UpstreamSpec(
        name="up", command=sys.executable, args=(str(UPSTREAM), "stdio"),
        env={"UPSTREAM_COUNT_FILE": str(counted)},
    )  # fmt: skip
    settings = GatewaySettings(**{"principal": "carol", "wait": HANG, **chosen})
    front = Gateway(Gate(Policy.from_dict(policy), store), [Upstream(spec)], settings=settings)
    async with front.running():
        yield front


# -- the gateway's own ask tool ---------------------------------------------------------------


@pytest.mark.heavy
@pytest.mark.parametrize("offered", [False, True])
async def test_the_ask_tool_is_listed_only_when_the_config_offers_it(
    store: SQLStore, offered: bool
) -> None:
    async with (
        fronting(store, ask_tool=offered) as front,
        Client(front.server, mode="legacy") as client,
    ):
        names = [t.name for t in (await client.list_tools()).tools]

    assert ("ask_person" in names) == offered
    assert "invoice" in names


async def test_an_ask_tool_call_is_a_question_answered_as_json_and_structured_content(
    store: SQLStore, store_url: str
) -> None:
    region = {"question": "Which region?", "choices": ["eu-west", "us-east"]}
    policy = Policy.from_dict({"rules": [{"ask": {"question": "ask_person"},
                                          "approvers": ["finance"]}]})  # fmt: skip
    settings = GatewaySettings(principal="carol", wait=HANG, ask_tool=True)
    front = Gateway(Gate(policy, store), [], settings=settings)
    async with (
        front.running(),
        Client(front.server, mode="auto") as client,
        inbox_api(store_url, policy) as api,
    ):
        call = asyncio.ensure_future(client.call_tool("ask_person", region))
        question = await asked(store)
        await api.post(f"/v1/approvals/{question.id}/decision",
                       json={"kind": "answer", "value": "us-east"})  # fmt: skip
        result = await call

    told = {"status": "answered", "answer": "us-east", "answered_by": "bob"}
    assert (question.call.kind, question.call.name, question.call.server) == (
        "question", "ask_person", None)  # fmt: skip
    assert (result.is_error, result.structured_content) == (False, told)
    assert json.loads(text(result)) == told


@pytest.mark.heavy
async def test_a_2026_servers_form_goes_to_the_inbox_and_its_other_input_requests_to_the_client(
    store: SQLStore, store_url: str, tmp_path: Path
) -> None:
    """A client that declared sampling, not elicitation: the server asks both at once. The form
    is asked in the inbox; the client is then asked only for its model's answer (never the form
    it cannot show), and its retry goes to the server with the inbox's answer too."""
    counted = tmp_path / "count.txt"
    policy = {"default": "allow", "rules": [{"ask": {"question": "*"}}]}
    sampled: list[str] = []

    async def model(context: Any, params: types.CreateMessageRequestParams) -> Any:
        sampled.append(str(params.messages[0].content.text))  # type: ignore[union-attr]
        said = types.TextContent(type="text", text="rent")
        return types.CreateMessageResult(role="assistant", content=said, model="m")

    async with (
        fronting_2026(store, counted, policy) as front,
        Client(front.server, mode="auto", sampling_callback=model) as client,
        inbox_api(store_url, Policy.from_dict(policy)) as api,
    ):
        call = asyncio.ensure_future(client.call_tool("transfer", {"to": "bob", "sample": True}))
        question = await asked(store)
        assert sampled == []  # the client is asked after the inbox answered
        await api.post(f"/v1/approvals/{question.id}/decision",
                       json={"kind": "answer", "value": {"confirm": True}})  # fmt: skip
        result = await call

    assert text(result) == "sent to bob (rent)"
    assert sampled == ["Why?"]
    assert ran(counted) == ["asked bob", "sent bob"]
    relays = [e.data for e in await store.audit_log() if e.action == "relay"]
    assert [(r["method"], r.get("to")) for r in relays] == [
        ("elicitation/create", "inbox"), ("sampling/createMessage", None)]  # fmt: skip


@pytest.mark.heavy
async def test_the_ask_tool_asked_again_waits_on_its_question_and_once_answered_asks_anew(
    store: SQLStore,
) -> None:
    """Past `gateway.wait` the call answers pending; the same call again picks up the same
    question, then its answer, once: asked after that, it is a new question."""
    region = {"question": "Which region?", "choices": ["eu-west", "us-east"]}
    policy = Policy.from_dict({"rules": [{"ask": {"question": "*"}}]})
    gate = Gate(policy, store)
    settings = GatewaySettings(principal="carol", wait=0.0, ask_tool=True)
    front = Gateway(gate, [], settings=settings)
    async with front.running(), Client(front.server, mode="legacy") as client:
        first = await client.call_tool("ask_person", region)
        again = await client.call_tool("ask_person", region)
        question = (first.structured_content or {})["approval_id"]
        await gate.decide(question, Answer(value="eu-west"), actor="olga")
        answered = await client.call_tool("ask_person", region)
        anew = await client.call_tool("ask_person", region)

    assert (first.structured_content or {})["status"] == "pending_approval"
    assert text(first).startswith("Nobody answered yet: this question waits for a person's answer")
    assert again.structured_content == first.structured_content
    assert answered.structured_content == {
        "status": "answered", "answer": "eu-west", "answered_by": "olga"}  # fmt: skip
    assert (anew.structured_content or {})["status"] == "pending_approval"
    assert (anew.structured_content or {})["approval_id"] != question
