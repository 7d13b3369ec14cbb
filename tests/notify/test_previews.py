"""A held call's preview in its notices: the webhook's JSON carries it, the text of an email
and a Slack message show it as text, cut to a bound."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from signoff import Policy
from signoff.gate import Gate
from signoff.gate.preview import Previews
from signoff.notify import Notifications
from signoff.notify.notice import Notice
from signoff.notify.slack import blocks
from signoff.store import SQLStore
from signoff.testing import call
from tests.notify.receivers import Receiver, http_receiver
from tests.notify.test_outbox import drained, hook

DIFF = "--- a/app.conf\n+++ b/app.conf\n@@ -1 +1 @@\n-port = 80\n+port = 8080\n"


def requested(preview: dict[str, Any]) -> Notice:
    approval = {"id": "a1", "tool": "write_file", "args": {"path": "app.conf"}, "preview": preview}
    return Notice(
        id="d1", kind="requested", at=datetime.now(UTC), actor="agent", tool="write_file",
        approval=approval, data={}, link=None,
    )  # fmt: skip


async def test_a_webhook_is_told_of_a_held_call_with_its_preview(store: SQLStore):
    gate = Gate(Policy.from_dict({"rules": [{"ask": "write_file"}]}), store)
    receiver = Receiver()
    with http_receiver(receiver) as url:
        notifications = Notifications(store, hook(f"{url}/hook"))
        await store.outbox_events(limit=0)
        await gate.hold(
            [call("write_file", path="app.conf", content="port = 8080\n")],
            previews=Previews({"write_file": lambda path, content: DIFF}),
        )
        await drained(notifications, store)
    [request] = receiver.taken()
    assert request.json()["approval"]["preview"] == {
        "kind": "diff", "body": DIFF, "truncated": False, "error": None,
    }  # fmt: skip


def test_a_notices_text_shows_the_preview_as_text_within_its_bound():
    diff = requested({"kind": "diff", "body": DIFF, "truncated": False, "error": None})
    assert "Preview:\n    --- a/app.conf\n    +++ b/app.conf\n" in diff.text()

    rows = [{"pod": f"web-{i}", "namespace": "default"} for i in range(500)]
    table = requested({"kind": "table", "body": rows, "truncated": False, "error": None})
    [shown] = [v for k, v in table.facts() if k == "Preview"]
    assert shown.startswith("pod: web-0, namespace: default\npod: web-1, namespace: default\n")
    assert len(shown) == 1500 and shown.endswith("…")

    failed = requested({"kind": "text", "body": "", "truncated": False,
                        "error": "preview took longer than 2 s"})  # fmt: skip
    assert "Preview: preview took longer than 2 s" in failed.text()


def test_slack_shows_the_preview_in_a_code_block_that_nothing_in_it_can_close():
    sneaky = DIFF + "```<!channel>"
    notice = requested({"kind": "diff", "body": sneaky, "truncated": False, "error": None})
    [section] = [b for b in blocks(notice, buttons=False) if "Preview" in str(b)]
    text = section["text"]["text"]
    assert text.startswith("*Preview*\n```--- a/app.conf")
    assert text.count("```") == 2 and "&lt;!channel&gt;" in text


async def test_a_webhook_never_carries_a_redacted_value_a_preview_shows(store: SQLStore):
    from signoff.redaction import MASK, Redaction
    from signoff.server.shapes import approval_json, shown

    redaction = Redaction(["**.password"])
    gate = Gate(Policy.from_dict({"rules": [{"ask": "login"}]}), store)
    receiver = Receiver()
    with http_receiver(receiver) as url:
        # Described as `signoff serve` describes an approval to its sinks.
        notifications = Notifications(
            store, hook(f"{url}/hook"),
            describe=lambda approval, inputs: shown(approval_json(approval, inputs), redaction),
        )  # fmt: skip
        await store.outbox_events(limit=0)
        # Previewed where the `redact:` is not known: a framework's app.
        await gate.hold(
            [call("login", user="olga", password="hunter2-8f2e")],
            previews=Previews({"login": lambda user, password: f"ssh {user}:{password}@db"}),
        )
        await drained(notifications, store)
    [request] = receiver.taken()
    assert b"hunter2-8f2e" not in request.body
    preview = request.json()["approval"]["preview"]
    assert preview["body"] == f"ssh olga:{MASK}@db"
