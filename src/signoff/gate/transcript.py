"""What a person deciding another framework's held calls sees of its conversation: the thread's
last messages at the pause, in the shape of signoff's own run messages (``role``, ``content``,
``tool_calls``, ``tool_call_id``), bounded — so one page renders every framework's alike and no
thread, however long, makes a pause big.

An integration turns its framework's messages into `message`s and hands them to
`ExternalRuns.pause`, which keeps `bounded` of them with the pause. A call's arguments are kept
under ``args``: the server masks them as its ``redact:`` configuration says, as everywhere.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal, TypeVar

from signoff.limits import clip

__all__ = ["MESSAGES", "TEXT_CHARS", "TOTAL_BYTES", "Role", "bounded", "call", "message", "tail"]

MESSAGES: Final = 40
"""The newest messages kept with a pause."""
TEXT_CHARS: Final = 2000
"""Characters of each text (a message's, a result's, a string argument's) kept."""
TOTAL_BYTES: Final = 64 * 1024
"""The most a pause's messages take as JSON: the oldest are left out past it."""
_DEPTH: Final = 8
_TAIL: Final = 4 * MESSAGES
"""The newest of a framework's items read to make `MESSAGES` messages (a message may be
several items: a text and each of its calls, a result each): a long thread costs no more."""

Role = Literal["user", "assistant", "tool", "system"]
T = TypeVar("T")


def call(id: str | None, name: str, args: Any) -> dict[str, Any]:
    """One tool call of an assistant message (`args` as JSON text is read)."""
    if isinstance(args, str):
        with contextlib.suppress(ValueError):  # unparsable: shown as the model wrote them
            args = json.loads(args)
    return {"id": id or "", "name": name, "args": args}


def message(
    role: Role,
    content: Any = "",
    *,
    tool_calls: Iterable[Mapping[str, Any]] = (),
    tool_call_id: str | None = None,
    name: str | None = None,
    agent: str | None = None,
    is_error: bool = False,
) -> dict[str, Any]:
    """One message: a person's or the model's text, the model's tool calls, or a call's result
    (`role` ``tool``, with the call's id and tool `name`). `agent` is the path of the agent that
    said it, where the framework tells agents apart."""
    found: dict[str, Any] = {"role": role, "content": _text(content)}
    if tool_calls:
        found["tool_calls"] = [dict(c) for c in tool_calls]
    if tool_call_id is not None:
        found["tool_call_id"] = tool_call_id
    if name:
        found["name"] = name
    if agent:
        found["agent"] = agent
    if is_error:
        found["is_error"] = True
    return found


def tail(items: Sequence[T]) -> Sequence[T]:
    """The newest of a framework's `items` a pause's messages are made from."""
    return items[-_TAIL:]


def bounded(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The newest `MESSAGES` messages with each text cut to `TEXT_CHARS`, and only as many of
    the newest as fit in `TOTAL_BYTES`. Messages without text or calls are left out."""
    kept: list[dict[str, Any]] = []
    size = 0
    for item in reversed(messages):
        if len(kept) == MESSAGES:
            break
        if not item.get("content") and not item.get("tool_calls"):
            continue
        cut, _ = clip(dict(item), max_depth=_DEPTH, chars=TEXT_CHARS)
        size += len(json.dumps(cut, default=str))
        if size > TOTAL_BYTES:
            break
        kept.append(json.loads(json.dumps(cut, default=str)))
    return kept[::-1]


def _text(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a list of parts (a
    provider's ``[{"type": "text", "text": ...}]``); anything else as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [_part(p) for p in content]
        return "\n".join(t for t in texts if t)
    return json.dumps(content, default=str)


def _part(part: Any) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping):
        text = part.get("text")
        return text if isinstance(text, str) else ""
    return ""
