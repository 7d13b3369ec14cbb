"""docs/integrations/claude-code.md, from an empty folder, as a newcomer follows it: the page's
``signoff.yaml`` saved, its token made and its server started with its commands, its install
command run in a project — then the real Claude Code CLI (a scripted model asks to remove the
build folder) waits, and Chromium on a phone-sized screen signs in with the token and taps
Approve: the folder is gone, once. The page's ``policy explain`` lines say what they show."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.deadline import HANG
from tests.hooks.messages import Turn, scripted_messages
from tests.hooks.rig import DOCUMENTED, bash, page_set_up, signoff_line
from tests.hooks.test_claude_code import claude, cli_missing
from tests.hooks.test_claude_code_questions import Dialog, held_question
from tests.hooks.test_claude_code_questions import claude as claude_asking
from tests.processes import signoff_command
from tests.test_docs import ROOT, example, files
from tests.web.conftest import FLAGS, TIMEOUT, chromium, confirm, screenshot

DOC = "docs/integrations/claude-code.md"

pytestmark = pytest.mark.skipif(bool(cli_missing()), reason=cli_missing() or "installed")


async def test_the_page_from_an_empty_folder_to_a_command_approved_on_a_phone(
    tmp_path: Path,
) -> None:
    with page_set_up(DOC, tmp_path) as (url, project, env):
        settings = json.loads((project / ".claude" / "settings.json").read_text())
        assert settings["hooks"]["PreToolUse"][0]["hooks"][0]["onFailure"] == "block"
        turns = [Turn(calls=[("Bash", {"command": "rm -rf build"})]), Turn(text="Removed.")]
        with scripted_messages(turns) as api:
            token = env["SIGNOFF_TOKEN"]
            agent = asyncio.create_task(claude(project, api, token=token))
            await asyncio.to_thread(_approve_on_a_phone, url, token)
            await agent
    assert not (project / "build").exists()
    [told] = api.results()
    assert not told["is_error"]


async def test_the_pages_question_is_answered_with_its_answer_line(tmp_path: Path) -> None:
    asked = {"questions": [{
        "question": "Which database should the service use?", "header": "Database",
        "options": [{"label": "Postgres", "description": "what prod runs"},
                    {"label": "SQLite", "description": "a file"}],
    }]}  # fmt: skip
    with page_set_up(DOC, tmp_path) as (url, project, env):
        token = env["SIGNOFF_TOKEN"]
        with scripted_messages([Turn(calls=[("AskUserQuestion", asked)])]) as api:
            dialog = Dialog()
            agent = asyncio.create_task(claude_asking(project, api, dialog, token=token))
            question = await held_question(url, "Which database", agent, token=token)
            line = [w.replace(DOCUMENTED, url).replace("APPROVAL_ID", question["id"])
                    for w in signoff_line(example(DOC, "answer"))]  # fmt: skip
            done = await asyncio.to_thread(
                subprocess.run, [*signoff_command(), *line], env=env, capture_output=True,
                text=True, timeout=HANG, check=False,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            await agent
    [told] = api.results()
    assert '"Which database should the service use?"="Postgres"' in told["content"]
    assert dialog.asked == []


def _approve_on_a_phone(url: str, token: str) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=FLAGS)
        try:
            phone = browser.new_context(**playwright.devices["Pixel 7"])
            page = phone.new_page()
            page.goto(url)
            page.locator("form.sign-in input").fill(token)
            page.locator("form.sign-in button").click()
            card = page.locator("article[data-tool=Bash]")
            expect(card.locator(".badge")).to_have_text("pending", timeout=TIMEOUT)
            expect(card).to_contain_text("rm -rf build")
            screenshot(page, "claude-code-phone")
            card.locator("button[data-action=always]").click()  # scopes in a coding agent's words
            scopes = page.locator("dialog#dialog fieldset.scopes")
            expect(scopes).to_contain_text("this session (")
            expect(scopes).to_contain_text("this repository (claude-code/shop)")
            page.keyboard.press("Escape")
            card.locator("button[data-action=approve]").click()
            confirm(page)  # the rule marks it destructive: "are you sure?"
            card.locator("button[data-action=send-now]").click()
            expect(card).to_have_count(0, timeout=TIMEOUT)  # decided: off the inbox
        finally:
            browser.close()


def test_the_pages_explain_lines_say_what_the_policy_says(tmp_path: Path) -> None:
    (tmp_path / "signoff.yaml").write_text(files(ROOT / DOC)["signoff.yaml"])
    body = example(DOC, "explain")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    printed = bash(body, tmp_path, os.environ | {"PATH": path})
    said = [json.loads(line) for line in printed.splitlines()]
    shown = [json.loads(_shown(line)) for line in body.splitlines() if line.startswith("# {")]
    for found, page_says in zip(said, shown, strict=True):
        assert found["verdict"] == page_says["verdict"] and found["rule"] == page_says["rule"]
        assert found["reason"].startswith(page_says.get("reason", "").removesuffix("..."))


def _shown(line: str) -> str:
    """A page's comment ``# {"verdict": ..., ...}`` as JSON: its last ``...`` left out."""
    return line.removeprefix("# ").replace(", ...}", "}")
