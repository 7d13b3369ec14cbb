"""An Agents SDK thread as signoff keeps it, entry by entry: ``{"item": ...}`` (one input item of
the conversation), ``{"state": ..., "run": ..., "responses": n}`` (a paused run's state, and which
model response its calls came from), ``{"conversation": [...]}`` (the whole conversation anew,
after a run that rewrote it: a handoff's input filter), or a resume mark — read back, added to,
and shown to the people who decide as a transcript."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_core import to_jsonable_python

from signoff.gate import transcript
from signoff.integrations._threads import unmarked

__all__ = ["added", "items", "read", "transcript_of"]


def read(entries: Sequence[str]) -> tuple[list[Any], dict[str, Any] | None]:
    """The thread's conversation, and the entry of its run that waits on people (if it does)."""
    conversation: list[Any] = []
    paused: dict[str, Any] | None = None
    for entry in unmarked(entries):
        parsed = json.loads(entry)
        paused = parsed if "state" in parsed else None
        if "item" in parsed:
            conversation.append(parsed["item"])
        elif "conversation" in parsed:
            conversation = list(parsed["conversation"])
    return conversation, paused


def items(input: str | list[Any]) -> list[Any]:
    if isinstance(input, str):
        return [{"role": "user", "content": input}]
    return list(input)


def added(conversation: Sequence[Any], everything: list[Any]) -> list[str]:
    """The entries that bring the thread's `conversation` to `everything` a run ended with:
    the new items, or — when the run rewrote what came before (a handoff's input filter) — the
    whole conversation anew."""
    jsonable = [to_jsonable_python(item) for item in everything]
    if jsonable[: len(conversation)] == list(conversation):
        return [json.dumps({"item": item}) for item in jsonable[len(conversation) :]]
    return [json.dumps({"conversation": jsonable})]


def transcript_of(items: Sequence[Any], agent: str | None) -> list[dict[str, Any]]:
    """The conversation's input items (the Responses API's) as `transcript` messages: the
    model's are `agent`'s."""
    found: list[dict[str, Any]] = []
    for item in transcript.tail(items):
        if not isinstance(item, Mapping):
            continue
        kind, role = item.get("type", "message"), item.get("role")
        if kind == "message" and role in ("user", "system", "developer"):
            found.append(transcript.message(
                "user" if role == "user" else "system", item.get("content")))  # fmt: skip
        elif kind == "message" and role == "assistant":
            found.append(transcript.message("assistant", item.get("content"), agent=agent))
        elif kind == "function_call":
            call = transcript.call(item.get("call_id"), item.get("name", ""), item.get("arguments"))
            found.append(transcript.message("assistant", tool_calls=[call], agent=agent))
        elif kind == "function_call_output":
            found.append(transcript.message("tool", item.get("output"),
                                            tool_call_id=item.get("call_id")))  # fmt: skip
    return found
