"""Slack: the message a fake Slack API on loopback receives, and the signed button presses that
decide through the server as the mapped principal — refused when unsigned, stale, unmapped or
not the rule's approver, or made on a message older than the approval's last change; and the
message kept up to date in place (``chat.update``) as the call is edited, voted on and decided."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import httpx

from signoff import Approve, Edit, Policy
from signoff.gate import Gate
from signoff.notify import Notice, Notifications
from signoff.server import Auth, Principal, Service, create_app
from signoff.server.sso import SignOn
from signoff.server.sso.settings import OidcSettings
from signoff.store import SQLStore
from signoff.testing import call
from tests.notify.receivers import Receiver, Request, http_receiver
from tests.notify.test_outbox import notify

POLICY = Policy.from_dict({"rules": [{"ask": "delete_pod", "approvers": ["ops"]}]})
SIGNING = "slack-signing-secret"
TOKENS = {
    "olga-token": Principal(name="olga", roles=frozenset({"ops"})),
    "bob-token": Principal(name="bob"),
}


class SlackApi:
    """What Slack's Web API answers: each message posted gets a `ts` of its own in channel
    ``C0OPS`` (the channel's id, as Slack gives it back), and an update names the message."""

    def __init__(self) -> None:
        self.posted = 0

    def __call__(self, request: Request) -> dict[str, Any]:
        if request.path == "/chat.postMessage":
            self.posted += 1
            return {"ok": True, "channel": "C0OPS", "ts": f"{self.posted}.000100"}
        if request.path == "/chat.update":
            body = request.json()
            return {"ok": True, "channel": body["channel"], "ts": body["ts"]}
        return {"ok": True}


@asynccontextmanager
async def slack_app(
    store: SQLStore, auth: Auth | None = None, policy: Policy = POLICY
) -> AsyncIterator[tuple[Any, httpx.AsyncClient, Receiver]]:
    """The server (with `auth`, default the static `TOKENS`) with a Slack sink whose API is a
    fake on loopback; yields the gate, the notifier and the fake's URL, an in-process client of
    the server (no token: Slack sends none), and the fake's record."""
    fake = Receiver(answer=SlackApi())
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
        gate = Gate(policy, store)
        service = Service(store=store, gate=gate, agents=[], notifications=notifications)
        app = create_app(service, auth or Auth(tokens=TOKENS))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield (gate, notifications, url), client, fake


def press(
    action: str, approval_id: str, *, user: str, response_url: str, secret: str = SIGNING,
    age: float = 0, sink: str = "slack[0]", value: str | None = None,
) -> tuple[bytes, dict[str, str]]:  # fmt: skip
    """A signed press of a button; by default one of a message posted before buttons carried
    the version they were shown with (`value` gives the button's value as it is)."""
    value = value if value is not None else f"{sink}|{approval_id}"
    payload = {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower()},
        "actions": [{"action_id": action, "value": value, "type": "button"}],
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
        buttons = buttons_of(message)
        # Each button carries the version of the approval the message shows.
        assert buttons["signoff.approve"]["value"] == f"slack[0]|{approval_id}@1"
        assert buttons["signoff.reject"]["value"] == f"slack[0]|{approval_id}@1"
        assert buttons["signoff.open"]["url"] == f"https://signoff.example/approvals/{approval_id}"

        shown = buttons["signoff.approve"]["value"]
        body, headers = press("signoff.approve", approval_id, user="U1",
                              response_url=f"{url}/respond", value=shown)  # fmt: skip
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
        told, updated = (r.json() for r in fake.taken()[-2:])
        # In the request's thread; and the request's message shows the outcome, no buttons.
        assert (told["text"], told["thread_ts"], told["channel"]) == (
            "delete_pod approved by olga", "1.000100", "C0OPS",
        )  # fmt: skip
        assert fake.taken()[-1].path == "/chat.update"
        assert (updated["channel"], updated["ts"]) == ("C0OPS", "1.000100")
        assert updated["text"] == "delete_pod approved by olga"
        for message in (told, updated):
            assert list(buttons_of(message)) == ["signoff.open"]


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


def buttons_of(message: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A message's buttons, by action id."""
    actions = [b for b in message["blocks"] if b["type"] == "actions"]
    return {e["action_id"]: e for block in actions for e in block["elements"]}


def fields_of(message: dict[str, Any]) -> list[str]:
    """The short facts of a message, as "Label:\\nvalue"."""
    return [f["text"] for b in message["blocks"] for f in b.get("fields", [])]


def code_of(message: dict[str, Any], label: str) -> Any:
    """The JSON a message shows in the code block under `label`."""
    [text] = [
        b["text"]["text"]
        for b in message["blocks"]
        if b["type"] == "section" and b.get("text", {}).get("text", "").startswith(f"*{label}*\n")
    ]
    return json.loads(text.removeprefix(f"*{label}*\n```").removesuffix("```"))


FOUR_EYES = Policy.from_dict({"rules": [{"ask": "pay", "approvals": {"count": 2}}]})


async def test_an_edit_among_four_eyes_updates_the_message_in_place_and_its_old_buttons_are_refused(
    store: SQLStore,
):
    async with slack_app(store, policy=FOUR_EYES) as ((gate, notifications, url), client, fake):
        await store.outbox_events(limit=0)
        [held] = await gate.check([call("pay", amount=100, to="bob")])
        assert held.approval is not None
        approval_id = held.approval.id
        assert await notifications.pump() == 1
        [posted] = fake.taken()
        old = buttons_of(posted.json())["signoff.approve"]["value"]
        assert old == f"slack[0]|{approval_id}@1"
        assert "Approvals:\nnone yet (0 of 2)" in fields_of(posted.json())

        # olga edits: her edit is her approval, and the next person must see what she changed.
        edit = Edit(args={"amount": 999999, "to": "mallory"})
        await gate.decide(approval_id, edit, actor="olga", version=1)
        assert await notifications.pump() == 1
        [update] = fake.taken()[1:]
        assert update.path == "/chat.update"
        message = update.json()
        assert (message["channel"], message["ts"]) == ("C0OPS", "1.000100")  # the same message
        assert message["text"] == "Approval needed: pay (edited by olga)"
        assert code_of(message, "Arguments") == {"amount": 999999, "to": "mallory"}
        assert code_of(message, "Requested arguments") == {"amount": 100, "to": "bob"}
        facts = fields_of(message)
        assert "Edited by:\nolga" in facts and "Approvals:\nolga (1 of 2)" in facts
        assert "Version:\n2" in facts
        new = buttons_of(message)["signoff.approve"]["value"]
        assert new == f"slack[0]|{approval_id}@2"

        # carla presses Approve on the message as it was before the edit: refused, naming it.
        length = await store.audit_length()
        body, headers = press("signoff.approve", approval_id, user="U3",
                              response_url=f"{url}/respond", value=old)  # fmt: skip
        stale = await client.post("/v1/slack/interactions", content=body, headers=headers)
        assert stale.status_code == 200, stale.text
        assert stale.json()["decided"] is False
        detail = stale.json()["detail"]
        assert "changed since version 1" in detail and "edited by olga" in detail
        assert "amount 100 → 999999" in detail and "to 'bob' → 'mallory'" in detail
        reply = fake.taken()[-1]
        assert (reply.path, reply.json()["replace_original"]) == ("/respond", False)
        assert reply.json()["text"] == f"Nothing was decided: {detail}"
        waiting = await store.get_approval(approval_id)
        assert (waiting.status, waiting.version, [v.by for v in waiting.votes]) == (
            "pending", 2, ["olga"],
        )  # fmt: skip
        assert await store.audit_length() == length

        # On the message as it stands, her press completes the two approvals.
        body, headers = press("signoff.approve", approval_id, user="U3",
                              response_url=f"{url}/respond", value=new)  # fmt: skip
        done = await client.post("/v1/slack/interactions", content=body, headers=headers)
        assert done.json() == {"decided": True, "status": "edited"}
        assert await notifications.pump() == 1
        told, outcome = (r.json() for r in fake.taken()[-2:])
        assert told["thread_ts"] == "1.000100"
        assert fake.taken()[-1].path == "/chat.update"
        assert outcome["text"] == "pay approved with edits by carla"
        assert list(buttons_of(outcome)) == ["signoff.open"]
        assert code_of(outcome, "Arguments") == {"amount": 999999, "to": "mallory"}
        assert "Approvals:\nolga, carla (2 of 2)" in fields_of(outcome)


async def test_a_vote_an_assignment_and_a_new_policy_each_update_the_message(store: SQLStore):
    async with slack_app(store, policy=FOUR_EYES) as ((gate, notifications, _), _client, fake):
        await store.outbox_events(limit=0)
        [held] = await gate.check([call("pay", amount=5)])
        assert held.approval is not None
        approval_id = held.approval.id
        assert await notifications.pump() == 1

        async def told() -> list[tuple[str, str | None, dict[str, Any]]]:
            """What the next pump sends Slack: each request's path, thread and body."""
            before = len(fake.taken())
            await notifications.pump()
            return [(r.path, r.json().get("thread_ts"), r.json()) for r in fake.taken()[before:]]

        await gate.decide(approval_id, Approve(), actor="olga", version=1)
        [(path, _, voted)] = await told()  # nobody subscribed to votes: an update only
        assert path == "/chat.update"
        assert "Approvals:\nolga (1 of 2)" in fields_of(voted)
        assert buttons_of(voted)["signoff.approve"]["value"].endswith("@2")

        await gate.assign(approval_id, "bob", actor="olga", note="yours")
        [(path, thread, _), (update, _, assigned)] = await told()
        assert (path, thread, update) == ("/chat.postMessage", "1.000100", "/chat.update")
        assert "Assigned to:\nbob by olga" in fields_of(assigned)
        assert buttons_of(assigned)["signoff.approve"]["value"].endswith("@3")

        three = Policy.from_dict({"rules": [{"ask": "pay", "approvals": {"count": 3}}]})
        assert [a.id for a in await gate.use_policy(three)] == [approval_id]
        [(path, _, rejudged)] = await told()
        assert path == "/chat.update"
        # olga's approval was given under the old rule: it no longer counts.
        assert any(f.startswith("Approvals:\nnone yet (0 of ") for f in fields_of(rejudged))
        assert buttons_of(rejudged)["signoff.approve"]["value"].endswith("@4")


async def test_a_message_is_updated_again_when_the_call_changed_while_it_was_being_updated(
    store: SQLStore,
):
    """Two replicas updating one message at once: the one whose update lands last reads the
    approval again after it, and writes the newer version over its older read."""
    fake = Receiver(answer=SlackApi())
    gate = Gate(FOUR_EYES, store)
    [held] = await gate.check([call("pay", amount=5)])
    assert held.approval is not None
    approval_id = held.approval.id
    with http_receiver(fake) as url:
        settings = notify({"slack": [{"token": "x", "channel": "#ops", "api_url": url,
                                      "signing_secret": SIGNING}]})  # fmt: skip
        notifications = Notifications(store, settings)
        sink = notifications.slack("slack[0]")
        assert sink is not None
        older = await notifications.current(approval_id)
        assert older is not None
        first = Notice(id="d1", kind="requested", at=datetime.now(UTC), actor="agent",
                       tool="pay", approval=older, data={}, link=None)  # fmt: skip
        await sink.send(first)
        # The vote lands while a replica still holds the read from before it.
        await gate.decide(approval_id, Approve(), actor="olga", version=1)
        await sink.send(replace(first, id="d2", kind="assigned", data={"to": "x"}))
    updates = [r.json() for r in fake.taken() if r.path == "/chat.update"]
    assert [buttons_of(u)["signoff.approve"]["value"][-2:] for u in updates] == ["@1", "@2"]


async def test_an_incoming_webhook_posts_what_it_tells_of_and_updates_nothing(store: SQLStore):
    fake = Receiver()
    gate = Gate(FOUR_EYES, store)
    with http_receiver(fake) as url:
        notifications = Notifications(store, notify({"slack": [{"url": f"{url}/hook"}]}))
        await store.outbox_events(limit=0)
        [held] = await gate.check([call("pay", amount=5)])
        assert held.approval is not None
        await gate.decide(held.approval.id, Approve(), actor="olga", version=1)
        await gate.decide(held.approval.id, Approve(), actor="carla", version=2)
        assert await notifications.pump() == 2  # the request and the decision: no vote
    assert [(r.path, r.json()["text"]) for r in fake.taken()] == [
        ("/hook", "Approval needed: pay"),
        ("/hook", "pay approved by carla"),
    ]
    assert await store.notes("slack", held.approval.id) == []


async def test_a_button_whose_version_is_not_a_number_is_a_400(store: SQLStore):
    async with slack_app(store) as ((gate, _, url), client, _fake):
        [held] = await gate.check([call("delete_pod", name="a")])
        assert held.approval is not None
        for seen in ("x", "²", "1" * 11):
            value = f"slack[0]|{held.approval.id}@{seen}"
            body, headers = press("signoff.approve", held.approval.id, user="U1",
                                  response_url=url, value=value)  # fmt: skip
            answer = await client.post("/v1/slack/interactions", content=body, headers=headers)
            assert answer.status_code == 400 and "is not a number" in answer.json()["detail"]
        assert (await store.get_approval(held.approval.id)).status == "pending"
