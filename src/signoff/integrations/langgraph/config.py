"""What a LangGraph run says of itself: its thread and who invokes it (its config), the model
response a call came from (its state), and a tool's schema as the model sees it."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig

from signoff.errors import InvalidDecisionError

__all__ = ["invoker", "thread_of", "tool_schema", "turn_of"]


def turn_of(state: Any, call_id: str) -> str | None:
    """The id of the AI message (the model response) that made the call `call_id`: the newest
    one in the state that did — a provider may number every response's calls ``call_0``."""
    messages = state.get("messages") if isinstance(state, dict) else state
    if not isinstance(messages, list):
        messages = getattr(state, "messages", None) or []
    for message in reversed(messages):
        if isinstance(message, AIMessage) and any(c["id"] == call_id for c in message.tool_calls):
            return message.id
    return None


def invoker(config: RunnableConfig | None) -> str | None:
    """Who invokes the graph, as its config says: the user LangGraph Platform authenticated,
    else ``configurable.user_id``."""
    configurable = (config or {}).get("configurable") or {}
    for key in ("langgraph_auth_user_id", "user_id"):
        found = configurable.get(key)
        if isinstance(found, str) and found:
            return found
    return None


def thread_of(config: RunnableConfig) -> str:
    thread = (config.get("configurable") or {}).get("thread_id")
    if thread is None:
        raise InvalidDecisionError(
            "signoff holds calls per thread: run the graph with a checkpointer and "
            "config={'configurable': {'thread_id': ...}}"
        )
    return str(thread)


def tool_schema(tool: Any) -> dict[str, Any] | None:
    """The JSON schema of a LangChain tool's arguments, as the model sees them."""
    if tool is None:
        return None
    try:
        schema = tool.tool_call_schema
        if isinstance(schema, dict):
            return schema
        return dict(schema.model_json_schema())
    except Exception:  # a tool without a usable schema: edits are checked by the policy only
        return None
