"""Browser tests of the web inbox: real Chromium (the machine's, never a downloaded one) driven
by Playwright, against a real ``signoff demo`` process.

Set ``SIGNOFF_CHROMIUM`` to another Chromium binary; ``SIGNOFF_SCREENSHOTS=1`` also saves each
page to ``docs/images/`` (``make screenshots``). Without Chromium these tests are skipped —
except under CI, where a missing browser fails them.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect, sync_playwright

from tests.deadline import HANG
from tests.processes import served

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = int(HANG * 1000)
"""Milliseconds, as Playwright counts: how long a page may take to show something."""
IMAGES = ROOT / "docs" / "images"
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    found = os.environ.get("SIGNOFF_CHROMIUM") or shutil.which("chromium")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("Chromium is missing: .ci/run installs Debian's chromium package")
    pytest.skip("no Chromium on this machine (Debian: apt-get install chromium)")


@pytest.fixture(scope="module")
def demo_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data folder of the module's demo: its database is ``signoff.db`` there."""
    return tmp_path_factory.mktemp("demo")


@pytest.fixture(scope="module")
def demo_url(demo_folder: Path) -> Iterator[str]:
    """A real `signoff demo` on a free port, with its own data folder, for the module."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "SIGNOFF_MODEL")}
    with serving(["demo", "--data-dir", str(demo_folder)], env) as url:
        yield url


LONG_UNDO = 60
"""Seconds: the undo window of `patient_url`'s server, longer than any test takes to act in it."""


@pytest.fixture(scope="module")
def patient_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`signoff serve` with the demo's agents and policy, but an undo window of `LONG_UNDO`
    seconds (``web.undo_seconds``), for the module: in it, a decision is sent only by Send now
    or by leaving the page."""
    folder = tmp_path_factory.mktemp("patient")
    policy = (files("signoff") / "examples" / "demo-policy.yaml").read_text(encoding="utf-8")
    config = folder / "signoff.yaml"
    config.write_text(
        f"database: sqlite:///{folder}/signoff.db\nweb: {{undo_seconds: {LONG_UNDO}}}\n{policy}"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "SIGNOFF_MODEL")}
    env |= {"SIGNOFF_TEST_DEMO_DIR": str(folder), "PYTHONPATH": str(ROOT)}
    agents = "tests.web.demo_agents:agents"
    arguments = ["serve", "--config", str(config), "--no-auth", "--agents", agents]
    with serving(arguments, env) as url:
        yield url


@contextlib.contextmanager
def serving(arguments: list[str], env: dict[str, str]) -> Iterator[str]:
    """`signoff ARGUMENTS --port 0` as a process, until the block ends; its URL."""
    with served(arguments, env) as (url, _):
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    path = chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def context(browser: Browser, request: pytest.FixtureRequest) -> Iterator[BrowserContext]:
    """A fresh browser profile for the test; any script error or CSP violation on any of its
    pages fails the test."""
    made = browser.new_context(viewport={"width": 1200, "height": 900})
    problems: list[str] = []
    said: list[str] = []  # the rest of the console, shown when the test fails

    def watch(page: Page) -> None:
        page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
        page.on(
            "console",
            lambda message: (
                problems.append(f"console: {message.text}")
                if message.type == "error" and not _refused_request(message.text)
                else said.append(message.text)
            ),
        )

    made.on("page", watch)
    yield made
    if getattr(request.node, "failed", False):
        print("the pages' console:", *said, sep="\n  ")
    made.close()
    assert not problems, problems


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call" and report.failed:
        item.failed = True  # type: ignore[attr-defined]
    return report


@pytest.fixture
def page(context: BrowserContext) -> Page:
    return context.new_page()


def _refused_request(text: str) -> bool:
    """Chromium logs every 4xx answer as an error; the tests provoke some on purpose (an
    invalid edit gets 422) and check what the page shows instead."""
    return (
        re.match(r"Failed to load resource: the server responded with a status of 4\d\d", text)
        is not None
    )


def screenshot(page: Page, name: str) -> None:
    """Save the page to docs/images/web-<name>.png when asked (`make screenshots`)."""
    if os.environ.get("SIGNOFF_SCREENSHOTS"):
        IMAGES.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(IMAGES / f"web-{name}.png"), full_page=True)


def send_now(where: Locator) -> None:
    """Send at once the decision waiting out its undo window in `where` (a card, a turn)."""
    where.locator("button[data-action=send-now]").click()


def confirm(page: Page) -> None:
    """Approve in the dialog that asks first about a call its rule marks destructive."""
    dialog = page.locator("dialog#dialog")
    expect(dialog.locator(".confirm")).to_contain_text("destructive")
    dialog.locator("button[data-action=submit]").click()


def api(url: str, method: str, path: str, **kwargs: Any) -> Any:
    """The server's answer to a request of its API (which must succeed)."""
    response = httpx.request(method, f"{url}/v1{path}", timeout=HANG, **kwargs)
    assert response.is_success, response.text
    return response.json()


def held(
    url: str, agent: str, text: str, headers: dict[str, str] | None = None
) -> tuple[str, dict[str, str]]:
    """Start a run of `agent` on a new thread with `text` and follow its events until it pauses:
    its id, and its pending approvals' ids by the name their arguments give (a pod's, a
    deployment's)."""
    thread = f"t-{uuid.uuid4().hex[:8]}"
    body = {"agent": agent, "input": text}
    run = api(url, "POST", f"/threads/{thread}/runs", json=body, headers=headers)
    path = f"{url}/v1/runs/{run['id']}/events"
    with httpx.stream("GET", path, headers=headers, timeout=HANG) as events:
        kind = None
        for line in events.iter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: ") and kind == "paused":
                break
            assert kind not in ("completed", "failed"), f"the run ended: {line}"
    query = f"/approvals?run_id={run['id']}&status=pending"
    pending = api(url, "GET", query, headers=headers)["items"]
    return run["id"], {a["args"]["name"]: a["id"] for a in pending}
