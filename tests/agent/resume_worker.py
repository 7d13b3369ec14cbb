"""A second process that resumes a run: `python resume_worker.py URL RUN_ID COUNTER_FILE`."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from signoff import Policy, tool
from signoff.agent import Agent, ModelTurn, Runner
from signoff.gate import Gate
from signoff.store import open_store
from signoff.testing import ScriptedModel, call

POLICY = Policy.from_dict({"rules": [{"ask": "delete_pod"}]})


def agent(counter: Path, model: ScriptedModel) -> Agent:
    @tool
    def delete_pod(name: str) -> str:
        """Delete a pod; count the deletion in a side file."""
        with counter.open("a") as side:
            side.write(name + "\n")
        return f"deleted {name}"

    return Agent(name="ops", model=model, tools=[delete_pod])


def script() -> ScriptedModel:
    return ScriptedModel(
        [ModelTurn(tool_calls=(call("delete_pod", name="nginx-123"),)), ModelTurn(text="deleted")]
    )


async def resume(url: str, run_id: str, counter: Path) -> None:
    # This process has its own model: the resumed run asks it only for the turn after the pause.
    model = ScriptedModel([ModelTurn(text="nginx-123 is gone")])
    async with open_store(url, migrate=False) as store:
        runner = Runner(agent(counter, model), Gate(POLICY, store))
        events = [e.type async for e in runner.resume(run_id)]
    print(json.dumps({"events": events, "model_calls": len(model.requests)}))


if __name__ == "__main__":
    asyncio.run(resume(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
