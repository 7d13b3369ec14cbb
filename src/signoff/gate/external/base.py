"""What every part of `ExternalRuns` stands on: the gate and its store, the framework's origin
and who decides its way, the verdicts this process has seen, and the loop the store's work runs
on — awaited from the caller's loop (`near`) or run from synchronous code (`run`,
`run_near`) — with closing what `connect` opened."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, TypeVar

from signoff.errors import SignoffError
from signoff.gate.bridge import Bridge, run_here
from signoff.gate.core import Gate
from signoff.gate.ids import external_key
from signoff.gate.once import Ledger
from signoff.gate.preview import PreviewFunction, Previews
from signoff.gate.questions import ASK_TOOL
from signoff.gate.seen import Seen
from signoff.store.external import ExternalRecord
from signoff.types import Approval, ToolCall

__all__ = ["RunsBase"]

T = TypeVar("T")


class RunsBase:
    """The gate, store, bridge and caches the parts of `ExternalRuns` share."""

    def __init__(
        self,
        gate: Gate,
        *,
        origin: str,
        principal: str | None = None,
        roles: Iterable[str] = (),
        bridge: Bridge | None = None,
        ledger: Ledger | None = None,
        previews: Previews | Mapping[str, PreviewFunction] | None = None,
        questions: Iterable[str] = (ASK_TOOL,),
    ) -> None:
        """`principal` and `roles` are who decides when a decision arrives the framework's way
        (a resume payload) and the framework cannot say who sent it: the gate holds them to the
        same rules as anyone (approvers, self-approval). Without a principal such a decision is
        refused: nobody is taken to have decided on purpose. Built inside a running loop, the
        bridge is that loop; else give one. `previews` are the preview functions of the
        framework's tools by name (`signoff.gate.preview`): what a held call would change,
        computed here, in the app's process, when it is held. `questions` are the names of the
        framework's tools that are the ask tool (`kinded`)."""
        self.gate = gate
        self.store = gate.store
        self.origin = origin
        self.principal = principal
        self.roles = frozenset(roles)
        if bridge is None:
            try:
                bridge = Bridge(asyncio.get_running_loop())
            except RuntimeError:
                raise SignoffError(
                    "ExternalRuns needs the event loop its store runs on: build it inside that "
                    "loop, pass bridge=, or use signoff.gate.external.connect()"
                ) from None
        self.bridge = bridge
        self._anywhere = bool(getattr(gate.store, "any_loop", False))
        self.ledger = ledger or Ledger(gate.store)
        if self.ledger.renew_on is None and self._anywhere:
            # The store's work may run on a caller's loop that stops (a thread's own, between
            # synchronous calls) or is kept busy by the call: the claims renew on the bridge's.
            self.ledger.renew_on = bridge.loop
        self.previews = previews if isinstance(previews, Previews) else Previews(previews)
        self.questions = frozenset(questions)
        self._records: Seen[ExternalRecord] = Seen()
        self._decided: Seen[Approval] = Seen()
        self._unwritten: Seen[ExternalRecord] = Seen()
        self._closers: list[Callable[[], Coroutine[Any, Any, Any]]] = []

    async def near(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await `coro` — the store's work, which holds nothing of one loop's — on the caller's
        loop when the store serves any loop (SQLite, on threads of its own): one hop between
        threads fewer each way. Else on the bridge's, as `Bridge.arun`."""
        if self._anywhere:
            return await coro
        return await self.bridge.arun(coro)

    def key(self, thread: str, call_id: str, turn: str | None = None) -> str:
        """The key a call of this origin's `thread` (and model response `turn`) is kept under,
        and run once under."""
        return external_key(self.origin, thread, call_id, turn)

    def kinded(self, call: ToolCall) -> ToolCall:
        """`call` as the gate judges it: a call of the ask tool (a tool named in `questions`)
        is a question — held for a person and never run, its answer the tool's result —
        whatever kind the framework's adapter gave it, so that no adapter has to know."""
        if call.kind == "tool" and call.name in self.questions:
            return replace(call, kind="question")
        return call

    # -- synchronous twins, for frameworks' sync paths -------------------------------------

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run one of this object's coroutines from synchronous code."""
        return self.bridge.run(coro)

    def run_near(self, coro: Coroutine[Any, Any, T]) -> T:
        """`run` for the store's work (as `near` awaits it): on a loop of the calling thread's
        own when the store serves any loop, with no hop to the bridge's thread and back."""
        if self._anywhere and not _in_loop():
            return run_here(coro)
        return self.bridge.run(coro)

    # -- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """Close what `connect` opened (the store, then the bridge's own loop, cancelling the
        work still on it). Stop a `Resumer` first: work cut off here cleans up against a store
        already closed, and its marks and claims run out with their leases."""
        closers, self._closers = self._closers, []
        for close in reversed(closers):
            self.bridge.run(close())
        self.bridge.close()

    def now(self) -> datetime:
        """The store's clock, one for every process: the time pauses and a thread's marks are
        written and judged by (a process whose own clock runs ahead takes nothing over
        early)."""
        return self.store.now()


def _in_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
