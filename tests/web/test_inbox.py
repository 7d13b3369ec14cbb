"""The web inbox in real Chromium against a real `signoff demo`: the flows a person takes."""

from __future__ import annotations

import asyncio
import re
import statistics
import uuid
from concurrent.futures import ThreadPoolExecutor
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import BrowserContext, Locator, Page, expect

from signoff import Policy, ToolCall
from signoff.gate import CheckContext, Gate
from signoff.redaction import MASK
from signoff.store import open_store
from tests.deadline import HANG
from tests.web.conftest import TIMEOUT, confirm, screenshot, send_now


def start_run(page: Page, url: str, agent: str, text: str) -> str:
    """Start a run from the inbox's chat box; the page moves to the run. Its id."""
    page.goto(f"{url}/#/")
    page.select_option("form.chat select", agent)
    page.fill("form.chat textarea", text)
    page.press("form.chat textarea", "Enter")
    page.wait_for_url(re.compile(r"#/runs/\w+"), timeout=TIMEOUT)
    return page.url.rsplit("/", 1)[1]


def card(page: Page, tool: str) -> Locator:
    return page.locator(f"article[data-tool={tool}]")


def api(url: str, method: str, path: str, **kwargs: Any) -> Any:
    response = httpx.request(method, f"{url}/v1{path}", timeout=HANG, **kwargs)
    assert response.is_success, response.text
    return response.json()


def test_edit_refused_by_the_schema_shows_the_error_then_a_valid_edit_runs(
    page: Page, demo_url: str
):
    run_id = start_run(page, demo_url, "ops", "scale web to 3")
    scale = card(page, "scale_deployment")
    expect(scale.locator(".badge")).to_have_text("pending", timeout=TIMEOUT)
    expect(page.locator("#run-status")).to_have_text("paused")
    screenshot(page, "run")

    scale.locator("button[data-action=edit]").click()
    dialog = page.locator("dialog#dialog")
    replicas = dialog.locator("[data-path='/replicas'] input")
    expect(replicas).to_have_value("3")
    replicas.fill("500")
    dialog.locator("button[data-action=submit]").click()
    error = dialog.locator("[data-path='/replicas'] .field-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("500 is greater than the maximum of 50")
    # Said once, by the field: the dialog's own line only points to it.
    expect(dialog.locator(".form-error")).to_have_text(
        "Not run: the server refused the field marked above."
    )
    screenshot(page, "edit-error")

    replicas.fill("4")
    dialog.locator("button[data-action=submit]").click()
    expect(dialog).to_be_hidden()
    expect(scale.locator(".badge")).to_have_text("edited", timeout=TIMEOUT)
    expect(scale.locator("button")).to_have_count(0)
    # Both argument sets stay: what the model asked for beside what ran.
    changed = scale.locator(".args-diff tr[data-path='/replicas']")
    expect(changed.locator("td.before")).to_have_text("3")
    expect(changed.locator("td.after")).to_have_text("4")
    expect(scale.locator(".result")).to_contain_text("deployment web scaled to 4", timeout=TIMEOUT)
    expect(page.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)
    expect(page.locator(".message.assistant .bubble").last).to_contain_text("Done")
    decided = api(demo_url, "GET", f"/approvals?run_id={run_id}")["items"][0]
    assert decided["status"] == "edited"
    assert decided["decision"] == {"kind": "edit", "args": {"name": "web", "replicas": 4}}


def test_the_form_covers_enums_booleans_arrays_and_nested_objects(page: Page, demo_url: str):
    run_id = start_run(page, demo_url, "ops", "deploy shop:1.2")
    deploy = card(page, "deploy")
    deploy.locator("button[data-action=edit]").click()
    dialog = page.locator("dialog#dialog")
    expect(dialog.locator("[data-path='/strategy'] select")).to_have_value("0")  # rolling
    dialog.locator("[data-path='/strategy'] select").select_option(label="recreate")
    dialog.locator("[data-path='/dry_run'] input[type=checkbox]").check()
    env = dialog.locator("[data-path='/env']")
    env.locator("input.include").check()
    env.locator("button.add").click()
    dialog.locator("[data-path='/env/0/name'] input").fill("log level")  # not a variable name
    dialog.locator("[data-path='/env/0/value'] input").fill("debug")
    resources = dialog.locator("[data-path='/resources']")
    resources.locator("input.include").first.check()
    dialog.locator("[data-path='/resources/cpu'] input").fill("250m")
    dialog.locator("[data-path='/resources/memory_mb'] input").fill("512")
    screenshot(page, "edit-form")
    dialog.locator("button[data-action=submit]").click()
    expect(dialog.locator("[data-path='/env/0/name'] .field-error")).to_contain_text("log level")

    dialog.locator("[data-path='/env/0/name'] input").fill("LOG_LEVEL")
    dialog.locator("button[data-action=submit]").click()
    expect(dialog).to_be_hidden()
    expect(deploy.locator(".badge")).to_have_text("edited", timeout=TIMEOUT)
    expect(deploy.locator(".result")).to_contain_text("dry run", timeout=TIMEOUT)
    # The demo redacts environment values: they never reach the browser, even once decided.
    expect(deploy.locator(".decision .j-masked")).to_have_text(MASK)
    decided = api(demo_url, "GET", f"/approvals?run_id={run_id}")["items"][0]
    assert decided["decision"]["args"] == {
        "name": "shop",
        "image": "shop:1.2",
        "strategy": "recreate",
        "env": [{"name": "LOG_LEVEL", "value": MASK}],
        "dry_run": True,
        "resources": {"cpu": "250m", "memory_mb": 512},
    }


def test_raw_json_edit_round_trips_with_the_form(page: Page, demo_url: str):
    start_run(page, demo_url, "files", "write hello to greeting.txt")
    write = card(page, "write_file")
    write.locator("button[data-action=edit]").click()
    dialog = page.locator("dialog#dialog")
    dialog.locator("[data-path='/content'] input").fill("hello, world")
    dialog.locator("button[data-tab=raw]").click()
    raw = dialog.locator("textarea.raw-json")
    expect(raw).to_have_value(re.compile(r'"content": "hello, world"'))
    raw.fill('{"path": "greeting.txt", "content": "hi from JSON"}')
    dialog.locator("button[data-tab=form]").click()
    expect(dialog.locator("[data-path='/content'] input")).to_have_value("hi from JSON")
    dialog.locator("button[data-tab=raw]").click()
    raw.fill('{"path": "greeting.txt", "content": 5}')  # the server refuses a number
    dialog.locator("button[data-action=submit]").click()
    expect(dialog.locator(".form-error")).to_contain_text("/content")
    raw.fill('{"path": "greeting.txt", "content": "hi from JSON"}')
    dialog.locator("button[data-action=submit]").click()
    expect(write.locator(".badge")).to_have_text("edited", timeout=TIMEOUT)
    expect(write.locator(".result")).to_contain_text("greeting.txt", timeout=TIMEOUT)


def test_approve_all_decides_a_batch_of_three_at_once(page: Page, demo_url: str):
    run_id = start_run(
        page,
        demo_url,
        "ops",
        "list pods then delete nginx-123 and scale redis to 2 and deploy api:7",
    )
    expect(page.locator("article.approval.status-pending")).to_have_count(3, timeout=TIMEOUT)
    expect(card(page, "list_pods").locator(".badge")).to_have_text("ran (allowed)")
    approve_all = page.locator("button[data-action=approve-all]")
    expect(approve_all).to_have_text("Approve All (3)")
    approve_all.click()
    confirm(page)  # delete_pod's rule marks it destructive
    # One undo window for the batch: one bar where the button was, the cards say so.
    expect(page.locator(".actions.undo")).to_have_count(1)
    expect(page.locator(".actions.undo .countdown")).to_contain_text("Approving 3 calls in")
    expect(page.locator("article.approval .actions.batched")).to_have_count(3)
    send_now(page.locator("#conversation"))
    expect(page.locator("article.approval.status-approved")).to_have_count(3, timeout=TIMEOUT)
    expect(approve_all).to_have_count(0)
    expect(page.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)
    statuses = {
        a["tool"]: a["status"] for a in api(demo_url, "GET", f"/approvals?run_id={run_id}")["items"]
    }
    assert statuses == {
        "delete_pod": "approved",
        "scale_deployment": "approved",
        "deploy": "approved",
    }


def test_reject_with_a_reason_and_the_model_replies_with_it(page: Page, demo_url: str):
    start_run(page, demo_url, "ops", "delete nginx-124")
    delete = card(page, "delete_pod")
    delete.locator("button[data-action=reject]").click()
    page.fill("dialog#dialog textarea", "not during business hours")
    page.click("dialog#dialog button[data-action=submit]")
    expect(delete.locator(".actions.undo .countdown")).to_contain_text("Rejecting in")
    screenshot(page, "undo")
    delete.locator("button[data-action=send-now]").click()
    expect(delete.locator(".badge")).to_have_text("rejected", timeout=TIMEOUT)
    expect(delete).to_contain_text("Reason: not during business hours")
    expect(page.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)
    reply = page.locator(".message.assistant .bubble").last
    expect(reply).to_contain_text("The user rejected this call: not during business hours")


def test_a_reload_rebuilds_the_same_cards(page: Page, demo_url: str):
    run_id = start_run(page, demo_url, "ops", "delete web-123 and scale nginx to 1")
    expect(page.locator("article.approval.status-pending")).to_have_count(2, timeout=TIMEOUT)
    card(page, "delete_pod").locator("button[data-action=approve]").click()
    confirm(page)
    send_now(card(page, "delete_pod"))
    expect(card(page, "delete_pod").locator(".badge")).to_have_text("approved")

    page.reload()
    expect(card(page, "delete_pod").locator(".badge")).to_have_text("approved", timeout=TIMEOUT)
    expect(card(page, "delete_pod").locator("button")).to_have_count(0)
    scale = card(page, "scale_deployment")
    expect(scale.locator(".badge")).to_have_text("pending")
    expect(scale.locator("button[data-action]")).to_have_count(6)  # … Approve always, Assign
    expect(page.locator("#run-status")).to_have_text("paused")
    assert page.url.endswith(run_id)

    page.goto(f"{demo_url}/#/runs")  # the runs page lists it, newest first, with its status
    newest = page.locator("table.runs tbody tr").first
    expect(newest).to_have_attribute("data-run-id", run_id, timeout=TIMEOUT)
    expect(newest).to_contain_text("paused")
    newest.locator("a").click()
    expect(card(page, "scale_deployment").locator(".badge")).to_have_text("pending")


def test_a_decision_in_one_tab_updates_the_others_live(context: BrowserContext, demo_url: str):
    deciding, watching, inbox = context.new_page(), context.new_page(), context.new_page()
    text = ", ".join(f"scale web to {n}" for n in range(1, 6))
    run_id = start_run(deciding, demo_url, "ops", text)
    watching.goto(f"{demo_url}/#/runs/{run_id}")
    inbox.goto(f"{demo_url}/#/?run={run_id}")
    expect(inbox.locator("article.approval")).to_have_count(5, timeout=TIMEOUT)
    screenshot(inbox, "inbox")
    # Clicks wait for their button to hold still over two animation frames, which a page in the
    # background draws none of.
    deciding.bring_to_front()
    delays = []
    for remaining in range(4, -1, -1):
        approval_id = deciding.locator("article.approval.status-pending").first.get_attribute(
            "data-approval-id"
        )
        target = deciding.locator(f"article.approval[data-approval-id='{approval_id}']")
        target.locator("button[data-action=approve]").click()
        watching.evaluate(WATCH, approval_id)
        deciding.evaluate(CLICK_TIME)
        send_now(target)
        watching.wait_for_function("() => window.__decidedAt !== undefined", timeout=TIMEOUT)
        clicked = deciding.evaluate("() => window.__clickedAt")
        delays.append(watching.evaluate("() => window.__decidedAt") - clicked)
        other = watching.locator(f"article[data-approval-id='{approval_id}']")
        expect(other.locator(".badge")).to_have_text("approved")
        expect(other.locator("button")).to_have_count(0)
        expect(inbox.locator("article.approval")).to_have_count(remaining, timeout=TIMEOUT)
    expect(watching.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)
    print(
        f"\ndecision click -> badge in another tab: median {statistics.median(delays):.1f} ms, "
        f"max {max(delays):.1f} ms over {len(delays)} decisions"
    )
    assert all(d > 0 for d in delays)


FOCUS = """() => {
  const at = document.activeElement;
  const selected = document.querySelector("article.selected");
  return `focus on ${at.tagName}.${at.className} ${at.dataset?.approvalId || ""}; ` +
    `selected ${selected?.dataset.approvalId} (${selected?.className}); ` +
    `dialog open ${document.getElementById("dialog").open}`;
}"""
WATCH = """id => {
  delete window.__decidedAt;
  const decided = () => {
    const card = document.querySelector(`article[data-approval-id="${id}"]`);
    return card && card.dataset.status !== "pending";
  };
  const observer = new MutationObserver(() => {
    if (decided()) {
      window.__decidedAt = performance.timeOrigin + performance.now();
      observer.disconnect();
    }
  });
  observer.observe(document.body, {subtree: true, childList: true, attributes: true});
}"""
CLICK_TIME = """() => document.addEventListener("click", () => {
  window.__clickedAt = performance.timeOrigin + performance.now();
}, {capture: true, once: true})"""


def test_keyboard_enter_approves_ctrl_e_edits_escape_closes(page: Page, demo_url: str):
    start_run(page, demo_url, "ops", "scale web to 2 and scale redis to 3")
    expect(page.locator("article.approval.status-pending")).to_have_count(2, timeout=TIMEOUT)
    first, second = page.locator("article.approval").nth(0), page.locator("article.approval").nth(1)
    expect(first).to_have_class(re.compile(r"\bselected\b"))
    page.keyboard.press("j")
    expect(second).to_have_class(re.compile(r"\bselected\b"))
    page.keyboard.press("Control+e")
    dialog = page.locator("dialog#dialog")
    expect(dialog).to_be_visible()
    expect(dialog.locator("h2")).to_have_text("Edit scale_deployment")
    expect(dialog.locator("[data-path='/replicas'] input")).to_have_value("3")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    focused = page.evaluate(FOCUS)  # what Enter goes to, should this fail
    page.keyboard.press("Enter")
    expect(second.locator(".actions.undo"), focused).to_contain_text("Approving in")
    page.keyboard.press("Enter")  # the selection moved to the one left
    expect(first.locator(".actions.undo")).to_contain_text("Approving in")
    send_now(second)
    expect(second.locator(".badge")).to_have_text("approved", timeout=TIMEOUT)
    expect(first.locator(".badge")).to_have_text("pending")
    send_now(first)
    expect(first.locator(".badge")).to_have_text("approved", timeout=TIMEOUT)


def test_respond_and_approve_always_for_a_scope(page: Page, demo_url: str):
    run_id = start_run(page, demo_url, "files", "write a to a.txt then write b to b.txt")
    first, second = page.locator("article.approval").nth(0), page.locator("article.approval").nth(1)
    first.locator("button[data-action=respond]").click()
    page.fill("dialog#dialog textarea", "I wrote it myself.")
    page.click("dialog#dialog button[data-action=submit]")
    expect(first.locator(".badge")).to_have_text("responded", timeout=TIMEOUT)
    second.locator("button[data-action=always]").click()
    page.check("dialog#dialog input[value=thread]")
    page.check("dialog#dialog input[name=any_args]")  # the next write is of another file
    page.click("dialog#dialog button[data-action=submit]")
    send_now(second)
    expect(second.locator(".badge")).to_have_text("approved", timeout=TIMEOUT)
    expect(second).to_contain_text("Always, for this thread, with any arguments")
    expect(page.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)
    thread = api(demo_url, "GET", f"/runs/{run_id}")["thread_id"]

    # The grant covers the thread: the next write on it runs without asking.
    page.fill(".run-footer form.chat textarea", "write c to c.txt")
    page.press(".run-footer form.chat textarea", "Enter")
    page.wait_for_url(re.compile(r"#/runs/(?!" + run_id + r")\w+"), timeout=TIMEOUT)
    expect(card(page, "write_file").locator(".badge")).to_have_text(
        "ran (allowed)", timeout=TIMEOUT
    )
    assert api(demo_url, "GET", f"/runs/{page.url.rsplit('/', 1)[1]}")["thread_id"] == thread


def test_the_policy_switch_changes_the_next_run(page: Page, demo_url: str):
    page.goto(f"{demo_url}/#/policy")
    row = page.locator("section[data-agent=ops] tr[data-tool=get_logs]")
    expect(row).to_have_attribute("data-verdict", "allow", timeout=TIMEOUT)
    expect(row.locator("code.rule")).to_have_text("agents.ops.tools.get_logs")
    denied = page.locator("section[data-agent=ops] tr[data-tool=admin_reset_cluster]")
    expect(denied.locator("input[role=switch]")).to_be_disabled()
    expect(denied.locator("code.rule")).to_have_text("agents.ops.rules[0]")
    version = page.locator("#policy-version").inner_text()
    row.locator("input[role=switch]").click()  # require approval
    expect(row).to_have_attribute("data-verdict", "ask", timeout=TIMEOUT)
    expect(page.locator("#policy-version")).not_to_have_text(version)
    screenshot(page, "policy")

    page.fill("form.explain input[name=tool]", "get_logs")
    page.select_option("form.explain select", "ops")
    page.fill("form.explain textarea", '{"name": "web-123"}')
    page.click("form.explain button")
    expect(page.locator("#explanation")).to_contain_text("ask by agents.ops.tools.get_logs")

    start_run(page, demo_url, "ops", "logs of redis-123")
    expect(card(page, "get_logs").locator(".badge")).to_have_text("pending", timeout=TIMEOUT)
    card(page, "get_logs").locator("button[data-action=approve]").click()
    send_now(card(page, "get_logs"))
    expect(card(page, "get_logs").locator(".badge")).to_have_text("approved", timeout=TIMEOUT)

    page.goto(f"{demo_url}/#/policy")
    row.locator("input[role=switch]").click()  # back to allow
    expect(row).to_have_attribute("data-verdict", "allow", timeout=TIMEOUT)
    start_run(page, demo_url, "ops", "logs of redis-123")
    expect(card(page, "get_logs").locator(".badge")).to_have_text("ran (allowed)", timeout=TIMEOUT)

    page.goto(f"{demo_url}/#/policy")
    row.locator("select.verdict").select_option("deny")
    expect(row).to_have_attribute("data-verdict", "deny", timeout=TIMEOUT)
    expect(row.locator("input[role=switch]")).to_be_disabled()
    start_run(page, demo_url, "ops", "logs of redis-123")
    expect(card(page, "get_logs").locator(".badge")).to_have_text("blocked", timeout=TIMEOUT)
    expect(card(page, "get_logs").locator(".result")).to_contain_text(
        "The policy blocked this call"
    )
    page.goto(f"{demo_url}/#/policy")
    row.locator("select.verdict").select_option("allow")
    expect(row).to_have_attribute("data-verdict", "allow", timeout=TIMEOUT)
    entries = api(demo_url, "GET", "/audit?limit=1000")["items"]
    changes = [e for e in entries if e["action"] == "policy" and e["actor"] == "local"]
    assert len(changes) >= 2  # each switch is a new, audited version


def test_the_audit_page_shows_decisions_and_verifies_the_chain(page: Page, demo_url: str):
    start_run(page, demo_url, "files", "delete notes.txt")
    delete = card(page, "delete_file")
    delete.locator("button[data-action=reject]").click()
    page.fill("dialog#dialog textarea", "keep the notes")
    page.click("dialog#dialog button[data-action=submit]")
    delete.locator("button[data-action=send-now]").click()
    expect(delete.locator(".badge")).to_have_text("rejected", timeout=TIMEOUT)

    page.goto(f"{demo_url}/#/audit")
    newest = page.locator("table.audit tbody tr").first
    expect(newest).to_have_attribute("data-action", "decision", timeout=TIMEOUT)
    expect(newest).to_contain_text("local")
    expect(newest).to_contain_text("delete_file")
    expect(newest).to_contain_text("Reason: keep the notes")
    page.click("#verify")
    expect(page.locator("#verify-result")).to_contain_text("intact", timeout=TIMEOUT)
    screenshot(page, "audit")


def test_the_inbox_filters_by_agent_and_tool_and_shows_the_scripted_model(
    page: Page, demo_url: str
):
    start_run(page, demo_url, "files", "delete todo.md")
    files_run = page.url.rsplit("/", 1)[1]
    start_run(page, demo_url, "ops", "delete redis-123")
    page.goto(f"{demo_url}/#/")
    expect(page.locator("#banner")).to_contain_text("scripted demo model")
    files_card = page.locator("article.approval[data-tool=delete_file]").first
    expect(files_card).to_be_visible(timeout=TIMEOUT)
    page.select_option(".filters select[name=agent]", "ops")
    expect(page.locator("article.approval[data-tool=delete_file]")).to_have_count(0)
    assert page.url.endswith("#/?agent=ops")  # a filtered inbox can be bookmarked
    expect(page.locator("article.approval[data-tool=delete_pod]").first).to_be_visible()
    page.select_option(".filters select[name=agent]", "")
    page.select_option(".filters select[name=tool]", "delete_file")
    expect(page.locator("article.approval[data-tool=delete_pod]")).to_have_count(0)
    page.fill(".filters input[name=run]", files_run)
    page.press(".filters input[name=run]", "Enter")
    expect(page.locator("article.approval")).to_have_count(1)
    expect(page.locator("article.approval .agent")).to_have_text("files")
    expect(page.locator("article.approval .rule")).to_have_text("agents.files.tools.delete_file")
    expect(page.locator("article.approval .deadline")).to_have_count(0)  # no timeout: no clock

    # delete_pod's rule gives an hour: its card counts down.
    page.select_option(".filters select[name=tool]", "delete_pod")
    page.fill(".filters input[name=run]", "")
    page.press(".filters input[name=run]", "Enter")
    deadline = page.locator("article.approval[data-tool=delete_pod] .deadline").first
    expect(deadline).to_have_text(re.compile(r"^59m \d+s left$"))
    first = deadline.inner_text()
    expect(deadline).not_to_have_text(first, timeout=TIMEOUT)  # it ticks


def test_the_inbox_filters_offer_and_find_the_agents_and_tools_of_calls_held_elsewhere(
    page: Page, demo_url: str, demo_folder: Path
):
    """A framework app's agents and the MCP gateway's tools are none of the server's: the
    filters offer them from the approvals held on its database, and find their calls."""
    thread = f"t-{uuid.uuid4().hex[:8]}"
    payer = "billing/payer"
    refund, upload = held_elsewhere(
        demo_folder,
        (
            ToolCall(id="c1", name="refund_order", args={"order": 7}, agent=payer),
            CheckContext(origin="langgraph", thread_id=thread, requested_by="alice"),
        ),
        (
            ToolCall(id="c2", name="upload_file", args={"path": "/srv/a"}, server="fs"),
            CheckContext(origin="mcp-gateway", thread_id=thread, requested_by="carol"),
        ),
    )
    refund_card = page.locator(f"article.approval[data-approval-id='{refund}']")
    upload_card = page.locator(f"article.approval[data-approval-id='{upload}']")
    agents = page.locator(".filters select[name=agent]")
    tools = page.locator(".filters select[name=tool]")

    page.goto(f"{demo_url}/#/")
    expect(agents.locator(f"option[value='{payer}']")).to_have_count(1, timeout=TIMEOUT)
    expect(agents.locator("option[value=ops]")).to_have_count(1)  # the server's own stay
    agents.select_option(payer)
    expect(refund_card).to_be_visible(timeout=TIMEOUT)
    expect(upload_card).to_have_count(0)
    agents.select_option("")
    tools.select_option("upload_file")
    expect(upload_card).to_be_visible(timeout=TIMEOUT)
    expect(refund_card).to_have_count(0)

    # Decided, the call's agent is still offered: what has waited, not only what waits.
    api(demo_url, "POST", f"/approvals/{refund}/decision", json={"kind": "reject"})
    page.goto(f"{demo_url}/#/")
    page.reload()
    expect(agents.locator(f"option[value='{payer}']")).to_have_count(1, timeout=TIMEOUT)
    agents.select_option(payer)
    expect(page.locator("#inbox-count")).to_have_text("(0 pending)", timeout=TIMEOUT)
    page.reload()  # a bookmarked filter shows what it filters by
    expect(agents).to_have_value(payer, timeout=TIMEOUT)


def test_a_sub_agents_held_call_shows_on_the_run_that_handed_it_over(page: Page, demo_url: str):
    run_id = start_run(page, demo_url, "ops", "ask db to drop table sessions")
    handed = card(page, "db")  # the ops agent's call of its sub-agent, running meanwhile
    expect(handed.locator(".badge")).to_have_text("running", timeout=TIMEOUT)
    held = page.locator("#subagents article[data-tool=drop_table]")
    expect(held.locator(".badge")).to_have_text("pending", timeout=TIMEOUT)
    expect(held.locator(".agent")).to_have_text("ops/db")
    expect(held.locator(".rule")).to_have_text("agents.ops/db.tools.drop_table")
    expect(page.locator("#run-status")).to_have_text("paused")
    held.locator("button[data-action=approve]").click()
    confirm(page)  # drop_table's rule marks it destructive
    send_now(held)
    expect(held.locator(".badge")).to_have_text("approved", timeout=TIMEOUT)
    expect(handed.locator(".badge")).to_have_text("ran (allowed)", timeout=TIMEOUT)
    expect(handed.locator(".result")).to_contain_text("table sessions dropped")
    expect(page.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)

    # The sub-agent's own run shows the same call, decided, in its conversation.
    child = next(r for r in api(demo_url, "GET", "/runs")["items"] if r["parent_id"] == run_id)
    page.goto(f"{demo_url}/#/runs/{child['id']}")
    expect(page.locator("h1 .agent")).to_have_text("ops/db", timeout=TIMEOUT)
    expect(card(page, "drop_table").locator(".badge")).to_have_text("approved")
    expect(card(page, "drop_table").locator(".result")).to_contain_text("table sessions dropped")
    expect(page.locator("#subagents article")).to_have_count(0)


def test_a_grant_is_listed_shown_on_the_policy_page_and_revoked(page: Page, demo_url: str):
    run_id = start_run(page, demo_url, "files", "write g to granted.txt")
    write = card(page, "write_file")
    write.locator("button[data-action=always]").click()
    page.check("dialog#dialog input[value=thread]")
    page.click("dialog#dialog button[data-action=submit]")
    send_now(write)
    expect(page.locator("#run-status")).to_have_text("completed", timeout=TIMEOUT)
    thread = api(demo_url, "GET", f"/runs/{run_id}")["thread_id"]
    [grant] = [g for g in api(demo_url, "GET", "/grants")["items"] if g["subject"] == thread]

    page.goto(f"{demo_url}/#/grants")
    row = page.locator(f"tr[data-grant-id='{grant['id']}']")
    expect(row).to_contain_text(f"thread {thread}")
    expect(row).to_contain_text("in force")
    expect(row).to_contain_text("local")
    screenshot(page, "grants")
    page.goto(f"{demo_url}/#/policy")
    note = page.locator("[data-agent=files] tr[data-tool=write_file] .grant-note")
    expect(note).to_contain_text("approved always", timeout=TIMEOUT)

    page.goto(f"{demo_url}/#/grants")
    row.locator("button[data-action=revoke]").click()
    expect(row).to_have_count(0, timeout=TIMEOUT)
    page.check("input[name=revoked]")
    expect(row).to_have_attribute("data-status", "revoked", timeout=TIMEOUT)
    expect(row.locator("td.status-revoked")).to_contain_text("by local")
    [entry] = [
        e for e in api(demo_url, "GET", "/audit?limit=1000")["items"] if e["subject"] == grant["id"]
        and e["action"] == "revoke"
    ]  # fmt: skip
    assert entry["actor"] == "local"


def test_long_arguments_are_cut_in_the_inbox_and_whole_when_shown_or_edited(
    page: Page, demo_url: str
):
    text = "a" * 5000
    start_run(page, demo_url, "files", f"write {text} to long.txt")
    page.goto(f"{demo_url}/#/?tool=write_file")
    pending = page.locator("#inbox-list article.approval", has_text="long.txt")
    expect(pending.locator("button[data-action=whole]")).to_be_visible(timeout=TIMEOUT)
    pending.locator("button[data-action=edit]").click()
    content = page.locator("dialog#dialog [data-path='/content'] :is(input, textarea)")
    expect(content).to_have_value(text)  # the whole text, not the listing's cut one
    page.keyboard.press("Escape")
    expect(pending.locator("button[data-action=whole]")).to_have_count(0)
    pending.locator("button[data-action=reject]").click()
    page.click("dialog#dialog button[data-action=submit]")
    pending.locator("button[data-action=send-now]").click()
    expect(pending).to_have_count(0, timeout=TIMEOUT)


def held_elsewhere(folder: Path, *asked: tuple[ToolCall, CheckContext]) -> list[str]:
    """Each call held as another framework's run holds it, on the demo's own database (under
    the demo's policy): the approvals' ids, in that order."""
    with as_file(files("signoff") / "examples" / "demo-policy.yaml") as path:
        policy = Policy.from_file(path)

    async def hold() -> list[str]:
        async with open_store(f"sqlite:///{folder / 'signoff.db'}") as store:
            gate = Gate(policy, store)
            outcomes = [(await gate.hold_external([c], context))[0] for c, context in asked]
        return [o.approval.id for o in outcomes if o.approval]

    # Playwright's own loop runs in this thread: the store's goes in another.
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, hold()).result()


def test_another_framework_s_call_shows_whose_it_is_and_is_decided_from_its_card(
    page: Page, demo_url: str, demo_folder: Path
):
    thread = f"t-{uuid.uuid4().hex[:8]}"
    researcher = "coordinator/researcher"
    email, note = held_elsewhere(
        demo_folder,
        (
            ToolCall(id="c1", name="send_email", args={"to": "bob@example.com"}, agent=researcher),
            CheckContext(origin="langgraph", thread_id=thread, requested_by="alice"),
        ),
        (
            ToolCall(id="c2", name="post_note", args={"text": "hi"}),
            CheckContext(origin="homegrown", thread_id=thread),
        ),
    )
    page.goto(f"{demo_url}/#/")
    shown = page.locator(f"article.approval[data-approval-id='{email}']")
    expect(shown.locator(".origin")).to_have_text(
        f"thread {thread} · agent {researcher} · via LangGraph", timeout=TIMEOUT
    )
    expect(shown.locator(".requested-by")).to_have_text("from alice")
    expect(shown.locator("a.run-link")).to_have_count(0)  # it belongs to no run of signoff's
    expect(shown.locator(".asked")).to_have_count(0)  # nor to what a user asked one
    expect(shown.locator("a.approval-link")).to_have_attribute("href", f"#/approvals/{email}")
    other = page.locator(f"article.approval[data-approval-id='{note}']")
    expect(other.locator(".origin")).to_have_text(f"thread {thread} · via homegrown")
    expect(other.locator("a.run-link")).to_have_count(0)

    # Approve always: for its thread, its agent or everywhere — it has no run.
    shown.locator("button[data-action=always]").click()
    scopes = page.locator("dialog#dialog input[name=scope]")
    expect(scopes).to_have_count(3)
    assert [s.get_attribute("value") for s in scopes.all()] == ["thread", "agent", "global"]
    page.check("dialog#dialog input[value=agent]")
    page.click("dialog#dialog button[data-action=submit]")
    send_now(shown)
    expect(shown).to_have_count(0, timeout=TIMEOUT)  # decided: out of the inbox
    decided = api(demo_url, "GET", f"/approvals/{email}")
    assert (decided["status"], decided["decided_by"]) == ("approved", "local")
    # Unticked, "for any arguments" leaves the grant to these arguments only.
    assert decided["decision"]["always"] == {"scope": "agent", "with_args": True}

    # Its own page shows it, and it is decided there too.
    other.locator("a.approval-link").click()
    page.wait_for_url(f"**/#/approvals/{note}", timeout=TIMEOUT)
    own = page.locator(f"#approval article.approval[data-approval-id='{note}']")
    expect(own.locator(".badge")).to_have_text("pending", timeout=TIMEOUT)
    expect(own.locator(".origin")).to_have_text(f"thread {thread} · via homegrown")
    expect(own.locator("a")).to_have_count(0)  # no run to open, and it is its own page
    own.locator("button[data-action=approve]").click()
    send_now(own)
    expect(own.locator(".badge")).to_have_text("approved", timeout=TIMEOUT)
    expect(own.locator("button")).to_have_count(0)
    assert api(demo_url, "GET", f"/approvals/{note}")["status"] == "approved"


def test_an_approval_s_own_page_shows_a_decision_taken_elsewhere(
    page: Page, demo_url: str, demo_folder: Path
):
    thread = f"t-{uuid.uuid4().hex[:8]}"
    [approval_id] = held_elsewhere(
        demo_folder,
        (
            ToolCall(id="c1", name="send_email", args={"to": "carol@example.com"}, agent="triage"),
            CheckContext(origin="openai-agents", thread_id=thread),
        ),
    )
    page.goto(f"{demo_url}/#/approvals/{approval_id}")
    own = page.locator(f"#approval article.approval[data-approval-id='{approval_id}']")
    expect(own.locator(".badge")).to_have_text("pending", timeout=TIMEOUT)
    expect(own.locator(".origin")).to_have_text(
        f"thread {thread} · agent triage · via OpenAI Agents SDK"
    )
    # Decided in another channel (the terminal, Slack…): this page follows.
    api(
        demo_url,
        "POST",
        f"/approvals/{approval_id}/decision",
        json={"kind": "reject", "reason": "not now"},
    )
    expect(own.locator(".badge")).to_have_text("rejected", timeout=TIMEOUT)
    expect(own.locator(".decision-reason")).to_have_text("Reason: not now")
    expect(own.locator("button")).to_have_count(0)


def test_a_held_resource_read_and_prompt_say_what_they_are_and_are_decided_from_their_cards(
    page: Page, demo_url: str, demo_folder: Path
):
    """The MCP gateway's reads and prompts wait in the same inbox, named for what they are."""
    thread = f"t-{uuid.uuid4().hex[:8]}"
    gateway = CheckContext(origin="mcp-gateway", thread_id=thread, requested_by="carol")
    read, prompt = held_elsewhere(
        demo_folder,
        (ToolCall(id="0", name="file:///srv/secrets/key", server="fs", kind="resource"), gateway),
        (ToolCall(id="1", name="review", args={"lang": "py"}, server="fs", kind="prompt"), gateway),
    )
    page.goto(f"{demo_url}/#/")
    card = page.locator(f"article.approval[data-approval-id='{read}']")
    expect(card.locator(".kind")).to_have_text("read resource", timeout=TIMEOUT)
    expect(card.locator(".tool")).to_have_text("file:///srv/secrets/key")
    expect(card.locator(".server")).to_have_text("on fs")
    other = page.locator(f"article.approval[data-approval-id='{prompt}']")
    expect(other.locator(".kind")).to_have_text("get prompt")
    expect(other.locator(".tool")).to_have_text("review")
    card.locator("button[data-action=approve]").click()
    send_now(card)
    expect(card).to_have_count(0, timeout=TIMEOUT)
    assert api(demo_url, "GET", f"/approvals/{read}")["status"] == "approved"
    assert api(demo_url, "GET", f"/approvals/{prompt}")["status"] == "pending"


def test_a_question_waits_in_the_inbox_as_a_question_and_shows_its_answer(
    page: Page, demo_url: str, demo_folder: Path
):
    """A question held by another channel (the gate, in process) shows as a held call named
    for what it is, and its answer (taken through the API) as its badge (its card:
    test_questions.py)."""
    asked = ToolCall(
        id="q", name="ask_person", kind="question", args={"question": "Region?", "choices": ["eu"]}
    )
    context = CheckContext(origin="gate", thread_id=f"t-{uuid.uuid4().hex[:8]}")
    [question] = held_elsewhere(demo_folder, (asked, context))
    page.goto(f"{demo_url}/#/")
    card = page.locator(f"article.approval[data-approval-id='{question}']")
    expect(card.locator(".kind")).to_have_text("question", timeout=TIMEOUT)
    expect(card).to_contain_text("Region?")
    api(demo_url, "POST", f"/approvals/{question}/decision", json={"kind": "answer", "value": "eu"})
    page.goto(f"{demo_url}/#/approvals/{question}")
    own = page.locator(f"#approval article.approval[data-approval-id='{question}']")
    expect(own.locator(".badge")).to_have_text("answered", timeout=TIMEOUT)
