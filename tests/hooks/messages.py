"""A scripted Anthropic Messages API on loopback, for the real Claude Code CLI: each model turn
of the agent loop is the script's next — tool calls the test chooses, then text — streamed as
the API streams (``message_start``, ``content_block_*``, ``message_delta``, ``message_stop``).
Every request is kept, so a test reads what the model was told of each call (its tool
result: the output, or why a hook kept it from running). The script may also be a function
that answers each request of the agent loop (its body) with a turn."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.hooks.rig import loopback

__all__ = ["Messages", "Turn", "scripted_messages"]


@dataclass(frozen=True)
class Turn:
    """One model turn: tool calls (name and input each), or text. `ids` names the calls
    (default: a fresh ``toolu_…`` each, as the API gives)."""

    calls: Sequence[tuple[str, dict[str, Any]]] = ()
    text: str = ""
    ids: Sequence[str] = ()


@dataclass
class Messages:
    """The API's script and what it was sent."""

    turns: Sequence[Turn] | Callable[[dict[str, Any]], Turn]
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""

    def results(self) -> list[dict[str, Any]]:
        """The tool results the CLI sent back, in order: ``content`` (text) and ``is_error``."""
        found: dict[str, dict[str, Any]] = {}
        for body in self.requests:
            for message in body.get("messages", []):
                content = message.get("content")
                if message.get("role") != "user" or not isinstance(content, list):
                    continue
                for block in content:
                    if block.get("type") == "tool_result":
                        found.setdefault(block["tool_use_id"], _result(block))
        return list(found.values())


def _result(block: dict[str, Any]) -> dict[str, Any]:
    content = block.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return {"content": str(content or ""), "is_error": bool(block.get("is_error"))}


def _events(model: str, turn: Turn) -> Iterator[bytes]:
    blocks: list[dict[str, Any]] = []
    if turn.text or not turn.calls:
        blocks.append({"type": "text", "text": turn.text or "Done."})
    ids = list(turn.ids) or [f"toolu_{uuid.uuid4().hex[:24]}" for _ in turn.calls]
    for (name, arguments), call_id in zip(turn.calls, ids, strict=True):
        blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": arguments})
    usage = {"input_tokens": 10, "output_tokens": 1}
    start: dict[str, Any] = {
        "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
        "model": model, "content": [], "stop_reason": None, "usage": usage,
    }  # fmt: skip
    yield _event("message_start", {"message": start})
    for index, block in enumerate(blocks):
        opened: dict[str, Any]
        delta: dict[str, Any]
        if block["type"] == "text":
            opened = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield _event("content_block_start", {"index": index, "content_block": opened})
        yield _event("content_block_delta", {"index": index, "delta": delta})
        yield _event("content_block_stop", {"index": index})
    stop = "tool_use" if turn.calls else "end_turn"
    yield _event("message_delta", {"delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}})
    yield _event("message_stop", {})


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


@contextmanager
def scripted_messages(turns: Sequence[Turn] | Callable[[dict[str, Any]], Turn]
                      ) -> Iterator[Messages]:  # fmt: skip
    """The API on a free loopback port for the block: `Messages.url` is its base URL. A request
    of the agent loop (one with tools) gets the turn its count of assistant messages names; past
    the script, and for any other request, a short text."""
    api = Messages(turns)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                self._json({"input_tokens": 10})
                return
            turn = Turn(text="Done.")
            if body.get("tools"):
                with lock:
                    api.requests.append(body)
                done = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
                if callable(api.turns):
                    turn = api.turns(body)
                elif done < len(api.turns):
                    turn = api.turns[done]
            model = body.get("model", "claude-sonnet-4-5")
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"".join(_events(model, turn)))  # one write: no Nagle stall
            self.close_connection = True

        def _json(self, data: dict[str, Any]) -> None:
            raw = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    with loopback(Handler) as url:
        api.url = url
        yield api
