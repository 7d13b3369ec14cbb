"""How the web inbox's pages read, in real Chromium against a real `signoff demo` (and a server
without agents): numbers that fit their column, words apart from their badges, the server's
sentences as sentences, one date format, each thing said once."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import ROOT, TIMEOUT, api, confirm, held, send_now, serving
from tests.web.test_inbox import card, start_run

LINES = """el => {
  const range = document.createRange();
  range.selectNodeContents(el);
  return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
}"""
"""How many lines an element's text takes."""


@pytest.fixture(scope="module")
def agentless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`signoff serve` with a policy and no agents: it holds other apps' calls only."""
    folder = tmp_path_factory.mktemp("agentless")
    config = folder / "signoff.yaml"
    config.write_text(f"database: sqlite:///{folder}/signoff.db\nrules:\n  - ask: '*'\n")
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    with serving(["serve", "--config", str(config), "--no-auth"], env) as url:
        yield url


def test_the_audit_page_keeps_numbers_whole_badges_apart_and_the_chain_check_a_sentence(
    page: Page, demo_url: str
):
    start_run(page, demo_url, "ops", "list pods then delete nginx-1 and scale redis to 2")
    expect(page.locator("article.approval.status-pending")).to_have_count(2, timeout=TIMEOUT)
    page.locator("button[data-action=approve-all]").click()
    confirm(page)
    send_now(page.locator("#conversation"))
    expect(page.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)
    while (newest := api(demo_url, "GET", "/audit?limit=1")["length"]) < 10:
        held(demo_url, "ops", "scale web to 5")  # two digits at least

    page.set_viewport_size({"width": 700, "height": 900})  # narrow, not yet a phone's
    page.goto(f"{demo_url}/#/audit")
    page.select_option(".filters select", "")  # everything
    first = page.locator("table.audit tbody tr").first
    expect(first.locator("td").first).to_have_text(str(newest), timeout=TIMEOUT)
    for seq in page.locator("table.audit tbody td:first-child").all()[:12]:
        assert seq.evaluate(LINES) == 1, seq.inner_text()

    page.select_option(".filters select", "decision")
    decided = page.locator("table.audit tbody tr[data-action=decision]").first
    badge, link = decided.locator(".badge"), decided.locator("td").last.locator("a")
    expect(link).to_have_text("open run")
    gap = link.bounding_box()["x"] - (badge.bounding_box()["x"] + badge.bounding_box()["width"])
    assert gap >= 4, gap

    page.click("#verify")
    verdict = page.locator("#verify-result > *")
    expect(verdict).to_contain_text("Chain intact (", timeout=TIMEOUT)
    expect(verdict.locator("code")).to_have_text("signoff audit checkpoint")
    assert "`" not in verdict.inner_text()
    assert verdict.evaluate("el => getComputedStyle(el).textTransform") == "none"


def test_a_run_page_shows_dates_as_every_page_does_and_a_response_once(page: Page, demo_url: str):
    run_id = start_run(page, demo_url, "files", "write r to responded.txt")
    write = card(page, "write_file")
    write.locator("button[data-action=respond]").click()
    page.fill("dialog#dialog textarea", "Already there, nothing to write.")
    page.click("dialog#dialog button[data-action=submit]")
    expect(write.locator(".badge")).to_have_text("responded", timeout=TIMEOUT)
    expect(page.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)
    assert write.inner_text().count("Already there, nothing to write.") == 1

    started = page.locator(".run-header .meta span", has_text="started ").last
    run = api(demo_url, "GET", f"/runs/{run_id}")
    same = page.evaluate(
        "([iso]) => new Date(iso).toLocaleString(undefined,"
        " {dateStyle: 'medium', timeStyle: 'medium'})",
        [run["created_at"]],
    )
    expect(started).to_have_text(f"started {same}")
    page.goto(f"{demo_url}/#/runs")  # the runs list, in the same words
    expect(page.locator(f"tr[data-run-id='{run_id}'] td").first).to_have_text(same)


def test_the_agent_select_shows_its_whole_choice(page: Page, demo_url: str):
    page.goto(f"{demo_url}/#/")
    select = page.locator("form.chat select")
    expect(select).to_be_visible(timeout=TIMEOUT)
    shown, needed = select.evaluate(
        """el => {
          const free = el.cloneNode(true);
          free.style.cssText = "position: absolute; visibility: hidden; width: auto";
          document.body.append(free);
          const width = free.getBoundingClientRect().width;
          free.remove();
          return [el.getBoundingClientRect().width, width];
        }"""
    )
    assert shown >= needed - 0.5, (shown, needed)


def test_a_server_without_agents_says_so_where_a_run_would_start(page: Page, agentless: str):
    page.goto(f"{agentless}/#/")
    note = page.locator("p.no-agents")
    expect(note).to_contain_text("This server runs no agents", timeout=TIMEOUT)
    expect(note.locator("code")).to_have_text("signoff serve --agents module:agents")
    expect(page.locator("form.chat")).to_have_count(0)
    page.goto(f"{agentless}/#/runs")
    expect(page.locator("p.no-agents")).to_be_visible()
    assert re.search(r"runs no agents", page.locator("main").inner_text())
