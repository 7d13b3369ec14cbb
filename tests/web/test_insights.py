"""The Insights page of `signoff serve` with tokens, in real Chromium: the figures of a history of
decisions, its suggestions and the candidates nearest to one, and an admin applying a suggestion
once they confirm the rule it adds — a new policy version, audited as theirs; a viewer sees the
suggestions with no way to apply them."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
import yaml
from playwright.sync_api import Page, expect

from signoff.store import open_store
from tests.history import POLICY, write_history
from tests.web.conftest import ROOT, TIMEOUT, api, screenshot, serving

AUTH = """\
database: sqlite:///{folder}/signoff.db
auth:
  tokens:
    - {{principal: ada, roles: [admin], token_env: SIGNOFF_TEST_ADMIN}}
    - {{principal: vic, roles: [], token_env: SIGNOFF_TEST_VIEWER}}
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server whose database holds 400 decisions of the last 20 days, asked by its policy."""
    folder = tmp_path_factory.mktemp("insights")

    async def fill() -> None:
        async with open_store(f"sqlite:///{folder}/signoff.db") as store:
            await write_history(store, 400, now=datetime.now(UTC), days=20, grant_uses=4)

    # The browser tests' own event loop runs in this thread: the history is written in another.
    with ThreadPoolExecutor(1) as writer:
        writer.submit(lambda: asyncio.run(fill())).result()
    config = folder / "signoff.yaml"
    config.write_text(AUTH.format(folder=folder) + yaml.safe_dump(POLICY))
    env = os.environ | {
        "SIGNOFF_TEST_ADMIN": "admin-t0ken",
        "SIGNOFF_TEST_VIEWER": "viewer-t0ken",
        "PYTHONPATH": str(ROOT),
    }
    with serving(["serve", "--config", str(config)], env) as url:
        yield url


def sign_in(page: Page, url: str, token: str, name: str) -> None:
    page.goto(url)
    page.locator("form.sign-in input").fill(token)
    page.locator("form.sign-in button").click()
    expect(page.locator("#who")).to_contain_text(name)
    page.locator("nav a[data-page=insights]").click()
    expect(page.locator("h1")).to_have_text("Insights")


def test_a_viewer_sees_the_figures_and_suggestions_but_no_apply_button(page: Page, served: str):
    sign_in(page, served, "viewer-t0ken", "vic")
    answer = api(served, "GET", "/insights", headers={"Authorization": "Bearer viewer-t0ken"})
    mail = next(g for g in answer["groups"] if g["tool"] == "send_email")

    row = page.locator("table.insights tr[data-tool=send_email]")
    expect(row.locator("td.count-asked")).to_have_text(str(mail["asked"]))
    expect(row.locator("td.count-approved")).to_have_text(str(mail["approved"]))
    expect(page.locator("tr[data-tool=read_file] td.grant-uses")).to_have_text("4")
    expect(page.locator("section.suggestion")).to_have_count(3)
    expect(page.locator("section.suggestion-deny")).to_contain_text("was rejected")
    expect(page.locator("button.apply")).to_have_count(0)
    expect(page.locator("main")).to_contain_text("applying one needs the admin role")


def test_the_page_lists_the_candidates_nearest_to_a_suggestion_with_what_each_lacks(
    page: Page, served: str
):
    sign_in(page, served, "viewer-t0ken", "vic")
    answer = api(served, "GET", "/insights", headers={"Authorization": "Bearer viewer-t0ken"})

    candidates = page.locator("#nearest li.candidate")
    expect(candidates).to_have_text([c["text"].replace("`", "") for c in answer["nearest"]])
    expect(candidates.first).to_contain_text("needs 95%")


def test_an_admin_applies_a_suggestion_only_once_they_confirm_the_rule_it_adds(
    page: Page, served: str
):
    admin = {"Authorization": "Bearer admin-t0ken"}
    before = api(served, "GET", "/policy", headers=admin)["version"]
    sign_in(page, served, "admin-t0ken", "ada")
    expect(page.locator("#insights-policy-version")).to_have_text(before)
    deny = page.locator("section.suggestion-deny")
    expect(deny.locator("pre.diff")).to_contain_text("+  deny: delete_file")
    screenshot(page, "insights")
    dialog = page.locator("dialog#dialog")

    deny.locator("button.apply").click()

    expect(dialog.locator("pre.diff span")).to_have_text(
        ["+- id: suggested-deny-delete_file", "+  deny: delete_file", "+  agent: ops"]
    )
    expect(dialog.locator(".allowed")).to_contain_text("It allows nothing")
    assert api(served, "GET", "/policy", headers=admin)["version"] == before
    dialog.locator("button[data-action=cancel]").click()
    expect(dialog).to_be_hidden()
    deny.locator("button.apply").click()
    dialog.locator("button[data-action=submit]").click()

    expect(page.locator("#insights-policy-version")).not_to_have_text(before, timeout=TIMEOUT)
    after = api(served, "GET", "/policy", headers=admin)
    assert after["version"] != before
    assert after["document"]["rules"][-1]["deny"] == "delete_file"
    expect(page.locator("section.suggestion-deny")).to_have_count(0)
    expect(page.locator("section.suggestion")).to_have_count(2)
    log = api(served, "GET", "/audit", params={"limit": 1000}, headers=admin)["items"]
    changes = [e for e in log if e["action"] == "policy" and e["actor"] != "config"]
    assert [(e["actor"], e["subject"], e["data"]["previous"]) for e in changes] == [
        ("ada", after["version"], before)
    ]
