"""Notifications from the durable outbox, to a real webhook receiver on loopback: every event
told, signed, retried while the receiver is down, and sent once — across two replicas too."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from signoff import Policy
from signoff.errors import OutcomeUnknown
from signoff.gate import Gate
from signoff.gate.once import Ledger
from signoff.notify import BadSignature, Notifications, read_notify, verify_signature
from signoff.policy.reader import Reader
from signoff.store import SQLStore, open_store
from signoff.testing import call
from signoff.types import Approve, Edit, Reject
from tests.deadline import HANG
from tests.notify.receivers import Receiver, free_port, http_receiver

POLICY = Policy.from_dict({"rules": [{"ask": ["delete_pod", "scale"]}, {"allow": "list_pods"}]})
SECRET = "whsec-test"


def notify(data: dict[str, Any]) -> Any:
    reader = Reader()
    settings = read_notify(reader, data, environment={})
    assert reader.problems == []
    return settings


def hook(url: str, **more: Any) -> Any:
    retry = {"backoff": "1ms", "max_backoff": "5ms", "attempts": 50}
    return notify({"webhooks": [{"url": url, "secret": SECRET, **more}], "retry": retry})


async def drained(notifications: Notifications, store: SQLStore) -> None:
    """Pump until nothing is left to send (each retry waits its backoff: milliseconds here)."""
    async with asyncio.timeout(HANG):
        while True:
            await notifications.pump()
            if not await store.outbox(status="pending"):
                return
            await asyncio.sleep(0.005)


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


async def test_every_kind_of_event_reaches_a_webhook_signed_and_once(store: SQLStore):
    gate = Gate(POLICY, store)
    receiver = Receiver()
    with http_receiver(receiver) as url:
        notifications = Notifications(store, hook(f"{url}/hook"), base_url="http://inbox.test")
        await store.outbox_events(limit=0)  # the cursor starts here
        [held] = await gate.check([call("delete_pod", name="nginx-123")])
        [late] = await gate.check([call("scale", name="web", replicas=40)])
        await gate.check([call("list_pods")])  # allowed: nobody is told
        assert held.approval is not None and late.approval is not None
        await gate.decide(held.approval.id, Reject(reason="wrong cluster"), actor="olga")
        await gate.expire([late.approval])
        key = "run-1:0:call_send"
        owner = f"{socket.gethostname()}:{dead_pid()}:gone"
        await store.ledger_claim(
            key, owner=owner, now=datetime.now(UTC), lease=timedelta(seconds=60), takeover=False,
            tool="send_email",
        )  # fmt: skip
        for _ in range(2):  # found twice, told once
            with pytest.raises(OutcomeUnknown):
                await Ledger(store).claim(key, tool="send_email")
        assert await notifications.pump() == 5
        assert await notifications.pump() == 0

    taken = receiver.taken()
    events = [(r.json()["event"], (r.json()["approval"] or {}).get("id")) for r in taken]
    assert events == [
        ("approval.requested", held.approval.id),
        ("approval.requested", late.approval.id),
        ("approval.decided", held.approval.id),
        ("approval.expired", late.approval.id),
        ("call.unknown", None),
    ]
    for request in taken:
        header = request.headers["signoff-signature"]
        verify_signature(SECRET, request.body, header)
        # The scheme, computed independently: HMAC-SHA256 of "<t>.<body>".
        stamp = header.split(",")[0].removeprefix("t=")
        mac = hmac.new(SECRET.encode(), f"{stamp}.".encode() + request.body, hashlib.sha256)
        assert header.endswith(f"v1={mac.hexdigest()}")
        assert request.headers["signoff-event"] == request.json()["event"]
        assert request.headers["signoff-delivery"] == request.json()["id"]
        with pytest.raises(BadSignature, match="does not match"):
            verify_signature("another secret", request.body, header)
        with pytest.raises(BadSignature, match="replay window"):
            verify_signature(SECRET, request.body, header, now=time.time() + 301)
    assert len({r.headers["signoff-delivery"] for r in taken}) == 5
    requested = taken[0].json()
    assert requested["title"] == "Approval needed: delete_pod"
    assert requested["url"] == f"http://inbox.test/approvals/{held.approval.id}"
    assert requested["approval"]["args"] == {"name": "nginx-123"}
    decided = taken[2].json()
    assert decided["actor"] == "olga"
    assert decided["title"] == "delete_pod rejected by olga"
    assert decided["approval"]["decision"] == {"kind": "reject", "reason": "wrong cluster"}
    unknown = taken[4].json()
    assert unknown["call"]["tool"] == "send_email"
    assert unknown["title"] == "Outcome unknown: send_email may or may not have run"
    assert all(d.status == "sent" and d.attempts == 1 for d in await store.outbox())


async def test_a_receiver_down_for_a_while_gets_every_notification_once(store: SQLStore):
    gate = Gate(POLICY, store)
    port = free_port()  # nothing listens there yet
    notifications = Notifications(store, hook(f"http://127.0.0.1:{port}/hook"))
    await store.outbox_events(limit=0)
    held = await gate.check([call("delete_pod", name=f"pod-{i}") for i in range(3)])
    assert await notifications.pump() == 0
    waiting = await store.outbox(status="pending")
    assert len(waiting) == 3
    assert all(d.attempts == 1 and "Connect" in (d.error or "") for d in waiting)
    await gate.decide(held[0].approval.id, Approve(), actor="olga")  # type: ignore[union-attr]

    receiver = Receiver()
    with http_receiver(receiver, port):
        await drained(notifications, store)
    ids = [r.headers["signoff-delivery"] for r in receiver.taken()]
    assert len(ids) == len(set(ids)) == 4
    assert sorted(r.json()["event"] for r in receiver.taken()) == [
        "approval.decided",
        *["approval.requested"] * 3,
    ]
    assert {d.status for d in await store.outbox()} == {"sent"}


async def test_a_receiver_that_refuses_the_request_is_not_asked_again(store: SQLStore):
    gate = Gate(POLICY, store)
    receiver = Receiver(status=410, answer={"error": "gone"})
    with http_receiver(receiver) as url:
        notifications = Notifications(store, hook(url))
        await store.outbox_events(limit=0)
        await gate.check([call("delete_pod", name="a")])
        await notifications.pump()
        await notifications.pump()
    [delivery] = await store.outbox()
    assert (delivery.status, delivery.attempts) == ("failed", 1)
    assert "HTTP 410" in (delivery.error or "")
    assert len(receiver.taken()) == 1


async def test_a_receiver_that_keeps_failing_is_given_up_after_the_attempts(store: SQLStore):
    gate = Gate(POLICY, store)
    receiver = Receiver(status=503)
    with http_receiver(receiver) as url:
        settings = notify({"webhooks": [{"url": url}], "retry": {"attempts": 3, "backoff": "1ms"}})
        notifications = Notifications(store, settings)
        await store.outbox_events(limit=0)
        await gate.check([call("delete_pod", name="a")])
        await drained(notifications, store)
    [delivery] = await store.outbox()
    assert (delivery.status, delivery.attempts) == ("failed", 3)
    assert len(receiver.taken()) == 3
    assert "signoff-signature" not in receiver.taken()[0].headers  # no secret, no signature


async def test_a_sink_hears_only_the_events_agents_and_tools_it_asks_for(store: SQLStore):
    gate = Gate(POLICY, store)
    receiver = Receiver()
    with http_receiver(receiver) as url:
        settings = notify(
            {"webhooks": [{"url": url, "events": ["decided"], "tools": ["delete_*"]}]}
        )
        notifications = Notifications(store, settings)
        await store.outbox_events(limit=0)
        [pod, scaled] = await gate.check(
            [call("delete_pod", name="a"), call("scale", name="b", replicas=2)]
        )
        for outcome in (pod, scaled):
            await gate.decide(outcome.approval.id, Approve(), actor="olga")  # type: ignore[union-attr]
        await notifications.pump()
    assert [(r.json()["event"], r.json()["approval"]["tool"]) for r in receiver.taken()] == [
        ("approval.decided", "delete_pod")
    ]


async def test_what_happened_before_the_notifier_first_ran_is_not_told(store: SQLStore):
    gate = Gate(POLICY, store)
    await gate.check([call("delete_pod", name="old")])
    receiver = Receiver()
    with http_receiver(receiver) as url:
        notifications = Notifications(store, hook(url))
        assert await notifications.pump() == 0
        await gate.check([call("delete_pod", name="new")])
        assert await notifications.pump() == 1
    assert receiver.taken()[0].json()["approval"]["args"] == {"name": "new"}


async def test_two_replicas_send_each_notification_once(store_url: str):
    receiver = Receiver()
    async with open_store(store_url) as first, open_store(store_url) as second:
        gate = Gate(POLICY, first)
        with http_receiver(receiver) as url:
            replicas = [Notifications(s, hook(url)) for s in (first, second)]
            await first.outbox_events(limit=0)
            for round_ in range(4):
                outcomes = await gate.check(
                    [call("delete_pod", name=f"pod-{round_}-{i}") for i in range(5)]
                )
                await gate.decide(outcomes[0].approval.id, Approve(), actor="olga")  # type: ignore[union-attr]
                sent = await asyncio.gather(*(r.pump() for r in replicas))
                assert sum(sent) == 6
            sent = await asyncio.gather(*(r.pump() for r in replicas))
            assert sent == [0, 0]
        deliveries = await second.outbox()
    ids = [r.headers["signoff-delivery"] for r in receiver.taken()]
    assert len(ids) == len(set(ids)) == 24
    assert sorted(ids) == sorted(d.id for d in deliveries)
    assert {d.status for d in deliveries} == {"sent"}


async def test_a_notice_masks_what_the_config_redacts_in_both_argument_sets(store: SQLStore):
    from signoff.redaction import Redaction
    from signoff.server.shapes import approval_json, shown

    redaction = Redaction(["**.password"])
    gate = Gate(Policy.from_dict({"rules": [{"ask": "login"}]}), store)
    receiver = Receiver()
    with http_receiver(receiver) as url:
        notifications = Notifications(
            store, hook(url),
            describe=lambda approval, inputs: shown(approval_json(approval, inputs), redaction),
        )  # fmt: skip
        await store.outbox_events(limit=0)
        await gate.check([call("login", user="olga", password="hunter2")])
        assert await notifications.pump() == 1
    [request] = receiver.taken()
    assert b"hunter2" not in request.body
    approval = request.json()["approval"]
    assert approval["args"]["user"] == approval["requested_args"]["user"] == "olga"


async def test_an_audit_row_signoff_never_wrote_is_skipped_and_what_follows_is_told(
    store: SQLStore,
):
    from sqlalchemy import update

    from signoff.store import schema

    gate = Gate(POLICY, store)
    receiver = Receiver()
    with http_receiver(receiver) as url:
        notifications = Notifications(store, hook(url))
        await store.outbox_events(limit=0)
        [bad] = await gate.check([call("delete_pod", name="tampered")])
        last = await store.audit_length()
        rewrite = update(schema.audit).where(schema.audit.c.seq == last)
        await store.run(lambda c: c.execute(rewrite.values(data='{"verdict": "ask", "x": NaN}')))
        await gate.check([call("delete_pod", name="after")])
        await store.run(  # and a time no clock can show
            lambda c: c.execute(
                update(schema.audit).where(schema.audit.c.seq == last + 1).values(at=2**62)
            )
        )
        [good] = await gate.check([call("delete_pod", name="told")])
        assert good.approval is not None
        assert await notifications.pump() == 1
    assert [r.json()["approval"]["id"] for r in receiver.taken()] == [good.approval.id]
    assert bad.approval is not None


async def test_votes_edits_and_new_rules_reach_only_a_webhook_that_asks_for_them(store: SQLStore):
    """A webhook set up before these kinds of event existed hears of none of them: its
    ``events`` (all, by default) meant the six kinds there were."""
    two = Policy.from_dict({"rules": [{"ask": "pay", "approvals": {"count": 2}}]})
    gate = Gate(two, store)
    receiver = Receiver()
    with http_receiver(receiver) as url:
        settings = notify(
            {
                "webhooks": [
                    {"url": f"{url}/default"},
                    {"url": f"{url}/changes", "events": ["voted", "edited", "rejudged"]},
                ]
            }
        )
        notifications = Notifications(store, settings)
        await store.outbox_events(limit=0)
        [held] = await gate.check([call("pay", amount=100)])
        [other] = await gate.check([call("pay", amount=1)])
        assert held.approval is not None and other.approval is not None
        await gate.decide(held.approval.id, Edit(args={"amount": 99}), actor="olga", version=1)
        await gate.decide(other.approval.id, Approve(), actor="olga", version=1)
        three = Policy.from_dict({"rules": [{"ask": "pay", "approvals": {"count": 3}}]})
        await gate.use_policy(three)
        await drained(notifications, store)
    told = {
        path: [(r.json()["event"], r.json()["title"]) for r in receiver.taken() if r.path == path]
        for path in ("/default", "/changes")
    }
    assert told["/default"] == [("approval.requested", "Approval needed: pay")] * 2
    assert told["/changes"][:2] == [
        ("approval.edited", "Edited by olga, 1 more approval needed: pay"),
        ("approval.voted", "Approved by olga, 1 more approval needed: pay"),
    ]
    assert (
        sorted(told["/changes"][2:])
        == [
            ("approval.rejudged", "Judged again by a new policy: pay"),
        ]
        * 2
    )
    edited = next(r.json() for r in receiver.taken() if r.json()["event"] == "approval.edited")
    assert (edited["approval"]["args"], edited["approval"]["requested_args"]) == (
        {"amount": 99},
        {"amount": 100},
    )
