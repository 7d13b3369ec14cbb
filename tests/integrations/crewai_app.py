"""One CrewAI crew behind signoff, for the tests: the real `Agent`, `Task` and `Crew`, a `BaseLLM`
subclass playing a script through native function calling (offline), and the tools.

CrewAI sends anonymous telemetry and may offer to trace runs to its cloud: the tests switch both
off before it is imported (``CREWAI_DISABLE_TELEMETRY``, ``CREWAI_TRACING_ENABLED``), not with
``OTEL_SDK_DISABLED``, which would switch off signoff's own OpenTelemetry spans in the same
process; ``CREWAI_TESTING`` keeps it from asking about tracing. CrewAI's own files (its last
kickoff's outputs) go to a folder of the tests', never the home folder. Importing CrewAI makes
Python warn of its own module `crewai.rag`: the tests let that one warning pass."""

from __future__ import annotations

import importlib.util
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import pytest

if importlib.util.find_spec("crewai") is None:  # pragma: no cover
    pytest.skip("CrewAI is not installed: pip install 'signoff[crewai]'", allow_module_level=True)

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("CREWAI_TESTING", "true")
os.environ.setdefault("CREWAI_STORAGE_DIR", tempfile.mkdtemp(prefix="crewai-tests-"))

from pydantic import PrivateAttr

with warnings.catch_warnings():
    # CrewAI's `crewai.rag` module refuses its own submodules as attributes, and Python warns
    # (an ImportWarning) as it imports them.
    warnings.simplefilter("ignore", ImportWarning)
    from crewai import Agent, Crew, Task
    from crewai.llms.base_llm import BaseLLM
    from crewai.tools import BaseTool, tool

from signoff import Policy
from signoff.gate.external import ExternalRuns
from signoff.integrations.crewai import ORIGIN, connect
from tests.integrations.harness import POLICY as RULES

__all__ = ["POLICY", "Reacting", "Scripted", "crew_of", "crewai_tools", "open_runs"]

POLICY = Policy.from_dict(RULES)

Turn = Sequence[tuple[str, str, dict[str, Any]]] | str
"""A model turn: its calls ``(id, tool, arguments)``, or its final text."""


class Scripted(BaseLLM):
    """A model that supports function calling, playing `script` one turn a call: its tool calls,
    or its final text — `final(text, results)` of the tool results it was given, ``(call id,
    result)`` in the conversation's order. After the script it answers ``done``."""

    script: list[Any]
    _played: list[int] = PrivateAttr(default_factory=list)
    _final: Callable[[str, list[tuple[str, str]]], str] = PrivateAttr()

    def supports_function_calling(self) -> bool:
        return True

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None,
             available_functions: Any = None, from_task: Any = None, from_agent: Any = None,
             response_model: Any = None) -> Any:  # fmt: skip
        turn = len(self._played)
        self._played.append(turn)
        step = self.script[turn] if turn < len(self.script) else "done"
        if isinstance(step, str):
            said = [m for m in messages if isinstance(m, dict) and m.get("role") == "tool"]
            return self._final(step, [(m["tool_call_id"], m["content"]) for m in said])
        return [{"id": i, "type": "function",
                 "function": {"name": name, "arguments": json.dumps(args)}}
                for i, name, args in step]  # fmt: skip


class Reacting(Scripted):
    """`Scripted` without function calling: CrewAI's ReAct loop, one call a turn, as text; the
    results it was given are the observations CrewAI wrote after each (``react`` for their id)."""

    def supports_function_calling(self) -> bool:
        return False

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None,
             available_functions: Any = None, from_task: Any = None, from_agent: Any = None,
             response_model: Any = None) -> Any:  # fmt: skip
        turn = len(self._played)
        self._played.append(turn)
        step = self.script[turn] if turn < len(self.script) else "done"
        if isinstance(step, str):
            said = "\n".join(m.get("content") or "" for m in messages
                             if isinstance(m, dict) and m.get("role") == "assistant")  # fmt: skip
            seen = [o.split("\n")[0].strip() for o in said.split("Observation:")[1:]]
            return f"Thought: done\nFinal Answer: {self._final(step, [('react', o) for o in seen])}"
        [(_, name, args)] = step
        return f"Thought: go\nAction: {name}\nAction Input: {json.dumps(args)}"


def crew_of(
    script: list[Turn],
    tools: list[BaseTool],
    played: list[int],
    final: Callable[[str, list[tuple[str, str]]], str],
    model_class: type[Scripted] = Scripted,
) -> Crew:
    """A crew of one agent (role ``assistant``) and one task, its model (`model_class`) playing
    `script`; each model call is noted in `played`."""
    model = model_class(model="scripted", script=script)
    model._played, model._final = played, final
    agent = Agent(role="assistant", goal="Do what is asked.", backstory="A careful assistant.",
                  llm=model, tools=tools, allow_delegation=False,
                  max_iter=len(script) + 2)  # fmt: skip
    task = Task(description="go", expected_output="what was done", agent=agent)
    return Crew(agents=[agent], tasks=[task])


def crewai_tools(functions: list[Callable[..., Any]]) -> list[BaseTool]:
    """Plain functions as CrewAI tools (their names, signatures and docstrings)."""
    return [tool(f) for f in functions]


def open_runs(database: str) -> ExternalRuns:
    return connect(POLICY, origin=ORIGIN, database=database)
