"""What you see is what you approve, in real Chromium against a real `signoff serve` — on SQLite
and on PostgreSQL — with two people signed in with their own tokens, on a call that needs two of
them: an edit reaches the other's inbox in place, both argument sets shown and who edited;
a decision sent on the version before it is refused, the card says what changed, and nothing is
written; one still in its undo window is dropped unsent. And every decision the page sends
names the version its card showed."""

from __future__ import annotations

import asyncio
import os
import re
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, Request, Route, expect

from signoff import Policy, ToolCall
from signoff.gate import Gate
from signoff.gate.external import ExternalRuns
from signoff.store import open_store
from tests.conftest import fresh_postgres_database
from tests.web.conftest import LONG_UNDO, ROOT, TIMEOUT, api, screenshot, send_now, serving
from tests.web.test_decisions import DECISIONS, until
from tests.web.test_frameworks import TRANSFER
from tests.web.test_inbox import card, start_run

POLICY = """\
default: ask
rules:
  - ask: transfer
    approvals: {count: 2, distinct: true}
"""
CONFIG = """\
database: {database}
auth:
  tokens:
    - {{principal: olga, roles: [ops], token_env: SIGNOFF_TEST_OLGA}}
    - {{principal: bob, roles: [ops], token_env: SIGNOFF_TEST_BOB}}
web: {{undo_seconds: {undo}}}
{policy}"""
TOKENS = {"olga": "olga-t0ken", "bob": "bob-t0ken"}
CHANGES = re.compile(r"/v1/approvals/changes$")
REFUSED = re.compile(r"Failed to load resource: the server responded with a status of 4\d\d")
"""Chromium logs each 4xx answer as an error: a refused decision is one, on purpose."""


class Served:
    """The server's URL, and a way to hold a call on its database as a framework holds one."""

    def __init__(self, url: str, database: str, pool: ThreadPoolExecutor) -> None:
        self.url, self.database, self.pool = url, database, pool

    def hold(self, amount: int, to: str) -> str:
        """A `transfer` held for alice's LangGraph agent: the approval's id."""
        call = ToolCall(id="c1", name="transfer", args={"amount": amount, "to": to}, agent="payer")

        async def hold() -> str:
            async with open_store(self.database) as store:
                gate = Gate(Policy.from_yaml(POLICY), store)
                gate.register_schemas({"transfer": TRANSFER}, agent="payer")
                runs = ExternalRuns(gate, origin="langgraph")
                thread = f"t-{uuid.uuid4().hex[:8]}"
                outcome = (await runs.judged([call], thread=thread, requested_by="alice"))[call.id]
                assert outcome.approval is not None
                await runs.pause(thread=thread, approvals=[outcome.approval.id], data={},
                                 agent="payer", conversation=None)  # fmt: skip
                return outcome.approval.id

        # Playwright's own loop runs in this thread: the store's in the pool's.
        return self.pool.submit(asyncio.run, hold()).result()

    def get(self, approval_id: str) -> dict[str, Any]:
        found: dict[str, Any] = api(
            self.url, "GET", f"/approvals/{approval_id}", headers=as_("bob")
        )
        return found


def as_(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[name]}"}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """`signoff serve` with olga's and bob's tokens, a rule that needs two people and an undo
    window longer than any test takes, on a database of the module's own (each backend)."""
    folder = tmp_path_factory.mktemp("versions")
    with ThreadPoolExecutor(1) as pool:
        runner = asyncio.Runner()  # one loop, in the pool's thread, for the database's life
        fresh = fresh_postgres_database()
        if request.param == "sqlite":
            database = f"sqlite:///{folder / 'signoff.db'}"
        else:
            database = pool.submit(runner.run, fresh.__aenter__()).result()
        try:
            config = folder / "signoff.yaml"
            config.write_text(CONFIG.format(database=database, undo=LONG_UNDO, policy=POLICY))
            env = os.environ | {
                "SIGNOFF_TEST_OLGA": TOKENS["olga"],
                "SIGNOFF_TEST_BOB": TOKENS["bob"],
                "PYTHONPATH": str(ROOT),
            }
            with serving(["serve", "--config", str(config)], env) as url:
                yield Served(url, database, pool)
        finally:
            if request.param == "postgres":
                pool.submit(runner.run, fresh.__aexit__(None, None, None)).result()
            pool.submit(runner.close).result()


SignIn = Callable[..., Page]


@pytest.fixture
def people(browser: Browser, served: Served) -> Iterator[SignIn]:
    """Sign a person in, in a browser profile of their own, to the inbox — its stream of
    changes open, or (`held`) asked for and held back by the test, which gets its routes.
    Any script error on any of their pages fails the test."""
    made: list[BrowserContext] = []
    problems: list[str] = []

    def sign_in(name: str, held: list[Route] | None = None) -> Page:
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        made.append(context)
        page = context.new_page()
        page.on("pageerror", lambda error: problems.append(f"{name}: page error: {error}"))
        page.on(
            "console",
            lambda message: (
                problems.append(f"{name}: console: {message.text}")
                if message.type == "error" and not REFUSED.match(message.text)
                else None
            ),
        )
        if held is not None:
            page.route(CHANGES, lambda route: held.append(route))
        page.goto(served.url)
        page.locator("form.sign-in input").fill(TOKENS[name])
        if held is None:
            with page.expect_response(CHANGES, timeout=TIMEOUT):
                page.locator("form.sign-in button").click()
        else:
            page.locator("form.sign-in button").click()
            until(page, lambda: bool(held))
        expect(page.locator("#who")).to_contain_text(name, timeout=TIMEOUT)
        return page

    yield sign_in
    for context in made:
        context.close()
    assert not problems, problems


def approval_card(page: Page, approval_id: str) -> Locator:
    return page.locator(f"article.approval[data-approval-id='{approval_id}']")


def edit_in_inbox(page: Page, approval_id: str, amount: int, to: str) -> None:
    """Edit the call's arguments in the inbox's form, and run with them (one approval of two)."""
    card = approval_card(page, approval_id)
    card.locator("button[data-action=edit]").click(timeout=TIMEOUT)
    dialog = page.locator("dialog#dialog")
    dialog.locator("[data-path='/amount'] input").fill(str(amount))
    dialog.locator("[data-path='/to'] input").fill(to)
    dialog.locator("button[data-action=submit]").click()
    expect(dialog).to_be_hidden(timeout=TIMEOUT)
    expect(card.locator(".quorum")).to_contain_text("Approved by olga; 1 more needed")


def decisions_sent(page: Page) -> list[dict[str, Any]]:
    """The bodies of the decisions `page` posts from now on, as it posts them."""
    sent: list[dict[str, Any]] = []

    def seen(request: Request) -> None:
        if request.method == "POST" and DECISIONS.search(request.url):
            sent.append(request.post_data_json or {})

    page.on("request", seen)
    return sent


def shows_both_argument_sets_edited_by_olga(card: Locator) -> None:
    edited = card.locator(".edited-args")
    expect(edited).to_have_attribute("data-edited-by", "olga", timeout=TIMEOUT)
    expect(edited.locator(".edited-by")).to_contain_text("Edited by olga at")
    expect(edited.locator(".args-asked")).to_contain_text('"amount": 100')
    expect(edited.locator(".args-asked")).to_contain_text('"to": "bob"')
    expect(edited.locator(".args-run")).to_contain_text('"amount": 999999')
    expect(edited.locator(".args-run")).to_contain_text('"to": "mallory"')
    expect(edited.locator("table.args-diff tbody tr")).to_have_count(2)
    expect(card.locator(".quorum")).to_contain_text("Approved by olga; 1 more needed")


def test_an_edit_reaches_the_other_approver_s_inbox_in_place_with_both_argument_sets(
    people: SignIn, served: Served
):
    approval_id = served.hold(100, "bob")
    bob = people("bob")
    card = approval_card(bob, approval_id)
    expect(card.locator("pre.json").first).to_contain_text('"amount": 100', timeout=TIMEOUT)
    card.evaluate("card => { window.__shown = card; }")  # the very element, to find it again
    expect(card.locator(".edited-args")).to_have_count(0)

    olga = people("olga")
    edit_in_inbox(olga, approval_id, 999999, "mallory")

    # Bob did nothing: his inbox, loaded before the edit, shows it — the same card, redrawn.
    shows_both_argument_sets_edited_by_olga(card)
    same = (
        f"() => window.__shown === document.querySelector(\"[data-approval-id='{approval_id}']\")"
    )
    assert bob.evaluate(same)
    expect(card.locator("button[data-action=approve]")).to_be_visible()


def test_an_approval_sent_on_the_version_before_an_edit_is_refused_and_nothing_is_written(
    people: SignIn, served: Served
):
    approval_id = served.hold(100, "bob")
    held: list[Route] = []
    bob = people("bob", held=held)  # his inbox hears of no change: the edit will not reach it
    sent = decisions_sent(bob)
    card = approval_card(bob, approval_id)
    expect(card.locator("pre.json").first).to_contain_text('"amount": 100', timeout=TIMEOUT)

    olga = people("olga")
    edit_in_inbox(olga, approval_id, 999999, "mallory")
    expect(card.locator("pre.json").first).to_contain_text('"amount": 100')  # as he saw it

    card.locator("button[data-action=approve]").click()
    send_now(card)
    stale = card.locator(".stale")
    expect(stale).to_contain_text("Not sent:", timeout=TIMEOUT)
    expect(stale).to_contain_text("edited by olga")
    expect(stale).to_contain_text("amount 100 → 999999")
    expect(stale).to_contain_text("to 'bob' → 'mallory'")
    # The card shows the call as it stands now, and waits for bob to decide again.
    shows_both_argument_sets_edited_by_olga(card)
    expect(card.locator("button[data-action=approve]")).to_be_visible()
    assert sent == [{"kind": "approve", "version": 1}]
    screenshot(bob, "stale")

    # Nothing was written: pending on olga's one approval, at the edit's version.
    now = served.get(approval_id)
    assert (now["status"], [v["by"] for v in now["votes"]], now["version"]) == (
        "pending",
        ["olga"],
        2,
    )
    audit = api(served.url, "GET", "/audit?limit=1000", headers=as_("bob"))["items"]
    assert [e["actor"] for e in audit if e["subject"] == approval_id and e["actor"] == "bob"] == []

    # The stream back: the inbox reads itself again, and sends nothing of its own accord.
    with bob.expect_response(re.compile(r"/v1/approvals\?"), timeout=TIMEOUT):
        for route in held:
            route.continue_()
    assert len(sent) == 1
    expect(stale).to_be_visible()

    # Deciding again, on what it shows now: the edited call, with both approvals.
    card.locator("button[data-action=approve]").click()
    send_now(card)
    until(bob, lambda: served.get(approval_id)["status"] != "pending")
    decided = served.get(approval_id)
    assert (decided["status"], decided["args"]) == ("edited", {"amount": 999999, "to": "mallory"})
    assert sent[-1] == {"kind": "approve", "version": 2}


def test_an_approval_still_in_its_undo_window_when_the_call_is_edited_is_dropped_unsent(
    people: SignIn, served: Served
):
    approval_id = served.hold(100, "bob")
    bob = people("bob")
    sent = decisions_sent(bob)
    card = approval_card(bob, approval_id)
    card.locator("button[data-action=approve]").click(timeout=TIMEOUT)
    expect(card.locator(".actions.undo .countdown")).to_contain_text("Approving in")

    olga = people("olga")
    edit_in_inbox(olga, approval_id, 999999, "mallory")

    stale = card.locator(".stale")
    expect(stale).to_contain_text("your approval waited to be sent", timeout=TIMEOUT)
    expect(stale).to_contain_text("edited by olga")
    expect(card.locator(".actions.undo")).to_have_count(0)
    shows_both_argument_sets_edited_by_olga(card)
    bob.goto("about:blank")  # what still waits would go as the page leaves: nothing does
    assert sent == []
    now = served.get(approval_id)
    assert (now["status"], [v["by"] for v in now["votes"]]) == ("pending", ["olga"])


def test_an_approval_s_own_page_shows_an_edit_as_it_happens(people: SignIn, served: Served):
    approval_id = served.hold(100, "bob")
    bob = people("bob")
    bob.goto(f"{served.url}/approvals/{approval_id}")
    card = approval_card(bob, approval_id)
    expect(card.locator(".quorum")).to_contain_text("Nobody has approved yet", timeout=TIMEOUT)

    edit = {"kind": "edit", "args": {"amount": 999999, "to": "mallory"}, "version": 1}
    api(served.url, "POST", f"/approvals/{approval_id}/decision", json=edit, headers=as_("olga"))
    shows_both_argument_sets_edited_by_olga(card)


def test_every_decision_the_page_sends_names_the_version_its_card_showed(
    page: Page, patient_url: str
):
    sent = decisions_sent(page)
    start_run(page, patient_url, "ops", "scale web to 2 and scale redis to 3")
    expect(page.locator("article.approval.status-pending")).to_have_count(2, timeout=TIMEOUT)
    page.locator("button[data-action=approve-all]").click()
    send_now(page.locator("main"))  # one bar for the batch
    until(page, lambda: len(sent) == 1)
    [batch] = sent
    assert list(batch["decisions"].values()) == [{"kind": "approve", "version": 1}] * 2

    start_run(page, patient_url, "files", "write v to enter.txt")
    write = card(page, "write_file")
    expect(write.locator(".badge")).to_have_text("pending", timeout=TIMEOUT)
    page.locator("h1").click()
    page.keyboard.press("Enter")  # the selected card's approval
    send_now(write)
    until(page, lambda: len(sent) == 2)

    start_run(page, patient_url, "files", "write r to reject.txt")
    write = card(page, "write_file")
    write.locator("button[data-action=reject]").click(timeout=TIMEOUT)
    page.fill("dialog#dialog textarea", "not now")
    page.click("dialog#dialog button[data-action=submit]")
    send_now(write)
    until(page, lambda: len(sent) == 3)

    start_run(page, patient_url, "files", "write s to respond.txt")
    write = card(page, "write_file")
    write.locator("button[data-action=respond]").click(timeout=TIMEOUT)
    page.fill("dialog#dialog textarea", "done already")
    page.click("dialog#dialog button[data-action=submit]")
    until(page, lambda: len(sent) == 4)

    start_run(page, patient_url, "files", "write e to edit.txt")
    write = card(page, "write_file")
    write.locator("button[data-action=edit]").click(timeout=TIMEOUT)
    page.click("dialog#dialog .tab[data-tab=raw]")
    page.fill("dialog#dialog textarea.raw-json", '{"path": "edited.txt", "content": "e"}')
    page.click("dialog#dialog button[data-action=submit]")
    until(page, lambda: len(sent) == 5)

    assert [(d["kind"], d["version"]) for d in sent[1:]] == [
        ("approve", 1),
        ("reject", 1),
        ("respond", 1),
        ("edit", 1),
    ]
