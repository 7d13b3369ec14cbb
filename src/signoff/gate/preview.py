"""Previews: what a held call would change, computed without running it, shown with its approval.

A tool may name a preview function — a diff of the file a write would change, the rows an SQL
statement would touch, the pods a deletion would hit. It is called with the call's arguments as
keyword arguments (async ones awaited, sync ones on threads of their own), in the process that
owns the tool, when the call is held. It is held to a time bound and a size bound: a preview that
fails, or takes too long, says so instead, and never fails the hold nor keeps it waiting past the
bound.

Previews never take what tools need. A synchronous preview runs on `PreviewThreads`, apart from
the loop's default executor where tools run: a preview that hangs holds one of those threads (a
thread cannot be stopped) and nothing else, and when they are all held a preview is refused at
once rather than queued behind them. The calls held together are previewed `at_once` at a time,
all within one time bound, so one turn of many calls cannot take every thread either.

A preview is free text computed from the arguments, so the values the config's ``redact:``
hides in them are masked in it too (`masked`): where the preview is computed, when that process
knows the redaction, and again wherever the server shows an approval.

What a function returns becomes a `Preview`: a `Preview` as it is; a list of dicts, a table;
text that reads as a unified diff (``--- a`` / ``+++ b``), a diff; any other text, text; any
other value, its JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import json
import math
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from signoff.errors import SignoffError
from signoff.redaction import MASK, Redaction
from signoff.types import Preview, PreviewKind, ToolCall, canonical_json

__all__ = [
    "PREVIEWS_AT_ONCE",
    "PREVIEW_BYTES",
    "PREVIEW_SECONDS",
    "PREVIEW_THREADS",
    "SHORTEST_MASKED",
    "PreviewFunction",
    "PreviewThreads",
    "Previews",
    "as_preview",
    "masked",
    "preview_text",
]

PREVIEW_SECONDS: Final = 2.0
"""How long a preview may take by default."""
PREVIEW_BYTES: Final = 64 * 1024
"""How much text (or a table's JSON) a preview keeps by default; the rest is cut, with a note."""
PREVIEW_THREADS: Final = 16
"""How many synchronous previews a process runs at once, those abandoned past their bound
included (`PreviewThreads`)."""
PREVIEW_THREADS_PER_TOOL: Final = 4
"""How many of them one tool's previews may hold at once: a tool whose previews hang takes no
more, and the other tools' previews still run."""
PREVIEWS_AT_ONCE: Final = 4
"""How many previews of the calls held together run at once; the others wait their turn, within
the same time bound."""
SHORTEST_MASKED: Final = 4
"""Redacted values shorter than this many characters are not looked for in a preview: masking
every ``80`` or ``yes`` of a diff would garble it, and where the masks fell would tell the value
anyway. The arguments themselves are masked whatever their length."""
_ERROR_CHARS = 1000
_CUT_NOTE = "\n… (preview cut at {size:,} bytes)"
_CUT_NOTED = re.compile(r"\n… \(preview cut at [\d,]+ bytes\)\Z")

PreviewFunction = Callable[..., Any]
"""Called with a call's arguments as keyword arguments; returns (or awaits to) what the call
would change."""


class PreviewThreads:
    """The threads synchronous previews run on, at most `size` at once: daemons, each started
    for one preview, apart from the loop's default executor (where tools run) and from the
    sends of email. A preview past its time bound is abandoned, not stopped: it holds its
    thread until it returns, and never a tool's, nor the process's exit. When every thread is
    held, a preview is refused at once rather than queued behind ones that may never return."""

    def __init__(
        self, size: int = PREVIEW_THREADS, *, per_tool: int = PREVIEW_THREADS_PER_TOOL
    ) -> None:
        if size < 1 or per_tool < 1:
            raise ValueError(f"previews need at least one thread, not {min(size, per_tool)!r}")
        self.size = size
        self.per_tool = per_tool
        """How many threads one tool's previews may hold (see `PREVIEW_THREADS_PER_TOOL`)."""
        self._busy = 0
        self._by_tool: dict[str, int] = {}
        self._lock = threading.Lock()

    @property
    def busy(self) -> int:
        """How many threads run a preview now, abandoned ones included."""
        with self._lock:
            return self._busy

    def start(
        self, function: PreviewFunction, arguments: Mapping[str, Any], *, tool: str = ""
    ) -> asyncio.Future[Any] | None:
        """`function(**arguments)` — `tool`'s preview — started on a thread, its outcome to be
        awaited on the running loop (cancelling the wait abandons it); None when every thread
        is busy, or the tool's previews hold their share."""
        with self._lock:
            if self._busy >= self.size or self._by_tool.get(tool, 0) >= self.per_tool:
                return None
            self._busy += 1
            self._by_tool[tool] = self._by_tool.get(tool, 0) + 1
        loop = asyncio.get_running_loop()
        outcome: asyncio.Future[Any] = loop.create_future()
        run = functools.partial(contextvars.copy_context().run, function, **arguments)
        thread = threading.Thread(
            target=self._work, args=(run, loop, outcome, tool), name="signoff-preview", daemon=True
        )
        try:
            thread.start()
        except BaseException:
            self._release(tool)
            raise
        return outcome

    def _work(
        self,
        run: Callable[[], Any],
        loop: asyncio.AbstractEventLoop,
        outcome: asyncio.Future[Any],
        tool: str,
    ) -> None:
        try:
            value = run()
        except Exception as exc:  # the preview's failure, told to whoever still waits
            settle = functools.partial(_settle, outcome, None, exc)
        else:
            settle = functools.partial(_settle, outcome, value, None)
        finally:
            self._release(tool)
        with contextlib.suppress(RuntimeError):  # its loop is closed: nobody waits any more
            loop.call_soon_threadsafe(settle)

    def _release(self, tool: str) -> None:
        with self._lock:
            self._busy -= 1
            self._by_tool[tool] -= 1
            if not self._by_tool[tool]:
                del self._by_tool[tool]


def _settle(outcome: asyncio.Future[Any], value: Any, error: Exception | None) -> None:
    if outcome.done():  # abandoned: its preview came too late
        return
    if error is None:
        outcome.set_result(value)
    else:
        outcome.set_exception(error)


_THREADS = PreviewThreads()
"""The process's preview threads, shared by every `Previews` not given its own."""


class _NoThread(Exception):
    """Every preview thread is busy."""


class Previews:
    """The preview functions of tools by name, the bounds they run within, and the redaction
    their text is masked by."""

    def __init__(
        self,
        functions: Mapping[str, PreviewFunction] | None = None,
        *,
        timeout: float = PREVIEW_SECONDS,
        max_bytes: int = PREVIEW_BYTES,
        at_once: int = PREVIEWS_AT_ONCE,
        redaction: Redaction | None = None,
        threads: PreviewThreads | None = None,
    ) -> None:
        if timeout <= 0:
            raise ValueError(f"a preview's timeout must be positive, not {timeout!r}")
        if max_bytes < 1024:
            raise ValueError(f"a preview's size bound must be 1024 bytes or more, not {max_bytes}")
        if at_once < 1:
            raise ValueError(f"previews run at least one at a time, not {at_once!r}")
        self.functions = dict(functions or {})
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.at_once = at_once
        """How many previews of the calls held together run at once."""
        self.redaction = redaction or Redaction()
        """The values masked in what a preview says (the config's ``redact:``)."""
        self.threads = threads or _THREADS
        """Where the synchronous previews run: the process's preview threads by default."""

    def __bool__(self) -> bool:
        """Whether any tool has a preview."""
        return bool(self.functions)

    def covers(self, call: ToolCall) -> bool:
        """Whether `call`'s tool has a preview."""
        return self._function(call) is not None

    def _function(self, call: ToolCall) -> PreviewFunction | None:
        return self.functions.get(call.name) if call.kind == "tool" else None

    async def of(self, call: ToolCall, args: Mapping[str, Any] | None = None) -> Preview | None:
        """The preview of `call` (with `args` in place of its own, for an edit), within the
        bounds; None when its tool has none."""
        function = self._function(call)
        if function is None:
            return None
        deadline = asyncio.get_running_loop().time() + self.timeout
        return await self._run(function, call, args, deadline, turn=None)

    async def of_many(self, calls: Sequence[ToolCall]) -> dict[str, Preview]:
        """The previews of the calls that have one, by call id: `at_once` at a time, all within
        one time bound."""
        wanted = [(c, f) for c in calls if (f := self._function(c)) is not None]
        if not wanted:
            return {}
        turn = asyncio.Semaphore(self.at_once)
        deadline = asyncio.get_running_loop().time() + self.timeout
        found = await asyncio.gather(*(self._run(f, c, None, deadline, turn) for c, f in wanted))
        return {c.id: p for (c, _), p in zip(wanted, found, strict=True)}

    async def _run(
        self,
        function: PreviewFunction,
        call: ToolCall,
        args: Mapping[str, Any] | None,
        deadline: float,
        turn: asyncio.Semaphore | None,
    ) -> Preview:
        """The preview, or why there is none, masked and bounded."""
        arguments = dict(call.args if args is None else args)
        started = False
        bound = asyncio.timeout_at(deadline)
        try:
            async with bound, turn or contextlib.nullcontext():
                started = True
                preview = _converted(await self._called(function, arguments, call.name))
        except TimeoutError as exc:
            if not bound.expired():  # the preview's own (a socket's), not its bound
                preview = Preview(error=f"preview failed: {_words(exc)}")
            elif started:
                preview = Preview(error=f"preview took longer than {self.timeout:g} s")
            else:
                preview = Preview(
                    error=f"preview not run: it waited {self.timeout:g} s for its turn behind "
                    "the previews of the calls held with it"
                )
        except _NoThread:
            preview = Preview(
                error=f"preview not run: the preview threads it may use are busy ({call.name}'s "
                f"previews may hold {self.threads.per_tool} of {self.threads.size}; those that "
                "did not return in time still hold theirs)"
            )
        except Exception as exc:  # a preview's failure is shown on the card, never raised
            preview = Preview(error=f"preview failed: {_words(exc)}")
        return _bounded(masked(preview, self.redaction, call.args, arguments), self.max_bytes)

    async def _called(self, function: PreviewFunction, arguments: dict[str, Any], tool: str) -> Any:
        if inspect.iscoroutinefunction(function):
            return await function(**arguments)
        running = self.threads.start(function, arguments, tool=tool)
        if running is None:
            raise _NoThread
        value = await running
        if inspect.isawaitable(value):
            value = await value
        return value


def as_preview(value: Any, *, max_bytes: int = PREVIEW_BYTES) -> Preview:
    """`value`, as a preview function returned it, as a `Preview` cut to `max_bytes`."""
    return _bounded(_converted(value), max_bytes)


def _converted(value: Any) -> Preview:
    """`value` as a `Preview` of its kind, whole."""
    if isinstance(value, Preview):
        body = value.body
        if isinstance(body, list) and all(isinstance(row, dict) for row in body):
            preview = replace(value, kind="table", body=[_row(r) for r in body])
        else:
            kind: PreviewKind = "diff" if value.kind == "diff" else "text"  # a table's is rows
            preview = replace(value, kind=kind, body=_text(body))
        if preview.error is not None:
            preview = replace(preview, error=_failed(_text(preview.error)))
        return preview
    if isinstance(value, list) and all(isinstance(row, dict) for row in value):
        return Preview(kind="table", body=[_row(r) for r in value])
    if isinstance(value, str):
        text = _text(value)
        return Preview(kind="diff" if _is_diff(text) else "text", body=text)
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):  # a value that holds itself
        text = repr(value)
    return Preview(body=_text(text))


def _failed(error: str) -> str:
    """Why a preview function says there is no preview, as a card shows it: saying it failed
    (``preview failed: the cluster cannot be reached``), never a blank."""
    said = error.strip()
    if not said:
        return "preview failed"
    return said if "preview" in said.lower() else f"preview failed: {said}"


def _bounded(preview: Preview, max_bytes: int) -> Preview:
    if preview.error is not None and len(preview.error) > _ERROR_CHARS:
        preview = replace(preview, error=preview.error[:_ERROR_CHARS])
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


def masked(preview: Preview, redaction: Redaction, *arguments: Any) -> Preview:
    """`preview` with each value `redaction` hides in `arguments` (a call's, as asked and as
    edited) masked wherever it shows it — as written or JSON-escaped — in its text or diff,
    its table's column names and cells, and why it failed. A text cut at its size bound
    in the middle of such a value has the start of it masked too. Values shorter than
    `SHORTEST_MASKED` are not looked for."""
    forms = _secret_forms(redaction, arguments)
    if not forms:
        return preview
    pattern = re.compile("|".join(map(re.escape, sorted(forms, key=len, reverse=True))))

    def hide(text: str) -> str:
        return pattern.sub(MASK, text)

    body = preview.body
    if isinstance(body, list):
        shown: str | list[dict[str, Any]] = [
            {hide(k): _hidden_cell(v, hide) for k, v in row.items()} for row in body
        ]
    elif preview.truncated and (note := _CUT_NOTED.search(body)) is not None:
        kept = _cut_start_hidden(hide(body[: note.start()]), forms)
        shown = kept + note.group()
    else:
        shown = hide(body)
    error = None if preview.error is None else hide(preview.error)
    return replace(preview, body=shown, error=error)


def _hidden_cell(value: Any, hide: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return hide(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        text = json.dumps(value)
        hidden = hide(text)
        return value if hidden == text else hidden
    return value


def _cut_start_hidden(text: str, forms: Iterable[str]) -> str:
    """`text` with a start of one of `forms` it ends with (where it was cut) masked."""
    for form in sorted(forms, key=len, reverse=True):
        for size in range(len(form) - 1, SHORTEST_MASKED - 1, -1):
            if text.endswith(form[:size]):
                return text[:-size] + MASK
    return text


def _secret_forms(redaction: Redaction, arguments: Sequence[Any]) -> set[str]:
    """How a preview's text could show the redacted values of `arguments`: each string (and
    number) at or under a redacted path, as written and JSON-escaped, `SHORTEST_MASKED`
    characters or longer."""
    if not redaction:
        return set()
    forms: set[str] = set()
    for value in _redacted_values(redaction, arguments):
        if isinstance(value, str):
            if len(value) >= SHORTEST_MASKED:
                escaped = json.dumps(value)[1:-1]
                forms |= {value, escaped, json.dumps(value, ensure_ascii=False)[1:-1]}
        elif len(text := json.dumps(value)) >= SHORTEST_MASKED:
            forms.add(text)
    return forms


def _redacted_values(redaction: Redaction, arguments: Sequence[Any]) -> Iterator[Any]:
    """The strings and numbers at or under the redacted paths of each of `arguments` (walked
    without recursion: arguments may nest as deep as the gate lets them)."""
    stack: list[tuple[Any, tuple[str, ...], bool]] = [(a, (), False) for a in arguments]
    while stack:
        value, path, hidden = stack.pop()
        hidden = hidden or (bool(path) and redaction.hidden(path))
        if isinstance(value, dict):
            stack += [(v, (*path, str(k)), hidden) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(v, (*path, str(i)), hidden) for i, v in enumerate(value)]
        elif hidden and (
            isinstance(value, str)
            or (isinstance(value, int | float) and not isinstance(value, bool))
        ):
            yield value


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
