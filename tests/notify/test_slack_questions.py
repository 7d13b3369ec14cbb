"""A question in Slack, through the server and a fake Slack API on loopback: its message shows the
question, a few choices as buttons whose press answers it as the mapped user, and a form in the
modal the Answer button opens — a misfit answer refused under the field the gate names, a second
answer refused naming who gave the first."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any
from urllib.parse import urlencode

import httpx

from signoff import Answer, Policy, ToolCall
from signoff.store import SQLStore
from tests.notify.test_slack import SIGNING, buttons_of, fields_of, slack_app

QUESTIONS = Policy.from_dict({"rules": [{"ask": {"question": "*"}, "approvers": ["ops"]}]})
FORM = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email", "title": "Billing email"},
        "seats": {"type": "integer", "minimum": 1},
        "urgent": {"type": "boolean"},
    },
    "required": ["email"],
}


def question(**args: Any) -> ToolCall:
    return ToolCall(id="q1", name="ask_person", args=args, kind="question", agent="provisioner")


async def interact(client: httpx.AsyncClient, payload: dict[str, Any]) -> dict[str, Any]:
    """Send `payload` as Slack sends an interaction, signed; the server's answer."""
    body = urlencode({"payload": json.dumps(payload)}).encode()
    stamp = str(int(time.time()))
    mac = hmac.new(SIGNING.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256).hexdigest()
    headers = {
        "x-slack-request-timestamp": stamp,
        "x-slack-signature": f"v0={mac}",
        "content-type": "application/x-www-form-urlencoded",
    }
    answer = await client.post("/v1/slack/interactions", content=body, headers=headers)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def click(action: str, value: str, *, user: str, url: str) -> dict[str, Any]:
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower()},
        "trigger_id": "1337.42.abcd",
        "actions": [{"action_id": action, "value": value, "type": "button"}],
        "response_url": f"{url}/respond",
    }


def submit(view: dict[str, Any], values: dict[str, Any], *, user: str) -> dict[str, Any]:
    submitted = view | {"state": {"values": values}}
    return {"type": "view_submission", "user": {"id": user}, "view": submitted}


async def test_a_choice_button_answers_the_question_and_a_second_answer_names_who_gave_the_first(
    store: SQLStore,
):
    async with slack_app(store, policy=QUESTIONS) as ((gate, notifications, url), client, fake):
        await store.outbox_events(limit=0)
        asked = question(question="Which region?", choices=["eu-west", "us-east"])
        [held] = await gate.check([asked])
        assert held.approval is not None
        assert await notifications.pump() == 1
        [posted] = fake.taken()
        message = posted.json()
        assert message["text"] == "Question for you: Which region?"
        assert "Question:\nWhich region?" in fields_of(message)
        sections = [b["text"]["text"] for b in message["blocks"] if b.get("text")]
        assert "Choose one:\n- eu-west\n- us-east" in sections
        buttons = buttons_of(message)
        value = f"slack[0]|{held.approval.id}@1"
        assert {
            k: (b["text"]["text"], b["value"]) for k, b in buttons.items() if "url" not in b
        } == {
            "signoff.answer.0": ("eu-west", value),
            "signoff.answer.1": ("us-east", value),
            "signoff.reject": ("Decline", value),
        }  # a choice is answered by its button: no Approve, no modal to open

        answered = await interact(client, click("signoff.answer.1", value, user="U1", url=url))
        assert answered == {"decided": True, "status": "answered"}
        approval = await store.get_approval(held.approval.id)
        assert (approval.status, approval.decided_by) == ("answered", "olga")
        assert approval.decision == Answer(value="us-east")
        await notifications.pump()  # the message, updated in place to the answer
        [*_, updated] = [r.json() for r in fake.taken() if r.path == "/chat.update"]
        assert updated["text"] == "ask_person answered by olga"
        assert 'Answer:\n"us-east"' in fields_of(updated)
        assert set(buttons_of(updated)) == {"signoff.open"}

        second = await interact(client, click("signoff.answer.0", value, user="U3", url=url))
        assert second["decided"] is False
        assert "already answered by 'olga'" in second["detail"]
        told = [r.json() for r in fake.taken() if r.path == "/respond"]
        assert told[-1]["text"].startswith("Nothing was decided: ")
        assert "already answered by 'olga'" in told[-1]["text"]


async def test_a_form_is_answered_in_a_modal_whose_misfit_fields_the_gate_names(store: SQLStore):
    async with slack_app(store, policy=QUESTIONS) as ((gate, notifications, url), client, fake):
        await store.outbox_events(limit=0)
        [held] = await gate.check([question(question="Who pays?", schema=FORM)])
        assert held.approval is not None
        assert await notifications.pump() == 1
        [posted] = fake.taken()
        buttons = buttons_of(posted.json())
        assert set(buttons) == {"signoff.reply", "signoff.reject", "signoff.open"}
        sections = [b["text"]["text"] for b in posted.json()["blocks"] if b.get("text")]
        assert "Fill in:\n- Billing email (required)\n- seats\n- urgent" in sections

        value = buttons["signoff.reply"]["value"]
        opened = await interact(client, click("signoff.reply", value, user="U1", url=url))
        assert opened == {"opened": True}
        [request] = [r for r in fake.taken() if r.path == "/views.open"]
        assert request.headers["authorization"] == "Bearer xoxb-test"
        assert request.json()["trigger_id"] == "1337.42.abcd"
        view = request.json()["view"]
        inputs = {b["block_id"]: b for b in view["blocks"] if b["type"] == "input"}
        assert {k: (b["element"]["type"], b["optional"]) for k, b in inputs.items()} == {
            "email": ("email_text_input", False),
            "seats": ("number_input", True),
            "urgent": ("checkboxes", True),
        }

        typed: dict[str, Any] = {
            "email": {"value": {"type": "email_text_input", "value": "ap at example"}},
            "seats": {"value": {"type": "number_input", "value": "3"}},
            "urgent": {"value": {"type": "checkboxes", "selected_options": [{"value": "yes"}]}},
        }
        refused = await interact(client, submit(view, typed, user="U1"))
        assert refused == {"response_action": "errors", "errors": {"email": "not an email"}}
        assert (await store.get_approval(held.approval.id)).status == "pending"

        typed["email"]["value"]["value"] = "ap@example.com"
        stranger = await interact(client, submit(view, typed, user="U2"))  # bob: not ops
        assert stranger["response_action"] == "errors"
        assert "ops" in stranger["errors"]["email"]

        taken = await interact(client, submit(view, typed, user="U1"))
        assert taken == {"response_action": "clear"}
        approval = await store.get_approval(held.approval.id)
        assert approval.decided_by == "olga"
        assert approval.decision == Answer(
            value={"email": "ap@example.com", "seats": 3, "urgent": True}
        )

        again = await interact(client, submit(view, typed | {"seats": {}}, user="U3"))
        assert "already answered by 'olga'" in again["errors"]["email"]


async def test_a_modal_answers_on_the_version_its_message_showed_and_a_stale_one_is_refused(
    store: SQLStore,
):
    async with slack_app(store, policy=QUESTIONS) as ((gate, notifications, url), client, fake):
        await store.outbox_events(limit=0)
        [held] = await gate.check([question(question="Which cost centre?")])
        assert held.approval is not None
        assert await notifications.pump() == 1
        [posted] = fake.taken()
        value = buttons_of(posted.json())["signoff.reply"]["value"]
        assert value.endswith("@1")
        # Handed on after the message was posted: what the message showed is not what stands.
        await gate.assign(held.approval.id, "role:ops", actor="carol", roles=["ops"])

        opened = await interact(client, click("signoff.reply", value, user="U1", url=url))
        assert opened == {"opened": True}
        [request] = [r for r in fake.taken() if r.path == "/views.open"]
        view = request.json()["view"]
        assert view["private_metadata"] == value
        [block] = [b for b in view["blocks"] if b["type"] == "input"]
        typed = {block["block_id"]: {"value": {"type": "plain_text_input", "value": "CC-7"}}}
        stale = await interact(client, submit(view, typed, user="U1"))
        assert stale["response_action"] == "errors"
        [why] = stale["errors"].values()
        assert "changed since" in why and "assigned to role:ops by carol" in why, why
        approval = await store.get_approval(held.approval.id)
        assert (approval.status, approval.version) == ("pending", 2)
