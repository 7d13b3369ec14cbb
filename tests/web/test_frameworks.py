"""Another framework's held calls in the inbox, in real Chromium against a real `signoff demo`:
the edit form from the schema kept with the approval, and the thread's conversation at the
pause — held on the demo's database as an integration holds them."""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from signoff import Policy, ToolCall
from signoff.gate import Gate
from signoff.gate import transcript as t
from signoff.gate.external import ExternalRuns
from signoff.store import open_store
from tests.web.conftest import TIMEOUT, api

TRANSFER = {
    "type": "object",
    "properties": {
        "amount": {"type": "integer", "minimum": 1},
        "to": {"type": "string"},
    },
    "required": ["amount", "to"],
}


def held_by_a_framework(
    folder: Path,
    origin: str,
    call: ToolCall,
    conversation: list[dict[str, Any]] | None = None,
    previews: dict[str, Any] | None = None,
    *,
    policy: Policy | None = None,
) -> str:
    """`call` held on the demo's database as `origin`'s integration holds it — its tool's
    schema registered, the pause recorded with `conversation` — without the server knowing the
    tool, under the demo's `policy` (or another): the approval's id. `previews` are the
    integration's preview functions."""
    if policy is None:
        with as_file(files("signoff") / "examples" / "demo-policy.yaml") as path:
            policy = Policy.from_file(path)
    thread = f"t-{uuid.uuid4().hex[:8]}"

    async def hold() -> str:
        async with open_store(f"sqlite:///{folder / 'signoff.db'}") as store:
            gate = Gate(policy, store)
            gate.register_schemas({call.name: TRANSFER}, agent=call.agent)
            runs = ExternalRuns(gate, origin=origin, previews=previews)
            held = await runs.judged([call], thread=thread, requested_by="alice")
            approval = held[call.id].approval
            assert approval is not None
            await runs.pause(thread=thread, approvals=[approval.id], data={},
                             agent=call.agent, conversation=conversation)  # fmt: skip
            return approval.id

    # Playwright's own loop runs in this thread: the store's goes in another.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, hold()).result()


def test_a_framework_call_s_card_edits_with_a_form_and_shows_the_server_s_refusal(
    page: Page, demo_url: str, demo_folder: Path
):
    call = ToolCall(id="c1", name="transfer", args={"amount": 500, "to": "acme"}, agent="payer")
    approval_id = held_by_a_framework(demo_folder, "langgraph", call)

    page.goto(f"{demo_url}/#/")
    card = page.locator(f"article.approval[data-approval-id='{approval_id}']")
    card.locator("button[data-action=edit]").click(timeout=TIMEOUT)
    dialog = page.locator("dialog#dialog")
    expect(dialog.locator(".tabs")).to_be_visible()  # a form, not "no form for this tool"
    amount = dialog.locator("[data-path='/amount'] input")
    expect(amount).to_have_value("500")
    amount.fill("0")
    dialog.locator("button[data-action=submit]").click()

    error = dialog.locator("[data-path='/amount'] .field-error")
    expect(error).to_contain_text("minimum", timeout=TIMEOUT)  # the server's, on its field
    expect(dialog.locator(".form-error")).to_have_text(
        "Not run: the server refused the field marked above."
    )
    assert api(demo_url, "GET", f"/approvals/{approval_id}")["status"] == "pending"
    amount.fill("50")
    dialog.locator("button[data-action=submit]").click()
    expect(dialog).to_be_hidden(timeout=TIMEOUT)
    decided = api(demo_url, "GET", f"/approvals/{approval_id}")
    assert decided["decision"] == {"kind": "edit", "args": {"amount": 50, "to": "acme"}}


def test_a_framework_call_s_card_shows_its_preview_and_says_an_edit_gets_none_here(
    page: Page, demo_url: str, demo_folder: Path
):
    def ledger(amount: int, to: str) -> list[dict[str, Any]]:
        return [{"change": -amount, "account": "alice"}, {"change": amount, "account": to}]

    call = ToolCall(id="c1", name="transfer", args={"amount": 70, "to": "acme"}, agent="payer")
    approval_id = held_by_a_framework(
        demo_folder, "pydantic-ai", call, previews={"transfer": ledger}
    )

    page.goto(f"{demo_url}/#/")
    card = page.locator(f"article.approval[data-approval-id='{approval_id}']")
    table = card.locator(".preview table.preview-table")
    # The columns in the order the preview gave them.
    expect(table.locator("th")).to_have_text(["change", "account"], timeout=TIMEOUT)
    expect(table.locator("tbody tr")).to_have_text(["-70alice", "70acme"])

    card.locator("button[data-action=edit]").click()
    dialog = page.locator("dialog#dialog")
    expect(dialog.locator(".no-edit-preview")).to_contain_text(
        "No preview of edited arguments here"
    )
    expect(dialog.locator("button[data-action=preview]")).to_have_count(0)
    dialog.locator("button[data-action=cancel]").click()


def test_a_framework_call_s_card_shows_its_thread_s_conversation_and_agent(
    page: Page, demo_url: str, demo_folder: Path
):
    call = ToolCall(id="c1", name="transfer", args={"amount": 500, "to": "acme"}, agent="payer")
    conversation = [
        t.message("system", "You move money."),
        t.message("user", "Pay acme 500"),
        t.message("assistant", "Checking the balance first.", agent="payer",
                  tool_calls=[t.call("c0", "balance", {})]),
        t.message("tool", "1200", tool_call_id="c0", name="balance"),
        t.message("assistant", agent="payer",
                  tool_calls=[t.call("c1", "transfer", {"amount": 500, "to": "acme"})]),
    ]  # fmt: skip
    approval_id = held_by_a_framework(demo_folder, "google-adk", call, conversation)

    page.goto(f"{demo_url}/#/")
    card = page.locator(f"article.approval[data-approval-id='{approval_id}']")
    expect(card.locator(".origin")).to_contain_text("agent payer", timeout=TIMEOUT)
    card.locator(".conversation-fold summary").click()
    shown = card.locator(".transcript")
    expect(shown.locator(".message.user .bubble")).to_have_text("userPay acme 500")
    expect(shown.locator(".message.assistant .bubble")).to_contain_text("Checking the balance")
    balance = shown.locator(".transcript-call[data-tool=balance]")
    expect(balance.locator(".label").first).to_have_text("payer calls balance")
    expect(balance.locator(".result")).to_contain_text("1200")
    expect(shown.locator(".transcript-call[data-tool=transfer]")).to_contain_text("acme")
    expect(shown).not_to_contain_text("You move money")  # the system prompt is not a turn

    # The approval's own page shows it at once.
    page.goto(f"{demo_url}/#/approvals/{approval_id}")
    own = page.locator("#approval-conversation .transcript")
    expect(own.locator(".message.user .bubble")).to_have_text("userPay acme 500", timeout=TIMEOUT)


def test_each_framework_s_card_names_it(page: Page, demo_url: str, demo_folder: Path):
    # The four frameworks issue 49 added, each card saying which one holds its call.
    named = {"agent-framework": "Microsoft Agent Framework", "strands": "Strands Agents",
             "llama-index": "LlamaIndex", "crewai": "CrewAI"}  # fmt: skip
    call = ToolCall(id="c1", name="transfer", args={"amount": 500, "to": "acme"}, agent="payer")
    held = {origin: held_by_a_framework(demo_folder, origin, call) for origin in named}
    page.goto(f"{demo_url}/#/")
    for origin, approval_id in held.items():
        card = page.locator(f"article.approval[data-approval-id='{approval_id}']")
        expect(card.locator(".origin")).to_contain_text(f"via {named[origin]}", timeout=TIMEOUT)
