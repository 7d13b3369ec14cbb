"""Real receivers on loopback for the notification tests: an HTTP server that records every
request (a webhook receiver, a fake Slack API), and an SMTP server (aiosmtpd)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """Records every request; answers `status` with `answer` (JSON; or, when it is a function,
    what it gives for the request)."""

    status: int = 200
    answer: Any = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    lock: threading.Condition = field(default_factory=threading.Condition)

    def taken(self) -> list[Request]:
        with self.lock:
            return list(self.requests)

    def wait_for(self, count: int, timeout: float) -> list[Request]:
        """Block until `count` requests came (or `timeout` seconds: a hang); return them all."""
        with self.lock:
            self.lock.wait_for(lambda: len(self.requests) >= count, timeout)
            return list(self.requests)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def http_receiver(receiver: Receiver, port: int = 0) -> Iterator[str]:
    """Serve `receiver` on loopback (on `port`, or a free one); yield its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            size = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(size)
            request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            with receiver.lock:
                receiver.requests.append(request)
                receiver.lock.notify_all()
                status, answer = receiver.status, receiver.answer
                if callable(answer):
                    answer = answer(request)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@dataclass
class Mailbox:
    messages: list[Message] = field(default_factory=list)
    envelopes: list[tuple[str, list[str]]] = field(default_factory=list)
    logins: list[tuple[str, str]] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(message_from_bytes(envelope.original_content))
        self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        return "250 OK"
