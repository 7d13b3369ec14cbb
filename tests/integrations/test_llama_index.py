"""LlamaIndex agent workflows behind `SignoffWorkflow`: the real `FunctionAgent` and
`AgentWorkflow`, LlamaIndex's own `MockFunctionCallingLLM` playing a script (offline), signoff's
store on SQLite and PostgreSQL, tools that count every real execution in a side-effect file, and
worker processes that resume, race and die — the tests every framework whose threads signoff
keeps shares, on this one's app (tests/integrations/li_app.py), and what the shared scenarios
(tests/integrations/test_scenarios.py) cannot say of this framework: its own events carrying a
decision, forged ones, a context woken outside signoff, an agent of a multi-agent workflow."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core", reason="LlamaIndex is not installed: pip install "
                    "'signoff[llama-index]'")  # fmt: skip

from llama_index.core.agent.workflow import AgentWorkflow, ReActAgent
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, LLMMetadata
from llama_index.core.llms.custom import CustomLLM
from llama_index.core.objects import ObjectRetriever
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context, HumanResponseEvent
from workflows.events import StepState, StepStateChanged, WorkflowIdleEvent

from signoff import Approve, Scope
from signoff.errors import InvalidDecisionError
from signoff.gate.external import ExternalRuns
from signoff.integrations.llama_index import ORIGIN, SignoffWorkflow, connect
from signoff.integrations.llama_index.workflow import _Serializer
from tests.conftest import fresh_postgres_database
from tests.integrations import li_app
from tests.integrations.adapters import _base
from tests.integrations.adapters.llama_index import agent
from tests.integrations.scenarios import REQUESTER, Call, executions, told
from tests.integrations.scenarios import Outcome as Told
from tests.integrations.scenarios import tools as scenario_tools
from tests.integrations.shared import *  # noqa: F403 - the shared tests, on this rig
from tests.integrations.shared_kept import (  # noqa: F401 - a LlamaIndex run is not streamed
    test_a_resume_before_any_decision_leaves_the_pause_to_the_later_decision,
    test_a_resume_renews_its_mark_while_a_tool_runs_and_ends_it,
    test_an_undecided_call_waits_on_and_the_decided_one_runs,
    test_the_resumer_leaves_a_pause_waiting_while_another_process_resumes_the_thread,
)

RIG = li_app
TRANSFER = [[Call("call_0", "transfer", {"amount": 500, "to": "acme"})], "finished"]


@pytest.fixture(params=["sqlite", "postgres"])
async def runs(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ExternalRuns]:
    if request.param == "sqlite":
        async with _base.connected(connect, ORIGIN, f"sqlite:///{tmp_path / 's.db'}") as opened:
            yield opened
    else:
        async with (
            fresh_postgres_database() as database,
            _base.connected(connect, ORIGIN, database) as opened,
        ):
            yield opened


def wrapped(runs: ExternalRuns, tmp_path: Path, script: Any = TRANSFER) -> SignoffWorkflow:
    return SignoffWorkflow(agent(script, [], tmp_path / "side-effects.txt"), runs,
                           requested_by=REQUESTER)  # fmt: skip


def response(**fields: Any) -> HumanResponseEvent:
    """The workflow's own answer to a request (its fields are the app's)."""
    return HumanResponseEvent.model_validate(fields)


def answer(ran: Any) -> list[tuple[str, str]]:
    return told(Told(paused=False, text=str(ran.output)))


async def pending(runs: ExternalRuns) -> list[Any]:
    return list(await runs.bridge.arun(runs.store.list_approvals(status="pending")))


async def test_a_decision_in_the_workflow_s_own_event_is_its_user_s_and_runs_the_call_once(
    runs: ExternalRuns, tmp_path: Path
) -> None:
    workflow = wrapped(runs, tmp_path)
    ran = await workflow.run("go", thread="t")
    [asked] = ran.asked
    assert (asked.tool, asked.args, asked.version) == ("transfer", {"amount": 500, "to": "acme"}, 1)

    event = response(approval=asked.approval, user="bob",
                               decision={"type": "approve", "version": asked.version})  # fmt: skip
    done = await workflow.resume("t", [event])
    again = await workflow.resume("t", [event])  # nothing waits: nothing runs, nothing is taken

    assert answer(done) == [("call_0", "transfer ok")]
    assert again is None
    assert executions(tmp_path / "side-effects.txt") == ["transfer 500 acme"]
    [approval] = await runs.bridge.arun(runs.store.list_approvals())
    assert approval.decided_by == "bob"


@pytest.mark.parametrize(
    "forged",
    [
        {"approval": "not-a-waiting-call", "user": "bob", "decision": {"type": "approve"}},
        {"user": "bob", "decision": {"type": "approve"}},
        {"approval": "ASKED", "user": "bob", "decision": {"type": "run it anyway"}},
        {"approval": "ASKED", "user": "bob", "decision": {"type": "approve", "version": 0}},
        {
            "approval": "ASKED",
            "user": "bob",
            "decision": {"type": "edit", "edited_action": {"name": "delete_all", "args": {}}},
        },
    ],
    ids=["another-approval", "no-approval", "unknown-kind", "bad-version", "another-tool"],
)
async def test_a_forged_or_malformed_response_is_refused_and_nothing_is_taken(
    runs: ExternalRuns, tmp_path: Path, forged: dict[str, Any]
) -> None:
    workflow = wrapped(runs, tmp_path)
    [asked] = (await workflow.run("go", thread="t")).asked
    fields = {k: asked.approval if v == "ASKED" else v for k, v in forged.items()}

    with pytest.raises(InvalidDecisionError):
        await workflow.resume("t", [response(**fields)])
    twice = response(approval=asked.approval, decision={"type": "approve"})
    with pytest.raises(InvalidDecisionError, match="one decision per held call"):
        await workflow.resume("t", [twice, twice])
    with pytest.raises(InvalidDecisionError):
        await workflow.resume("t", [{"approval": asked.approval, "decision": {"type": "approve"}}])

    assert [a.id for a in await pending(runs)] == [asked.approval]
    assert executions(tmp_path / "side-effects.txt") == []


async def test_the_requester_s_own_approval_in_an_event_is_not_taken_and_the_run_waits_on(
    runs: ExternalRuns, tmp_path: Path
) -> None:
    workflow = wrapped(runs, tmp_path)
    [asked] = (await workflow.run("go", thread="t")).asked

    mine = response(approval=asked.approval, user=REQUESTER,
                              decision={"type": "approve"})  # fmt: skip
    still = await workflow.resume("t", [mine])

    assert still is not None and still.waiting == [asked.approval]
    assert [a.version for a in still.asked] == [asked.version]  # as it stands now
    assert executions(tmp_path / "side-effects.txt") == []


async def test_a_context_woken_outside_signoff_while_undecided_runs_nothing_and_waits_again(
    runs: ExternalRuns, tmp_path: Path
) -> None:
    # An app that restores the kept context itself and sends the workflow its own event: the
    # held call reads the store, finds it undecided, and waits again under the same waiter.
    workflow = wrapped(runs, tmp_path)
    [asked] = (await workflow.run("go", thread="t")).asked
    entries = await runs.bridge.arun(runs.store.history(ORIGIN, "t"))
    kept = json.loads(entries[-1])["ctx"]

    ctx = Context.from_dict(workflow.workflow, kept, serializer=_Serializer())
    handler = workflow.workflow.run(ctx=ctx)
    sent = went_on = waits_again = False
    async for event in handler.stream_events(expose_internal=True):
        if isinstance(event, StepStateChanged) and event.step_state == StepState.RUNNING:
            went_on = sent
        elif isinstance(event, WorkflowIdleEvent) and not sent:  # the held call waits again:
            handler.ctx.send_event(response(approval=asked.approval,  # wake it
                                                      decision={"type": "approve"}))  # fmt: skip
            sent = True
        elif isinstance(event, WorkflowIdleEvent) and went_on:  # it ran, and waits again
            waits_again = True
            break
    await handler.cancel_run()

    assert waits_again  # the run did not go on to the model

    assert executions(tmp_path / "side-effects.txt") == []
    assert [a.id for a in await pending(runs)] == [asked.approval]  # not taken: nobody named it
    await runs.bridge.arun(runs.gate.decide(asked.approval, Approve(), actor="bob"))
    done = await workflow.resume("t")
    assert answer(done) == [("call_0", "transfer ok")]


async def test_two_resumes_at_once_call_the_model_once_and_run_the_call_once(
    runs: ExternalRuns, tmp_path: Path
) -> None:
    turns: list[int] = []
    side_effects = tmp_path / "side-effects.txt"
    first = SignoffWorkflow(agent(TRANSFER, turns, side_effects), runs, requested_by=REQUESTER)
    second = SignoffWorkflow(agent(TRANSFER, turns, side_effects), runs, requested_by=REQUESTER)
    await first.run("go", thread="t")
    await runs.bridge.arun(runs.gate.decide((await pending(runs))[0].id, Approve(), actor="bob"))

    results = await asyncio.gather(first.resume("t"), second.resume("t"))

    assert sorted(r is None for r in results) == [False, True]
    assert executions(side_effects) == ["transfer 500 acme"]
    assert turns == [0, 1]  # the first turn, then one model call after the resume


async def test_a_thread_grant_lets_the_same_run_s_next_such_call_through(
    runs: ExternalRuns, tmp_path: Path
) -> None:
    script = [[Call("c1", "transfer", {"amount": 5, "to": "acme"})],
              [Call("c2", "transfer", {"amount": 5, "to": "acme"})], "finished"]  # fmt: skip
    workflow = wrapped(runs, tmp_path, script)
    [asked] = (await workflow.run("go", thread="t")).asked
    always = Approve(always=Scope(kind="thread"))
    await runs.bridge.arun(runs.gate.decide(asked.approval, always, actor="bob"))

    done = await workflow.resume("t")

    assert done is not None and not done.waiting
    assert answer(done) == [("c1", "transfer ok"), ("c2", "transfer ok")]
    assert executions(tmp_path / "side-effects.txt") == ["transfer 5 acme"] * 2


async def test_the_agents_of_an_agent_workflow_are_judged_by_their_names(
    runs: ExternalRuns, tmp_path: Path
) -> None:
    teller = agent(TRANSFER, [], tmp_path / "side-effects.txt")
    teller.name, teller.description = "teller", "Moves money"
    workflow = SignoffWorkflow(AgentWorkflow(agents=[teller], root_agent="teller"), runs,
                               requested_by=REQUESTER)  # fmt: skip

    ran = await workflow.run("go", thread="t")

    [approval] = await pending(runs)
    assert ran.waiting == [approval.id] and approval.call.agent == "teller"
    await runs.bridge.arun(runs.gate.decide(approval.id, Approve(), actor="bob"))
    assert answer(await workflow.resume("t")) == [("call_0", "transfer ok")]


class Reasoning(CustomLLM):
    """A ReAct model (LlamaIndex's `CustomLLM`), scripted: a transfer, then what it observed."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(is_chat_model=True)

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError

    def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        seen = [str(m.content) for m in messages[1:] if str(m.content).startswith("Observation")]
        said = (f"Thought: I can answer without using any more tools.\nAnswer: {seen}" if seen
                else 'Thought: I move the money.\nAction: transfer\nAction Input: {"amount": 5, '
                '"to": "acme"}')  # fmt: skip
        return ChatResponse(message=ChatMessage(role="assistant", content=said))

    async def achat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        return self.chat(messages)


# LlamaIndex's ReActAgent asks its own context whether it runs, from inside a step: its warning.
@pytest.mark.filterwarnings("ignore:is_running called from within a step:DeprecationWarning")
async def test_a_react_agent_s_call_waits_and_runs_once_approved(
    runs: ExternalRuns, tmp_path: Path
) -> None:
    transfer = FunctionTool.from_defaults(scenario_tools(tmp_path / "side-effects.txt")[0])
    react = ReActAgent(name="reasoner", tools=[transfer], llm=Reasoning(), streaming=False)
    workflow = SignoffWorkflow(react, runs, requested_by=REQUESTER)

    ran = await workflow.run("go", thread="t")
    [approval] = await pending(runs)
    assert ran.waiting == [approval.id] and approval.call.agent == "reasoner"
    await runs.bridge.arun(runs.gate.decide(approval.id, Approve(), actor="bob"))
    done = await workflow.resume("t")
    await workflow.resume("t")

    assert done is not None and "transfer ok" in str(done.output)
    assert executions(tmp_path / "side-effects.txt") == ["transfer 5 acme"]


async def test_the_wrapped_agent_run_on_its_own_runs_no_call(
    runs: ExternalRuns, tmp_path: Path
) -> None:
    workflow = wrapped(runs, tmp_path)

    output = await workflow.workflow.run(user_msg="go")

    [(call_id, result)] = told(Told(paused=False, text=str(output)))
    assert call_id == "call_0" and "SignoffWorkflow" in result
    assert executions(tmp_path / "side-effects.txt") == []


class Retriever(ObjectRetriever[Any]):
    """An agent's tool retriever (LlamaIndex's, in place of its tools) that retrieves `tools`."""

    def __init__(self, tools: list[Any]) -> None:
        self.tools = tools

    def retrieve(self, str_or_query_bundle: Any) -> list[Any]:
        return list(self.tools)

    async def aretrieve(self, str_or_query_bundle: Any) -> list[Any]:
        return list(self.tools)


async def test_an_agent_whose_tools_a_retriever_gives_is_refused_not_run_unjudged(
    runs: ExternalRuns, tmp_path: Path
) -> None:
    # The agent's get_tools adds what its tool_retriever gives to its tools: signoff wrapped only
    # the latter, and the transfer the policy asks about ran at once.
    side_effects = tmp_path / "side-effects.txt"
    retrieving = agent(TRANSFER, [], side_effects)
    retrieving.tool_retriever, retrieving.tools = Retriever(list(retrieving.tools)), []

    async def run() -> None:
        await SignoffWorkflow(retrieving, runs, requested_by=REQUESTER).run("go", thread="t")

    with pytest.raises(ValueError, match="tool_retriever"):
        await run()

    assert executions(side_effects) == []
