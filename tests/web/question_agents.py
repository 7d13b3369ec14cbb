"""An agent that asks a person, for `signoff serve --agents tests.web.question_agents:agents` in
the browser tests: ``asker`` asks what its user's message says (the ask tool's arguments, as
JSON), then says what it was told."""

from __future__ import annotations

import json
from collections.abc import Sequence

from signoff.agent import Agent, Message, ModelTurn, ask_person
from signoff.testing import ScriptedModel, call


def _step(messages: Sequence[Message]) -> ModelTurn:
    last = messages[-1]
    if last.role == "tool":
        return ModelTurn(text=f"told: {last.content}")
    return ModelTurn(tool_calls=(call("ask_person", **json.loads(str(last.content))),))


def agents() -> list[Agent]:
    return [Agent(name="asker", model=ScriptedModel([_step] * 100), tools=[ask_person()])]
