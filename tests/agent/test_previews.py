"""Previews in signoff's own runtime cannot starve the tools: a synchronous preview runs on the
previews' own threads, so while a turn's previews hang, another agent's allowed synchronous
tool still runs; a preview past its bound is abandoned and the call is held without it; and a
runner's previews are masked by its redaction."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from signoff import Policy
from signoff.agent import Agent, ModelTurn, Runner, Tool, tool
from signoff.gate import Gate
from signoff.gate.preview import PREVIEWS_AT_ONCE
from signoff.redaction import MASK, Redaction
from signoff.store import SQLStore
from signoff.testing import ScriptedModel, call
from tests.agent.test_runner import collect, of
from tests.deadline import HANG

POLICY = Policy.from_dict({"rules": [{"ask": "deploy"}, {"allow": "lookup"}]})
CALLS = 40
"""Calls of the deploying turn: more than any default executor has threads (32 at most), so
previews sharing it with the tools would take every one of them."""


@tool
def lookup(name: str) -> str:
    """Where a service runs."""
    return f"{name} is at 10.0.0.7"


class Hanging:
    """A synchronous preview that blocks until `release` (or a hang), telling the loop of each
    call that entered it."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered: asyncio.Queue[str] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()

    def __call__(self, target: str) -> str:
        self._loop.call_soon_threadsafe(self.entered.put_nowait, target)
        self.release.wait(HANG)
        return f"would deploy {target}"


def deploy_tool(preview: Callable[..., str]) -> Tool:
    @tool(preview=preview)
    def deploy(target: str) -> str:
        """Deploy a service."""
        return f"deployed {target}"

    return deploy


def agents(gate: Gate, hanging: Hanging, *, preview_timeout: float) -> tuple[Runner, Runner]:
    """A deployer whose one turn calls `deploy` `CALLS` times (each held, each previewed by
    `hanging`), and a reader whose allowed `lookup` runs on the tools' threads."""
    many = ModelTurn(tool_calls=tuple(call("deploy", target=f"web-{i}") for i in range(CALLS)))
    deployer = Agent(
        name="deployer",
        model=ScriptedModel([many, ModelTurn(text="deployed")]),
        tools=[deploy_tool(hanging)],
    )
    reads = [ModelTurn(tool_calls=(call("lookup", name="db"),)), ModelTurn(text="found it")]
    reader = Agent(name="reader", model=ScriptedModel(reads), tools=[lookup])
    return Runner(deployer, gate, preview_timeout=preview_timeout), Runner(reader, gate)


def looked_up(reader: Runner) -> list[str]:
    """The tool results the reader's model was given."""
    model = reader.agent.model
    assert isinstance(model, ScriptedModel)
    return [str(m.content) for m in model.requests[-1].messages if m.role == "tool"]


@contextmanager
def released(hanging: Hanging) -> Iterator[Hanging]:
    try:
        yield hanging
    finally:
        hanging.release.set()


async def test_another_agents_tool_runs_to_completion_while_a_turns_previews_hang(
    store: SQLStore,
):
    gate = Gate(POLICY, store)
    with released(Hanging()) as hanging:
        deployer, reader = agents(gate, hanging, preview_timeout=HANG)
        deploying = asyncio.create_task(collect(deployer.start("t-deploy", "deploy all")))
        async with asyncio.timeout(HANG):
            await hanging.entered.get()  # the deployer's previews run, and hang
            read = await collect(reader.start("t-read", "where is db?"))
        assert not deploying.done()  # its previews still hang
        assert read[-1].type == "completed"
        assert looked_up(reader) == ["db is at 10.0.0.7"]

    async with asyncio.timeout(HANG):
        held = await deploying
    requested = of(held, "approval_requested")
    assert len(requested) == CALLS
    for asked in requested:
        approval = await store.get_approval(asked["approval_id"])
        assert approval.preview is not None
        assert approval.preview.body == f"would deploy {approval.call.args['target']}"


async def test_a_hung_preview_is_abandoned_and_its_call_is_held_saying_so(store: SQLStore):
    gate = Gate(POLICY, store)
    with released(Hanging()) as hanging:
        deployer, reader = agents(gate, hanging, preview_timeout=0.2)
        async with asyncio.timeout(HANG):
            held = await collect(deployer.start("t-deploy", "deploy all"))
        assert held[-1].type == "paused"  # while its previews' threads are still stuck
        errors = [
            (await store.get_approval(asked["approval_id"])).preview
            for asked in of(held, "approval_requested")
        ]
        slow = [p for p in errors if p and p.error == "preview took longer than 0.2 s"]
        waited = [p for p in errors if p and p.error and p.error.startswith("preview not run")]
        assert len(slow) == PREVIEWS_AT_ONCE and len(waited) == CALLS - PREVIEWS_AT_ONCE
        assert hanging.entered.qsize() <= PREVIEWS_AT_ONCE

        async with asyncio.timeout(HANG):
            read = await collect(reader.start("t-read", "where is db?"))
        assert read[-1].type == "completed"
        assert looked_up(reader) == ["db is at 10.0.0.7"]


async def test_a_runners_previews_are_masked_by_its_redaction(store: SQLStore):
    def plan_of(target: str, token: str) -> str:
        return f"curl -H 'Authorization: Bearer {token}' https://{target}/deploy"

    @tool(preview=plan_of)
    def deploy(target: str, token: str) -> str:
        """Deploy a service with a token."""
        return f"deployed {target}"

    turn = ModelTurn(tool_calls=(call("deploy", target="web", token="tok-8f2e91c4"),))
    agent = Agent(name="deployer", model=ScriptedModel([turn]), tools=[deploy])
    runner = Runner(agent, Gate(POLICY, store), redaction=Redaction(["token"]))
    [asked] = of(await collect(runner.start("t1", "deploy web")), "approval_requested")
    approval = await store.get_approval(asked["approval_id"])
    assert approval.preview is not None
    assert approval.preview.body == f"curl -H 'Authorization: Bearer {MASK}' https://web/deploy"
