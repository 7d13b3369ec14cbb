"""A conversation of signoff's own runs in real Chromium against a real `signoff demo`: a run
that continues it shows the runs before it, and the Runs list says what each run was asked."""

from __future__ import annotations

import re
import uuid

from playwright.sync_api import Page, expect

from tests.web.conftest import TIMEOUT


def test_continuing_a_conversation_shows_its_earlier_runs_and_the_runs_list_what_each_asked(
    page: Page, demo_url: str
):
    first = f"list files {uuid.uuid4().hex[:6]}"
    page.goto(f"{demo_url}/#/")
    page.select_option("form.chat select", "files")
    page.fill("form.chat textarea", first)
    page.press("form.chat textarea", "Enter")
    page.wait_for_url(re.compile(r"#/runs/\w+"), timeout=TIMEOUT)
    first_run = page.url.rsplit("/", 1)[1]
    expect(page.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)

    page.fill(".run-footer form.chat textarea", "list files again")
    page.press(".run-footer form.chat textarea", "Enter")
    page.wait_for_url(re.compile(r"#/runs/(?!" + first_run + r")\w+"), timeout=TIMEOUT)
    expect(page.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)

    # The turn before is on the page, above this run's own.
    before = page.locator(f"#earlier .earlier-run[data-run-id='{first_run}']")
    expect(before.locator(".message.user .bubble")).to_contain_text(first)
    expect(before.locator(".message.assistant").first).to_be_visible()  # and what it answered
    expect(page.locator("#conversation .message.user .bubble")).to_have_text("youlist files again")

    page.goto(f"{demo_url}/#/runs")
    row = page.locator(f"tr[data-run-id='{first_run}']")
    expect(row.locator("td.asked")).to_have_text(first, timeout=TIMEOUT)
