"""Previews: what a held call would change, computed without running it, shown with its approval.

A tool may name a preview function — a diff of the file a write would change, the rows an SQL
statement would touch, the pods a deletion would hit. It is called with the call's arguments as
keyword arguments (sync functions in a thread, async ones awaited), in the process that owns the
tool, when the call is held. It is held to a time bound and a size bound: a preview that fails,
or takes too long, says so instead, and never fails the hold nor keeps it waiting past the bound.

What a function returns becomes a `Preview`: a `Preview` as it is; a list of dicts, a table;
text that reads as a unified diff (``--- a`` / ``+++ b``), a diff; any other text, text; any
other value, its JSON.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from signoff.errors import SignoffError
from signoff.types import Preview, PreviewKind, ToolCall, canonical_json

__all__ = [
    "PREVIEW_BYTES",
    "PREVIEW_SECONDS",
    "PreviewFunction",
    "Previews",
    "as_preview",
    "preview_text",
]

PREVIEW_SECONDS: Final = 2.0
"""How long a preview may take by default."""
PREVIEW_BYTES: Final = 64 * 1024
"""How much text (or a table's JSON) a preview keeps by default; the rest is cut, with a note."""
_ERROR_CHARS = 1000
_CUT_NOTE = "\n… (preview cut at {size:,} bytes)"

PreviewFunction = Callable[..., Any]
"""Called with a call's arguments as keyword arguments; returns (or awaits to) what the call
would change."""


class Previews:
    """The preview functions of tools by name, and the bounds they run within."""

    def __init__(
        self,
        functions: Mapping[str, PreviewFunction] | None = None,
        *,
        timeout: float = PREVIEW_SECONDS,
        max_bytes: int = PREVIEW_BYTES,
    ) -> None:
        if timeout <= 0:
            raise ValueError(f"a preview's timeout must be positive, not {timeout!r}")
        if max_bytes < 1024:
            raise ValueError(f"a preview's size bound must be 1024 bytes or more, not {max_bytes}")
        self.functions = dict(functions or {})
        self.timeout = timeout
        self.max_bytes = max_bytes

    def __bool__(self) -> bool:
        """Whether any tool has a preview."""
        return bool(self.functions)

    def covers(self, call: ToolCall) -> bool:
        """Whether `call`'s tool has a preview."""
        return call.kind == "tool" and call.name in self.functions

    async def of(self, call: ToolCall, args: Mapping[str, Any] | None = None) -> Preview | None:
        """The preview of `call` (with `args` in place of its own, for an edit), within the
        bounds; None when its tool has none."""
        function = self.functions.get(call.name) if call.kind == "tool" else None
        if function is None:
            return None
        arguments = dict(call.args if args is None else args)
        try:
            async with asyncio.timeout(self.timeout):
                if inspect.iscoroutinefunction(function):
                    value = await function(**arguments)
                else:
                    # A thread cannot be stopped: one past its bound finishes unheard.
                    value = await asyncio.to_thread(function, **arguments)
                    if inspect.isawaitable(value):
                        value = await value
        except TimeoutError:
            return Preview(error=f"preview took longer than {self.timeout:g} s")
        except Exception as exc:  # a preview's failure is shown on the card, never raised
            return Preview(error=f"preview failed: {_words(exc)}"[:_ERROR_CHARS])
        return as_preview(value, max_bytes=self.max_bytes)

    async def of_many(self, calls: Sequence[ToolCall]) -> dict[str, Preview]:
        """The previews of the calls that have one, by call id, side by side."""
        wanted = [c for c in calls if self.covers(c)]
        found = await asyncio.gather(*(self.of(c) for c in wanted))
        return {c.id: p for c, p in zip(wanted, found, strict=True) if p is not None}


def as_preview(value: Any, *, max_bytes: int = PREVIEW_BYTES) -> Preview:
    """`value`, as a preview function returned it, as a `Preview` cut to `max_bytes`."""
    if isinstance(value, Preview):
        body = value.body
        if isinstance(body, list) and all(isinstance(row, dict) for row in body):
            preview = replace(value, kind="table", body=[_row(r) for r in body])
        else:
            kind: PreviewKind = "diff" if value.kind == "diff" else "text"  # a table's is rows
            preview = replace(value, kind=kind, body=_text(body))
        if preview.error is not None:
            preview = replace(preview, error=_text(preview.error)[:_ERROR_CHARS])
    elif isinstance(value, list) and all(isinstance(row, dict) for row in value):
        preview = Preview(kind="table", body=[_row(r) for r in value])
    elif isinstance(value, str):
        text = _text(value)
        preview = Preview(kind="diff" if _is_diff(text) else "text", body=text)
    else:
        try:
            text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
        except (ValueError, RecursionError):  # a value that holds itself
            text = repr(value)
        preview = Preview(body=_text(text))
    return _bounded(preview, max_bytes)


def _bounded(preview: Preview, max_bytes: int) -> Preview:
    body = preview.body
    if isinstance(body, list):
        rows: list[dict[str, Any]] = []
        size = 2
        for row in body:
            size += len(canonical_json(row)) + 1
            if size > max_bytes:
                return replace(preview, body=rows, truncated=True)
            rows.append(row)
        return preview
    data = body.encode()
    if len(data) <= max_bytes:
        return preview
    kept = data[:max_bytes].decode(errors="ignore")
    return replace(preview, body=kept + _CUT_NOTE.format(size=max_bytes), truncated=True)


def _row(row: dict[Any, Any]) -> dict[str, Any]:
    """A table's row as JSON can hold it: column names and any value but a number, a truth or
    null as their text."""
    return {
        _text(k): v if _plain(v) else _text(v if isinstance(v, str) else str(v))
        for k, v in row.items()
    }


def _plain(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, int | bool)


def _text(value: Any) -> str:
    """`value` as text that UTF-8 can hold (a lone surrogate replaced)."""
    return str(value).encode("utf-8", "replace").decode()


def _is_diff(text: str) -> bool:
    """Whether `text` reads as a unified diff: a ``---`` line followed by a ``+++`` one."""
    lines = text.lstrip().splitlines()
    return len(lines) >= 2 and lines[0].startswith("--- ") and lines[1].startswith("+++ ")


def _words(exc: BaseException) -> str:
    """The exception in words: signoff's own by its message, another with its type's name."""
    message = _text(exc).strip()
    if not message:
        return type(exc).__name__
    return message if isinstance(exc, SignoffError) else f"{type(exc).__name__}: {message}"


def preview_text(preview: dict[str, Any]) -> str:
    """A held call's preview (as the API shows it) as plain text: why there is none, its text
    or diff, or its table's rows one a line."""
    if preview.get("error"):
        return str(preview["error"])
    body = preview.get("body")
    if isinstance(body, list):
        lines = [
            ", ".join(f"{k}: {v}" for k, v in row.items()) for row in body if isinstance(row, dict)
        ]
        text = "\n".join(lines) or "(no rows)"
    else:
        text = str(body or "")
    return text + ("\n… (cut)" if preview.get("truncated") else "")
