"""signoff's own agent runtime: models, tools, and (next) the loop that pauses for people."""

from signoff.agent.model import Message, Model, ModelTurn, StreamingModel, ToolSpec, TurnDelta
from signoff.agent.tools import Tool, ToolResult, tool

__all__ = [
    "Message",
    "Model",
    "ModelTurn",
    "StreamingModel",
    "Tool",
    "ToolResult",
    "ToolSpec",
    "TurnDelta",
    "tool",
]
