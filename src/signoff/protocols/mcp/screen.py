"""Resource contents a client may not read do not reach it any other way.

A server's answer can carry resource contents besides the ones asked for: embedded in a tool's
result (its blocks, or its structured content), in a prompt's messages, in a sampling request
it sends the client, or among a read's contents (a folder's read may hold its files'). Each
is judged by its URI, as a read of it would be, and replaced by a text saying it was withheld
and why: those whose read the policy denies, and, among a read's contents, any other than the
URI read that the policy does not allow outright (reading it would ask). A link to one stays:
reading it is judged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from signoff.policy import PolicyEngine
from signoff.protocols.mcp.uris import canonical_uri
from signoff.types import ToolCall, VerdictKind

__all__ = ["Screen"]

Judge = Callable[[str], str | None]
"""Why the contents of a URI are withheld, or None when they pass."""


class Screen:
    """Judges the resource contents in answers of the servers behind, by `engine`."""

    def __init__(self, engine: Callable[[], PolicyEngine]) -> None:
        self._engine = engine

    def answer(self, value: dict[str, Any], server: str | None, *, read: str | None = None) -> Any:
        """`value` (a server's answer, or request, as JSON) with what may not pass withheld;
        `read` the URI a read asked for, whose contents are its answer."""
        embedded = self._judge(server, passing={"allow", "ask"})
        if read is None or not isinstance(value.get("contents"), list):
            return _screened(value, embedded)
        among = self._judge(server, passing={"allow"}, asked=read)
        rest = {key: item for key, item in value.items() if key != "contents"}
        contents = [_screened(item, among, top=True) for item in value["contents"]]
        return {**_screened(rest, embedded), "contents": contents}

    def _judge(self, server: str | None, *, passing: set[VerdictKind], asked: str = "") -> Judge:
        def judge(uri: str) -> str | None:
            if asked and uri == asked:
                return None  # the URI read, as it was judged: already in its one spelling
            try:
                canonical = canonical_uri(uri)
            except ValueError as exc:
                return f"its URI cannot be judged: {exc}"
            if canonical == asked:
                return None
            read = ToolCall(id="", name=canonical, server=server, kind="resource")
            verdict = self._engine().evaluate(read)
            if verdict.kind in passing:
                return None
            if verdict.kind == "ask":
                return f"reading it needs a person's approval ({verdict.reason}): read it"
            return verdict.reason

        return judge


def _screened(value: Any, judge: Judge, *, top: bool = False) -> Any:
    """`value` with every resource contents in it (an object with a ``uri`` and a ``text`` or
    ``blob``) that `judge` withholds replaced; `top`: `value` is such an object itself."""
    if isinstance(value, list):
        return [_screened(item, judge) for item in value]
    if not isinstance(value, dict):
        return value
    uri = value.get("uri")
    if isinstance(uri, str) and ("text" in value or "blob" in value):
        why = judge(uri)
        if why is not None:
            text = f"[signoff withheld {uri}: {why}]"
            return {"uri": uri, "mimeType": "text/plain", "text": text}
        if top:
            return value
    return {key: _screened(item, judge) for key, item in value.items()}
