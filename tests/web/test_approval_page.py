"""An approval's own page (``/approvals/<id>``, which notifications link to), the cards saying what
the user asked, the chat box's hint, the audit filter's words, and every page on a phone."""

from __future__ import annotations

import json
import re
from pathlib import Path

from playwright.sync_api import BrowserContext, Locator, Page, expect

from signoff import ToolCall
from tests.web.conftest import TIMEOUT, api, confirm, held, screenshot, send_now
from tests.web.test_frameworks import held_by_a_framework

PHONE = 390
"""Pixels: the width of a small phone's screen."""


def test_an_approval_s_own_page_opens_from_its_link_and_shows_the_decision_taken_there(
    page: Page, demo_url: str
):
    asked = "list pods then delete nginx-123"
    run_id, ids = held(demo_url, "ops", asked)
    approval_id = ids["nginx-123"]

    # The inbox's card says what the user asked.
    page.goto(f"{demo_url}/#/?run={run_id}")
    listed = page.locator(f"#inbox-list article[data-approval-id='{approval_id}']")
    expect(listed.locator(".asked .input")).to_have_text(asked, timeout=TIMEOUT)
    expect(listed.locator(".asked .asker")).to_have_text("local")

    page.goto(f"{demo_url}/approvals/{approval_id}")  # as a notification's link opens it
    own = page.locator(f"#approval article.approval[data-approval-id='{approval_id}']")
    expect(own.locator(".badge")).to_have_text("pending", timeout=TIMEOUT)
    expect(own.locator(".tool")).to_have_text("delete_pod")
    expect(own.locator(".asked .input")).to_have_text(asked)
    expect(own.locator(".asked .asker")).to_have_text("local")
    expect(own.locator(".rule")).to_have_text("agents.ops.tools.delete_pod")
    expect(own.locator(".deadline")).to_have_text(re.compile(r"^59m \d+s left$"))
    expect(own.locator("pre.json")).to_contain_text('"name": "nginx-123"')
    expect(own.locator("a.run-link")).to_have_attribute("href", f"/#/runs/{run_id}")
    expect(page.locator("nav a.active")).to_have_text("Inbox")
    expect(page).to_have_title("signoff — approval")
    screenshot(page, "approval")

    own.locator("button[data-action=approve]").click()
    confirm(page)
    send_now(own)
    expect(own.locator(".badge")).to_have_text("approved", timeout=TIMEOUT)
    expect(own.locator(".decision")).to_contain_text("approved by local")
    expect(own.locator("button")).to_have_count(0)
    expect(own.locator(".deadline")).to_have_count(0)
    assert api(demo_url, "GET", f"/approvals/{approval_id}")["decided_by"] == "local"

    page.reload()  # the same, rebuilt from the server
    expect(own.locator(".badge")).to_have_text("approved", timeout=TIMEOUT)
    expect(own.locator(".decision")).to_contain_text("approved by local")
    expect(own.locator("button")).to_have_count(0)

    # Its links open the other pages at the root.
    own.locator("a.run-link").click()
    page.wait_for_url(f"{demo_url}/#/runs/{run_id}", timeout=TIMEOUT)
    expect(page.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)
    page.goto(f"{demo_url}/approvals/{approval_id}")
    page.locator("nav a[data-page=policy]").click()
    page.wait_for_url(f"{demo_url}/#/policy", timeout=TIMEOUT)
    expect(page.locator("h1")).to_have_text("Policy")


def test_an_edit_on_its_own_page_shows_both_argument_sets_and_approve_always_its_grant(
    page: Page, demo_url: str
):
    run_id, ids = held(demo_url, "ops", "scale web to 3 and scale redis to 2")
    thread = api(demo_url, "GET", f"/runs/{run_id}")["thread_id"]

    page.goto(f"{demo_url}/approvals/{ids['web']}")
    own = page.locator("#approval article.approval")
    own.locator("button[data-action=edit]").click()
    dialog = page.locator("dialog#dialog")
    dialog.locator("[data-path='/replicas'] input").fill("4")
    dialog.locator("button[data-action=submit]").click()
    expect(own.locator(".badge")).to_have_text("edited", timeout=TIMEOUT)
    expect(own.locator(".decision")).to_contain_text("edited by local")
    changed = own.locator(".args-diff tr[data-path='/replicas']")
    expect(changed.locator("td.before")).to_have_text("3")  # what the model asked for
    expect(changed.locator("td.after")).to_have_text("4")  # what ran
    expect(page.locator("#approval-grant")).to_be_empty()  # no "always": no grant

    page.goto(f"{demo_url}/approvals/{ids['redis']}")
    own.locator("button[data-action=always]").click()
    page.check("dialog#dialog input[value=thread]")
    page.click("dialog#dialog button[data-action=submit]")
    send_now(own)
    expect(own.locator(".badge")).to_have_text("approved", timeout=TIMEOUT)
    grant = page.locator("#approval-grant .grant-note")
    expect(grant).to_contain_text(f"scale_deployment for thread {thread}", timeout=TIMEOUT)
    expect(grant).to_contain_text("with exactly these arguments")
    expect(grant.locator(".grant-status")).to_have_text("in force")
    expect(grant.locator("a")).to_have_attribute("href", "/#/grants?tool=scale_deployment")
    [made] = [g for g in api(demo_url, "GET", "/grants")["items"] if g["subject"] == thread]
    expect(grant).to_have_attribute("data-grant-id", made["id"])


def test_an_unknown_approval_id_says_there_is_no_such_approval(page: Page, demo_url: str):
    for address in ["/approvals/no-such-approval", "/#/approvals/no-such-approval"]:
        page.goto(f"{demo_url}{address}")
        expect(page.locator("h1")).to_have_text("No such approval", timeout=TIMEOUT)
        expect(page.locator("#approval-missing")).to_contain_text(
            "This server has no approval with the id no-such-approval."
        )
        expect(page.locator("#approval-missing a")).to_have_attribute("href", "/#/")


def test_a_start_a_run_box_s_hint_follows_its_agent_and_is_a_request_it_understands(
    page: Page, demo_url: str
):
    page.goto(f"{demo_url}/#/")
    box = page.locator("#main form.chat")
    chosen = box.locator("select").input_value()  # the agent the box starts with
    expect(box.locator("textarea")).to_have_attribute(
        "placeholder", re.compile(f'^Ask {chosen}, e.g. "'), timeout=TIMEOUT
    )
    examples = {}
    for agent in ["ops", "files"]:
        box.locator("select").select_option(agent)
        hint = box.locator("textarea").get_attribute("placeholder") or ""
        found = re.fullmatch(f'Ask {agent}, e.g. "(.+)"', hint)
        assert found, hint
        examples[agent] = found.group(1)
    assert examples["ops"] != examples["files"]

    # Sent as it is, each example makes its agent ask about a call.
    for agent, held_tool in [("ops", "delete_pod"), ("files", "write_file")]:
        page.goto(f"{demo_url}/#/")
        box.locator("select").select_option(agent)
        box.locator("textarea").fill(examples[agent])
        box.locator("textarea").press("Enter")
        page.wait_for_url(re.compile(r"#/runs/\w+"), timeout=TIMEOUT)
        call = page.locator(f"article.approval[data-tool={held_tool}]")
        expect(call.locator(".badge")).to_have_text("pending", timeout=TIMEOUT)


def test_the_audit_filter_names_each_kind_of_entry_in_words(page: Page, demo_url: str):
    page.goto(f"{demo_url}/#/audit")
    kinds = page.locator(".filters select option")
    expect(kinds).to_have_text(
        [
            "decisions",
            "everything",
            "verdicts",
            "grants",
            "revocations",
            "policy changes",
            "calls the MCP gateway forwarded",
            "calls of unknown outcome",
        ],
        timeout=TIMEOUT,
    )
    page.select_option(".filters select", label="policy changes")
    expect(page.locator("table.audit tbody tr").first).to_have_attribute("data-action", "policy")


WIDER = """width => [...document.querySelectorAll("body *")]
  .filter(e => e.getBoundingClientRect().right > width)
  .slice(0, 5)
  .map(e => `${e.tagName.toLowerCase()}.${e.className}`)"""


def test_no_page_is_wider_than_a_phone_s_screen(context: BrowserContext, demo_url: str):
    run_id, ids = held(demo_url, "ops", "delete nginx-123 and scale web to 3")
    always = {"kind": "approve", "always": {"scope": "thread"}}
    api(demo_url, "POST", f"/approvals/{ids['nginx-123']}/decision", json=always)
    page = context.new_page()
    page.set_viewport_size({"width": PHONE, "height": 844})
    pages = {
        "/#/": "#inbox-list article.approval",
        f"/#/runs/{run_id}": "#conversation article.approval",
        "/#/runs": "table.runs tr[data-run-id]",
        "/#/policy": "section.policy-agent tr[data-tool]",
        "/#/audit": "table.audit tr[data-seq]",
        "/#/grants": "table.grants tr[data-grant-id]",
        f"/approvals/{ids['web']}": "#approval article.approval",
        "/approvals/no-such-approval": "#approval-missing",
    }
    for address, shown in pages.items():
        page.goto(f"{demo_url}{address}")
        expect(page.locator(shown).first).to_be_visible(timeout=TIMEOUT)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE, (address, width, page.evaluate(WIDER, PHONE))
    # A card's dialog fits too.
    page.goto(f"{demo_url}/approvals/{ids['web']}")
    page.locator("#approval button[data-action=edit]").click()
    expect(page.locator("dialog#dialog [data-path='/replicas'] input")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE
    box = page.locator("dialog#dialog").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE, json.dumps(box)


OUTSIDE = """() => [...document.querySelectorAll("body *")]
  .filter(e => e.getBoundingClientRect().right > innerWidth || e.getBoundingClientRect().left < 0)
  .slice(0, 5)
  .map(e => `${e.tagName.toLowerCase()}.${e.className}`)"""
CUT = """() => [...document.querySelectorAll("article.approval *, dialog[open] *")]
  .filter(e => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1)
  .map(e => `${e.tagName.toLowerCase()}.${e.className}: ${e.scrollWidth} > ${e.clientWidth}`)"""


def fits_a_phone(page: Page, where: str) -> None:
    """Nothing on the page is wider than the screen, and nothing in a card or a dialog is cut
    or scrolls sideways: all of it is read, and decided, without scrolling sideways."""
    width, screen = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
    assert width <= screen == PHONE, (where, width, page.evaluate(OUTSIDE))
    assert page.evaluate(CUT) == [], where


def in_reach(buttons: Locator) -> None:
    """Each of the buttons is on the screen, whole, and takes a tap."""
    expect(buttons.first).to_be_visible(timeout=TIMEOUT)
    for button in buttons.all():
        button.scroll_into_view_if_needed()
        box = button.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE, box
        button.click(trial=True)  # visible, enabled, and nothing covers it


def test_a_phone_reads_every_card_and_reaches_every_decision_without_scrolling_sideways(
    context: BrowserContext, demo_url: str, demo_folder: Path
):
    _, ids = held(demo_url, "ops", "delete nginx-123 and scale web to 3")
    # Another framework's call, with what a phone finds hardest: long words with no place to
    # break (a tool's and its server's names, an agent's path, a URL), long keys, long text.
    call = ToolCall(
        id="c1",
        name="create_or_update_file_contents_in_the_repository",
        args={
            "amount": 500,
            "to": "acme-" + "x" * 300,
            "a_rather_long_argument_name_with_no_spaces_at_all": "https://example.com/" + "p" * 200,
            "memo": "pay the invoice " * 40,
        },
        server="the-platform-teams-github-enterprise-mcp-server",
        agent="billing/treasury-payments-approver/second-level-reviewer",
    )
    long_id = held_by_a_framework(demo_folder, "langgraph", call)
    page = context.new_page()
    page.set_viewport_size({"width": PHONE, "height": 844})

    page.goto(f"{demo_url}/#/")
    for approval_id in [ids["nginx-123"], ids["web"], long_id]:
        card = page.locator(f"#inbox-list article.approval[data-approval-id='{approval_id}']")
        in_reach(card.locator(".actions button"))
    fits_a_phone(page, "the inbox")
    page.evaluate("scrollTo(0, 0)")  # the header sticks at the top of the picture, not amid it
    screenshot(page, "phone-inbox")

    page.goto(f"{demo_url}/approvals/{long_id}")
    own = page.locator("#approval article.approval")
    in_reach(own.locator(".actions button"))
    fits_a_phone(page, "an approval's page")
    page.evaluate("scrollTo(0, 0)")
    screenshot(page, "phone-approval")

    own.locator("button[data-action=edit]").click()
    dialog = page.locator("dialog#dialog")
    expect(dialog.locator("[data-path='/to'] :is(input, textarea)")).to_be_visible()
    fits_a_phone(page, "the edit form")
    in_reach(dialog.locator(".dialog-actions button"))
    page.evaluate("scrollTo(0, 0)")
    screenshot(page, "phone-edit")
