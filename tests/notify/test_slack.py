"""Slack: the message a fake Slack API on loopback receives, and the signed button presses that
decide through the server as the mapped principal — refused when unsigned, stale, unmapped or
not the rule's approver."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlencode

import httpx

from signoff import Policy
from signoff.gate import Gate
from signoff.notify import Notifications
from signoff.server import Auth, Principal, Service, create_app
from signoff.server.sso import SignOn
from signoff.server.sso.settings import OidcSettings
from signoff.store import SQLStore
from signoff.testing import call
from tests.notify.receivers import Receiver, http_receiver
from tests.notify.test_outbox import notify

POLICY = Policy.from_dict({"rules": [{"ask": "delete_pod", "approvers": ["ops"]}]})
SIGNING = "slack-signing-secret"
TOKENS = {
    "olga-token": Principal(name="olga", roles=frozenset({"ops"})),
    "bob-token": Principal(name="bob"),
}


@asynccontextmanager
async def slack_app(
    store: SQLStore, auth: Auth | None = None
) -> AsyncIterator[tuple[Any, httpx.AsyncClient, Receiver]]:
    """The server (with `auth`, default the static `TOKENS`) with a Slack sink whose API is a
    fake on loopback; yields the notifier, an in-process client of the server (no token: Slack
    sends none), and the fake's record."""
    fake = Receiver(answer={"ok": True, "ts": "1.2"})
    with http_receiver(fake) as url:
        settings = notify(
            {
                "base_url": "https://signoff.example",
                "slack": [
                    {
                        "token": "xoxb-test",
                        "channel": "#ops",
                        "api_url": url,
                        "signing_secret": SIGNING,
                        "users": {
                            "U1": "olga",
                            "U2": "bob",
                            "U3": {"principal": "carla", "roles": ["ops"]},
                            "U4": "ada",  # a person who signs in: no token of her own
                        },
                    }
                ],
            }
        )
        notifications = Notifications(store, settings)
        gate = Gate(POLICY, store)
        service = Service(store=store, gate=gate, agents=[], notifications=notifications)
        app = create_app(service, auth or Auth(tokens=TOKENS))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield (gate, notifications, url), client, fake


def press(
    action: str, approval_id: str, *, user: str, response_url: str, secret: str = SIGNING,
    age: float = 0, sink: str = "slack[0]",
) -> tuple[bytes, dict[str, str]]:  # fmt: skip
    payload = {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower()},
        "actions": [{"action_id": action, "value": f"{sink}|{approval_id}", "type": "button"}],
        "response_url": response_url,
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    stamp = str(int(time.time() - age))
    mac = hmac.new(secret.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256).hexdigest()
    return body, {
        "x-slack-request-timestamp": stamp,
        "x-slack-signature": f"v0={mac}",
        "content-type": "application/x-www-form-urlencoded",
    }


async def test_a_slack_message_shows_the_call_and_its_buttons_decide_as_the_mapped_user(
    store: SQLStore,
):
    async with slack_app(store) as ((gate, notifications, url), client, fake):
        await store.outbox_events(limit=0)
        [held] = await gate.check(
            [call("delete_pod", name="<!channel> <https://evil.example|click>")]
        )
        approval_id = held.approval.id
        assert await notifications.pump() == 1
        [posted] = fake.taken()
        assert posted.path == "/chat.postMessage"
        assert posted.headers["authorization"] == "Bearer xoxb-test"
        message = posted.json()
        assert message["channel"] == "#ops"
        assert message["text"] == "Approval needed: delete_pod"
        text = json.dumps(message["blocks"])
        assert "&lt;!channel&gt; &lt;https://evil.example|click&gt;" in text
        assert "<!channel>" not in text and "<https://evil" not in text
        [actions] = [b for b in message["blocks"] if b["type"] == "actions"]
        buttons = {e["action_id"]: e for e in actions["elements"]}
        assert buttons["signoff.approve"]["value"] == f"slack[0]|{approval_id}"
        assert buttons["signoff.reject"]["value"] == f"slack[0]|{approval_id}"
        assert buttons["signoff.open"]["url"] == f"https://signoff.example/approvals/{approval_id}"

        body, headers = press("signoff.approve", approval_id, user="U1",
                              response_url=f"{url}/respond")  # fmt: skip
        answer = await client.post("/v1/slack/interactions", content=body, headers=headers)
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"decided": True, "status": "approved"}
        approval = await store.get_approval(approval_id)
        assert (approval.status, approval.decided_by) == ("approved", "olga")
        [decided] = [e for e in await store.audit_log() if e.action == "decision"]
        assert decided.actor == "olga"
        reply = fake.taken()[-1]
        assert reply.path == "/respond"
        assert reply.json()["replace_original"] is True
        assert "approved by olga" in reply.json()["text"]

        assert await notifications.pump() == 1  # the decision is told too
        assert fake.taken()[-1].json()["text"] == "delete_pod approved by olga"
        [links] = [b for b in fake.taken()[-1].json()["blocks"] if b["type"] == "actions"]
        assert [e["action_id"] for e in links["elements"]] == ["signoff.open"]  # no buttons


async def test_a_slack_user_mapped_to_a_person_who_signs_in_has_the_roles_she_signed_in_with(
    store: SQLStore,
):
    settings = OidcSettings(issuer="https://login.example", client_id="inbox", session_key="k" * 32)
    sign_on = SignOn(settings)
    auth = Auth(tokens=TOKENS, sign_on=sign_on)
    async with slack_app(store, auth) as ((gate, _, url), client, _fake):
        [held] = await gate.check([call("delete_pod", name="a")])
        body, headers = press("signoff.approve", held.approval.id, user="U4",
                              response_url=f"{url}/respond")  # fmt: skip
        unseen = await client.post("/v1/slack/interactions", content=body, headers=headers)
        assert unseen.json()["decided"] is False  # not signed in here yet: no roles
        assert (await store.get_approval(held.approval.id)).status == "pending"

        sign_on.seen(Principal(name="ada", roles=frozenset({"ops"})))  # she signed in
        body, headers = press("signoff.approve", held.approval.id, user="U4",
                              response_url=f"{url}/respond")  # fmt: skip
        seen = await client.post("/v1/slack/interactions", content=body, headers=headers)
        assert seen.json() == {"decided": True, "status": "approved"}
        approval = await store.get_approval(held.approval.id)
        assert (approval.status, approval.decided_by) == ("approved", "ada")


async def test_a_reject_button_rejects_with_who_pressed_it(store: SQLStore):
    async with slack_app(store) as ((gate, _, url), client, _fake):
        [held] = await gate.check([call("delete_pod", name="a")])
        body, headers = press("signoff.reject", held.approval.id, user="U3",
                              response_url=f"{url}/respond")  # fmt: skip
        answer = await client.post("/v1/slack/interactions", content=body, headers=headers)
        assert answer.json() == {"decided": True, "status": "rejected"}
        approval = await store.get_approval(held.approval.id)
        assert approval.decided_by == "carla"
        assert approval.decision.reason == "rejected in Slack by carla"  # type: ignore[union-attr]


async def test_a_call_that_needs_two_people_keeps_its_buttons_after_the_first(store: SQLStore):
    async with slack_app(store) as ((_, _, url), client, fake):
        two = Gate(Policy.from_dict({"rules": [{"ask": "wire", "approvals": {"count": 2}}]}), store)
        [held] = await two.check([call("wire", amount=1)])
        approval_id = held.approval.id  # type: ignore[union-attr]
        for user, status in (("U1", "pending"), ("U3", "approved")):
            body, headers = press("signoff.approve", approval_id, user=user,
                                  response_url=f"{url}/respond")  # fmt: skip
            answer = await client.post("/v1/slack/interactions", content=body, headers=headers)
            assert answer.json()["status"] == status
        first, second = (r.json() for r in fake.taken()[-2:])
        assert first["replace_original"] is False  # the buttons stay for the second person
        assert first["text"] == "wire: approved by olga (in Slack); it still needs 1 more approval"
        assert (second["replace_original"], second["text"]) == (
            True,
            "wire: approved by carla (in Slack)",
        )
    assert [v.by for v in (await store.get_approval(approval_id)).votes] == ["olga", "carla"]


async def test_unsigned_stale_unmapped_and_unauthorized_presses_decide_nothing(store: SQLStore):
    async with slack_app(store) as ((gate, _, url), client, fake):
        [held] = await gate.check([call("delete_pod", name="a")])
        approval_id = held.approval.id
        respond = f"{url}/respond"

        async def post(**kwargs: Any) -> httpx.Response:
            body, headers = press("signoff.approve", approval_id, response_url=respond, **kwargs)
            return await client.post("/v1/slack/interactions", content=body, headers=headers)

        forged = await post(user="U1", secret="not the signing secret")
        assert forged.status_code == 401
        assert "signature does not match" in forged.json()["detail"]
        stale = await post(user="U1", age=600)
        assert stale.status_code == 401
        assert "replay window" in stale.json()["detail"]
        odd_headers = {
            b"x-slack-request-timestamp": "\u00b2".encode(),
            b"x-slack-signature": b"\xe9",
        }
        # A digit that is not an ASCII one, a signature that is not ASCII: 401, never a 500.
        odd = await client.post("/v1/slack/interactions", content=b"x", headers=odd_headers)
        assert odd.status_code == 401
        other_sink = await post(user="U1", sink="slack[7]")
        assert other_sink.status_code == 401
        unsigned = await client.post(
            "/v1/slack/interactions", content=b"payload=%7B%7D",
            headers={"content-type": "application/x-www-form-urlencoded"},
        )  # fmt: skip
        assert unsigned.status_code == 401
        stranger = await post(user="U9")
        assert stranger.json()["decided"] is False
        assert "not mapped to a signoff principal" in stranger.json()["detail"]
        not_ops = await post(user="U2")
        assert not_ops.json()["decided"] is False
        assert "'bob' may not decide this" in not_ops.json()["detail"]
        assert (await store.get_approval(approval_id)).status == "pending"
        # Each refusal that reached a known sink was told to the presser alone.
        replies = [r.json() for r in fake.taken() if r.path == "/respond"]
        assert [r["replace_original"] for r in replies] == [False, False]


async def test_a_reply_goes_only_to_slack_or_the_sinks_own_api(store: SQLStore):
    elsewhere = Receiver()
    async with slack_app(store) as ((gate, _, _url), client, fake):
        with http_receiver(elsewhere) as other:
            [held] = await gate.check([call("delete_pod", name="a")])
            body, headers = press("signoff.approve", held.approval.id, user="U1",
                                  response_url=f"{other}/steal")  # fmt: skip
            answer = await client.post("/v1/slack/interactions", content=body, headers=headers)
    assert answer.json()["decided"] is True
    assert elsewhere.taken() == []
    assert [r.path for r in fake.taken()] == []


async def test_a_malformed_interaction_is_a_400_and_the_link_button_is_ignored(store: SQLStore):
    async with slack_app(store) as ((gate, _, url), client, _fake):
        [held] = await gate.check([call("delete_pod", name="a")])
        body, headers = press("signoff.open", held.approval.id, user="U1", response_url=url)
        ignored = await client.post("/v1/slack/interactions", content=body, headers=headers)
        assert (ignored.status_code, ignored.json()) == (200, {})
        junk = b"payload=not-json"
        stamp = str(int(time.time()))
        mac = hmac.new(SIGNING.encode(), f"v0:{stamp}:".encode() + junk, hashlib.sha256)
        signed = {"x-slack-request-timestamp": stamp, "x-slack-signature": f"v0={mac.hexdigest()}"}
        bad = await client.post("/v1/slack/interactions", content=junk, headers=signed)
        assert bad.status_code == 400
        assert (await store.get_approval(held.approval.id)).status == "pending"


async def test_a_signed_payload_nested_5000_deep_is_a_400_that_names_the_depth(store: SQLStore):
    async with slack_app(store) as ((gate, _, url), client, fake):
        [held] = await gate.check([call("delete_pod", name="a")])
        pressed = {
            "type": "block_actions",
            "user": {"id": "U1"},
            "actions": [{"action_id": "signoff.approve", "value": f"slack[0]|{held.approval.id}"}],
            "response_url": f"{url}/respond",
        }
        # Written out: json.dumps itself gives up long before 5,000 levels.
        deep = "[" * 5000 + "]" * 5000
        payload = json.dumps(pressed)[:-1] + f', "state": {deep}}}'
        body = urlencode({"payload": payload}).encode()
        stamp = str(int(time.time()))
        mac = hmac.new(SIGNING.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256)
        signed = {"x-slack-request-timestamp": stamp, "x-slack-signature": f"v0={mac.hexdigest()}"}
        answer = await client.post("/v1/slack/interactions", content=body, headers=signed)
        assert (answer.status_code, answer.json()["detail"]) == (
            400,
            "the interaction's payload is nested more than 64 levels deep; "
            "signoff reads at most 64",
        )
        assert (await store.get_approval(held.approval.id)).status == "pending"
        assert [r.path for r in fake.taken()] == []  # nobody was told anything either


async def test_sinks_of_one_slack_app_map_the_presser_by_the_sink_that_posted(store: SQLStore):
    fake = Receiver(answer={"ok": True})
    with http_receiver(fake) as url:
        common = {"token": "xoxb-test", "api_url": url, "signing_secret": SIGNING}
        settings = notify(
            {
                "slack": [
                    {**common, "name": "ops", "channel": "#ops",
                     "users": {"U1": {"principal": "olga", "roles": ["ops"]}}},
                    {**common, "name": "dev", "channel": "#dev", "users": {"U1": "dan"}},
                ]
            }
        )  # fmt: skip
        gate = Gate(POLICY, store)
        service = Service(
            store=store, gate=gate, agents=[], notifications=Notifications(store, settings)
        )
        app = create_app(service, Auth(tokens=TOKENS))
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test"
        ) as client:
            [held] = await gate.check([call("delete_pod", name="a")])
            assert held.approval is not None
            # U1 is olga (ops) in #ops but dan (no roles) in #dev: a press on #dev's message
            # is dan's, whatever #ops says.
            body, headers = press("signoff.approve", held.approval.id, user="U1",
                                  response_url=f"{url}/r", sink="dev")  # fmt: skip
            dev = await client.post("/v1/slack/interactions", content=body, headers=headers)
            assert dev.json()["decided"] is False
            assert "'dan' may not decide this" in dev.json()["detail"]
            body, headers = press("signoff.approve", held.approval.id, user="U1",
                                  response_url=f"{url}/r", sink="ops")  # fmt: skip
            ops = await client.post("/v1/slack/interactions", content=body, headers=headers)
            assert ops.json() == {"decided": True, "status": "approved"}
