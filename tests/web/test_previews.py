"""A held call's preview on its card, in real Chromium: a unified diff with its lines coloured,
and — in the edit dialog — a fresh preview of the edited arguments before they run; a value the
config's ``redact:`` hides, masked in a preview a framework's app computed; and a preview that
failed, saying so."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from signoff import Policy, Preview, ToolCall
from signoff.redaction import MASK
from tests.web.conftest import ROOT, TIMEOUT, api, screenshot, serving
from tests.web.test_frameworks import held_by_a_framework
from tests.web.test_inbox import card, start_run

APP_POLICY = Policy.from_dict({"rules": [{"ask": ["login", "scale"]}]})
"""The policy of the framework's app whose calls the server shows (as the server's asks)."""
SECRET = "hunter2-8f2e91c4"


@pytest.fixture(scope="module")
def files_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """`signoff serve` with the ``files`` agent of `preview_agents`, for the module; its URL
    and the folder its tool writes in."""
    folder = tmp_path_factory.mktemp("previews")
    config = folder / "signoff.yaml"
    config.write_text(
        f"database: sqlite:///{folder}/signoff.db\nweb: {{undo_seconds: 0}}\n"
        'redact: ["**.password"]\nrules:\n  - ask: [write_file, login, scale]\n'
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "SIGNOFF_MODEL")}
    env |= {"SIGNOFF_TEST_DEMO_DIR": str(folder), "PYTHONPATH": str(ROOT)}
    agents = "tests.web.preview_agents:agents"
    arguments = ["serve", "--config", str(config), "--no-auth", "--agents", agents]
    with serving(arguments, env) as url:
        yield url, folder


def test_a_diff_preview_shows_on_the_card_and_an_edit_is_previewed_before_it_runs(
    page: Page, files_url: tuple[str, Path]
):
    url, folder = files_url
    run_id = start_run(page, url, "files", "app.conf: port = 8080")
    write = card(page, "write_file")
    expect(write.locator(".badge")).to_have_text("pending", timeout=TIMEOUT)

    preview = write.locator(".preview pre.diff")
    expect(preview.locator(".diff-del")).to_have_text(["-port = 80", "-workers = 2"])
    expect(preview.locator(".diff-add")).to_have_text(["+port = 8080"])
    expect(preview.locator(".diff-hunk")).to_have_count(1)
    added = preview.locator(".diff-add").evaluate("e => getComputedStyle(e).backgroundColor")
    removed = preview.locator(".diff-del").first.evaluate(
        "e => getComputedStyle(e).backgroundColor"
    )
    assert added == "rgb(227, 244, 234)" and removed == "rgb(251, 233, 234)"  # green, red
    screenshot(page, "preview")

    write.locator("button[data-action=edit]").click()
    dialog = page.locator("dialog#dialog")
    content = dialog.locator("[data-path='/content'] textarea")
    content.fill("port = 9090\nworkers = 4\n")
    dialog.locator("button[data-action=submit]").click()
    # Not run yet: first, what the edited arguments would change.
    fresh = dialog.locator(".edit-preview pre.diff")
    expect(fresh.locator(".diff-add")).to_have_text(["+port = 9090", "+workers = 4"])
    assert api(url, "GET", f"/approvals?run_id={run_id}")["items"][0]["status"] == "pending"
    assert (folder / "app.conf").read_text() == "port = 80\nworkers = 2\n"

    dialog.locator("button[data-action=submit]").click()  # seen: now it runs
    expect(dialog).to_be_hidden()
    expect(write.locator(".badge")).to_have_text("edited", timeout=TIMEOUT)
    [approval] = api(url, "GET", f"/approvals?run_id={run_id}")["items"]
    assert approval["args"] == {"path": "app.conf", "content": "port = 9090\nworkers = 4\n"}
    expect(page.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)
    assert (folder / "app.conf").read_text() == "port = 9090\nworkers = 4\n"


def test_a_redacted_value_never_shows_in_a_preview_a_framework_computed(
    page: Page, files_url: tuple[str, Path]
):
    url, folder = files_url
    login = ToolCall(
        id="c-login", name="login", args={"host": "db-1", "password": SECRET}, agent="app"
    )
    # The app's preview knows nothing of the server's `redact:`.
    previews = {"login": lambda host, password: f"ssh admin:{password}@{host}"}
    approval_id = held_by_a_framework(
        folder, "langgraph", login, previews=previews, policy=APP_POLICY
    )

    page.goto(f"{url}/#/")
    held = page.locator(f"article.approval[data-approval-id='{approval_id}']")
    expect(held.locator(".preview pre.preview-text")).to_have_text(
        f"ssh admin:{MASK}@db-1", timeout=TIMEOUT
    )
    assert SECRET not in page.content()

    page.goto(f"{url}/approvals/{approval_id}")  # its own page: the approval whole
    expect(page.locator(".preview pre.preview-text")).to_have_text(
        f"ssh admin:{MASK}@db-1", timeout=TIMEOUT
    )
    assert SECRET not in page.content()


def test_a_preview_that_failed_says_so_on_the_card(page: Page, files_url: tuple[str, Path]):
    url, folder = files_url
    scale = ToolCall(id="c-scale", name="scale", args={"name": "web", "replicas": 3}, agent="app")
    previews = {"scale": lambda name, replicas: Preview(error="the cluster cannot be reached")}
    approval_id = held_by_a_framework(
        folder, "langgraph", scale, previews=previews, policy=APP_POLICY
    )

    page.goto(f"{url}/#/")
    preview = page.locator(f"article.approval[data-approval-id='{approval_id}'] .preview")
    expect(preview.locator(".preview-error")).to_have_text(
        "preview failed: the cluster cannot be reached", timeout=TIMEOUT
    )
    expect(preview.locator("pre")).to_have_count(0)  # no empty body beside it
