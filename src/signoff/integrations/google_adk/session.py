"""What an ADK session says to signoff: its signoff thread, the model response (the event) a
call came from, the calling agent's path, and its events as the transcript people see."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.adk.events import Event
from google.adk.tools.tool_context import ToolContext
from pydantic_core import to_jsonable_python

from signoff.gate import transcript
from signoff.integrations.google_adk.confirmation import CONFIRMATION

__all__ = ["path_of", "thread_of", "transcript_of", "turn_of"]


def turn_of(events: Sequence[Event], call_id: str) -> str | None:
    """The id of the session's event — the model response — that made the call `call_id`: the
    newest that did (a provider may number every response's calls ``call_0``)."""
    for event in reversed(events):
        if any(c.id == call_id and c.name != CONFIRMATION for c in event.get_function_calls()):
            return event.id
    return None


def thread_of(session: Any) -> str:
    """The signoff thread of an ADK session (ids are unique per app and user)."""
    return f"{session.app_name}/{session.user_id}/{session.id}"


def path_of(tool_context: ToolContext) -> str:
    """The calling agent's path from the root (``coordinator/researcher``)."""
    agent = getattr(getattr(tool_context, "_invocation_context", None), "agent", None)
    names: list[str] = []
    while agent is not None:
        names.append(agent.name)
        agent = agent.parent_agent
    return "/".join(reversed(names)) or tool_context.agent_name


def transcript_of(events: Sequence[Event]) -> list[dict[str, Any]]:
    """The session's events as `transcript` messages, each the agent's that wrote it (ADK's
    confirmation requests and answers left out: the card is that request)."""
    found: list[dict[str, Any]] = []
    for event in transcript.tail(events):
        parts = event.content.parts if event.content is not None else None
        if not parts:
            continue
        user = event.author == "user"
        agent = None if user else event.author
        texts = [p.text for p in parts if p.text and not p.thought]
        calls = [
            transcript.call(p.function_call.id, p.function_call.name or "", p.function_call.args)
            for p in parts
            if p.function_call and p.function_call.name != CONFIRMATION
        ]
        if texts or calls:
            role: transcript.Role = "user" if user and not calls else "assistant"
            found.append(transcript.message(role, "\n".join(texts), tool_calls=calls,
                                            agent=agent))  # fmt: skip
        for part in parts:
            answer = part.function_response
            if answer is None or answer.name == CONFIRMATION:
                continue
            found.append(transcript.message("tool", to_jsonable_python(answer.response),
                                            tool_call_id=answer.id, name=answer.name))  # fmt: skip
    return found
