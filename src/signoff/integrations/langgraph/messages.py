"""The tool messages signoff answers a call with instead of its result (blocked, decided, of an
unknown outcome), and a tool's result as the ledger keeps it and the tool node returns it again
— each with the same id however often it is given."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.load import dumpd, load
from langchain_core.messages import ToolMessage, message_to_dict, messages_from_dict
from langgraph.types import Command

from signoff.errors import ExecutionFailed, OutcomeUnknown
from signoff.gate.answers import answer_text, blocked_text, edited_text
from signoff.types import Approval

__all__ = ["answer", "blocked", "message_id", "record", "reply", "restored", "unknown"]


def message_id(key: str) -> str:
    """The id of the message answering the call under `key`: the same however often the
    answer is given, so LangGraph's message reducer replaces it instead of adding another."""
    return f"signoff-{key[:32]}"


def blocked(tool_call: Mapping[str, Any], reason: str, key: str) -> ToolMessage:
    """The result of a call signoff does not run (`blocked_text`)."""
    return reply(tool_call, blocked_text(reason), False, key)


def answer(tool_call: Mapping[str, Any], approval: Approval, key: str) -> ToolMessage:
    """The result a decided call that does not run gives the model (`answer_text`)."""
    return reply(tool_call, *answer_text(approval), key)


def reply(tool_call: Mapping[str, Any], content: str, ok: bool, key: str) -> ToolMessage:
    """The message that answers the call under `key` with `content`, as a result or an error."""
    return ToolMessage(id=message_id(key), content=content, name=tool_call["name"],
                       tool_call_id=tool_call["id"] or "",
                       status="success" if ok else "error")  # fmt: skip


def record(result: ToolMessage | Command[Any]) -> dict[str, Any]:
    """A tool's result as the ledger keeps it."""
    if isinstance(result, ToolMessage):
        return {"message": message_to_dict(result)}
    if isinstance(result, Command) and isinstance(result.update, dict) and result.goto == ():
        return {"command": dumpd(result.update)}
    raise ExecutionFailed(
        f"signoff can keep a tool's ToolMessage or Command(update=...) result, not {result!r}"
    )


def restored(value: Any, key: str, edited: dict[str, Any] | None) -> ToolMessage | Command[Any]:
    """The recorded result as the tool node returns it, with the call's own message id (and a
    note that a person edited the call)."""
    if "message" in value:
        [message] = messages_from_dict([value["message"]])
        assert isinstance(message, ToolMessage)
        return _marked(message, key, edited)
    update = load(value["command"])
    messages = [
        _marked(m, key, edited) if isinstance(m, ToolMessage) else m
        for m in update.get("messages", [])
    ]
    return Command(update={**update, "messages": messages})


def _marked(message: ToolMessage, key: str, edited: dict[str, Any] | None) -> ToolMessage:
    content = message.content
    if edited is not None and isinstance(content, str):
        content = edited_text(edited, content)
    return message.model_copy(update={"id": message_id(key), "content": content})


def unknown(tool_call: Mapping[str, Any], key: str, exc: OutcomeUnknown) -> ToolMessage:
    """The result of a call a worker died inside: whether it ran is not known."""
    return reply(tool_call, f"signoff: {exc}", False, key)
