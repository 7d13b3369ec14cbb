"""The Slack message as a person sees it: its Block Kit blocks drawn the way Slack draws them
(header, fields, sections, code, buttons) in the real browser. What came from the call shows as
text, never as a ping or a link; docs/notifications.md shows the picture (`make screenshots`)."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from typing import Any

from playwright.sync_api import Page, expect

from signoff.notify.notice import Notice
from signoff.notify.slack import blocks
from tests.web.conftest import screenshot

STYLE = """
body { font: 15px/1.46 -apple-system, 'Segoe UI', Roboto, sans-serif; margin: 24px;
       color: #1d1c1d; }
.msg { display: flex; gap: 8px; max-width: 640px; }
.avatar { width: 36px; height: 36px; border-radius: 4px; background: #2f6f4f; color: #fff;
          font-weight: 700; display: grid; place-items: center; }
.name { font-weight: 900; } .app { font-size: 10px; background: #ddd; padding: 0 3px; }
h3 { font-size: 18px; margin: 4px 0; }
.fields { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; }
pre { background: #f8f8f8; border: 1px solid #ddd; border-radius: 4px; padding: 8px;
      margin: 4px 0; }
.actions { display: flex; gap: 8px; margin-top: 8px; }
button { font: inherit; font-weight: 700; border-radius: 4px; padding: 4px 12px;
         border: 1px solid #bbb; background: #fff; }
button.primary { background: #007a5a; color: #fff; border-color: #007a5a; }
button.danger { background: #e01e5a; color: #fff; border-color: #e01e5a; }
"""


def mrkdwn(item: dict[str, Any]) -> str:
    """A text object as Slack draws it: plain text as it is; markup with &lt; a character,
    *bold* and ```code```."""
    if item["type"] == "plain_text":
        return html.escape(item["text"]).replace("\n", "<br>")
    shown = html.escape(html.unescape(item["text"]))
    shown = re.sub(r"```(.*?)```", r"<pre>\1</pre>", shown, flags=re.S)
    shown = re.sub(r"\*([^*\n]+)\*", r"<b>\1</b>", shown)
    return shown.replace("\n", "<br>")


def draw(message: list[dict[str, Any]]) -> str:
    parts = []
    for block in message:
        if block["type"] == "header":
            parts.append(f"<h3>{html.escape(block['text']['text'])}</h3>")
        elif block["type"] == "section" and "fields" in block:
            cells = "".join(f"<div>{mrkdwn(f)}</div>" for f in block["fields"])
            parts.append(f"<div class='fields'>{cells}</div>")
        elif block["type"] == "section":
            parts.append(f"<div>{mrkdwn(block['text'])}</div>")
        elif block["type"] == "actions":
            buttons = "".join(
                f"<button class='{e.get('style', '')}'>{html.escape(e['text']['text'])}</button>"
                for e in block["elements"]
            )
            parts.append(f"<div class='actions'>{buttons}</div>")
    body = "".join(parts)
    return (
        f"<html><head><style>{STYLE}</style></head><body><div class='msg'>"
        "<div class='avatar'>S</div><div><span class='name'>signoff</span> "
        f"<span class='app'>APP</span>{body}</div></div></body></html>"
    )


def test_the_slack_message_reads_as_the_call_with_its_buttons(page: Page):
    notice = Notice(
        id="d1",
        kind="requested",
        at=datetime(2026, 11, 24, 9, 30, tzinfo=UTC),
        actor="olga",
        tool="delete_pod",
        approval={
            "id": "01a20cb9",
            "tool": "delete_pod",
            "agent": "ops",
            "args": {"name": "nginx-123", "namespace": "prod", "note": "<!channel>"},
            "reason": "approval required: *_delete*",
            "requested_by": "olga",
            "expires_at": None,
        },
        data={},
        link="https://signoff.example/approvals/01a20cb9",
    )
    page.set_content(draw(blocks(notice, buttons=True)))
    expect(page.get_by_role("heading")).to_have_text("Approval needed: delete_pod")
    for name in ("Approve", "Reject", "Open in signoff"):
        expect(page.get_by_role("button", name=name)).to_be_visible()
    expect(page.locator("pre")).to_contain_text('"note": "<!channel>"')  # text, not a ping
    expect(page.locator(".fields")).to_contain_text("Requested by:")
    expect(page.locator(".fields")).to_contain_text("approval required: *_delete*")  # as written
    screenshot(page, "slack-message")
