"""An agent's question on its card in the web inbox, in real Chromium against a real `signoff
serve` whose agent asks: a choice answered by a click, a form refused by the gate beside the field
it names and then answered, an answer someone gave first shown on the card — and the run going on
with the answer as the tool's result."""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Locator, Page, Route, expect

from tests.deadline import HANG
from tests.web.conftest import ROOT, TIMEOUT, api, screenshot, serving

CONFIG = """\
database: sqlite:///{folder}/signoff.db
auth:
  tokens:
    - {{principal: alice, roles: [ops], token_env: SIGNOFF_TEST_ALICE}}
    - {{principal: bob, roles: [ops], token_env: SIGNOFF_TEST_BOB}}
web: {{undo_seconds: 0}}
rules:
  - ask: {{question: "*"}}
    approvers: [ops]
"""
ALICE = {"Authorization": "Bearer alice-t0ken"}
BOB = {"Authorization": "Bearer bob-t0ken"}
CHANGES = re.compile(r"/v1/approvals/changes$")
FORM = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email", "title": "Billing email"},
        "seats": {"type": "integer", "minimum": 1, "maximum": 50},
        "plan": {"type": "string", "oneOf": [{"const": "team", "title": "Team"}, {"const": "pro"}]},
        "urgent": {"type": "boolean"},
        "regions": {"type": "array", "items": {"type": "string", "enum": ["eu", "us", "ap"]}},
    },
    "required": ["email", "seats"],
}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`signoff serve` with `question_agents`' asker and two people who may answer."""
    folder = tmp_path_factory.mktemp("questions")
    config = folder / "signoff.yaml"
    config.write_text(CONFIG.format(folder=folder))
    env = os.environ | {
        "SIGNOFF_TEST_ALICE": "alice-t0ken",
        "SIGNOFF_TEST_BOB": "bob-t0ken",
        "PYTHONPATH": str(ROOT),
    }
    agents = "tests.web.question_agents:agents"
    with serving(["serve", "--config", str(config), "--agents", agents], env) as served:
        yield served


def asked(url: str, question: dict[str, Any]) -> tuple[str, str]:
    """A run of the asker that asks `question`, paused on it: the run's id and the question's."""
    body = {"agent": "asker", "input": json.dumps(question)}
    thread = f"t-{uuid.uuid4().hex[:8]}"
    run = api(url, "POST", f"/threads/{thread}/runs?wait=30", json=body, headers=ALICE)
    [pending] = run["pending_approvals"]
    return run["id"], pending


def told(url: str, run_id: str) -> Any:
    """What the asker was told, once its run has ended: the ask tool's result."""
    with httpx.stream("GET", f"{url}/v1/runs/{run_id}/events", headers=ALICE, timeout=HANG) as s:
        for line in s.iter_lines():
            if line == "event: completed":
                break
    run = api(url, "GET", f"/runs/{run_id}", headers=ALICE)
    [result] = [m for m in run["messages"] if m["role"] == "tool"]
    return json.loads(result["content"])


def sign_in(page: Page, url: str, token: str = "alice-t0ken") -> None:
    page.goto(url)
    page.locator("form.sign-in input").fill(token)
    page.locator("form.sign-in button").click()
    expect(page.locator("#who")).to_contain_text("alice", timeout=TIMEOUT)


def question_card(page: Page, approval_id: str) -> Locator:
    return page.locator(f"article.approval[data-approval-id='{approval_id}']")


def test_a_choice_is_answered_by_one_click_and_the_run_goes_on_with_it(page: Page, url: str):
    run_id, question = asked(url, {"question": "Which region?", "choices": ["eu-west", "us-east"]})
    sign_in(page, url)
    card = question_card(page, question)
    expect(card.locator(".question-text")).to_have_text("Which region?", timeout=TIMEOUT)
    expect(card.locator("button[data-action=choose]")).to_have_text(["eu-west", "us-east"])
    # A question is answered or declined: never approved, edited or responded to.
    for action in ("approve", "edit", "respond", "always"):
        expect(card.locator(f"button[data-action={action}]")).to_have_count(0)
    expect(card.locator("button[data-action=reject]")).to_have_text("Decline")
    screenshot(page, "question")

    card.locator("button[data-choice=us-east]").click()
    expect(card).to_have_count(0, timeout=TIMEOUT)  # answered: out of the inbox
    assert told(url, run_id) == {"status": "answered", "answer": "us-east", "answered_by": "alice"}

    page.goto(f"{url}/approvals/{question}")
    own = page.locator(f"#approval article.approval[data-approval-id='{question}']")
    expect(own.locator(".badge")).to_have_text("answered", timeout=TIMEOUT)
    expect(own.locator(".decision")).to_contain_text("answered by alice")
    expect(own.locator(".decision .answer-value")).to_have_text("us-east")
    expect(own.locator("button[data-action=choose]")).to_have_count(0)


def test_a_form_refused_by_the_gate_says_so_beside_the_field_then_is_answered(page: Page, url: str):
    run_id, question = asked(url, {"question": "Who gets the invoice?", "schema": FORM})
    sign_in(page, url)
    card = question_card(page, question)
    form = card.locator(".question-form")
    expect(form.locator("[data-field=email] .required")).to_be_visible(timeout=TIMEOUT)
    expect(form.locator("[data-field=plan] .required")).to_have_count(0)
    expect(form.locator("[data-field=email] input")).to_have_attribute("type", "email")
    seats = form.locator("[data-field=seats] input")
    expect(seats).to_have_attribute("max", "50")
    expect(form.locator("[data-field=plan] input[type=radio]")).to_have_count(2)
    expect(form.locator("[data-field=plan]")).to_contain_text("Team")
    expect(form.locator("[data-field=regions] input[type=checkbox]")).to_have_count(3)
    # In the order the agent wrote them, not the stored question's (its keys are sorted).
    shown = form.locator("[data-field]").evaluate_all("fields => fields.map(f => f.dataset.field)")
    assert shown == list(FORM["properties"])
    # Enter on the card goes to what answers it (it never approves a question).
    page.locator("h1").click()
    page.keyboard.press("Enter")
    expect(form.locator("[data-field=email] input")).to_be_focused()

    form.locator("[data-field=email] input").fill("not-an-email")
    seats.fill("3")
    card.locator("button[data-action=answer]").click()
    error = form.locator("[data-field=email] .field-error")
    expect(error).to_have_text("answer.email: not an email", timeout=TIMEOUT)
    expect(form.locator("[data-field=seats] .field-error")).to_be_hidden()
    assert api(url, "GET", f"/approvals/{question}", headers=ALICE)["status"] == "pending"
    screenshot(page, "question-form-error")

    form.locator("[data-field=email] input").fill("ap@example.com")
    form.locator("[data-field=plan] input[value=pro]").check()
    form.locator("[data-field=urgent] input").check()
    form.locator("[data-field=regions] input[value=eu]").check()
    form.locator("[data-field=regions] input[value=ap]").check()
    card.locator("button[data-action=answer]").click()
    expect(card).to_have_count(0, timeout=TIMEOUT)
    answer = {"email": "ap@example.com", "seats": 3, "plan": "pro", "urgent": True}
    assert told(url, run_id) == {
        "status": "answered",
        "answer": answer | {"regions": ["eu", "ap"]},
        "answered_by": "alice",
    }


def test_an_answer_given_first_elsewhere_is_shown_on_the_card_with_who_gave_it(
    page: Page, url: str
):
    """Two people answer at once: the inbox has not heard of bob's answer yet (its stream of
    changes held back) when alice sends hers, and her card says who answered first, and what."""
    run_id, question = asked(url, {"question": "Anything to add?"})
    held: list[Route] = []
    page.route(CHANGES, lambda route: held.append(route))
    sign_in(page, url)
    card = question_card(page, question)
    text = card.locator("textarea[name=answer]")
    expect(text).to_be_visible(timeout=TIMEOUT)
    body = {"kind": "answer", "value": "ship it"}
    api(url, "POST", f"/approvals/{question}/decision", json=body, headers=BOB)

    text.fill("hold on")
    card.locator("button[data-action=answer]").click()
    refused = card.locator(".answer-error")
    expect(refused).to_contain_text("already answered by 'bob'", timeout=TIMEOUT)
    expect(card.locator(".badge")).to_have_text("answered")
    expect(card.locator(".decision")).to_contain_text("answered by bob")
    expect(card.locator(".decision .answer-value")).to_have_text("ship it")
    expect(card.locator("textarea[name=answer]")).to_have_count(0)
    assert told(url, run_id) == {"status": "answered", "answer": "ship it", "answered_by": "bob"}


def test_a_question_is_declined_with_a_reason_the_agent_is_told(page: Page, url: str):
    run_id, question = asked(url, {"question": "May I email the customer?", "choices": ["yes"]})
    sign_in(page, url)
    card = question_card(page, question)
    card.locator("button[data-action=reject]").click(timeout=TIMEOUT)
    dialog = page.locator("dialog#dialog")
    expect(dialog.locator("h2")).to_have_text("Decline the question")
    dialog.locator("textarea[name=reason]").fill("legal reviews that first")
    dialog.locator("button[data-action=submit]").click()
    expect(card).to_have_count(0, timeout=TIMEOUT)
    assert told(url, run_id) == {"status": "declined", "reason": "legal reviews that first"}
