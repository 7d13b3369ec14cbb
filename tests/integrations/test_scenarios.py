"""The shared scenarios (tests/integrations/scenarios.py), run against every integration's
adapter on SQLite and PostgreSQL: what may run, how often, and who may decide — the promise —
is the core's, so every adapter passes the same scenarios."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from signoff import Approval, Approve, Decision, Edit, Reject, Respond
from signoff.errors import ForbiddenError, InvalidEditError, StaleDecisionError
from signoff.types import Preview
from tests.conftest import fresh_postgres_database
from tests.integrations.scenarios import (
    FROZEN,
    FROZEN_REASON,
    REQUESTER,
    Adapter,
    Call,
    NotSupported,
    Outcome,
    executions,
    told,
    transfer_preview,
)

ADAPTERS = {
    "langchain": "tests.integrations.adapters.langgraph",
    "langgraph": "tests.integrations.adapters.langgraph:tool_node",
    "pydantic-ai": "tests.integrations.adapters.pydantic_ai",
    "openai-agents": "tests.integrations.adapters.openai_agents",
    "google-adk": "tests.integrations.adapters.google_adk",
    "agno": "tests.integrations.adapters.agno",
    "adalflow": "tests.integrations.adapters.adalflow",
    "crewai": "tests.integrations.adapters.crewai",
    "mcp-gateway": "tests.integrations.adapters.mcp_gateway",
    "claude-agent-sdk": "tests.integrations.adapters.claude_agent_sdk",
    "strands": "tests.integrations.adapters.strands",
    "agent-framework": "tests.integrations.adapters.agent_framework",
    "llama-index": "tests.integrations.adapters.llama_index",
}
"""Each adapter module's `opened(database, tmp_path)` (or the function after a colon): an async
context manager of its `Adapter` over signoff's store at `database`."""

APPROVER = "bob"


@pytest.fixture(params=[(name, store) for name in ADAPTERS for store in ("sqlite", "postgres")],
                ids=lambda p: f"{p[0]}-{p[1]}")  # fmt: skip
async def database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """The database of the adapter's signoff (the adapter the fixture's parameter names)."""
    if request.param[1] == "sqlite":
        yield f"sqlite:///{tmp_path / 'signoff.db'}"
    else:
        async with fresh_postgres_database() as database:
            yield database


@pytest.fixture
async def adapter(
    request: pytest.FixtureRequest, database: str, tmp_path: Path
) -> AsyncIterator[Adapter]:
    name, _ = request.node.callspec.params["database"]
    module_name, _, function = ADAPTERS[name].partition(":")
    opened = getattr(importlib.import_module(module_name), function or "opened")
    async with opened(database, tmp_path) as adapter:
        yield adapter


async def pending(adapter: Adapter) -> list[Approval]:
    runs = adapter.runs
    return list(await runs.bridge.arun(runs.store.list_approvals(status="pending")))


async def decide(
    adapter: Adapter, decision: Decision, *, actor: str = APPROVER, version: int | None = None
) -> None:
    """Decide every pending call as a person allowed to (as the REST API does), on `version`
    of it where given."""
    runs = adapter.runs
    for approval in await pending(adapter):
        decided = runs.gate.decide(approval.id, decision, actor=actor, version=version)
        await runs.bridge.arun(decided)


async def audit_actions(adapter: Adapter) -> list[str]:
    runs = adapter.runs
    return [e.action for e in await runs.bridge.arun(runs.store.audit_log())]


TRANSFER = [[Call("call_0", "transfer", {"amount": 500, "to": "acme"})], "finished"]


async def test_a_held_call_carries_the_preview_its_tool_gave_where_the_tool_lives(
    adapter: Adapter,
) -> None:
    await adapter.start("t-preview", TRANSFER)

    [approval] = await pending(adapter)
    assert approval.preview == Preview(kind="diff", body=transfer_preview(500, "acme"))
    assert executions(adapter.side_effects) == []  # a preview runs nothing

    await decide(adapter, Approve())
    await adapter.resume("t-preview")
    assert executions(adapter.side_effects) == ["transfer 500 acme"]


async def test_an_approved_call_runs_once_and_its_result_reaches_the_model(
    adapter: Adapter,
) -> None:
    paused = await adapter.start("t-approve", TRANSFER)
    assert paused.paused and executions(adapter.side_effects) == []

    await decide(adapter, Approve())
    done = await adapter.resume("t-approve")
    again = await adapter.resume("t-approve")  # resumed twice: nothing runs again

    assert executions(adapter.side_effects) == ["transfer 500 acme"]
    assert told(done) == [("call_0", "transfer ok")]
    assert not again.paused


async def test_a_rejected_call_never_runs_and_the_model_reads_why(adapter: Adapter) -> None:
    await adapter.start("t-reject", TRANSFER)

    await decide(adapter, Reject(reason="not today"))
    done = await adapter.resume("t-reject")

    assert executions(adapter.side_effects) == []
    [(call_id, result)] = told(done)
    assert call_id == "call_0" and "not today" in result and "Do not retry" in result


async def test_a_response_is_the_tool_result_and_nothing_runs(adapter: Adapter) -> None:
    await adapter.start("t-respond", TRANSFER)

    await decide(adapter, Respond(content="moved by hand"))
    done = await adapter.resume("t-respond")

    assert executions(adapter.side_effects) == []
    if adapter.answers_in_place:
        assert told(done) == [("call_0", "moved by hand")]
    else:  # a hook can only keep the call from running: the response is why, in its words
        [(call_id, result)] = told(done)
        assert call_id == "call_0" and result.endswith(": moved by hand")


async def test_a_call_that_needs_two_people_runs_once_only_after_the_second(
    adapter: Adapter,
) -> None:
    large = [[Call("call_0", "transfer", {"amount": 20000, "to": "acme"})], "finished"]
    await adapter.start("t-two", large)

    await decide(adapter, Approve(), actor="bob")
    first = await adapter.resume("t-two")  # one approval of two: nothing runs yet
    assert executions(adapter.side_effects) == []
    [waiting] = await pending(adapter)
    assert [v.by for v in waiting.votes] == ["bob"]

    await decide(adapter, Approve(), actor="carol")
    done = await adapter.resume("t-two")
    await adapter.resume("t-two")

    assert first.paused
    assert executions(adapter.side_effects) == ["transfer 20000 acme"]
    assert told(done) == [("call_0", "transfer ok")]


async def test_an_edit_that_breaks_the_tools_schema_or_the_policy_is_refused(
    adapter: Adapter,
) -> None:
    await adapter.start("t-bad-edit", TRANSFER)

    # The integration told the gate the tool's schema: the edit is checked when decided.
    with pytest.raises(InvalidEditError, match="amount"):
        await decide(adapter, Edit(args={"amount": "lots", "to": "acme"}))
    with pytest.raises(ForbiddenError, match="denies the edited call"):
        await decide(adapter, Edit(args={"amount": 5, "to": "mallory"}))

    assert len(await pending(adapter)) == 1
    await decide(adapter, Approve())
    await adapter.resume("t-bad-edit")
    assert executions(adapter.side_effects) == ["transfer 500 acme"]


async def test_an_edited_call_runs_with_the_edit_exactly(adapter: Adapter) -> None:
    await adapter.start("t-edit", TRANSFER)

    await decide(adapter, Edit(args={"amount": 50, "to": "acme"}))
    await adapter.resume("t-edit")

    assert executions(adapter.side_effects) == ["transfer 50 acme"]


@pytest.mark.parametrize(
    "tampered",
    [Call("call_0", "transfer", {"amount": 999, "to": "mallory"}), Call("call_0", "delete_all")],
    ids=["other-arguments", "a-denied-tool"],
)
async def test_an_approved_call_changed_in_the_saved_state_is_refused_and_audited(
    adapter: Adapter, tampered: Call
) -> None:
    await adapter.start("t-tamper", TRANSFER)
    await decide(adapter, Approve())
    try:
        await adapter.tamper("t-tamper", tampered)
    except NotSupported as exc:
        pytest.skip(str(exc))

    await adapter.resume("t-tamper")

    # Neither the tampered call nor anything else ran; the refusal is in the audit.
    assert executions(adapter.side_effects) == []
    assert "refused" in await audit_actions(adapter)


async def test_a_provider_that_numbers_every_response_call_0_gets_each_call_judged(
    adapter: Adapter,
) -> None:
    script = [
        [Call("call_0", "read_file", {"path": "a.txt"})],
        [Call("call_0", "read_file", {"path": "b.txt"})],
        [Call("call_0", "read_file", {"path": "a.txt"})],  # the same call again: it runs again
        "finished",
    ]

    try:
        done = await adapter.start("t-reused", script)
    except NotSupported as exc:
        pytest.skip(str(exc))

    assert executions(adapter.side_effects) == [
        "read_file a.txt", "read_file b.txt", "read_file a.txt",
    ]  # fmt: skip
    assert told(done) == [("call_0", "read_file ok")] * 3


async def test_a_reused_call_id_is_held_again_when_it_asks(adapter: Adapter) -> None:
    script = [
        [Call("call_0", "transfer", {"amount": 5, "to": "acme"})],
        [Call("call_0", "transfer", {"amount": 7, "to": "acme"})],
        "finished",
    ]
    try:
        await adapter.start("t-reused-ask", script)
    except NotSupported as exc:
        pytest.skip(str(exc))
    await decide(adapter, Approve())

    second = await adapter.resume("t-reused-ask")

    # The second response's call_0 is a new call: asked about, not run under the first's
    # approval.
    assert second.paused
    assert executions(adapter.side_effects) == ["transfer 5 acme"]
    await decide(adapter, Approve())
    await adapter.resume("t-reused-ask")
    assert executions(adapter.side_effects) == ["transfer 5 acme", "transfer 7 acme"]


async def test_a_call_asked_after_a_resume_is_still_the_requesters(adapter: Adapter) -> None:
    script = [
        [Call("call_0", "transfer", {"amount": 5, "to": "acme"})],
        [Call("call_1", "transfer", {"amount": 7, "to": "acme"})],
        "finished",
    ]
    await adapter.start("t-after", script)
    await decide(adapter, Approve())

    await adapter.resume("t-after")

    # The resumed run is still hers: she may not approve its next call herself.
    [second] = await pending(adapter)
    assert second.call.args == {"amount": 7, "to": "acme"}
    assert second.requested_by == REQUESTER
    with pytest.raises(ForbiddenError, match="self-approval"):
        await decide(adapter, Approve(), actor=REQUESTER)


async def approved_the_frameworks_way(
    adapter: Adapter, thread: str, *, user: str | None
) -> Outcome:
    """`TRANSFER` started on `thread`, its call approved the framework's way as `user` (the
    scenario is skipped where the framework has no way of its own)."""
    await adapter.start(thread, TRANSFER)
    try:
        return await adapter.send(thread, True, user=user)
    except NotSupported as exc:
        pytest.skip(str(exc))


async def test_the_requester_cannot_approve_her_own_call_the_frameworks_way(
    adapter: Adapter,
) -> None:
    still = await approved_the_frameworks_way(adapter, "t-self", user=REQUESTER)

    assert executions(adapter.side_effects) == []
    [approval] = await pending(adapter)  # still waiting on someone else
    assert still.paused
    await decide(adapter, Approve())
    await adapter.resume("t-self")
    assert executions(adapter.side_effects) == ["transfer 500 acme"]
    assert approval is not None


async def test_a_decision_the_frameworks_way_from_nobody_named_is_not_taken(
    adapter: Adapter,
) -> None:
    await approved_the_frameworks_way(adapter, "t-nobody", user=None)

    assert executions(adapter.side_effects) == []
    assert len(await pending(adapter)) == 1


async def test_a_decision_the_frameworks_way_by_another_person_is_theirs(
    adapter: Adapter,
) -> None:
    done = await approved_the_frameworks_way(adapter, "t-other", user=APPROVER)

    assert executions(adapter.side_effects) == ["transfer 500 acme"]
    assert told(done) == [("call_0", "transfer ok")]
    runs = adapter.runs
    [approval] = await runs.bridge.arun(runs.store.list_approvals())
    assert approval.decided_by == APPROVER


async def test_a_resume_before_the_decision_waits_and_the_later_decision_runs_the_call(
    adapter: Adapter,
) -> None:
    await adapter.start("t-early", TRANSFER)

    early = await adapter.resume("t-early")

    assert early.paused and executions(adapter.side_effects) == []
    await decide(adapter, Approve())
    done = await adapter.resume("t-early")
    assert executions(adapter.side_effects) == ["transfer 500 acme"]
    assert told(done) == [("call_0", "transfer ok")]


async def test_a_denied_call_never_runs_and_resuming_does_not_call_the_model_again(
    adapter: Adapter,
) -> None:
    script = [
        [Call("call_0", "delete_all"), Call("call_1", "transfer", {"amount": 1, "to": "x"})],
        "finished",
    ]
    try:
        await adapter.start("t-deny", script)
    except NotSupported as exc:
        pytest.skip(str(exc))
    turns = adapter.model_turns

    await decide(adapter, Approve())
    done = await adapter.resume("t-deny")

    assert executions(adapter.side_effects) == ["transfer 1 x"]
    results = dict(told(done))
    assert "blocked" in results["call_0"] and results["call_1"] == "transfer ok"
    # One more model call: the final text. The decided batch ran with no new model turn.
    assert adapter.model_turns == turns + 1


LARGE = [[Call("call_0", "transfer", {"amount": 20000, "to": "acme"})], "finished"]
LOWERED = {"amount": 15000, "to": "acme"}


async def test_a_decision_on_a_version_edited_since_is_refused_and_the_edit_runs_once(
    adapter: Adapter,
) -> None:
    await adapter.start("t-stale", LARGE)
    [asked] = await pending(adapter)
    try:
        seen = await adapter.shown("t-stale")
    except NotSupported:
        seen = {asked.id: asked.version}  # only signoff's channels show it
    assert seen == {asked.id: asked.version}

    # Two people must approve. Bob lowers the amount: his edit is his approval of the call as
    # edited, and a new version of it.
    await decide(adapter, Edit(args=LOWERED), actor="bob", version=asked.version)

    # Carol approves the call she was shown, before the edit: refused, and nothing runs.
    try:
        still = await adapter.send("t-stale", True, user="carol", seen=seen)
    except NotSupported:
        with pytest.raises(StaleDecisionError, match="edited by bob"):
            await decide(adapter, Approve(), actor="carol", version=asked.version)
        still = await adapter.resume("t-stale")
    assert still.paused and executions(adapter.side_effects) == []
    [edited] = await pending(adapter)
    assert edited.call.args == LOWERED and [v.by for v in edited.votes] == ["bob"]
    assert edited.version > asked.version

    # On the version shown now, hers is the second approval: the edited call runs, once.
    try:
        done = await adapter.send("t-stale", True, user="carol")
    except NotSupported:
        await decide(adapter, Approve(), actor="carol", version=edited.version)
        done = await adapter.resume("t-stale")
    again = await adapter.resume("t-stale")

    assert executions(adapter.side_effects) == ["transfer 15000 acme"]
    [(call_id, result)] = told(done)
    assert call_id == "call_0" and "transfer ok" in result
    assert not again.paused


async def test_a_policy_that_now_denies_a_waiting_call_rejects_it_and_the_model_reads_why(
    adapter: Adapter,
) -> None:
    await adapter.start("t-frozen", TRANSFER)
    runs = adapter.runs

    [rejected] = await runs.bridge.arun(runs.gate.use_policy(FROZEN))
    done = await adapter.resume("t-frozen")

    assert (rejected.status, rejected.decided_by) == ("rejected", "signoff")
    assert executions(adapter.side_effects) == []
    [(call_id, result)] = told(done)
    assert call_id == "call_0" and FROZEN_REASON in result and "Do not retry" in result
    assert await pending(adapter) == []


async def test_a_call_approved_before_the_policy_denied_it_is_not_run_and_the_model_is_told(
    adapter: Adapter,
) -> None:
    await adapter.start("t-approved-frozen", TRANSFER)
    try:
        adapter.resumer("t-approved-frozen", on_resumed=lambda _: None)
    except NotSupported as exc:
        pytest.skip(
            f"{exc}: a call that waits in memory goes on as it is approved, so none is ever "
            "approved and not yet resumed when the policy changes"
        )
    runs = adapter.runs
    await decide(adapter, Approve())

    # Approved, not run yet: the policy changes before the run is resumed.
    assert await runs.bridge.arun(runs.gate.use_policy(FROZEN)) == []
    done = await adapter.resume("t-approved-frozen")
    await adapter.resume("t-approved-frozen")

    assert executions(adapter.side_effects) == []
    [(call_id, result)] = told(done)
    assert call_id == "call_0" and "blocked" in result and FROZEN_REASON in result
    assert "refused" in await audit_actions(adapter)
