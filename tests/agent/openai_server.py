"""A scripted OpenAI-compatible chat server on loopback: real HTTP, canned turns."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion(text: str, calls: list[tuple[str, str, str]]) -> dict[str, Any]:
    """A chat.completion with `text` and tool calls given as (id, name, arguments JSON text)."""
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in calls
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
    }


def chunks(text: str, calls: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """The same turn as stream chunks: text in pieces, each call's arguments split in two."""
    out = []

    def chunk(delta: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "scripted",
            "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
        }

    for start in range(0, len(text), 5):
        out.append(chunk({"content": text[start : start + 5]}))
    for index, (call_id, name, arguments) in enumerate(calls):
        half = len(arguments) // 2
        first = {"name": name, "arguments": arguments[:half]}
        opening = {"index": index, "id": call_id, "type": "function", "function": first}
        rest = {"index": index, "function": {"arguments": arguments[half:]}}
        out.append(chunk({"tool_calls": [opening]}))
        out.append(chunk({"tool_calls": [rest]}))
    return out


class ScriptedServer:
    def __init__(self, turns: list[tuple[str, list[tuple[str, str, str]]]]) -> None:
        self.turns = list(turns)
        self.requests: list[dict[str, Any]] = []


@contextmanager
def scripted_openai(
    turns: list[tuple[str, list[tuple[str, str, str]]]],
) -> Iterator[tuple[str, ScriptedServer]]:
    """Serve `turns` (text, tool calls) in order at http://127.0.0.1:PORT/v1."""
    state = ScriptedServer(turns)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            text, calls = state.turns.pop(0)
            if body.get("stream"):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for piece in chunks(text, calls):
                    self.wfile.write(f"data: {json.dumps(piece)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                return
            payload = json.dumps(completion(text, calls)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
