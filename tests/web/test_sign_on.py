"""The web inbox with sign-on: real Chromium signs in at a real OpenID provider (oidc-provider,
tests/js/oidc_provider.mjs), decides an approval as a person whose groups make them an approver,
and signs out — at the provider too. The session is an HttpOnly, SameSite=Lax cookie the page
never sees; a page of another origin cannot use it, even on the same host."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.deadline import HANG
from tests.processes import signoff_command
from tests.server.oidc_provider import RunningProvider, free_port, provider_running
from tests.web.conftest import ROOT, TIMEOUT, held

CONFIG = """\
database: sqlite:///{folder}/signoff.db
auth:
  oidc:
    issuer: {issuer}
    name: the test provider
    client_id: inbox
    client_secret_env: SIGNOFF_TEST_OIDC_SECRET
    audience: https://signoff.test/api
    roles: {{sre: [ops]}}
    session_key_env: SIGNOFF_TEST_SESSION_KEY
    session_hours: 1
web: {{undo_seconds: 0}}
agents:
  ops:
    rules:
      - ask: delete_pod
        approvers: [ops]
"""


@dataclass(frozen=True)
class Setup:
    url: str
    provider: RunningProvider


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    """The provider, then `signoff serve` signing people in through it, for the module."""
    folder = tmp_path_factory.mktemp("sign-on")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with provider_running(folder, port=free_port(), inbox=url) as provider:
        config = folder / "signoff.yaml"
        config.write_text(CONFIG.format(folder=folder, issuer=provider.issuer))
        env = os.environ | {
            "SIGNOFF_TEST_OIDC_SECRET": "inbox-secret",
            "SIGNOFF_TEST_SESSION_KEY": "s" * 48,
            "SIGNOFF_TEST_SIDE_FILE": str(folder / "side.txt"),
            "PYTHONPATH": str(ROOT),
        }
        with serving(config, port, env) as said:
            assert f"sign-on through {provider.issuer}: people at {url}/auth/login," in said
            yield Setup(url=url, provider=provider)


@contextlib.contextmanager
def serving(config: Path, port: int, env: dict[str, str]) -> Iterator[str]:
    """`signoff serve` on `port` (which the provider's redirect URI names) until the block
    ends; its banner."""
    agents = "tests.server.serve_agents:agents"
    arguments = ["serve", "--config", str(config), "--agents", agents, "--port", str(port)]
    process = subprocess.Popen(
        [*signoff_command(), *arguments],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        lines = [process.stdout.readline() for _ in range(6)]
        assert re.search(r"http://127\.0\.0\.1:\d+", lines[0]), "".join(lines)
        yield "".join(lines)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=HANG)
        process.stdout.close()


def sign_in(page: Page, setup: Setup, name: str) -> None:
    """Sign in as `name` at the provider, from the inbox's own button."""
    page.goto(setup.url)
    button = page.locator("main a", has_text="Sign in with the test provider")
    expect(button).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("form.sign-in")).to_have_count(0)  # no token box: people sign on
    button.click()
    page.wait_for_url(f"{setup.provider.issuer}/interaction/*", timeout=TIMEOUT)
    page.fill("input[name=login]", name)
    page.click("button[type=submit]")
    page.wait_for_url(f"{setup.url}/**", timeout=TIMEOUT)
    expect(page.locator("#who")).to_contain_text(name, timeout=TIMEOUT)


def test_a_person_signs_in_decides_and_signs_out(page: Page, setup: Setup):
    sign_in(page, setup, "ada")
    # Cookies know no ports: the provider's, on the same host, are there too.
    cookies = {c["name"]: c for c in page.context.cookies(setup.url) if "signoff" in c["name"]}
    assert set(cookies) == {"signoff_session"}, cookies  # the sign-in's own cookie is gone
    session = cookies["signoff_session"]
    assert session["httpOnly"] is True
    assert session["sameSite"] == "Lax"
    assert session["secure"] is False  # plain http on loopback; https sets it
    assert session["path"] == "/"
    assert page.evaluate("() => document.cookie") == ""  # the page never sees it

    page.select_option("form.chat select", "ops")
    page.fill("form.chat textarea", "delete nginx-1")
    page.press("form.chat textarea", "Enter")
    card = page.locator("article[data-tool=delete_pod]")
    expect(card.locator(".badge")).to_have_text("pending", timeout=TIMEOUT)
    card.locator("button[data-action=approve]").click()  # ada is in sre: an ops approver
    expect(card.locator(".badge")).to_have_text("approved", timeout=TIMEOUT)
    expect(page.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)

    hello = page.evaluate(WEBSOCKET_HELLO)  # the WebSocket takes the cookie from this page
    assert hello == {"type": "hello", "principal": "ada"}, hello

    page.locator("#who button").click()  # sign out: here, then at the provider
    page.wait_for_url(f"{setup.provider.issuer}/**", timeout=TIMEOUT)
    page.click("button[name=logout]")
    page.wait_for_url(f"{setup.url}/**", timeout=TIMEOUT)
    expect(page.locator("main a", has_text="Sign in with")).to_be_visible(timeout=TIMEOUT)
    assert not [c for c in page.context.cookies(setup.url) if "signoff" in c["name"]]


WEBSOCKET_HELLO = """() => new Promise((resolve) => {
  const socket = new WebSocket(`ws://${location.host}/v1/ws`);
  socket.onmessage = (event) => {
    const {type, principal} = JSON.parse(event.data);
    socket.close();
    resolve({type, principal});
  };
  socket.onclose = (event) => resolve({closed: event.code});
})"""

WEBSOCKET_FROM = """(url) => new Promise((resolve) => {
  const socket = new WebSocket(url.replace("http", "ws") + "/v1/ws");
  socket.onmessage = (event) => resolve({message: JSON.parse(event.data).type});
  socket.onclose = (event) => resolve({closed: event.code});
})"""


def test_a_person_without_a_role_signs_in_but_decides_nothing(page: Page, setup: Setup):
    sign_in(page, setup, "vic")  # in no group the config maps
    page.select_option("form.chat select", "ops")
    page.fill("form.chat textarea", "delete nginx-2")
    page.press("form.chat textarea", "Enter")
    card = page.locator("article[data-tool=delete_pod]")
    expect(card.locator(".badge")).to_have_text("pending", timeout=TIMEOUT)
    card.locator("button[data-action=approve]").click()
    expect(page.locator("#notices .notice.error")).to_contain_text(
        "may not decide", timeout=TIMEOUT
    )
    expect(card.locator(".badge")).to_have_text("pending")

    # A page of another origin on the same host (the same site: the Lax cookie goes along)
    # cannot use the session: its WebSocket is closed, and a POST is refused.
    page.goto(f"{setup.provider.issuer}/.well-known/openid-configuration")
    assert page.evaluate(WEBSOCKET_FROM, setup.url) == {"closed": 4403}
    status = page.evaluate(
        """(url) => fetch(url + "/v1/threads/t9/runs", {method: "POST", mode: "no-cors",
             credentials: "include", headers: {"Content-Type": "text/plain"},
             body: JSON.stringify({agent: "ops", input: "delete nginx-9"})}).then(() => "sent")""",
        setup.url,
    )
    assert status == "sent"  # an opaque answer: the page learns nothing; nothing started
    runs = page.context.request.get(f"{setup.url}/v1/runs")  # with the cookie: a GET
    assert runs.ok, runs.text()
    assert "delete nginx-9" not in runs.text()


def test_an_approval_s_own_page_signs_in_and_comes_back_to_it(page: Page, setup: Setup):
    robot = {"Authorization": f"Bearer {setup.provider.robot_token()}"}  # the provider's JWT
    _, ids = held(setup.url, "ops", "delete nginx-3", robot)
    approval_id = ids["nginx-3"]
    page.goto(f"{setup.url}/approvals/{approval_id}")  # a notification's link
    page.locator("main a", has_text="Sign in with").click()
    page.fill("input[name=login]", "ada")
    page.click("button[type=submit]")
    page.wait_for_url(f"{setup.url}/approvals/{approval_id}", timeout=TIMEOUT)
    own = page.locator(f"#approval article.approval[data-approval-id='{approval_id}']")
    expect(own.locator(".asked .asker")).to_have_text("robot", timeout=TIMEOUT)
    own.locator("button[data-action=approve]").click()
    expect(own.locator(".decision")).to_contain_text("approved by ada", timeout=TIMEOUT)


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("mal\u200blory", "has an invisible formatting character (U+200B ZERO WIDTH SPACE)"),
        ("Signoff", "'Signoff' is signoff itself ('signoff'), never a person"),
        ("ada ", "'ada ' has white space around it"),
    ],
)
def test_a_name_that_could_pass_for_another_is_refused_at_sign_in_on_a_page_saying_why(
    page: Page, setup: Setup, name: str, why: str
):
    page.goto(setup.url)
    page.locator("main a", has_text="Sign in with the test provider").click()
    page.wait_for_url(f"{setup.provider.issuer}/interaction/*", timeout=TIMEOUT)
    page.fill("input[name=login]", name)
    with page.expect_response(lambda r: "/auth/callback" in r.url, timeout=TIMEOUT) as answer:
        page.click("button[type=submit]")
    assert answer.value.status == 403
    expect(page.locator("h1")).to_have_text("Sign-in refused", timeout=TIMEOUT)
    expect(page.locator("#why")).to_contain_text(why)
    expect(page.locator("a", has_text="Sign in again")).to_have_attribute("href", "/auth/login")
    assert not [c for c in page.context.cookies(setup.url) if c["name"] == "signoff_session"]
