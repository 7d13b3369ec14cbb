"""LangGraph graphs behind signoff: the drop-in `ApprovalToolNode` (a sub-agent's judged by its
own section of the policy) and `gated` inside any node, on a real graph and checkpointer."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition
from langgraph.types import Command

from signoff import Approval, Approve, Edit, Policy, Reject, ToolCall
from signoff.errors import ConflictError, InvalidDecisionError
from signoff.gate.external import ExternalRuns
from signoff.integrations._hitl import Sent, resume_decisions
from signoff.integrations.langchain import SignoffMiddleware
from signoff.integrations.langgraph import ApprovalToolNode, connect, gated, resumer
from tests.conftest import fresh_postgres_database
from tests.deadline import HANG
from tests.integrations.fakes import ScriptedChatModel, at_once
from tests.integrations.harness import lines as executions
from tests.integrations.lc_app import tools as counting_tools

POLICY = Policy.from_dict({
    "default": "ask",
    "rules": [{"allow": "read_file"}],
    "agents": {"coordinator/researcher": {"default": "allow"}},
})  # fmt: skip
SCRIPT: list[Any] = [[("read_file", {"path": "a"}), ("send_email", {"to": "bob"})], "done"]


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[ExternalRuns]:
    opened = connect(POLICY, origin="langgraph", database=f"sqlite:///{tmp_path / 's.db'}")
    yield opened
    opened.close()


@pytest.fixture(params=["sqlite", "postgres"])
async def both_runs(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ExternalRuns]:
    """`runs` on SQLite, then on PostgreSQL."""
    async with contextlib.AsyncExitStack() as stack:
        if request.param == "sqlite":
            database = f"sqlite:///{tmp_path / 's.db'}"
        else:
            database = await stack.enter_async_context(fresh_postgres_database())
        opened = await asyncio.to_thread(connect, POLICY, origin="langgraph", database=database)
        try:
            yield opened
        finally:
            await asyncio.to_thread(opened.close)


def agent_graph(
    runs: ExternalRuns, fx: Path, *, agent: str | None, calls: Path, script: list[Any] = SCRIPT
) -> Any:
    model = ScriptedChatModel(script=script, calls_file=str(calls))
    tools = counting_tools(fx)

    def think(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", think)
    builder.add_node("tools", ApprovalToolNode(tools, runs=runs, agent=agent))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder


CONFIG: dict[str, Any] = {"configurable": {"thread_id": "t-1"}}


def test_the_approval_tool_node_runs_allowed_calls_then_pauses_and_runs_the_decided_once(
    runs: ExternalRuns, tmp_path: Path
) -> None:
    fx, calls = tmp_path / "fx", tmp_path / "calls"
    graph = agent_graph(runs, fx, agent=None, calls=calls).compile(checkpointer=InMemorySaver())

    paused = graph.invoke({"messages": [("user", "go")]}, CONFIG)

    assert executions(fx) == ["read_file a"]
    [interrupt] = paused["__interrupt__"]
    [approval] = runs.run(runs.store.list_approvals(status="pending"))
    runs.run(runs.gate.decide(approval.id, Edit(args={"to": "carol"}), actor="ann"))
    command = Command(resume={"signoff": {"pause": interrupt.value["signoff"]["pause"]}})
    done = graph.invoke(command, CONFIG)
    graph.invoke(command, CONFIG)  # resumed again: nothing runs twice

    assert executions(fx) == ["read_file a", "send_email carol "]
    assert done["messages"][-1].content == "done"
    results = [m for m in done["messages"] if isinstance(m, ToolMessage)]
    assert len(results) == 2
    assert calls.read_text().split() == ["0", "1"]


def paused_on_send_email(
    runs: ExternalRuns, fx: Path, calls: Path
) -> tuple[Any, dict[str, Any], Command[Any]]:
    """A graph paused in its tool node on send_email (then read_file, then done), the config
    that resumes the checkpoint that paused — as a process that read it resumes it — and the
    resume."""
    script = [[("send_email", {"to": "bob"})], [("read_file", {"path": "next"})], "done"]
    graph = agent_graph(runs, fx, agent=None, calls=calls, script=script).compile(
        checkpointer=InMemorySaver()
    )
    graph.invoke({"messages": [("user", "go")]}, CONFIG)
    paused = graph.get_state(CONFIG).config["configurable"]["checkpoint_id"]
    config = {"configurable": {"thread_id": "t-1", "checkpoint_id": paused, "user_id": "ann"}}
    return graph, config, Command(resume={"decisions": [{"type": "approve"}]})


def test_two_raw_resumes_of_the_paused_checkpoint_at_once_go_on_past_the_tool_node_once(
    both_runs: ExternalRuns, tmp_path: Path
) -> None:
    fx, calls = tmp_path / "fx", tmp_path / "calls"
    graph, config, command = paused_on_send_email(both_runs, fx, calls)

    outcomes = at_once(lambda: graph.invoke(command, config))

    refusals = [o for o in outcomes if isinstance(o, Exception)]
    assert len(refusals) == 1, outcomes
    [refused] = refusals
    assert isinstance(refused, ConflictError), refused
    [resumed] = [o for o in outcomes if not isinstance(o, Exception)]
    assert resumed["messages"][-1].content == "done"
    assert executions(fx) == ["send_email bob ", "read_file next"]
    assert calls.read_text().split() == ["0", "1", "2"]


def test_a_late_raw_resume_of_the_paused_checkpoint_runs_no_call_of_the_next_turn(
    both_runs: ExternalRuns, tmp_path: Path
) -> None:
    fx, calls = tmp_path / "fx", tmp_path / "calls"
    graph, config, command = paused_on_send_email(both_runs, fx, calls)
    assert graph.invoke(command, config)["messages"][-1].content == "done"

    # LangGraph runs the tool node that paused again for the second resume, and the claim on
    # the pause refuses it there: the graph's own model is not called again.
    with pytest.raises(ConflictError, match="is being continued, or was continued"):
        graph.invoke(command, config)

    assert executions(fx) == ["send_email bob ", "read_file next"]
    assert calls.read_text().split() == ["0", "1", "2"]


def test_a_sub_agent_subgraph_is_judged_by_its_own_section_of_the_policy(
    runs: ExternalRuns, tmp_path: Path
) -> None:
    fx = tmp_path / "fx"
    researcher = agent_graph(runs, fx, agent="coordinator/researcher", calls=tmp_path / "c")
    parent = StateGraph(MessagesState)
    parent.add_node("researcher", researcher.compile())
    parent.add_edge(START, "researcher")
    graph = parent.compile(checkpointer=InMemorySaver())

    done = graph.invoke({"messages": [("user", "go")]}, CONFIG)

    # The researcher's section allows what the root policy would ask for.
    assert "__interrupt__" not in done
    assert sorted(executions(fx)) == ["read_file a", "send_email bob "]


@pytest.mark.parametrize(
    ("decision", "said", "ran"),
    [(Approve(), "ran: ok", ["charge 40"]),
     (Reject(reason="over budget"), "rejected: over budget", [])],
    ids=["approved", "rejected"],
)  # fmt: skip
def test_gated_inside_a_node_holds_the_call_until_it_is_decided_and_runs_it_once_if_approved(
    runs: ExternalRuns, tmp_path: Path, decision: Approve | Reject, said: str, ran: list[str]
) -> None:
    fx = tmp_path / "fx"

    def charge(args: dict[str, Any]) -> str:
        with fx.open("a") as f:
            f.write(f"charge {args['amount']}\n")
        return "ok"

    def pay(state: MessagesState) -> dict[str, Any]:
        result = gated(runs, "charge", {"amount": 40}, id="pay", run=charge)
        return {
            "messages": [AIMessage(content=f"{result.status}: {result.message or result.value}")]
        }

    builder = StateGraph(MessagesState)
    builder.add_node("pay", pay)
    builder.add_edge(START, "pay")
    graph = builder.compile(checkpointer=InMemorySaver())

    paused = graph.invoke({"messages": [("user", "pay")]}, CONFIG)
    [approval] = runs.run(runs.store.list_approvals(status="pending"))
    assert (approval.call.name, approval.call.args) == ("charge", {"amount": 40})
    assert executions(fx) == []
    runs.run(runs.gate.decide(approval.id, decision, actor="ann"))
    pause = paused["__interrupt__"][0].value["signoff"]["pause"]
    done = graph.invoke(Command(resume={"signoff": {"pause": pause}}), CONFIG)

    assert done["messages"][-1].content == said
    assert executions(fx) == ran


async def test_an_async_agent_pauses_and_an_async_resumer_resumes_it(tmp_path: Path) -> None:
    fx = tmp_path / "fx"
    database = f"sqlite:///{tmp_path / 's.db'}"
    runs = await asyncio.to_thread(connect, POLICY, origin="langgraph", database=database)
    try:
        model = ScriptedChatModel(script=SCRIPT)
        agent = create_agent(model, counting_tools(fx), middleware=[SignoffMiddleware(runs)],
                             checkpointer=InMemorySaver())  # fmt: skip

        paused = await agent.ainvoke({"messages": [("user", "go")]}, CONFIG)

        assert "__interrupt__" in paused
        assert executions(fx) == ["read_file a"]
        async with resumer(agent, runs, use_async=True).running(poll_interval=0.05):
            [approval] = await runs.bridge.arun(runs.store.list_approvals(status="pending"))
            await runs.bridge.arun(runs.gate.decide(approval.id, Approve(), actor="ann"))
            async with asyncio.timeout(HANG):
                while (await agent.aget_state(CONFIG)).values["messages"][-1].content != "done":
                    await asyncio.sleep(0.05)
        assert executions(fx) == ["read_file a", "send_email bob "]
    finally:
        await asyncio.to_thread(runs.close)


def test_a_resume_payload_names_the_version_each_decision_was_made_on() -> None:
    asked = [
        Approval(id=i, call=ToolCall(id=i, name="charge", args={"amount": 5}), batch_id="b",
                 rule=None, reason="asks", requested_at=datetime.now(UTC))
        for i in ("a1", "a2")
    ]  # fmt: skip

    listed = resume_decisions(
        {"decisions": [{"type": "approve", "version": 3}, {"type": "reject"}]}, asked
    )
    by_id = resume_decisions({"a2": {"type": "approve", "version": 2}}, asked)

    assert listed == Sent(decisions={"a1": Approve(), "a2": Reject(reason="")}, versions={"a1": 3})
    assert by_id == Sent(decisions={"a2": Approve()}, versions={"a2": 2})
    for bad in ("3", True, 0):  # a payload `LangGraphGate.take` is handed without LangGraph's check
        with pytest.raises(InvalidDecisionError, match=r"decisions\[0\]\.version"):
            resume_decisions(
                {"decisions": [{"type": "approve", "version": bad}, {"type": "reject"}]}, asked
            )
