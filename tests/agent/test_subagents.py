"""Sub-agents: agents as tools, their calls judged by their own section of the policy, their
approvals surfacing on the root run, and resuming the root resuming them first."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import text

from signoff import Approve, ConflictError, Policy, Reject
from signoff.agent import Agent, ModelTurn, Runner, tool
from signoff.gate import Gate
from signoff.store import SQLStore
from signoff.testing import ScriptedModel, call
from tests.agent.test_runner import collect, of

POLICY = Policy.from_dict(
    {
        "default": "ask",
        "rules": [{"allow": ["researcher", "lookup"]}],
        "agents": {"coordinator/researcher": {"rules": [{"allow": "search"}]}},
    }
)
executed: list[str] = []


@tool
def search(query: str) -> str:
    """Search the web (allowed for the researcher only)."""
    executed.append(f"search {query}")
    return f"3 results for {query}"


@tool
def delete_page(title: str) -> str:
    """Delete a wiki page (asks everywhere)."""
    executed.append(f"delete_page {title}")
    return f"deleted {title}"


@tool
def lookup(term: str) -> str:
    """Look a term up."""
    executed.append(f"lookup {term}")
    return f"{term}: a word"


@pytest.fixture(autouse=True)
def clear() -> None:
    executed.clear()


def team(
    store: SQLStore, coordinator: list[Any], researcher: list[Any]
) -> tuple[Runner, ScriptedModel, ScriptedModel]:
    inner = ScriptedModel(researcher)
    outer = ScriptedModel(coordinator)
    sub = Agent(
        name="researcher",
        model=inner,
        tools=[search, delete_page],
        description="Researches a topic and tidies the wiki.",
    )
    root = Agent(name="coordinator", model=outer, tools=[lookup, delete_page], subagents=[sub])
    return Runner(root, Gate(POLICY, store)), outer, inner


async def test_a_sub_agents_held_call_pauses_the_root_run_and_resuming_resumes_it_first(
    store: SQLStore,
):
    runner, outer, inner = team(
        store,
        coordinator=[
            ModelTurn(tool_calls=(call("researcher", input="tidy the wiki page on pods"),)),
            lambda messages: ModelTurn(text=f"The researcher said: {messages[-1].content}"),
        ],
        researcher=[
            ModelTurn(tool_calls=(call("search", query="pods"), call("delete_page", title="Pods"))),
            ModelTurn(text="Searched, and deleted the stale page."),
        ],
    )
    events = await collect(runner.start("t1", "tidy up", started_by="bob"))
    root_id = events[0].run_id
    assert events[-1].type == "paused"
    assert events[-1].run_id == root_id
    assert executed == ["search pods"]  # allowed by the researcher's own section

    [held] = of([e for e in events if e.run_id == root_id], "approval_requested")
    assert held["tool"] == "delete_page"
    assert held["agent"] == "coordinator/researcher"
    approval = await store.get_approval(str(held["approval_id"]))
    assert approval.run_id == root_id  # it surfaces on the root run, for the inbox
    assert approval.call.agent == "coordinator/researcher"
    [child_id] = {e.run_id for e in events} - {root_id}
    child = await store.get_run(child_id)
    assert (child.status, child.parent_id, child.agent) == ("paused", root_id, "researcher")
    assert (await store.get_run(root_id)).status == "paused"

    with pytest.raises(ConflictError, match="sub-agent's run; resume its root run"):
        await collect(runner.resume(child_id))
    with pytest.raises(ConflictError, match="still waits on 1 approval"):
        await collect(runner.resume(root_id))

    await runner.gate.decide(approval.id, Approve(), actor="alice")
    [decided] = [e for e in await store.run_events(root_id) if e.type == "decision"]
    assert (decided.data["agent"], decided.data["status"]) == ("coordinator/researcher", "approved")
    resumed = await collect(runner.resume(root_id))
    assert executed == ["search pods", "delete_page Pods"]
    # The sub-agent went on first: its run finished before the root's model was asked again.
    child_done = next(
        i for i, e in enumerate(resumed) if e.run_id == child_id and e.type == "completed"
    )
    root_text = next(i for i, e in enumerate(resumed) if e.run_id == root_id and e.type == "text")
    assert child_done < root_text
    assert (await store.get_run(child_id)).status == "completed"
    assert (await store.get_run(root_id)).status == "completed"
    assert resumed[-1].data == {} and resumed[-1].run_id == root_id
    assert of(resumed, "text")[-1]["text"] == (
        "The researcher said: Searched, and deleted the stale page."
    )
    assert len(inner.requests) == 2 and len(outer.requests) == 2
    # The researcher's second turn saw its own results, not the coordinator's conversation.
    seen = [m.content for m in inner.requests[1].messages]
    assert seen == [
        "tidy the wiki page on pods", "", "3 results for pods", "deleted Pods",
    ]  # fmt: skip


async def test_the_root_and_a_sub_agent_held_in_one_turn_pause_once_and_resume_together(
    store: SQLStore,
):
    runner, outer, _ = team(
        store,
        coordinator=[
            ModelTurn(
                tool_calls=(
                    call("delete_page", title="Old"),
                    call("researcher", input="delete Stale"),
                    call("lookup", term="pod"),
                )
            ),
            ModelTurn(text="All done."),
        ],
        researcher=[
            ModelTurn(tool_calls=(call("delete_page", title="Stale"),)),
            ModelTurn(text="Stale is gone."),
        ],
    )
    events = await collect(runner.start("t1", "clean up"))
    root_id = events[0].run_id
    root_events = [e for e in events if e.run_id == root_id]
    held = of(root_events, "approval_requested")
    assert [(h["tool"], h["args"], h["agent"]) for h in held] == [
        ("delete_page", {"title": "Old"}, "coordinator"),
        ("delete_page", {"title": "Stale"}, "coordinator/researcher"),
    ]
    assert [e.type for e in root_events].count("paused") == 1
    assert executed == ["lookup pod"]

    # The sub-agent's first, then the root's: the order of decisions does not matter.
    await runner.gate.decide(str(held[1]["approval_id"]), Approve(), actor="alice")
    await runner.gate.decide(str(held[0]["approval_id"]), Reject(reason="keep it"), actor="alice")
    resumed = await collect(runner.resume(root_id))
    assert executed == ["lookup pod", "delete_page Stale"]
    assert resumed[-1].type == "completed"
    results = [m for m in outer.requests[-1].messages if m.role == "tool"]
    # lookup's result was stored when the run paused; the others came with the resume.
    assert [r.name for r in results] == ["lookup", "delete_page", "researcher"]
    assert json.loads(results[1].content)["status"] == "rejected"
    assert results[2].content == "Stale is gone."


async def test_a_rejection_in_a_sub_agent_reaches_its_model_not_the_root(store: SQLStore):
    runner, outer, inner = team(
        store,
        coordinator=[
            ModelTurn(tool_calls=(call("researcher", input="delete Pods"),)),
            ModelTurn(text="The researcher could not."),
        ],
        researcher=[
            ModelTurn(tool_calls=(call("delete_page", title="Pods"),)),
            lambda messages: ModelTurn(text=json.loads(messages[-1].content)["message"]),
        ],
    )
    events = await collect(runner.start("t1", "delete the pods page"))
    # Requested in the researcher's run, and surfaced on the root's: one approval.
    [held] = {
        e.data["approval_id"]: e.data for e in events if e.type == "approval_requested"
    }.values()
    await runner.gate.decide(str(held["approval_id"]), Reject(reason="still needed"), actor="al")
    await collect(runner.resume(events[0].run_id))
    assert executed == []
    [answer] = [m for m in outer.requests[-1].messages if m.role == "tool"]
    assert answer.content == "The user rejected this call: still needed. Do not retry it."
    assert len(inner.requests) == 2


async def test_a_sub_agent_that_pauses_twice_pauses_the_root_twice(store: SQLStore):
    runner, _, _ = team(
        store,
        coordinator=[
            ModelTurn(tool_calls=(call("researcher", input="delete A then B"),)),
            ModelTurn(text="Both gone."),
        ],
        researcher=[
            ModelTurn(tool_calls=(call("delete_page", title="A"),)),
            ModelTurn(tool_calls=(call("delete_page", title="B"),)),
            ModelTurn(text="A and B are gone."),
        ],
    )
    events = await collect(runner.start("t1", "go"))
    root_id = events[0].run_id
    for expected in ("A", "B"):
        [held] = of([e for e in events if e.run_id == root_id], "approval_requested")
        assert held["args"] == {"title": expected}
        await runner.gate.decide(str(held["approval_id"]), Approve(), actor="al")
        events = await collect(runner.resume(root_id))
    assert executed == ["delete_page A", "delete_page B"]
    assert events[-1].type == "completed" and events[-1].run_id == root_id


class Crash(BaseException):
    """The worker dies: not an error a tool reports, the process going away."""


async def test_a_sub_agent_whose_worker_died_is_taken_over_with_its_root(store: SQLStore):
    @tool
    def charge(amount: int) -> str:
        """Charge a card: at most once."""
        executed.append(f"charge {amount}")
        raise Crash

    inner = ScriptedModel(
        [ModelTurn(tool_calls=(call("charge", amount=5),)), ModelTurn(text="Outcome unknown.")]
    )
    outer = ScriptedModel(
        [
            ModelTurn(tool_calls=(call("billing", input="charge 5"),)),
            lambda messages: ModelTurn(text=f"Billing says: {messages[-1].content}"),
        ]
    )
    billing = Agent(name="billing", model=inner, tools=[charge])
    root = Agent(name="shop", model=outer, subagents=[billing])
    policy = Policy.from_dict({"default": "allow"})
    # Every write of this worker leases the runs until "now": as good as dead once it stops.
    dying = Runner(root, Gate(policy, store), lease=timedelta(0))
    with pytest.raises(Crash):
        await collect(dying.start("t1", "charge me 5"))
    [root_id] = await store.run(
        lambda c: [r.id for r in c.execute(text("SELECT id FROM runs WHERE agent = 'shop'"))],
        write=False,
    )
    assert (await store.get_run(root_id)).status == "running"  # left behind by the dead worker

    survivor = Runner(root, Gate(policy, store))
    events = await collect(survivor.resume(root_id))
    assert executed == ["charge 5"]  # not idempotent and it had started: never re-run
    assert events[-1].type == "completed" and events[-1].run_id == root_id
    [unknown] = [m for m in inner.requests[-1].messages if m.role == "tool"]
    assert json.loads(unknown.content)["status"] == "unknown"
    assert of(events, "text")[-1]["text"] == "Billing says: Outcome unknown."
    children = {e.run_id for e in events} - {root_id}
    assert [(await store.get_run(c)).status for c in children] == ["completed"]


async def test_a_sub_agents_calls_are_judged_by_its_section_of_the_policy(store: SQLStore):
    inner = ScriptedModel(
        [ModelTurn(tool_calls=(call("search", query="x"),)), ModelTurn(text="ok")]
    )
    outer = ScriptedModel(
        [
            ModelTurn(tool_calls=(call("search", query="y"), call("researcher", input="x"))),
            ModelTurn(text="done"),
        ]
    )
    sub = Agent(name="researcher", model=inner, tools=[search])
    runner = Runner(
        Agent(name="coordinator", model=outer, tools=[search], subagents=[sub]),
        Gate(POLICY, store),
    )
    events = await collect(runner.start("t1", "search"))
    # The researcher's search is allowed by its section; the coordinator's asks (the default).
    assert executed == ["search x"]
    [held] = of(events, "approval_requested")
    assert (held["tool"], held["args"], held["agent"]) == ("search", {"query": "y"}, "coordinator")


def test_a_tool_and_a_sub_agent_cannot_share_a_name():
    sub = Agent(name="lookup", model=ScriptedModel([]))
    with pytest.raises(ValueError, match=r"\['lookup'\] name both a tool and a sub-agent"):
        Agent(name="root", model=ScriptedModel([]), tools=[lookup], subagents=[sub])
    with pytest.raises(ValueError, match="without '/'"):
        Agent(name="a/b", model=ScriptedModel([]))


def test_a_sub_agent_is_offered_to_the_model_as_a_tool_taking_its_input():
    runner_spec = Agent(
        name="root",
        model=ScriptedModel([]),
        subagents=[Agent(name="researcher", model=ScriptedModel([]), description="Researches.")],
    ).specs
    [spec] = runner_spec
    assert spec.name == "researcher"
    assert spec.description == "Researches."
    assert spec.parameters["required"] == ["input"]


async def test_an_approved_call_to_a_sub_agent_whose_own_call_is_held_pauses_again(
    store: SQLStore,
):
    inner = ScriptedModel(
        [ModelTurn(tool_calls=(call("delete_page", title="X"),)), ModelTurn(text="X is gone.")]
    )
    outer = ScriptedModel(
        [ModelTurn(tool_calls=(call("janitor", input="delete X"),)), ModelTurn(text="Done.")]
    )
    janitor = Agent(name="janitor", model=inner, tools=[delete_page])
    # Handing work to the janitor asks (the default), and so does its delete.
    runner = Runner(Agent(name="boss", model=outer, subagents=[janitor]), Gate(POLICY, store))
    events = await collect(runner.start("t1", "delete X"))
    root_id = events[0].run_id
    [first] = of(events, "approval_requested")
    assert (first["tool"], first["agent"]) == ("janitor", "boss")
    await runner.gate.decide(str(first["approval_id"]), Approve(), actor="al")

    events = await collect(runner.resume(root_id))
    assert events[-1].type == "paused" and events[-1].run_id == root_id
    [second] = of([e for e in events if e.run_id == root_id], "approval_requested")
    assert (second["tool"], second["agent"]) == ("delete_page", "boss/janitor")
    assert executed == []
    await runner.gate.decide(str(second["approval_id"]), Approve(), actor="al")

    events = await collect(runner.resume(root_id))
    assert events[-1].type == "completed" and events[-1].run_id == root_id
    assert executed == ["delete_page X"]
    [result] = [m for m in outer.requests[-1].messages if m.role == "tool"]
    assert result.content == "X is gone."
