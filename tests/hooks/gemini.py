"""A scripted Gemini API (``generativelanguage`` v1beta) on loopback, for the real Gemini CLI:
each model turn of the agent loop (``:streamGenerateContent?alt=sse``) is the script's next —
function calls the test chooses, then text. A request with a response schema (the CLI's own
questions: which model to route to, who speaks next) gets JSON of that schema and no turn.
Every turn's request is kept, so a test reads what the model was told of each call (its
function response: the output, or why a hook kept it from running)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.hooks.rig import loopback

__all__ = ["Gemini", "Turn", "scripted_gemini"]


@dataclass(frozen=True)
class Turn:
    """One model turn: function calls (name and arguments each), or text."""

    calls: Sequence[tuple[str, dict[str, Any]]] = ()
    text: str = ""


@dataclass
class Gemini:
    """The API's script and what it was sent."""

    turns: Sequence[Turn]
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""

    def results(self) -> list[dict[str, Any]]:
        """The function responses the CLI sent back, in order: each one's ``response`` — an
        ``output`` when the call ran, an ``error`` when it did not."""
        found: list[dict[str, Any]] = []
        for body in self.requests:
            contents = body.get("contents") or [{}]
            for part in contents[-1].get("parts") or []:
                if "functionResponse" in part:
                    found.append(part["functionResponse"]["response"])
        return found


def _reply(turn: Turn) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": turn.text}] if turn.text or not turn.calls else []
    parts += [{"functionCall": {"name": name, "args": args}} for name, args in turn.calls]
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                          "totalTokenCount": 15},
        "modelVersion": "gemini-2.5-flash",
    }  # fmt: skip


def _shaped(schema: dict[str, Any]) -> Any:
    """A value of `schema` — the first of an enum, a low number, an empty list."""
    kind = str(schema.get("type", "object")).lower()
    if schema.get("enum"):
        return schema["enum"][0]
    if kind == "object":
        return {k: _shaped(v) for k, v in (schema.get("properties") or {}).items()}
    return {"integer": 1, "number": 1, "boolean": False, "array": []}.get(kind, "scripted")


@contextmanager
def scripted_gemini(turns: Sequence[Turn]) -> Iterator[Gemini]:
    """The API on a free loopback port for the block: `Gemini.url` is its base URL. A turn's
    request gets the turn its count of model messages names; past the script, a short text."""
    api = Gemini(turns)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            config = body.get("generationConfig") or {}
            schema = config.get("responseJsonSchema") or config.get("responseSchema")
            if ":countTokens" in self.path:
                self._send({"totalTokens": 10})
            elif ":streamGenerateContent" not in self.path and schema is not None:
                text = json.dumps(_shaped(schema))
                self._send(_reply(Turn(text=text)))
            else:
                with lock:
                    api.requests.append(body)
                done = sum(1 for c in body.get("contents", []) if c.get("role") == "model")
                turn = api.turns[done] if done < len(api.turns) else Turn(text="Done.")
                self._send(_reply(turn), sse=":streamGenerateContent" in self.path)

        def _send(self, data: dict[str, Any], *, sse: bool = False) -> None:
            raw = json.dumps(data).encode()
            if sse:
                raw = b"data: " + raw + b"\r\n\r\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream" if sse else "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    with loopback(Handler) as url:
        api.url = url
        yield api
