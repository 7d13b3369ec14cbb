"""LangChain v1 agents behind signoff: the real `create_agent`, its real checkpointers (SQLite
and PostgreSQL), a scripted chat model, and tools that count every real execution."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command
from pydantic import ValidationError

from signoff import Approve, Edit, Reject, Scope
from signoff.errors import ConflictError
from signoff.gate.external import ExternalRuns
from signoff.integrations.langchain import SignoffMiddleware
from signoff.integrations.langgraph import resumer
from tests.conftest import fresh_postgres_database
from tests.deadline import HANG
from tests.integrations.fakes import at_once
from tests.integrations.harness import EVERY, HANG_IN_TOOL, IDEMPOTENT, lines, until
from tests.integrations.inbox import EDITED, decided_in_the_inbox
from tests.integrations.lc_app import build, checkpointer, open_runs, policy

ROOT = Path(__file__).parents[2]


@dataclass
class Harness:
    database: str
    checkpoints: str
    side_effects: Path
    model_calls: Path
    runs: ExternalRuns
    saver: Any

    def agent(self, script: list[Any] | None = None) -> Any:
        return build(self.runs, self.saver, self.side_effects, self.model_calls, script)

    def model_turns(self) -> list[str]:
        return self.model_calls.read_text().split() if self.model_calls.exists() else []

    def approve_all(self) -> None:
        """Approve every pending call, as someone allowed to (the charges need `finance`)."""
        decisions = {a.id: Approve() for a in self.pending().values()}
        self.runs.run(self.runs.gate.decide_batch(decisions, actor="bob", roles=["finance"]))

    def pending(self) -> dict[str, Any]:
        """Pending approvals by "tool args"."""
        found = self.runs.run(self.runs.store.list_approvals(status="pending"))
        return {f"{a.call.name} {json.dumps(a.call.args, sort_keys=True)}": a for a in found}


@pytest.fixture(params=["sqlite", "postgres"])
async def harness(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Harness]:
    if request.param == "sqlite":
        database, checkpoints = f"sqlite:///{tmp_path / 'signoff.db'}", str(tmp_path / "cp.db")
        async for made in _harness(database, checkpoints, tmp_path):
            yield made
        return
    async with fresh_postgres_database() as url:
        plain = url.replace("postgresql+asyncpg://", "postgresql://")
        async for made in _harness(url, plain, tmp_path):
            yield made


async def _harness(database: str, checkpoints: str, tmp_path: Path) -> AsyncIterator[Harness]:
    runs = await asyncio.to_thread(open_runs, database)
    try:
        with checkpointer(checkpoints) as saver:
            yield Harness(database, checkpoints, tmp_path / "side-effects.txt",
                          tmp_path / "model-calls.txt", runs, saver)  # fmt: skip
    finally:
        await asyncio.to_thread(runs.close)


CONFIG: dict[str, Any] = {"configurable": {"thread_id": "t-1", "user_id": "alice"}}
STUDIO: dict[str, Any] = {"configurable": {"thread_id": "t-1"}}
"""A resume sent with no user named (LangGraph Studio's): taken as the principal the app
`connect`ed with on purpose."""


def start(agent: Any, config: dict[str, Any] = CONFIG) -> dict[str, Any]:
    result: dict[str, Any] = agent.invoke({"messages": [{"role": "user", "content": "go"}]}, config)
    return result


def resume(agent: Any, result: dict[str, Any], config: dict[str, Any] = CONFIG) -> dict[str, Any]:
    [interrupt] = result["__interrupt__"]
    pause = interrupt.value["signoff"]["pause"]
    resumed: dict[str, Any] = agent.invoke(Command(resume={"signoff": {"pause": pause}}), config)
    return resumed


def tool_results(result: dict[str, Any]) -> dict[str, str]:
    said = [c for m in result["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]
    calls = {c["id"]: f"{c['name']} {json.dumps(c['args'], sort_keys=True)}" for c in said}
    return {calls[m.tool_call_id]: str(m.content) for m in result["messages"]
            if isinstance(m, ToolMessage)}  # fmt: skip


def test_a_turn_runs_allowed_calls_blocks_denied_ones_and_interrupts_once_for_the_asked(
    harness: Harness,
) -> None:
    result = start(harness.agent())

    [interrupt] = result["__interrupt__"]
    requests = interrupt.value["action_requests"]
    assert [(r["name"], r["args"]) for r in requests] == [
        ("send_email", {"to": "bob@example.com", "body": "hi"}),
        ("charge", {"amount": 50}),
    ]
    assert set(interrupt.value["signoff"]["approvals"]) == {
        a.id for a in harness.pending().values()
    }
    # The allowed sibling ran before the pause; the denied call never runs.
    assert lines(harness.side_effects) == ["read_file report.txt"]
    results = tool_results(result)
    assert results['read_file {"path": "report.txt"}'] == "contents of report.txt"
    assert results['charge {"amount": 5000}'].startswith("signoff blocked this call: denied")
    assert harness.model_turns() == ["0"]
    [approval, *_] = harness.pending().values()
    assert (approval.origin, approval.thread_id, approval.requested_by) == (
        "langgraph", "t-1", "alice")  # fmt: skip


def test_each_decision_reaches_the_model_and_the_tools_run_once_however_often_it_resumes(
    harness: Harness,
) -> None:
    agent = harness.agent()
    result = start(agent)
    pending = harness.pending()
    gate = harness.runs.gate
    harness.runs.run(gate.decide(pending['send_email {"body": "hi", "to": "bob@example.com"}'].id,
                                 Edit(args={"to": "carol@example.com", "body": "hi"}),
                                 actor="bob"))  # fmt: skip
    harness.runs.run(gate.decide(pending['charge {"amount": 50}'].id,
                                 Reject(reason="not this month"), actor="bob",
                                 roles=["finance"]))  # fmt: skip

    resumed = resume(agent, result)
    again = resume(agent, result)  # the same checkpoint resumed twice

    results = tool_results(resumed)
    assert (
        "it ran with the arguments" in results['send_email {"body": "hi", "to": "bob@example.com"}']
    )
    assert json.loads(results['charge {"amount": 50}']) == {
        "status": "rejected",
        "message": "The user rejected this call: not this month. Do not retry it.",
    }
    assert resumed["messages"][-1].content == "done"
    assert lines(harness.side_effects) == ["read_file report.txt",
                                                "send_email carol@example.com hi"]  # fmt: skip
    assert tool_results(again) == results
    # One model turn before the pause, one after: none on the way back in.
    assert harness.model_turns().count("1") >= 1 and harness.model_turns()[0] == "0"
    assert harness.model_turns().count("0") == 1


def test_a_turn_with_nothing_to_run_first_interrupts_straight_after_the_model(
    harness: Harness,
) -> None:
    script = [[("send_email", {"to": "bob@example.com"}), ("charge", {"amount": 5000}),
               ("charge", {"amount": 50})], "done"]  # fmt: skip
    agent = harness.agent(script)
    result = start(agent)

    [interrupt] = result["__interrupt__"]
    assert [r["name"] for r in interrupt.value["action_requests"]] == ["send_email", "charge"]
    # No tools step on the way to the pause: it waits in the node after the model.
    assert agent.get_state(CONFIG).next == ("signoff.after_model",)
    assert lines(harness.side_effects) == []
    decisions = {"decisions": [{"type": "approve"}, {"type": "reject", "message": "too early"}]}

    resumed = agent.invoke(Command(resume=decisions), STUDIO)
    again = agent.invoke(Command(resume=decisions), STUDIO)  # resumed twice

    results = tool_results(resumed)
    assert results['send_email {"to": "bob@example.com"}'] == "sent to bob@example.com"
    assert results['charge {"amount": 5000}'].startswith("signoff blocked this call: denied")
    assert "too early" in results['charge {"amount": 50}']
    assert resumed["messages"][-1].content == "done"
    assert tool_results(again) == results
    assert lines(harness.side_effects) == ["send_email bob@example.com "]
    assert harness.model_turns() == ["0", "1"]


def paused_on_send_email(harness: Harness) -> tuple[Any, dict[str, Any], Command[Any]]:
    """An agent paused on send_email (then read_file, then done), the config that resumes the
    checkpoint that paused — as a process that read it resumes it — and the resume."""
    script = [[("send_email", {"to": "bob@example.com"})], [("read_file", {"path": "next.txt"})],
              "done"]  # fmt: skip
    agent = harness.agent(script)
    start(agent)
    paused = agent.get_state(CONFIG).config["configurable"]["checkpoint_id"]
    config = {"configurable": {"thread_id": "t-1", "checkpoint_id": paused}}
    return agent, config, Command(resume={"decisions": [{"type": "approve"}]})


def test_two_raw_resumes_of_the_paused_checkpoint_at_once_go_on_once_and_one_is_refused(
    harness: Harness,
) -> None:
    agent, config, command = paused_on_send_email(harness)

    outcomes = at_once(lambda: agent.invoke(command, config))

    refusals = [o for o in outcomes if isinstance(o, Exception)]
    assert len(refusals) == 1, (outcomes, lines(harness.side_effects))
    [refused] = refusals
    assert isinstance(refused, ConflictError), refused
    assert "is being continued, or was continued" in str(refused)
    [resumed] = [o for o in outcomes if not isinstance(o, Exception)]
    assert resumed["messages"][-1].content == "done"
    # The approved call ran once, the model went on once, and the next turn's call ran once.
    assert lines(harness.side_effects) == ["send_email bob@example.com ", "read_file next.txt"]
    assert harness.model_turns() == ["0", "1", "2"]


def test_a_late_raw_resume_of_the_paused_checkpoint_is_refused_before_the_model(
    harness: Harness,
) -> None:
    agent, config, command = paused_on_send_email(harness)
    assert agent.invoke(command, config)["messages"][-1].content == "done"

    # LangGraph kept the first resume's writes with the paused checkpoint: a second resume
    # of it skips the node that paused and would go on to the model on a line of its own.
    with pytest.raises(ConflictError, match="is being continued, or was continued"):
        agent.invoke(command, config)

    assert lines(harness.side_effects) == ["send_email bob@example.com ", "read_file next.txt"]
    assert harness.model_turns() == ["0", "1", "2"]


def test_approve_always_for_the_thread_lets_the_next_such_call_through(harness: Harness) -> None:
    script = [[("send_email", {"to": "bob@example.com"})], [("send_email", {"to": "eve@x.org"})],
              "done"]  # fmt: skip
    agent = harness.agent(script)
    result = start(agent)
    [approval] = harness.pending().values()
    any_args = Approve(always=Scope(kind="thread", with_args=False))  # the next call's differ
    harness.runs.run(harness.runs.gate.decide(approval.id, any_args, actor="bob"))

    resumed = resume(agent, result)

    assert "__interrupt__" not in resumed
    assert lines(harness.side_effects) == ["send_email bob@example.com ",
                                                "send_email eve@x.org "]  # fmt: skip
    other = start(agent, {"configurable": {"thread_id": "t-2"}})
    assert "__interrupt__" in other  # another thread still asks


def test_a_langchain_style_resume_without_a_user_is_taken_as_the_integrations_principal(
    harness: Harness,
) -> None:
    agent = harness.agent()
    start(agent)
    pending = harness.pending()
    # Decided in the inbox first: that decision stands against the payload's.
    harness.runs.run(harness.runs.gate.decide(pending['charge {"amount": 50}'].id,
                                              Reject(reason="inbox first"), actor="carol",
                                              roles=["finance"]))  # fmt: skip
    decisions = {"decisions": [{"type": "respond", "message": "emailed by hand"},
                               {"type": "approve"}]}  # fmt: skip

    resumed = agent.invoke(Command(resume=decisions), STUDIO)

    results = tool_results(resumed)
    assert results['send_email {"body": "hi", "to": "bob@example.com"}'] == "emailed by hand"
    assert "inbox first" in results['charge {"amount": 50}']
    email = harness.runs.run(harness.runs.store.get_approval(
        pending['send_email {"body": "hi", "to": "bob@example.com"}'].id))  # fmt: skip
    assert (email.status, email.decided_by) == ("responded", "studio")
    audit = harness.runs.run(harness.runs.store.audit_log())
    assert any(e.action == "decision" and e.actor == "studio" and e.subject == email.id
               for e in audit)  # fmt: skip


def test_a_malformed_resume_is_refused_and_decides_nothing(harness: Harness) -> None:
    agent = harness.agent()
    start(agent)

    with pytest.raises(ValidationError, match=r"decisions\.1"):
        agent.invoke(Command(resume={"decisions": [{"type": "approve"}, {"type": "yes"}]}), STUDIO)
    with pytest.raises(ValidationError, match="at least 2 items"):
        agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), STUDIO)
    for version in ("1", True, 0):  # the version a decision was made on is a number from 1
        with pytest.raises(ValidationError, match="version"):
            agent.invoke(Command(resume={"decisions": [{"type": "approve", "version": version},
                                                       {"type": "approve"}]}), STUDIO)  # fmt: skip
    assert len(harness.pending()) == 2
    assert lines(harness.side_effects) == ["read_file report.txt"]

    # Refused payloads were not saved: the interrupt can still be answered.
    good = {"decisions": [{"type": "reject", "message": "no"}, {"type": "reject"}]}
    resumed = agent.invoke(Command(resume=good), STUDIO)
    assert resumed["messages"][-1].content == "done"
    assert lines(harness.side_effects) == ["read_file report.txt"]


async def test_the_resumer_resumes_the_thread_when_a_decision_is_taken_elsewhere(
    harness: Harness,
) -> None:
    agent = harness.agent()
    await asyncio.to_thread(start, agent)
    # Another process's gate (the server's): a store of its own on the same database.
    inbox = await asyncio.to_thread(open_runs, harness.database)
    try:
        working = resumer(agent, harness.runs)
        stop = working.start(poll_interval=0.05)
        try:
            pending = await asyncio.to_thread(harness.pending)
            decisions = {a.id: Approve() for a in pending.values()}
            await asyncio.to_thread(inbox.run, inbox.gate.decide_batch(
                decisions, actor="bob", roles=["finance"]))  # fmt: skip
            await until(functools.partial(answered, agent))
        finally:
            await asyncio.to_thread(stop)
    finally:
        await asyncio.to_thread(inbox.close)
    assert sorted(lines(harness.side_effects)) == sorted(EVERY)


async def test_a_decision_taken_through_the_inbox_api_resumes_the_thread(
    harness: Harness,
) -> None:
    agent = harness.agent()
    await asyncio.to_thread(start, agent)
    stop = resumer(agent, harness.runs).start(poll_interval=0.05)
    try:
        await decided_in_the_inbox(harness.database, policy(), functools.partial(answered, agent))
    finally:
        await asyncio.to_thread(stop)
    assert sorted(lines(harness.side_effects)) == sorted(EDITED)


async def answered(agent: Any) -> bool:
    """Whether the model's final answer ends the thread."""
    state = await asyncio.to_thread(agent.get_state, CONFIG)
    return "done" in str(state.values["messages"][-1].content)


# -- other processes -----------------------------------------------------------------------


def worker(
    harness: Harness, *action: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integrations.lc_worker", harness.database,
         harness.checkpoints, str(harness.side_effects), str(harness.model_calls), "t-1", *action],
        cwd=ROOT, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def finished(process: subprocess.Popen[str]) -> None:
    _out, err = process.communicate(timeout=HANG)
    assert process.returncode == 0, err


def test_two_processes_resuming_the_same_checkpoint_at_once_run_each_tool_once(
    harness: Harness,
) -> None:
    result = start(harness.agent())
    harness.approve_all()
    pause = result["__interrupt__"][0].value["signoff"]["pause"]

    both = [worker(harness, "resume", pause), worker(harness, "resume", pause)]
    ended = [(*p.communicate(timeout=HANG), p.returncode) for p in both]

    assert sorted(lines(harness.side_effects)) == sorted(EVERY)
    # Both may have read the paused checkpoint: then one went on and the other was refused.
    assert any(code == 0 for _, _, code in ended)
    for _, err, code in ended:
        assert code == 0 or "ConflictError" in err, err


def test_a_worker_killed_inside_the_tool_leaves_the_call_unknown_and_it_is_not_run_again(
    harness: Harness,
) -> None:
    pause = killed_inside_the_charge(harness)

    finished(worker(harness, "resume", pause))

    charges = [line for line in lines(harness.side_effects) if line.startswith("charge")]
    assert charges == ["charge 50"]
    results = tool_results({"messages": harness.agent().get_state(CONFIG).values["messages"]})
    assert "not run again" in results['charge {"amount": 50}']
    # The email ran beside it in the killed worker: recorded, or cut off and unknown too — once
    # at most either way.
    email = results['send_email {"body": "hi", "to": "bob@example.com"}']
    assert email == "sent to bob@example.com" or "not run again" in email
    assert lines(harness.side_effects).count("send_email bob@example.com hi") <= 1


def test_an_idempotent_tool_whose_worker_was_killed_inside_it_runs_again_once(
    harness: Harness,
) -> None:
    pause = killed_inside_the_charge(harness, {IDEMPOTENT: "1"})

    finished(worker(harness, "resume", pause, env={IDEMPOTENT: "1"}))

    charges = [line for line in lines(harness.side_effects) if line.startswith("charge")]
    assert charges == ["charge 50", "charge 50"]  # the killed one, and its re-run
    assert harness.agent().get_state(CONFIG).values["messages"][-1].content == "done"


def killed_inside_the_charge(harness: Harness, env: dict[str, str] | None = None) -> str:
    """Approve the turn's calls and resume it in a worker that is SIGKILLed inside `charge`;
    returns the pause."""
    result = start(harness.agent())
    harness.approve_all()
    pause: str = result["__interrupt__"][0].value["signoff"]["pause"]
    victim = worker(harness, "resume", pause, env={HANG_IN_TOOL: "1", **(env or {})})
    try:
        assert victim.stdout is not None
        said = victim.stdout.readline()  # it says so once inside; EOF if it died before
        assert said == "inside the tool\n", victim.communicate()[1]
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.communicate()
    return pause


def test_a_thread_started_in_one_process_is_resumed_by_another(harness: Harness) -> None:
    finished(worker(harness, "start"))
    pending = harness.pending()
    assert len(pending) == 2
    harness.approve_all()
    agent = harness.agent()
    [interrupt] = agent.get_state(CONFIG).interrupts

    finished(worker(harness, "resume", interrupt.value["signoff"]["pause"]))

    assert agent.get_state(CONFIG).values["messages"][-1].content == "done"
    assert harness.model_turns() == ["0", "1"]


def test_an_agent_path_names_its_middleware_within_what_langgraph_allows(tmp_path: Path) -> None:
    # LangGraph refuses ":" and "|" in a node's name, and the middleware's name is in its nodes'.
    runs = open_runs(f"sqlite:///{tmp_path / 'signoff.db'}")
    try:
        paths = ["coordinator/researcher", "team:ops|db"]
        agents = [create_agent(GenericFakeChatModel(messages=iter([AIMessage("hi")])), [],
                               middleware=[SignoffMiddleware(runs, agent=path)])
                  for path in paths]  # fmt: skip
        assert [m.name for m in (SignoffMiddleware(runs, agent=p) for p in paths)] == [
            "signoff[coordinator/researcher]", "signoff[team_ops_db]"]  # fmt: skip
        config = {"configurable": {"thread_id": "t-named"}}
        said = agents[0].invoke({"messages": [{"role": "user", "content": "go"}]}, config)
        assert said["messages"][-1].content == "hi"
    finally:
        runs.close()
