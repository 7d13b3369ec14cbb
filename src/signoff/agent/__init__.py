"""signoff's own agent runtime: models, tools, and the loop that pauses for people."""

from signoff.agent.agent import Agent
from signoff.agent.asking import ask_person
from signoff.agent.events import RunEvent, TextDelta
from signoff.agent.model import Message, Model, ModelTurn, StreamingModel, ToolSpec, TurnDelta
from signoff.agent.runner import Runner
from signoff.agent.tools import Tool, ToolResult, tool

__all__ = [
    "Agent",
    "Message",
    "Model",
    "ModelTurn",
    "RunEvent",
    "Runner",
    "StreamingModel",
    "TextDelta",
    "Tool",
    "ToolResult",
    "ToolSpec",
    "TurnDelta",
    "ask_person",
    "tool",
]
