"""Deciding in the web inbox, in real Chromium against a real server with the demo's agents and
an undo window long enough that only Send now or leaving the page sends a decision: approve
always's default scope, the undo window every approval and rejection gets, what a decision does
once sent, and the confirmation a destructive rule asks for (approving or editing)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from playwright.sync_api import Page, Route, expect

from tests.deadline import HANG
from tests.web.conftest import TIMEOUT, api, confirm, screenshot, send_now
from tests.web.test_inbox import card, start_run

DECISIONS = re.compile(r"/v1/approvals/(decisions|[^/?]+/decision)$")
"""Where the page posts decisions: one approval's, or Approve All's batch."""


def until(page: Page, condition: Callable[[], object]) -> None:
    """Wait, letting the page's events through, until `condition` holds (at most `HANG`)."""
    for _ in range(int(HANG * 20)):
        if condition():
            return
        page.wait_for_timeout(50)
    raise AssertionError("waited too long")


def decided(page: Page, url: str, approval_id: str) -> dict[str, Any]:
    """The approval once it is no longer pending (a decision sent as the page left has no
    answer to wait on)."""
    until(page, lambda: api(url, "GET", f"/approvals/{approval_id}")["status"] != "pending")
    found: dict[str, Any] = api(url, "GET", f"/approvals/{approval_id}")
    return found


def audited(url: str, approval_id: str) -> list[str]:
    """The statuses the audit log records decisions on `approval_id` with, oldest first."""
    entries = api(url, "GET", "/audit?limit=1000")["items"]
    found = [e for e in entries if e["action"] == "decision" and e["subject"] == approval_id]
    return [e["data"]["status"] for e in found]


def test_approve_always_defaults_to_the_conversation_whose_next_message_it_lets_through(
    page: Page, patient_url: str
):
    run_id = start_run(page, patient_url, "files", "write x to always.txt")
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
    thread = api(patient_url, "GET", f"/runs/{run_id}")["thread_id"]
    [grant] = [g for g in api(patient_url, "GET", "/grants")["items"] if g["subject"] == thread]
    assert (grant["scope"], grant["uses"]) == ("thread", 1)


def test_an_approval_waits_its_undo_window_and_undone_the_call_is_still_to_decide(
    page: Page, patient_url: str
):
    posted: list[str] = []
    page.on("request", lambda r: posted.append(r.url) if DECISIONS.search(r.url) else None)
    run_id = start_run(page, patient_url, "files", "write u to undone.txt")
    write = card(page, "write_file")
    write.locator("button[data-action=approve]").click()
    expect(write.locator(".actions.undo .countdown")).to_contain_text("Approving in")
    screenshot(page, "undo-approve")
    write.locator("button[data-action=undo]").click()
    expect(write.locator("button[data-action=approve]")).to_be_visible()
    [approval] = api(patient_url, "GET", f"/approvals?run_id={run_id}")["items"]
    assert approval["status"] == "pending"
    # Undone, nothing of it is left to be sent: a rejection is what the call gets.
    write.locator("button[data-action=reject]").click()
    page.fill("dialog#dialog textarea", "changed my mind")
    page.click("dialog#dialog button[data-action=submit]")
    send_now(write)
    expect(write.locator(".badge")).to_have_text("rejected", timeout=TIMEOUT)
    assert audited(patient_url, approval["id"]) == ["rejected"]
    assert len(posted) == 1


def test_undo_keeps_the_call_pending_and_nothing_is_sent(page: Page, patient_url: str):
    posted: list[str] = []
    page.on("request", lambda r: posted.append(r.url) if DECISIONS.search(r.url) else None)
    run_id = start_run(page, patient_url, "files", "delete todo.md")
    delete = card(page, "delete_file")
    delete.locator("button[data-action=reject]").click()
    page.fill("dialog#dialog textarea", "oops")
    page.click("dialog#dialog button[data-action=submit]")
    page.locator("h1").click()
    page.keyboard.press("Enter")  # waiting out its undo window, the card is not Enter's
    expect(page.locator("dialog#dialog")).to_be_hidden()
    delete.locator("button[data-action=undo]").click()
    expect(delete.locator("button[data-action=approve]")).to_be_visible()
    expect(delete.locator(".badge")).to_have_text("pending")
    [approval] = api(patient_url, "GET", f"/approvals?run_id={run_id}")["items"]
    assert approval["status"] == "pending"
    assert posted == []
    delete.locator("button[data-action=approve]").click()
    confirm(page)
    send_now(delete)
    expect(delete.locator(".badge")).to_have_text("approved", timeout=TIMEOUT)
    page.goto("about:blank")  # what is still waiting goes as the page leaves: the undone nothing
    assert audited(patient_url, approval["id"]) == ["approved"]
    assert len(posted) == 1


def test_approve_all_waits_one_undo_window_for_the_batch(page: Page, patient_url: str):
    run_id = start_run(page, patient_url, "ops", "scale web to 2 and scale redis to 3")
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
    statuses = [
        a["status"] for a in api(patient_url, "GET", f"/approvals?run_id={run_id}")["items"]
    ]
    assert statuses == ["pending", "pending"]


def test_a_sent_approval_can_be_neither_undone_nor_sent_again(page: Page, patient_url: str):
    run_id = start_run(page, patient_url, "files", "write s to sent.txt")
    held: list[Route] = []
    page.route(
        DECISIONS, lambda route: held.append(route)
    )  # the server answers once the test lets the POST go
    write = card(page, "write_file")
    write.locator("button[data-action=approve]").click()
    undo = write.locator("button[data-action=undo]").element_handle()
    again = write.locator("button[data-action=send-now]").element_handle()
    send_now(write)
    until(page, lambda: held)
    expect(write.locator(".actions.undo")).to_have_text("Sending…")
    expect(write.locator(".actions.undo button")).to_have_count(0)
    undo.evaluate("button => button.click()")  # the bar's old buttons, had they stayed
    again.evaluate("button => button.click()")
    page.locator("h1").click()
    page.keyboard.press("Enter")
    expect(write.locator(".actions.undo")).to_have_text("Sending…")
    expect(page.locator("#notices")).not_to_contain_text("undone")
    held[0].continue_()
    expect(write.locator(".badge")).to_have_text("approved", timeout=TIMEOUT)
    expect(page.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)
    assert len(held) == 1
    [approval] = api(patient_url, "GET", f"/approvals?run_id={run_id}")["items"]
    assert audited(patient_url, approval["id"]) == ["approved"]


def test_a_sent_approve_all_can_be_neither_undone_nor_sent_again(page: Page, patient_url: str):
    run_id = start_run(page, patient_url, "ops", "scale web to 4 and scale redis to 5")
    expect(page.locator("article.approval.status-pending")).to_have_count(2, timeout=TIMEOUT)
    held: list[Route] = []
    page.route(DECISIONS, lambda route: held.append(route))
    page.locator("button[data-action=approve-all]").click()
    bar = page.locator(".actions.undo")
    undo = bar.locator("button[data-action=undo]").element_handle()
    again = bar.locator("button[data-action=send-now]").element_handle()
    send_now(bar)
    until(page, lambda: held)
    expect(bar).to_have_text("Sending…")
    expect(bar.locator("button")).to_have_count(0)
    undo.evaluate("button => button.click()")
    again.evaluate("button => button.click()")
    expect(bar).to_have_text("Sending…")
    expect(page.locator("#notices")).not_to_contain_text("undone")
    held[0].continue_()
    expect(page.locator("article.approval.status-approved")).to_have_count(2, timeout=TIMEOUT)
    assert len(held) == 1
    statuses = [
        a["status"] for a in api(patient_url, "GET", f"/approvals?run_id={run_id}")["items"]
    ]
    assert statuses == ["approved", "approved"]


def test_a_refused_approval_says_why_and_the_call_stays_to_decide(page: Page, patient_url: str):
    start_run(page, patient_url, "files", "write r to refused.txt")
    refusal = '{"error": "ForbiddenError", "detail": "\'local\' may not approve this"}'
    page.route(DECISIONS, lambda route: route.fulfill(status=403, body=refusal))
    write = card(page, "write_file")
    write.locator("button[data-action=approve]").click()
    send_now(write)
    expect(page.locator("#notices")).to_contain_text("may not approve this")
    expect(write.locator("button[data-action=approve]")).to_be_visible()
    expect(write.locator(".badge")).to_have_text("pending")


def test_a_destructive_call_asks_before_it_is_approved_and_enter_twice_does_not(
    page: Page, patient_url: str
):
    start_run(page, patient_url, "ops", "delete web-9")
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


def test_leaving_the_page_sends_an_approval_still_in_its_undo_window(page: Page, patient_url: str):
    posted: list[str] = []
    page.on("request", lambda r: posted.append(r.url) if DECISIONS.search(r.url) else None)
    run_id = start_run(page, patient_url, "files", "write l to leaving.txt")
    card(page, "write_file").locator("button[data-action=approve]").click()
    expect(page.locator(".actions.undo .countdown")).to_contain_text("Approving in")
    assert posted == []  # a minute to go: nothing but leaving sends it now
    page.goto("about:blank")
    [approval] = api(patient_url, "GET", f"/approvals?run_id={run_id}")["items"]
    assert decided(page, patient_url, approval["id"])["status"] == "approved"


def test_leaving_the_page_sends_a_rejection_still_in_its_undo_window(page: Page, patient_url: str):
    posted: list[str] = []
    page.on("request", lambda r: posted.append(r.url) if DECISIONS.search(r.url) else None)
    run_id = start_run(page, patient_url, "files", "delete leaving.txt")
    card(page, "delete_file").locator("button[data-action=reject]").click()
    page.fill("dialog#dialog textarea", "closing the tab does not undo this")
    page.click("dialog#dialog button[data-action=submit]")
    expect(page.locator(".actions.undo .countdown")).to_contain_text("Rejecting in")
    assert posted == []
    page.goto("about:blank")
    [approval] = api(patient_url, "GET", f"/approvals?run_id={run_id}")["items"]
    approval = decided(page, patient_url, approval["id"])
    assert approval["status"] == "rejected"
    assert approval["decision"]["reason"] == "closing the tab does not undo this"


def test_editing_a_destructive_call_asks_first_and_cancel_keeps_the_edit(
    page: Page, patient_url: str
):
    posted: list[str] = []
    page.on("request", lambda r: posted.append(r.url) if DECISIONS.search(r.url) else None)
    run_id = start_run(page, patient_url, "ops", "delete web-7")
    delete = card(page, "delete_pod")
    delete.locator("button[data-action=edit]").click()
    dialog = page.locator("dialog#dialog")
    name = dialog.locator("[data-path='/name'] input")
    name.fill("web-8")
    name.press("Enter")  # a stray Enter in the form: it asks, on Cancel
    expect(dialog.locator(".confirm")).to_contain_text("marks delete_pod destructive")
    expect(dialog.locator("h2")).to_have_text("Run delete_pod with these arguments?")
    page.keyboard.press("Enter")
    expect(dialog.locator("[data-path='/name'] input")).to_have_value("web-8")
    assert posted == []
    dialog.locator("button[data-action=submit]").click()
    confirm(page)
    expect(dialog).to_be_hidden()
    expect(delete.locator(".badge")).to_have_text("edited", timeout=TIMEOUT)
    [approval] = api(patient_url, "GET", f"/approvals?run_id={run_id}")["items"]
    assert approval["args"] == {"name": "web-8"}
    assert len(posted) == 1
