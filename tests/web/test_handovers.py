"""Beyond one person's yes or no, in real Chromium against a real `signoff demo`: a call that
needs two people shows who approved and who is still needed; "Assign to…" hands a call to a
role, with a note, and "assigned to me" finds it; a decision signoff took on timeout says so."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from playwright.sync_api import Page, expect

from signoff import Approve, Policy, ToolCall
from signoff.gate import Gate
from signoff.store import open_store
from tests.web.conftest import TIMEOUT, api, send_now
from tests.web.test_frameworks import held_by_a_framework

POLICY = Policy.from_dict(
    {
        "rules": [
            {"ask": "wire", "approvals": {"count": 2}},
            {"ask": "pay", "on_timeout": {"after": "1s", "decide": "approve"}},
        ],
        "default": "ask",
    }
)


def call(tool: str, n: int = 1) -> ToolCall:
    return ToolCall(id=f"c-{tool}-{n}", name=tool, args={"amount": n, "to": "acme"}, agent="payer")


def approve_in_store(folder: Path, approval_id: str, actor: str) -> None:
    async def decide() -> None:
        async with open_store(f"sqlite:///{folder / 'signoff.db'}") as store:
            await Gate(POLICY, store).decide(approval_id, Approve(), actor=actor)

    with ThreadPoolExecutor(1) as pool:  # Playwright's own loop runs in this thread
        pool.submit(asyncio.run, decide()).result()


def test_a_call_that_needs_two_people_shows_who_approved_and_who_is_still_needed(
    page: Page, demo_url: str, demo_folder: Path
):
    approval_id = held_by_a_framework(demo_folder, "langgraph", call("wire"), policy=POLICY)
    page.goto(f"{demo_url}/#/approvals/{approval_id}")
    card = page.locator(f"article.approval[data-approval-id='{approval_id}']")
    expect(card.locator(".quorum")).to_contain_text("Nobody has approved yet", timeout=TIMEOUT)
    expect(card.locator("button[data-action=always]")).to_have_count(0)  # no grant for it
    card.locator("button[data-action=approve]").click()
    send_now(card)
    quorum = card.locator(".quorum")
    expect(quorum).to_contain_text("Approved by local; 1 more needed", timeout=TIMEOUT)
    assert api(demo_url, "GET", f"/approvals/{approval_id}")["status"] == "pending"

    approve_in_store(demo_folder, approval_id, "carol")
    expect(card.locator(".decision")).to_contain_text("approved by carol", timeout=TIMEOUT)
    expect(card.locator(".decision .votes")).to_have_text("Approved by local, carol")


def test_assign_hands_a_call_to_a_role_and_assigned_to_me_finds_it(
    page: Page, demo_url: str, demo_folder: Path
):
    mine = held_by_a_framework(demo_folder, "langgraph", call("transfer", 7), policy=POLICY)
    other = held_by_a_framework(demo_folder, "langgraph", call("transfer", 8), policy=POLICY)
    page.goto(f"{demo_url}/#/")
    card = page.locator(f"article.approval[data-approval-id='{mine}']")
    card.locator("button[data-action=assign]").click(timeout=TIMEOUT)
    dialog = page.locator("dialog#dialog")
    dialog.locator("input[name=to]").fill("role:")
    dialog.locator("button[data-action=submit]").click()
    expect(dialog.locator(".form-error")).to_contain_text("role:NAME", timeout=TIMEOUT)
    dialog.locator("input[name=to]").fill("role:admin")
    dialog.locator("textarea[name=note]").fill("check the amount")
    dialog.locator("button[data-action=submit]").click()
    expect(dialog).to_be_hidden(timeout=TIMEOUT)
    assigned = card.locator(".assigned")
    expect(assigned).to_contain_text("Assigned to everyone with the role admin by local")
    expect(assigned.locator("q.note")).to_have_text("check the amount")

    page.locator("select[name=assigned]").select_option("me")
    expect(page).to_have_url(f"{demo_url}/#/?assigned=me")
    listed = page.locator("#inbox-list article.approval")
    expect(listed.first).to_have_attribute("data-approval-id", mine, timeout=TIMEOUT)
    expect(page.locator(f"article.approval[data-approval-id='{other}']")).to_have_count(0)
    assert [a["id"] for a in api(demo_url, "GET", "/approvals?assigned=me")["items"]] == [mine]


def test_a_decision_signoff_took_on_timeout_is_shown_as_its_own(
    page: Page, demo_url: str, demo_folder: Path
):
    approval_id = held_by_a_framework(demo_folder, "langgraph", call("pay"), policy=POLICY)
    page.goto(f"{demo_url}/#/approvals/{approval_id}")
    decided = page.locator(f"article.approval[data-approval-id='{approval_id}'] .decision")
    # The server's sweeper decides it once its second has passed; the page long-polls.
    expect(decided).to_contain_text("approved by signoff: nobody decided in time", timeout=TIMEOUT)
