"""Who is told when an approval is handed on, escalates, or is decided by signoff on timeout: a
real webhook receiver, and a real SMTP server that gets an assigned call's mail alone."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from signoff import Policy
from signoff.gate import Gate
from signoff.notify import Notifications
from signoff.store import SQLStore
from signoff.testing import call
from tests.notify.receivers import Mailbox, Receiver, http_receiver
from tests.notify.test_email import mail_settings, smtp_server
from tests.notify.test_outbox import hook

POLICY = Policy.from_dict(
    {
        "rules": [
            {"ask": "deploy", "approvers": ["dev"], "escalate": [{"after": "30m", "to": ["cto"]}]},
            {"ask": "restart", "on_timeout": {"after": "10m", "decide": "approve"}},
        ]
    }
)


class Clock:
    now = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


async def test_a_handover_an_escalation_and_a_decision_on_timeout_are_told(store: SQLStore):
    clock = Clock()
    gate = Gate(POLICY, store, clock=clock)
    receiver = Receiver()
    with http_receiver(receiver) as url:
        notifications = Notifications(store, hook(f"{url}/hook"), base_url="http://inbox.test")
        await store.outbox_events(limit=0)
        [deploy] = await gate.check([call("deploy", service="web")])
        [restart] = await gate.check([call("restart", service="db")])
        assert deploy.approval is not None and restart.approval is not None
        await gate.assign(deploy.approval.id, "dana", actor="dan", roles={"dev"}, note="yours")
        clock.now += timedelta(minutes=40)
        await gate.escalate_due()
        await gate.expire_due()
        assert await notifications.pump() == 5
    told = [(r.json()["event"], r.json()["title"]) for r in receiver.taken()]
    assert told == [
        ("approval.requested", "Approval needed: deploy"),
        ("approval.requested", "Approval needed: restart"),
        ("approval.assigned", "Assigned to dana by dan: deploy"),
        ("approval.escalated", "Still waiting, now also for cto: deploy"),
        ("approval.decided", "restart approved by signoff: nobody decided in time"),
    ]
    assigned = receiver.taken()[2].json()
    assert assigned["approval"]["assigned"]["note"] == "yours"


async def test_an_assigned_call_is_mailed_to_the_assignee_alone(
    store: SQLStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    mailbox = Mailbox()
    with smtp_server(mailbox, tmp_path) as (port, cert_file):
        monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
        settings = mail_settings(port, "smtp-pass")
        [email] = settings.email
        heard = replace(email.filters, events=frozenset({"assigned"}))
        email = replace(email, people={"dana": "dana@example.com"}, filters=heard)
        settings = replace(settings, email=(email,))
        notifications = Notifications(store, settings)
        gate = Gate(POLICY, store)
        await store.outbox_events(limit=0)
        [one] = await gate.check([call("deploy", service="web")])
        [two] = await gate.check([call("deploy", service="api")])
        assert one.approval is not None and two.approval is not None
        await gate.assign(one.approval.id, "dana", actor="dan", roles={"dev"})
        await gate.assign(two.approval.id, "role:dev", actor="dan", roles={"dev"})
        assert await notifications.pump() == 2
    assert mailbox.envelopes == [
        ("signoff@example.com", ["dana@example.com"]),
        ("signoff@example.com", ["oncall@example.com", "lead@example.com"]),
    ]
    assert mailbox.messages[1]["Subject"] == (
        "[signoff] Assigned to everyone with the role dev by dan: deploy"
    )


def test_an_email_sinks_people_must_be_addresses():
    from signoff.notify import read_notify
    from signoff.policy.reader import Reader

    reader = Reader()
    read_notify(
        reader,
        {"email": [{"host": "h", "sender": "s@x", "to": ["t@x"], "people": {"dana": "nope"}}]},
        environment={},
    )
    assert [p.message for p in reader.problems] == ["people maps principals to email addresses"]
