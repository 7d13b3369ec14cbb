"""Deciding in the web inbox, in real Chromium against a real `signoff demo`: approve always's
default scope, the undo window every approval gets, and the confirmation a destructive rule
asks for."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.web.conftest import TIMEOUT, api
from tests.web.test_inbox import card, start_run


def test_approve_always_defaults_to_the_conversation_whose_next_message_it_lets_through(
    page: Page, demo_url: str
):
    run_id = start_run(page, demo_url, "files", "write x to always.txt")
    write = card(page, "write_file")
    write.locator("button[data-action=always]").click()
    dialog = page.locator("dialog#dialog")
    expect(dialog.locator("input[name=scope]:checked")).to_have_value("thread")
    # A run of signoff's own makes more turns: "this run" can fire, so it is still offered.
    expect(dialog.locator("input[name=scope]")).to_have_count(4)
    dialog.locator("button[data-action=submit]").click()
    expect(write.locator(".badge")).to_have_text("approved", timeout=TIMEOUT)
    expect(page.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)

    # The conversation's next message is a new run: the grant lets its call through.
    page.fill(".run-footer form.chat textarea", "write x to always.txt")
    page.press(".run-footer form.chat textarea", "Enter")
    page.wait_for_url(re.compile(r"#/runs/(?!" + run_id + r")\w+"), timeout=TIMEOUT)
    expect(card(page, "write_file").locator(".badge")).to_have_text(
        "ran (allowed)", timeout=TIMEOUT
    )
    thread = api(demo_url, "GET", f"/runs/{run_id}")["thread_id"]
    [grant] = [g for g in api(demo_url, "GET", "/grants")["items"] if g["subject"] == thread]
    assert (grant["scope"], grant["uses"]) == ("thread", 1)
