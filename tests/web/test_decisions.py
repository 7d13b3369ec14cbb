"""Deciding in the web inbox, in real Chromium against a real `signoff demo`: approve always's
default scope, the undo window every approval gets, and the confirmation a destructive rule
asks for."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.web.conftest import TIMEOUT, api, confirm, screenshot, send_now
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
    send_now(write)
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


def test_an_approval_waits_its_undo_window_and_undone_the_call_is_still_to_decide(
    page: Page, demo_url: str
):
    run_id = start_run(page, demo_url, "files", "write u to undone.txt")
    write = card(page, "write_file")
    write.locator("button[data-action=approve]").click()
    expect(write.locator(".actions.undo .countdown")).to_contain_text("Approving in")
    screenshot(page, "undo-approve")
    write.locator("button[data-action=undo]").click()
    expect(write.locator("button[data-action=approve]")).to_be_visible()
    [approval] = api(demo_url, "GET", f"/approvals?run_id={run_id}")["items"]
    assert approval["status"] == "pending"
    # Undone, nothing of it is left to be sent: a rejection is what the call gets.
    write.locator("button[data-action=reject]").click()
    page.fill("dialog#dialog textarea", "changed my mind")
    page.click("dialog#dialog button[data-action=submit]")
    send_now(write)
    expect(write.locator(".badge")).to_have_text("rejected", timeout=TIMEOUT)
    entries = api(demo_url, "GET", "/audit?limit=1000")["items"]
    decisions = [e for e in entries if e["action"] == "decision" and e["subject"] == approval["id"]]
    assert [e["data"]["status"] for e in decisions] == ["rejected"]


def test_approve_all_waits_one_undo_window_for_the_batch(page: Page, demo_url: str):
    run_id = start_run(page, demo_url, "ops", "scale web to 2 and scale redis to 3")
    expect(page.locator("article.approval.status-pending")).to_have_count(2, timeout=TIMEOUT)
    page.locator("button[data-action=approve-all]").click()
    bar = page.locator(".actions.undo")
    expect(bar).to_have_count(1)
    expect(bar.locator(".countdown")).to_contain_text("Approving 2 calls in")
    expect(page.locator("article.approval .actions.batched")).to_have_count(2)
    page.keyboard.press("Enter")  # waiting out the window, neither card is Enter's
    bar.locator("button[data-action=undo]").click()
    expect(page.locator("article.approval button[data-action=approve]")).to_have_count(2)
    expect(page.locator("button[data-action=approve-all]")).to_be_visible()
    statuses = [a["status"] for a in api(demo_url, "GET", f"/approvals?run_id={run_id}")["items"]]
    assert statuses == ["pending", "pending"]


def test_a_destructive_call_asks_before_it_is_approved_and_enter_twice_does_not(
    page: Page, demo_url: str
):
    start_run(page, demo_url, "ops", "delete web-9")
    delete = card(page, "delete_pod")
    expect(delete.locator(".badge")).to_have_text("pending", timeout=TIMEOUT)
    page.locator("h1").click()
    page.keyboard.press("Enter")
    dialog = page.locator("dialog#dialog")
    expect(dialog.locator(".confirm")).to_contain_text("marks delete_pod destructive")
    expect(dialog.locator(".confirm")).to_contain_text("agents.ops.tools.delete_pod")
    screenshot(page, "confirm")
    page.keyboard.press("Enter")  # on Cancel: a second Enter does not approve
    expect(dialog).to_be_hidden()
    expect(delete.locator("button[data-action=approve]")).to_be_visible()
    expect(delete.locator(".actions.undo")).to_have_count(0)

    delete.locator("button[data-action=approve]").click()
    confirm(page)
    expect(delete.locator(".actions.undo .countdown")).to_contain_text("Approving in")
    send_now(delete)
    expect(delete.locator(".badge")).to_have_text("approved", timeout=TIMEOUT)
    expect(page.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)


def test_leaving_the_page_sends_an_approval_still_in_its_undo_window(page: Page, demo_url: str):
    run_id = start_run(page, demo_url, "files", "write l to leaving.txt")
    card(page, "write_file").locator("button[data-action=approve]").click()
    expect(page.locator(".actions.undo")).to_be_visible()
    page.goto("about:blank")
    for _ in range(100):
        [approval] = api(demo_url, "GET", f"/approvals?run_id={run_id}")["items"]
        if approval["status"] != "pending":
            break
        page.wait_for_timeout(50)
    assert approval["status"] == "approved"
