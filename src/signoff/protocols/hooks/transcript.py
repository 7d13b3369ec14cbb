"""What a person deciding a coding agent's call sees of its session: the last turns of Claude
Code's transcript (the JSON lines file its hook names), as signoff's run messages — read only
where the hook runs as the agent's own user (the command hook), which sends them along with the
call; a server never reads a file a request names."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from signoff.gate.transcript import bounded, call, message

__all__ = ["FIELD", "conversation", "sent"]

FIELD = "signoff_conversation"
"""Where the command hook puts the conversation in the input it sends a server."""
_TAIL_BYTES = 512 * 1024
"""How much of the transcript's end is read."""


def conversation(path: str | None, *, folder: str | None = None) -> list[dict[str, Any]]:
    """The session's last messages from Claude Code's transcript at `path` (none when it cannot
    be read), after a line saying where the agent works (`folder`)."""
    found: list[dict[str, Any]] = []
    if folder:
        found.append(message("system", f"Claude Code, working in {folder}"))
    if path and path.endswith(".jsonl"):
        found += _messages(_tail(Path(path)))
    return bounded(found)


def sent(body: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The conversation a command hook sent along with the call, bounded; None if none."""
    given = body.get(FIELD)
    if not isinstance(given, list):
        return None
    return bounded([m for m in given if isinstance(m, Mapping) and "role" in m])


def _tail(path: Path) -> list[str]:
    try:
        with path.open("rb") as file:
            file.seek(0, 2)
            size = file.tell()
            file.seek(max(0, size - _TAIL_BYTES))
            lines = file.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return lines[1:] if size > _TAIL_BYTES else lines  # the first may be cut


def _messages(lines: list[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        said = entry.get("message") if isinstance(entry, dict) else None
        if entry.get("type") not in ("user", "assistant") or not isinstance(said, dict):
            continue
        yield from _said(said.get("role"), said.get("content"))


def _said(role: Any, content: Any) -> Iterator[dict[str, Any]]:
    if role not in ("user", "assistant"):
        return
    if isinstance(content, str):
        yield message(role, content)
        return
    if not isinstance(content, list):
        return
    texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    uses = [call(b.get("id"), str(b.get("name")), b.get("input"))
            for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]  # fmt: skip
    if texts or uses:
        yield message(role, "\n".join(texts), tool_calls=uses)
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            yield message("tool", block.get("content"), tool_call_id=str(block.get("tool_use_id")),
                          is_error=bool(block.get("is_error")))  # fmt: skip
