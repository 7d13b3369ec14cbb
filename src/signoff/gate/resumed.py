"""What a `Resumer`'s resumes returned, for the app that started the runs: a callback, or a
wait per thread, the same for every framework."""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass
from typing import Any

__all__ = ["Resumed"]


@dataclass(frozen=True)
class Resumed:
    """A framework run a `Resumer` resumed, and what the framework's resume returned."""

    thread: str
    """The framework's thread (LangGraph's ``thread_id``, ADK's and Agno's session)."""
    output: Any
    """What the framework's resume returned: LangGraph the graph's state as ``invoke``
    returns it, Pydantic AI an ``AgentRunResult``, the Agents SDK a ``RunResult``, ADK the
    events of the resumed invocation, Agno a ``RunOutput``. A run that asked again is paused
    once more: its output says so as the framework says it."""
    pause: str = ""
    """The pause it was resumed from."""
    origin: str = ""
    """The integration (``langgraph``, ``pydantic-ai``, ...)."""


class Outputs:
    """Resumed runs by thread, handed to whoever waits on the thread, else kept for the next to
    ask (the newest per thread, of the `LIMIT` threads resumed last: an output may be a whole
    conversation). Safe from any thread: the resumer delivers on its loop, an app waits on its
    own loop or thread."""

    LIMIT = 64

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, Resumed] = OrderedDict()
        self._waiting: dict[str, list[Future[Resumed]]] = {}

    def put(self, resumed: Resumed) -> None:
        with self._lock:
            handed = False
            for waiter in self._waiting.pop(resumed.thread, []):
                try:
                    waiter.set_result(resumed)
                    handed = True
                except InvalidStateError:  # the waiter gave up (its timeout, a cancel)
                    pass
            if not handed:
                self._kept[resumed.thread] = resumed
                self._kept.move_to_end(resumed.thread)
                while len(self._kept) > self.LIMIT:
                    self._kept.popitem(last=False)

    def take(self, thread: str) -> Future[Resumed]:
        """A future of the thread's next resume (done at once when one is kept)."""
        future: Future[Resumed] = Future()
        with self._lock:
            kept = self._kept.pop(thread, None)
            if kept is not None:
                future.set_result(kept)
            else:
                self._waiting.setdefault(thread, []).append(future)
        return future

    def forget(self, thread: str, future: Future[Resumed]) -> None:
        """Stop waiting with `future` (it timed out or was cancelled); a resume handed to it
        in the meantime is kept for the next to ask."""
        with self._lock:
            waiters = self._waiting.get(thread, [])
            if future in waiters:
                waiters.remove(future)
            if not waiters:
                self._waiting.pop(thread, None)
            if future.done() and not future.cancelled():
                self._kept.setdefault(thread, future.result())
