"""The runtime loop with ScriptedModel: pause, decide, resume, exactly as ARCHITECTURE §1 says."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from signoff import Approve, ConflictError, Edit, Policy, Reject, Respond, Scope, ToolCall
from signoff.agent import Agent, Message, ModelTurn, RunEvent, Runner, TextDelta, tool
from signoff.agent.model import History
from signoff.gate import Gate
from signoff.store import SQLStore
from signoff.store.runs import StoredEvent
from signoff.testing import ScriptedModel, call
from tests.deadline import HANG

POLICY = Policy.from_dict(
    {
        "rules": [
            {"allow": ["pods_list", "explode"]},
            {"ask": ["delete_pod", "scale"]},
            {"deny": "drop_*"},
        ]
    }
)
executed: list[tuple[str, dict[str, Any]]] = []


@tool
def pods_list(namespace: str = "default") -> list[str]:
    """List pods."""
    executed.append(("pods_list", {"namespace": namespace}))
    return ["nginx-123", "web-1"]


@tool
def delete_pod(name: str) -> str:
    """Delete a pod."""
    executed.append(("delete_pod", {"name": name}))
    return f"deleted {name}"


@tool
def scale(name: str, replicas: int) -> str:
    """Scale a deployment."""
    executed.append(("scale", {"name": name, "replicas": replicas}))
    return f"scaled {name} to {replicas}"


@tool
def drop_table(name: str) -> str:
    """Drop a table (the policy denies it)."""
    executed.append(("drop_table", {"name": name}))
    return "dropped"


@tool
def explode() -> str:
    """Fail."""
    raise RuntimeError("disk full")


@pytest.fixture(autouse=True)
def clear() -> None:
    executed.clear()


def runner(store: SQLStore, turns: list[Any]) -> tuple[Runner, ScriptedModel]:
    model = ScriptedModel(turns)
    agent = Agent(
        name="ops", model=model, tools=[pods_list, delete_pod, scale, drop_table, explode]
    )
    return Runner(agent, Gate(POLICY, store)), model


async def collect(events: AsyncIterator[RunEvent]) -> list[StoredEvent]:
    """The stored events of a stream (runners here do not stream text)."""
    stored = []
    async for event in events:
        assert isinstance(event, StoredEvent)
        stored.append(event)
    return stored


def of(events: list[StoredEvent], kind: str) -> list[dict[str, Any]]:
    return [e.data for e in events if e.type == kind]


def last_tool_results(model: ScriptedModel) -> list[Message]:
    return [m for m in model.requests[-1].messages if m.role == "tool"]


async def test_a_mixed_batch_runs_the_allowed_call_and_pauses_once_for_the_held_ones(
    store: SQLStore,
):
    run, model = runner(
        store,
        [
            ModelTurn(
                text="Listing, then deleting and scaling.",
                tool_calls=(
                    call("pods_list"),
                    call("delete_pod", name="nginx-123"),
                    call("scale", name="web", replicas=3),
                ),
            ),
            ModelTurn(text="Done."),
        ],
    )
    events = await collect(run.start("t1", "list pods then delete nginx-123", started_by="bob"))
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[-1].type == "paused"
    assert executed == [("pods_list", {"namespace": "default"})]  # the allowed call already ran
    requested = of(events, "approval_requested")
    assert [r["tool"] for r in requested] == ["delete_pod", "scale"]
    assert len(model.requests) == 1
    run_id = events[0].run_id
    assert (await store.get_run(run_id)).status == "paused"

    gate = run.gate
    await gate.decide(requested[1]["approval_id"], Approve(), actor="alice")
    with pytest.raises(ConflictError, match="still waits on 1 approval"):
        await collect(run.resume(run_id))
    await gate.decide(requested[0]["approval_id"], Approve(), actor="alice")
    resumed = await collect(run.resume(run_id))
    # The approved calls of a batch run side by side: in either order, each once.
    assert sorted(executed[1:], key=str) == [
        ("delete_pod", {"name": "nginx-123"}),
        ("scale", {"name": "web", "replicas": 3}),
    ]
    assert [e.type for e in resumed][-2:] == ["text", "completed"]
    assert len(model.requests) == 2  # no model call until the whole batch had results
    assert [m.content for m in last_tool_results(model)] == [
        '["nginx-123", "web-1"]', "deleted nginx-123", "scaled web to 3",
    ]  # fmt: skip
    assert (await store.get_run(run_id)).status == "completed"


async def test_an_edit_runs_the_call_with_the_edited_arguments(store: SQLStore):
    run, _ = runner(
        store,
        [ModelTurn(tool_calls=(call("scale", name="web", replicas=30),)), ModelTurn(text="ok")],
    )
    events = await collect(run.start("t1", "scale web"))
    [request] = of(events, "approval_requested")
    await run.gate.decide(
        request["approval_id"], Edit(args={"name": "web", "replicas": 3}), actor="alice"
    )
    await collect(run.resume(events[0].run_id))
    assert executed == [("scale", {"name": "web", "replicas": 3})]


async def test_a_rejection_reaches_the_model_as_a_result_and_the_tool_never_runs(store: SQLStore):
    run, model = runner(
        store,
        [ModelTurn(tool_calls=(call("delete_pod", name="db-0"),)), ModelTurn(text="Understood.")],
    )
    events = await collect(run.start("t1", "delete db-0"))
    [request] = of(events, "approval_requested")
    await run.gate.decide(
        request["approval_id"], Reject(reason="db-0 is production"), actor="alice"
    )
    resumed = await collect(run.resume(events[0].run_id))
    assert executed == []
    # The decision is in the run's log, before the resume, for every projection to show.
    log = await run.store.run_events(events[0].run_id)
    [decided] = [e for e in log if e.type == "decision"]
    assert decided.seq < resumed[0].seq
    assert decided.data == {
        "approval_id": request["approval_id"],
        "call_id": "call_delete_pod",
        "tool": "delete_pod",
        "agent": "ops",
        "status": "rejected",
        "decision": {"kind": "reject", "reason": "db-0 is production"},
        "args": {"name": "db-0"},
        "decided_by": "alice",
    }
    [result] = last_tool_results(model)
    assert json.loads(result.content) == {
        "status": "rejected",
        "message": "The user rejected this call: db-0 is production. Do not retry it.",
    }


async def test_a_response_becomes_the_tool_result_as_given(store: SQLStore):
    run, model = runner(
        store, [ModelTurn(tool_calls=(call("delete_pod", name="x"),)), ModelTurn(text="ok")]
    )
    events = await collect(run.start("t1", "delete x"))
    [request] = of(events, "approval_requested")
    await run.gate.decide(
        request["approval_id"], Respond(content="x was already gone"), actor="alice"
    )
    await collect(run.resume(events[0].run_id))
    assert executed == []
    assert [m.content for m in last_tool_results(model)] == ["x was already gone"]


async def test_a_denied_call_gets_a_blocked_result_without_pausing(store: SQLStore):
    run, model = runner(
        store, [ModelTurn(tool_calls=(call("drop_table", name="users"),)), ModelTurn(text="ok")]
    )
    events = await collect(run.start("t1", "drop users"))
    assert events[-1].type == "completed"
    [result] = last_tool_results(model)
    assert json.loads(result.content)["status"] == "blocked"
    assert executed == []


async def test_a_tool_that_raises_gives_an_error_result_and_the_run_goes_on(store: SQLStore):
    run, model = runner(
        store, [ModelTurn(tool_calls=(call("explode"),)), ModelTurn(text="It failed.")]
    )
    events = await collect(run.start("t1", "go"))
    assert events[-1].type == "completed"
    assert [m.content for m in last_tool_results(model)] == ["disk full"]


async def test_approve_always_for_any_arguments_lets_the_next_such_call_run_without_asking(
    store: SQLStore,
):
    run, _ = runner(
        store,
        [
            ModelTurn(tool_calls=(call("delete_pod", name="a"),)),
            ModelTurn(tool_calls=(call("delete_pod", name="b"),)),
            ModelTurn(text="both gone"),
        ],
    )
    events = await collect(run.start("t1", "delete a then b", started_by="olga"))
    [request] = of(events, "approval_requested")
    # Widened on purpose: the next call deletes another pod.
    any_args = Approve(always=Scope(kind="thread", with_args=False))
    await run.gate.decide(request["approval_id"], any_args, actor="alice")
    resumed = await collect(run.resume(events[0].run_id))
    assert resumed[-1].type == "completed"
    assert executed == [("delete_pod", {"name": "a"}), ("delete_pod", {"name": "b"})]


async def test_only_one_of_two_resumers_resumes_and_the_call_runs_once(store: SQLStore):
    run, _ = runner(
        store, [ModelTurn(tool_calls=(call("delete_pod", name="a"),)), ModelTurn(text="ok")]
    )
    events = await collect(run.start("t1", "delete a"))
    [request] = of(events, "approval_requested")
    await run.gate.decide(request["approval_id"], Approve(), actor="alice")
    other = Runner(run.agent, run.gate)  # a second worker, as in another process
    await collect(other.resume(events[0].run_id))
    with pytest.raises(ConflictError, match="not paused, or another worker resumed it"):
        await collect(run.resume(events[0].run_id))
    assert executed == [("delete_pod", {"name": "a"})]


async def test_a_second_thread_run_sees_the_first_runs_conversation(store: SQLStore):
    run, model = runner(store, [ModelTurn(text="hello"), ModelTurn(text="again")])
    await collect(run.start("t1", "hi"))
    await collect(run.start("t1", "and now?"))
    assert [m.content for m in model.requests[1].messages] == ["hi", "hello", "and now?"]


async def test_the_model_is_shown_the_thread_as_stored_text_read_when_it_looks(store: SQLStore):
    model = ScriptedModel([ModelTurn(text="hello"), ModelTurn(text="again")])
    agent = Agent(name="ops", model=model, instructions="be brief", tools=[pods_list])
    run = Runner(agent, Gate(POLICY, store))
    await collect(run.start("t1", "hi"))
    await collect(run.start("t1", "and now?"))
    shown = model.requests[1].messages
    assert isinstance(shown, History)  # kept as given: text, not thousands of objects
    assert len(shown) == 4
    assert [(m.role, m.content) for m in shown] == [
        ("system", "be brief"), ("user", "hi"), ("assistant", "hello"), ("user", "and now?"),
    ]  # fmt: skip
    assert shown[0] == Message(role="system", content="be brief")
    assert shown[-1] == shown[3] == Message(role="user", content="and now?")
    assert [m.content for m in shown[1:3]] == ["hi", "hello"]
    with pytest.raises(IndexError):
        shown[4]
    # Nothing decoded is kept: each look decodes again, to an equal message.
    assert shown[2] == shown[2] and shown[2] is not shown[2]


async def test_three_held_calls_decided_in_any_order_give_results_in_call_order(store: SQLStore):
    turn = ModelTurn(
        tool_calls=(
            ToolCall(id="c1", name="delete_pod", args={"name": "a"}),
            ToolCall(id="c2", name="delete_pod", args={"name": "b"}),
            ToolCall(id="c3", name="delete_pod", args={"name": "c"}),
        )
    )
    run, model = runner(store, [turn, ModelTurn(text="ok")])
    events = await collect(run.start("t1", "delete a, b and c"))
    first, second, third = (r["approval_id"] for r in of(events, "approval_requested"))
    await run.gate.decide(third, Approve(), actor="alice")
    await run.gate.decide(first, Reject(reason="keep a"), actor="alice")
    await run.gate.decide(second, Approve(), actor="alice")
    await collect(run.resume(events[0].run_id))
    assert sorted(executed, key=str) == [
        ("delete_pod", {"name": "b"}),
        ("delete_pod", {"name": "c"}),
    ]
    assert [m.tool_call_id for m in last_tool_results(model)] == ["c1", "c2", "c3"]


async def test_an_expired_call_never_runs_and_the_model_is_told(store: SQLStore):
    policy = Policy.from_dict({"rules": [{"ask": "delete_pod", "timeout": 1}]})
    model = ScriptedModel(
        [ModelTurn(tool_calls=(call("delete_pod", name="a"),)), ModelTurn(text="ok")]
    )
    now = [datetime.now(UTC)]
    gate = Gate(policy, store, clock=lambda: now[0])
    run = Runner(Agent(name="ops", model=model, tools=[delete_pod]), gate)
    events = await collect(run.start("t1", "delete a"))
    now[0] += timedelta(seconds=5)
    assert [a.status for a in await gate.expire_due()] == ["expired"]
    log = await store.run_events(events[0].run_id)
    assert [(e.type, e.data["status"]) for e in log if e.type == "decision"] == [
        ("decision", "expired")
    ]
    await collect(run.resume(events[0].run_id))
    assert executed == []
    [result] = last_tool_results(model)
    assert json.loads(result.content) == {
        "status": "expired",
        "message": "Nobody decided on this call in time; it did not run.",
    }


class Crash(BaseException):
    """The worker process dying mid-call (nothing catches it, as nothing catches SIGKILL)."""


async def test_a_run_whose_worker_died_mid_call_is_taken_over_and_the_call_is_not_rerun(
    store: SQLStore,
):
    @tool
    async def transfer(amount: int) -> str:
        """Move money: at most once, never repeated."""
        executed.append(("transfer", {"amount": amount}))
        raise Crash

    model = ScriptedModel(
        [
            ModelTurn(tool_calls=(ToolCall(id="t1", name="transfer", args={"amount": 5}),)),
            ModelTurn(text="The transfer's outcome is unknown; please check."),
        ]
    )
    policy = Policy.from_dict({"default": "allow"})
    agent = Agent(name="pay", model=model, tools=[transfer])
    dying = Runner(agent, Gate(policy, store), lease=timedelta(0))
    with pytest.raises(Crash):
        await collect(dying.start("t1", "pay 5"))
    run_id = await only_run(store)
    assert (await store.get_run(run_id)).status == "running"  # left behind by the dead worker

    survivor = Runner(agent, Gate(policy, store))
    events = await collect(survivor.resume(run_id))
    assert events[-1].type == "completed"
    assert executed == [("transfer", {"amount": 5})]  # never re-run
    [result] = last_tool_results(model)
    assert json.loads(result.content)["status"] == "unknown"


async def test_an_edited_idempotent_call_whose_worker_died_is_rerun_with_the_edit(
    store: SQLStore,
):
    attempts: list[int] = []

    @tool(idempotent=True)
    async def resize(size: int) -> str:
        """Resize a volume: safe to repeat."""
        attempts.append(size)
        if len(attempts) == 1:
            raise Crash
        return f"resized to {size}"

    model = ScriptedModel(
        [ModelTurn(tool_calls=(call("resize", size=10),)), ModelTurn(text="Resized.")]
    )
    policy = Policy.from_dict({"rules": [{"ask": "resize"}]})
    agent = Agent(name="ops", model=model, tools=[resize])
    dying = Runner(agent, Gate(policy, store), lease=timedelta(0))
    events = await collect(dying.start("t1", "resize"))
    [held] = of(events, "approval_requested")
    await dying.gate.decide(held["approval_id"], Edit(args={"size": 20}), actor="alice")
    with pytest.raises(Crash):
        await collect(dying.resume(events[0].run_id))

    survivor = Runner(agent, Gate(policy, store))
    resumed = await collect(survivor.resume(events[0].run_id))
    assert resumed[-1].type == "completed"
    assert attempts == [20, 20]  # the edit both times, never the original arguments
    [result] = last_tool_results(model)
    assert result.content == "resized to 20"


async def test_a_completed_run_cannot_be_resumed(store: SQLStore):
    run, _ = runner(store, [ModelTurn(tool_calls=(call("pods_list"),)), ModelTurn(text="ok")])
    [started, *_] = await collect(run.start("t1", "list"))
    assert (await store.get_run(started.run_id)).status == "completed"
    with pytest.raises(ConflictError, match="not paused"):
        await collect(run.resume(started.run_id))


async def only_run(store: SQLStore) -> str:
    from sqlalchemy import select

    from signoff.store import schema

    [run_id] = await store.run(
        lambda c: c.execute(select(schema.runs.c.id)).scalars().all(), write=False
    )
    return str(run_id)


async def test_a_thread_has_one_unfinished_run_at_a_time(store: SQLStore):
    run, _ = runner(store, [ModelTurn(tool_calls=(call("delete_pod", name="a"),))])
    await collect(run.start("t1", "delete a"))
    with pytest.raises(ConflictError, match="has an unfinished run"):
        await collect(run.start("t1", "something else"))


async def test_resuming_too_early_leaves_the_run_paused(store: SQLStore):
    run, _ = runner(
        store, [ModelTurn(tool_calls=(call("delete_pod", name="a"),)), ModelTurn(text="ok")]
    )
    events = await collect(run.start("t1", "delete a"))
    with pytest.raises(ConflictError, match="still waits on 1 approval"):
        await collect(run.resume(events[0].run_id))
    assert (await store.get_run(events[0].run_id)).status == "paused"
    [request] = of(events, "approval_requested")
    await run.gate.decide(request["approval_id"], Approve(), actor="alice")
    assert (await collect(run.resume(events[0].run_id)))[-1].type == "completed"


async def test_a_call_id_repeated_in_the_next_turn_is_decided_on_its_own(store: SQLStore):
    run, _ = runner(
        store,
        [
            ModelTurn(tool_calls=(call("delete_pod", name="a"),)),
            ModelTurn(tool_calls=(call("delete_pod", name="b"),)),  # the same id, call_delete_pod
            ModelTurn(text="ok"),
        ],
    )
    events = await collect(run.start("t1", "delete a then b"))
    [first] = of(events, "approval_requested")
    await run.gate.decide(first["approval_id"], Approve(), actor="alice")
    events = await collect(run.resume(events[0].run_id))
    [second] = of(events, "approval_requested")
    assert second["args"] == {"name": "b"}
    await run.gate.decide(second["approval_id"], Reject(reason="keep b"), actor="alice")
    assert (await collect(run.resume(events[0].run_id)))[-1].type == "completed"
    assert executed == [("delete_pod", {"name": "a"})]


async def test_calls_with_the_same_id_in_one_turn_each_run_and_each_get_a_result(store: SQLStore):
    both = (call("pods_list", namespace="a"), call("pods_list", namespace="b"))
    run, model = runner(store, [ModelTurn(tool_calls=both), ModelTurn(text="ok")])
    events = await collect(run.start("t1", "list a and b"))
    assert events[-1].type == "completed"
    assert sorted(args["namespace"] for _, args in executed) == ["a", "b"]
    ids = [m.tool_call_id for m in last_tool_results(model)]
    assert len(set(ids)) == 2


async def test_arguments_that_are_not_an_object_give_an_error_result(store: SQLStore):
    odd = ToolCall(id="x", name="pods_list", args='{"namespace": "a"')  # type: ignore[arg-type]
    policy = Policy.from_dict({"default": "allow"})
    model = ScriptedModel([ModelTurn(tool_calls=(odd,)), ModelTurn(text="ok")])
    run = Runner(Agent(name="ops", model=model, tools=[pods_list]), Gate(policy, store))
    events = await collect(run.start("t1", "list"))
    # The policy fails closed and holds the call; a person approves it as it is.
    [request] = of(events, "approval_requested")
    await run.gate.decide(request["approval_id"], Approve(), actor="alice")
    await collect(run.resume(events[0].run_id))
    [result] = last_tool_results(model)
    assert result.content.startswith("the arguments are not a JSON object")
    assert executed == []


async def test_an_unknown_tool_gets_an_error_result_and_is_not_held(store: SQLStore):
    run, model = runner(
        store, [ModelTurn(tool_calls=(call("launch_rocket"),)), ModelTurn(text="ok")]
    )
    events = await collect(run.start("t1", "launch"))
    assert of(events, "approval_requested") == []
    assert last_tool_results(model)[0].content.startswith("unknown tool 'launch_rocket'")


async def test_the_turn_budget_ends_the_run_only_after_the_turns_calls_have_results(
    store: SQLStore,
):
    model = ScriptedModel([ModelTurn(tool_calls=(call("pods_list"),))] * 3)
    run = Runner(
        Agent(name="ops", model=model, tools=[pods_list], max_turns=2), Gate(POLICY, store)
    )
    events = await collect(run.start("t1", "loop"))
    assert events[-1].type == "failed"
    assert len(of(events, "tool_result")) == 2  # both turns' calls were answered
    messages = await store.run_messages(events[0].run_id)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant", "tool"]


async def test_a_model_that_fails_fails_the_run_instead_of_stranding_it(store: SQLStore):
    def broken(_messages: object) -> ModelTurn:
        raise ConnectionError("model server unreachable")

    run, _ = runner(store, [broken])
    events = await collect(run.start("t1", "hi"))
    assert events[-1].type == "failed"
    assert "ConnectionError: model server unreachable" in events[-1].data["reason"]
    assert (await store.get_run(events[0].run_id)).status == "failed"


async def test_two_resumers_racing_for_one_run_let_exactly_one_in(store: SQLStore):
    run, _ = runner(
        store, [ModelTurn(tool_calls=(call("delete_pod", name="a"),)), ModelTurn(text="ok")]
    )
    events = await collect(run.start("t1", "delete a"))
    [request] = of(events, "approval_requested")
    await run.gate.decide(request["approval_id"], Approve(), actor="alice")
    other = Runner(run.agent, run.gate)
    outcomes = await asyncio.gather(
        collect(run.resume(events[0].run_id)), collect(other.resume(events[0].run_id)),
        return_exceptions=True,
    )  # fmt: skip
    assert sum(isinstance(o, ConflictError) for o in outcomes) == 1
    assert executed == [("delete_pod", {"name": "a"})]


async def test_a_worker_whose_lease_was_taken_over_cannot_write_any_more(store: SQLStore):
    run, _ = runner(store, [ModelTurn(tool_calls=(call("delete_pod", name="a"),))])
    events = await collect(run.start("t1", "delete a"))
    run_id = events[0].run_id
    assert await store.claim_run(
        run_id, owner="other", now=datetime.now(UTC), lease=timedelta(minutes=1)
    )
    with pytest.raises(ConflictError, match="no longer held by this worker"):
        await store.append_to_run(run_id, at=datetime.now(UTC), events=[("x", {})], owner=run.owner)


async def test_edits_of_a_runners_calls_are_checked_against_its_tools_schemas(store: SQLStore):
    from signoff import InvalidEditError

    run, _ = runner(store, [ModelTurn(tool_calls=(call("scale", name="web", replicas=3),))])
    events = await collect(run.start("t1", "scale web"))
    [request] = of(events, "approval_requested")
    with pytest.raises(InvalidEditError, match="replicas"):
        await run.gate.decide(request["approval_id"], Edit(args={"name": "web"}), actor="alice")


async def test_tool_executions_are_in_the_log_and_idempotent_tools_see_their_key(store: SQLStore):
    from signoff.agent.tools import idempotency_key

    keys: list[str | None] = []

    @tool(idempotent=True)
    def charge(amount: int) -> str:
        """Charge a card; the payment service deduplicates by key."""
        keys.append(idempotency_key())
        return "charged"

    model = ScriptedModel([ModelTurn(tool_calls=(call("charge", amount=5),)), ModelTurn(text="ok")])
    run = Runner(
        Agent(name="pay", model=model, tools=[charge]),
        Gate(Policy.from_dict({"default": "allow"}), store),
    )
    events = await collect(run.start("t1", "charge 5"))
    kinds = [e.type for e in events]
    assert kinds.index("tool_started") < kinds.index("tool_finished") < kinds.index("tool_result")
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    [started] = of(events, "tool_started")
    assert keys == [started["key"]] and started["key"].startswith(events[0].run_id)
    assert idempotency_key() is None  # only set while the tool runs
    stored = [e.type for e in await store.run_events(events[0].run_id)]
    assert stored == kinds


async def test_a_large_result_is_stored_once_compressed_and_read_back_whole(store: SQLStore):
    from sqlalchemy import func, select

    from signoff.store import schema

    big = "log line\n" * 20_000  # 180 KB

    @tool
    def read_logs(pod: str) -> str:
        """Read a pod's logs."""
        return big

    both = (
        ToolCall(id="a", name="read_logs", args={"pod": "x"}),
        ToolCall(id="b", name="read_logs", args={"pod": "x"}),
    )
    model = ScriptedModel([ModelTurn(tool_calls=both), ModelTurn(text="ok")])
    run = Runner(
        Agent(name="ops", model=model, tools=[read_logs]),
        Gate(Policy.from_dict({"default": "allow"}), store),
    )
    await collect(run.start("t1", "read the logs twice"))
    assert [m.content for m in last_tool_results(model)] == [big, big]
    sizes = await store.run(
        lambda c: c.execute(select(func.count(), func.sum(func.length(schema.blobs.c.data)))).one(),
        write=False,
    )
    # Two distinct messages (their call ids differ), each stored once: the tool_result events
    # carry the same data and share the blobs.
    assert sizes[0] == 2
    assert sizes[1] < len(big) // 10  # compressed
    events = await store.run_events(await only_run(store))
    assert [e.data["content"] for e in events if e.type == "tool_result"] == [big, big]
    raw_sizes = await store.run(
        lambda c: c.execute(select(func.max(func.length(schema.events.c.data)))).scalar_one(),
        write=False,
    )
    assert raw_sizes < 1_000  # the event rows hold references, not the logs


async def test_a_streaming_model_streams_its_text_live_and_the_log_keeps_it_whole(
    store: SQLStore,
):
    model = ScriptedModel(
        [
            ModelTurn(text="Deleting nginx-123 now.", tool_calls=(call("delete_pod", name="n"),)),
            ModelTurn(text="It is gone."),
        ],
        chunk=4,
    )
    agent = Agent(name="ops", model=model, tools=[delete_pod])
    live = Runner(agent, Gate(POLICY, store), stream_text=True)
    events = [e async for e in live.start("t1", "delete it")]
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert [d.text for d in deltas] == ["Dele", "ting", " ngi", "nx-1", "23 n", "ow."]
    # The deltas come first, then the stored text, whole, then the call.
    types = [e.type for e in events]
    assert types.index("text") > max(i for i, t in enumerate(types) if t == "text_delta")
    run_id = events[0].run_id
    stored = await store.run_events(run_id)
    assert "text_delta" not in [e.type for e in stored]
    assert [e.data for e in stored if e.type == "text"] == [{"text": "Deleting nginx-123 now."}]
    [held] = of(stored, "approval_requested")
    await live.gate.decide(held["approval_id"], Approve(), actor="alice")
    resumed = [e async for e in live.resume(run_id)]
    assert "".join(e.text for e in resumed if isinstance(e, TextDelta)) == "It is gone."
    assert resumed[-1].type == "completed"


async def test_workers_resume_a_run_once_its_batch_is_decided_and_only_one_runs_it(
    store: SQLStore,
):
    run, model = runner(
        store,
        [
            ModelTurn(
                tool_calls=(call("delete_pod", name="a"), call("scale", name="w", replicas=2))
            ),
            ModelTurn(text="Both done."),
        ],
    )
    events = await collect(run.start("t1", "delete a, scale w"))
    run_id = events[0].run_id
    held = of(events, "approval_requested")
    # Two workers on the same database, as two replicas would be.
    workers = [
        asyncio.create_task(r.work(poll_interval=0.05))
        for r in (run, Runner(run.agent, Gate(POLICY, store)))
    ]
    try:
        await run.gate.decide(held[0]["approval_id"], Approve(), actor="alice")
        await asyncio.sleep(0.3)
        assert (await store.get_run(run_id)).status == "paused"  # one call is still held
        await run.gate.decide(held[1]["approval_id"], Approve(), actor="alice")
        async with asyncio.timeout(HANG):
            while (await store.get_run(run_id)).status != "completed":
                await asyncio.sleep(0.02)
    finally:
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    assert sorted(executed, key=str) == [
        ("delete_pod", {"name": "a"}),
        ("scale", {"name": "w", "replicas": 2}),
    ]
    assert len(model.requests) == 2
    assert [e.type for e in await store.run_events(run_id)].count("resumed") == 1


async def test_a_tool_that_runs_longer_than_the_lease_keeps_its_run(store: SQLStore):
    started, release = asyncio.Event(), asyncio.Event()

    @tool
    async def migrate() -> str:
        """A long job."""
        started.set()
        await release.wait()
        return "migrated"

    model = ScriptedModel([ModelTurn(tool_calls=(call("migrate"),)), ModelTurn(text="ok")])
    policy = Policy.from_dict({"default": "allow"})
    agent = Agent(name="ops", model=model, tools=[migrate])
    lease = timedelta(milliseconds=150)
    busy = Runner(agent, Gate(policy, store), lease=lease)
    run = asyncio.create_task(collect(busy.start("t1", "migrate")))
    await started.wait()
    run_id = await only_run(store)
    created = (await store.get_run(run_id)).created_at
    assert created is not None
    # The heartbeat writes the run three leases on (however long that takes this machine)...
    async with asyncio.timeout(HANG):
        while (written := (await store.get_run(run_id)).updated_at) is None or (
            written < created + 3 * lease
        ):
            await asyncio.sleep(0.05)
    # ...so when its first lease had long run out, nobody else may take the run.
    then = created + 2 * lease
    assert not await store.claim_run(run_id, owner="thief", now=then, lease=timedelta(minutes=1))
    assert await store.ready_runs("ops", now=then) == []
    release.set()
    events = await run
    assert events[-1].type == "completed"


async def test_a_model_that_answers_later_than_the_lease_keeps_its_run(store: SQLStore):
    """Renewed while the model works too: a replica waiting on a slow model is not taken for a
    dead one, and its run is not given to another that would call the model again."""
    thinking, answer = asyncio.Event(), asyncio.Event()

    class Slow:
        async def complete(self, messages: Any, tools: Any) -> ModelTurn:
            thinking.set()
            await answer.wait()
            return ModelTurn(text="ok")

    agent = Agent(name="ops", model=Slow(), tools=[])
    lease = timedelta(milliseconds=150)
    busy = Runner(agent, Gate(Policy.from_dict({}), store), lease=lease)
    run = asyncio.create_task(collect(busy.start("t1", "hello")))
    await thinking.wait()
    run_id = await only_run(store)
    created = (await store.get_run(run_id)).created_at
    assert created is not None
    async with asyncio.timeout(HANG):  # renewed three leases on, while the model thinks
        while (written := (await store.get_run(run_id)).updated_at) is None or (
            written < created + 3 * lease
        ):
            await asyncio.sleep(0.05)
    then = created + 2 * lease
    assert not await store.claim_run(run_id, owner="thief", now=then, lease=timedelta(minutes=1))
    answer.set()
    assert (await run)[-1].type == "completed"


async def test_when_one_call_of_a_batch_fails_the_others_are_stopped(store: SQLStore):
    stopped = asyncio.Event()

    @tool
    async def slow() -> str:
        """Takes a while."""
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            stopped.set()
            raise
        return "done"

    @tool
    async def dies() -> str:
        """The worker dies in it."""
        await asyncio.sleep(0.05)
        raise Crash

    model = ScriptedModel([ModelTurn(tool_calls=(call("slow"), call("dies")))])
    agent = Agent(name="ops", model=model, tools=[slow, dies])
    runner = Runner(agent, Gate(Policy.from_dict({"default": "allow"}), store))
    with pytest.raises(Crash):
        await collect(runner.start("t1", "go"))
    assert stopped.is_set()  # nothing of the run goes on behind the caller's back


async def test_an_approved_call_the_policy_denies_by_the_time_it_resumes_is_not_run(
    store: SQLStore,
):
    run, model = runner(
        store, [ModelTurn(tool_calls=(call("delete_pod", name="web-1"),)), ModelTurn(text="ok")]
    )
    events = await collect(run.start("t1", "delete web-1", started_by="bob"))
    [requested] = of(events, "approval_requested")
    await run.gate.decide(requested["approval_id"], Approve(), actor="alice")
    frozen = {"rules": [{"deny": "delete_pod", "reason": "deletions are frozen"},
                        {"ask": "delete_pod"}]}  # fmt: skip
    await run.gate.use_policy(Policy.from_dict(frozen))
    resumed = await collect(run.resume(events[0].run_id))
    assert executed == []
    assert resumed[-1].type == "completed"
    [told] = last_tool_results(model)
    assert "was approved, but the policy in force denies this call now" in told.content
    assert "deletions are frozen" in told.content
