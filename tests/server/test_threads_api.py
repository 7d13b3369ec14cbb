"""The conversations behind approvals and runs, as the API serves them: another framework's
thread as its integration kept it at the pause, and a thread of signoff's own runs — in-process."""

from __future__ import annotations

from typing import Any

from signoff import Policy, ToolCall
from signoff.agent import ModelTurn
from signoff.gate import Gate
from signoff.gate import transcript as t
from signoff.gate.external import ExternalRuns
from signoff.redaction import MASK
from signoff.server.routes.conversation import ERROR_HIDDEN
from signoff.server.shapes import INPUT_CHARS
from signoff.store import SQLStore
from tests.server.test_web_api import DOCUMENT, client_for

SCHEMA = {"type": "object", "properties": {"password": {"type": "string"}}}


async def held(store: SQLStore, conversation: list[dict[str, Any]] | None) -> str:
    """A call held as a framework's integration holds it, its pause keeping `conversation`."""
    gate = Gate(Policy.from_dict(DOCUMENT), store)
    gate.register_schemas({"login": SCHEMA}, agent="crew/payer")
    runs = ExternalRuns(gate, origin="google-adk")
    call = ToolCall(id="c9", name="login", args={"password": "hunter2"}, agent="crew/payer")
    found = await runs.judged([call], thread="t-1", requested_by="alice")
    approval = found["c9"].approval
    assert approval is not None
    await runs.pause(thread="t-1", approvals=[approval.id], data={}, agent="crew/payer",
                     conversation=conversation)  # fmt: skip
    return approval.id


async def test_a_framework_call_s_conversation_is_served_bounded_and_redacted(store: SQLStore):
    said = [
        t.message("user", f"question {i} " + "x" * (5000 if i == 30 else 10)) for i in range(60)
    ]
    asked = t.call("c9", "login", '{"password": "hunter2", "user": "ada"}')
    # A framework's error text quotes the call's arguments (LangGraph's "with kwargs {…}").
    failed = t.message("tool", "login failed with kwargs {'password': 'hunter2'}",
                       tool_call_id="c8", name="login", is_error=True)  # fmt: skip
    approval_id = await held(store, [*said, failed, t.message("assistant", tool_calls=[asked])])

    async with client_for(store, []) as client:
        body = (await client.get(f"/v1/approvals/{approval_id}/conversation")).json()
        approval = (await client.get(f"/v1/approvals/{approval_id}")).json()

    assert (body["origin"], body["thread_id"], body["agent"]) == ("google-adk", "t-1", "crew/payer")
    messages = body["messages"]
    assert len(messages) == t.MESSAGES  # the newest ones
    assert messages[0]["content"].startswith(f"question {60 - t.MESSAGES + 2} ")
    [cut] = [m for m in messages if m["content"].startswith("question 30 ")]
    assert len(cut["content"]) == t.TEXT_CHARS + 1 and cut["content"].endswith("…")
    # The call's arguments are masked as every call's are, and an error's text is not shown.
    assert "hunter2" not in str(body)
    assert messages[-2]["content"] == ERROR_HIDDEN
    assert messages[-1]["tool_calls"] == [
        {"id": "c9", "name": "login", "args": {"password": MASK, "user": "ada"}}
    ]
    # The schema kept with the approval is served for the inbox's edit form.
    assert approval["args_schema"] == SCHEMA
    assert approval["args"] == {"password": MASK}


async def test_a_conversation_is_empty_where_none_was_kept_and_404_for_no_approval(
    store: SQLStore,
):
    approval_id = await held(store, None)

    async with client_for(store, []) as client:
        kept = await client.get(f"/v1/approvals/{approval_id}/conversation")
        missing = await client.get("/v1/approvals/nope/conversation")
        anonymous = await client.get(
            f"/v1/approvals/{approval_id}/conversation", headers={"Authorization": ""}
        )

    assert kept.status_code == 200 and kept.json()["messages"] == []
    assert missing.status_code == 404
    assert anonymous.status_code == 401


def test_a_transcript_keeps_only_what_fits():
    long = [t.message("assistant", "y" * t.TEXT_CHARS) for _ in range(t.MESSAGES)]
    kept = t.bounded(long)
    assert 0 < len(kept) < t.MESSAGES  # each fits, not all of them
    assert sum(len(m["content"]) for m in kept) <= t.TOTAL_BYTES
    assert t.bounded([t.message("assistant", ""), t.message("tool", "")]) == []


async def test_a_run_continuing_a_thread_has_its_earlier_runs_and_the_list_says_what_each_asked(
    store: SQLStore,
):
    turns = [ModelTurn(text="first answer"), ModelTurn(text="second answer")]
    async with client_for(store, turns) as client:
        for text in ["how are things? " + "z" * 1000, "and now?"]:
            started = await client.post(
                "/v1/threads/t-chat/runs?wait=30", json={"agent": "ops", "input": text}
            )
            assert started.json()["status"] == "completed", started.text
        listed = (await client.get("/v1/runs")).json()["items"]
        newest = (await client.get(f"/v1/runs/{listed[0]['id']}")).json()
        oldest = (await client.get(f"/v1/runs/{listed[1]['id']}")).json()

    assert listed[0]["input"] == "and now?"
    assert len(listed[1]["input"]) == INPUT_CHARS and listed[1]["input"].endswith("…")
    [before] = newest["earlier"]
    assert before["id"] == oldest["id"]
    assert [m["content"] for m in before["messages"] if m["role"] != "system"] == [
        "how are things? " + "z" * 1000,
        "first answer",
    ]
    assert [m["content"] for m in newest["messages"] if m["role"] != "system"][-1] == (
        "second answer"
    )
    assert oldest["earlier"] == []  # nothing before the first run
