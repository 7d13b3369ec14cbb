"""The web inbox of `signoff serve` with tokens: sign in with a bearer token kept in the tab
(never a cookie), sent in a header on every request; a viewer cannot flip policy switches."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, Request, expect

from tests.web.conftest import ROOT, TIMEOUT, held, serving

CONFIG = """\
database: sqlite:///{folder}/signoff.db
auth:
  tokens:
    - {{principal: ada, roles: [admin], token_env: SIGNOFF_TEST_ADMIN}}
    - {{principal: vic, roles: [], token_env: SIGNOFF_TEST_VIEWER}}
web: {{undo_seconds: 0}}
agents:
  ops:
    rules:
      - ask: delete_pod
        when: {{name: {{glob: "short-*"}}}}
        timeout: 2s
      - ask: delete_pod
        when: {{name: {{glob: "guarded-*"}}}}
        approvers: [sre]
      - ask: delete_pod
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("serve")
    config = folder / "signoff.yaml"
    config.write_text(CONFIG.format(folder=folder))
    env = os.environ | {
        "SIGNOFF_TEST_ADMIN": "admin-t0ken",
        "SIGNOFF_TEST_VIEWER": "viewer-t0ken",
        "SIGNOFF_TEST_SIDE_FILE": str(folder / "side.txt"),
        "PYTHONPATH": str(ROOT),
    }
    agents = "tests.server.serve_agents:agents"
    with serving(["serve", "--config", str(config), "--agents", agents], env) as url:
        yield url


NO_UNDO = """() => {
  window.__undone = false;
  new MutationObserver(() => {
    if (document.querySelector(".actions.undo")) window.__undone = true;
  }).observe(document.body, {subtree: true, childList: true});
}"""
"""Watch the page for an undo bar, ever (`window.__undone`)."""

TOLD = """() => {
  window.__told = [];
  new MutationObserver((changes) => {
    for (const change of changes) {
      for (const node of change.addedNodes) {
        if (node.matches?.(".notice.error")) window.__told.push(node.textContent);
      }
    }
  }).observe(document.getElementById("notices"), {childList: true});
}"""
"""Keep the text of every error the page tells (`window.__told`): a notice goes after a while."""


def test_sign_in_keeps_the_token_in_a_header_never_a_cookie(page: Page, served: str):
    seen: list[Request] = []
    page.on("request", lambda request: seen.append(request) if "/v1/" in request.url else None)
    page.goto(served)
    form = page.locator("form.sign-in")
    expect(form).to_be_visible()
    form.locator("input").fill("wrong")
    form.locator("button").click()
    expect(page.locator("form.sign-in .form-error")).to_contain_text("the token is not known")
    page.locator("form.sign-in input").fill("admin-t0ken")
    page.locator("form.sign-in button").click()
    expect(page.locator("#who")).to_contain_text("ada")
    expect(page.locator("h1")).to_contain_text("Inbox")
    expect(page.locator("#banner")).to_be_hidden()  # a real server: no scripted-model label

    page.select_option("form.chat select", "ops")
    page.fill("form.chat textarea", "delete nginx-1")
    page.press("form.chat textarea", "Enter")
    card = page.locator("article[data-tool=delete_pod]")
    expect(card.locator(".badge")).to_have_text("pending", timeout=TIMEOUT)
    page.evaluate(NO_UNDO)
    card.locator("button[data-action=approve]").click()
    expect(card.locator(".badge")).to_have_text("approved", timeout=TIMEOUT)
    assert page.evaluate("() => window.__undone") is False  # undo_seconds: 0 sends at once
    expect(page.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)

    assert page.context.cookies() == []
    signed = [r for r in seen if r.headers.get("authorization") == "Bearer admin-t0ken"]
    assert len(signed) >= 5
    assert all("t0ken" not in r.url for r in seen)
    assert {r.url.split("/v1/")[1].split("?")[0] for r in signed} >= {"me", "agents", "approvals"}

    page.reload()  # the tab keeps its token
    expect(page.locator("#who")).to_contain_text("ada")
    page.locator("#who button").click()  # sign out
    expect(page.locator("form.sign-in")).to_be_visible()


def test_a_viewer_reads_the_policy_but_cannot_change_it(page: Page, served: str):
    page.goto(served)
    page.locator("form.sign-in input").fill("viewer-t0ken")
    page.locator("form.sign-in button").click()
    expect(page.locator("#who")).to_contain_text("vic")
    page.goto(f"{served}/#/policy")
    row = page.locator("section[data-agent=ops] tr[data-tool=delete_pod]")
    expect(row).to_have_attribute("data-verdict", "ask")
    expect(row.locator("input[role=switch]")).to_be_disabled()
    expect(row.locator("select.verdict")).to_be_disabled()
    expect(page.locator("main")).to_contain_text("changing it needs the admin role")


def test_a_call_nobody_decides_in_time_expires_on_screen(page: Page, served: str):
    page.goto(served)
    page.locator("form.sign-in input").fill("viewer-t0ken")
    page.locator("form.sign-in button").click()
    page.select_option("form.chat select", "ops")
    page.fill("form.chat textarea", "delete short-lived")
    page.press("form.chat textarea", "Enter")
    card = page.locator("article[data-tool=delete_pod]")
    expect(card.locator(".deadline")).to_have_text(re.compile(r"^[12]s left$"), timeout=TIMEOUT)
    expect(card.locator(".badge")).to_have_text("expired", timeout=TIMEOUT)
    expect(card.locator("button")).to_have_count(0)
    expect(page.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)
    expect(page.locator(".message.assistant .bubble").last).to_contain_text("did not run")


def test_an_approval_s_own_page_signs_in_then_shows_it(page: Page, served: str):
    headers = {"Authorization": "Bearer admin-t0ken"}
    _, ids = held(served, "ops", "delete nginx-2", headers)
    approval_id = ids["nginx-2"]
    page.goto(f"{served}/approvals/{approval_id}")  # a notification's link, in a new tab
    page.locator("form.sign-in input").fill("admin-t0ken")
    page.locator("form.sign-in button").click()
    own = page.locator(f"#approval article.approval[data-approval-id='{approval_id}']")
    expect(own.locator(".badge")).to_have_text("pending", timeout=TIMEOUT)
    expect(own.locator(".asked .input")).to_have_text("delete nginx-2")
    expect(own.locator(".asked .asker")).to_have_text("ada")
    own.locator("button[data-action=approve]").click()
    expect(own.locator(".decision")).to_contain_text("approved by ada", timeout=TIMEOUT)


def test_an_approval_refused_at_once_says_why(page: Page, served: str):
    page.goto(served)
    page.locator("form.sign-in input").fill("admin-t0ken")
    page.locator("form.sign-in button").click()
    page.select_option("form.chat select", "ops")
    page.fill("form.chat textarea", "delete guarded-1")
    page.press("form.chat textarea", "Enter")
    card = page.locator("article[data-tool=delete_pod]")
    expect(card.locator(".badge")).to_have_text("pending", timeout=TIMEOUT)
    page.evaluate(TOLD)
    card.locator("button[data-action=approve]").click()  # undo_seconds: 0, and ada is no sre
    page.wait_for_function("() => window.__told.length === 1", timeout=TIMEOUT)
    page.locator("h1").click()
    page.keyboard.press("Enter")  # Enter tells it too
    page.wait_for_function("() => window.__told.length === 2", timeout=TIMEOUT)
    for told in page.evaluate("() => window.__told"):
        assert "'ada' may not decide this" in told, told
    expect(card.locator(".badge")).to_have_text("pending")
    expect(card.locator("button[data-action=approve]")).to_be_visible()
