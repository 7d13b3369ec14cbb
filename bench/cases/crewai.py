"""CrewAI: a one-task crew with a scripted `BaseLLM`, plain and with signoff's `SignoffHooks`.
CrewAI's hooks are the process's: the signoff side registers its hooks for its run and takes
them out after (both counted in its time). CrewAI keeps no run to pause (a held call waits in
memory). Its telemetry is off (it would send usage data and traces to CrewAI)."""

from __future__ import annotations

import os
import uuid
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai import Agent, Crew, CrewOutput, Task
from crewai.llms.base_llm import BaseLLM
from crewai.tools import tool

from cases import Case
from frameworks import QUESTION, REPLY, Kept, Sides, check, lookup
from signoff.gate.external import ExternalRuns
from signoff.integrations.crewai import SignoffHooks


class Scripted(BaseLLM):
    """A call of ``lookup``, then `REPLY` once its result is in."""

    def supports_function_calling(self) -> bool:
        return True

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None,
             available_functions: Any = None, from_task: Any = None, from_agent: Any = None,
             response_model: Any = None) -> Any:  # fmt: skip
        if any(m.get("role") == "tool" for m in messages):
            return REPLY
        return [{"id": f"call_{uuid.uuid4().hex}", "type": "function",
                 "function": {"name": "lookup", "arguments": '{"key": "q3"}'}}]  # fmt: skip


def crewai_sides(kept: Kept, allow: ExternalRuns, ask: ExternalRuns) -> Sides:
    looked = tool("lookup")(lookup)
    hooks = SignoffHooks(allow)

    def crew() -> Crew:
        agent = Agent(
            role="assistant",
            goal="Answer.",
            backstory="An assistant.",
            llm=Scripted(model="scripted"),
            tools=[looked],
        )
        task = Task(description=QUESTION, expected_output="The answer.", agent=agent)
        return Crew(agents=[agent], tasks=[task])

    async def kickoff() -> str:
        output = await crew().kickoff_async()
        assert isinstance(output, CrewOutput)  # not streamed
        return output.raw

    async def plain_allowed(thread: str) -> None:
        check(await kickoff(), "lookup")

    async def run_allowed(thread: str) -> None:
        hooks.register()
        try:
            check(await kickoff(), "lookup")
        finally:
            hooks.unregister()

    return Sides("CrewAI", plain_allowed, run_allowed, None, None, None, None, None, ask)


CASE = Case(
    name="CrewAI",
    build=crewai_sides,
    lacks="its held call waits in memory: no run is kept to resume",
)
