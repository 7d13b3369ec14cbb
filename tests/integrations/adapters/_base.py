"""What every adapter of the shared scenario suite does alike: the integration's `ExternalRuns`
opened on the scenarios' policy and previews, the count of model turns its scripted model
played, and the refusals of what a framework has no way to do (a decision sent the
framework's way, the calls it shows, a state a person could edit)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from signoff.gate.external import ExternalRuns
from tests.deadline import HANG
from tests.integrations.scenarios import POLICY, PREVIEWS, Call, NotSupported, Outcome, Seen


class AdapterBase:
    """An adapter's shared part: its runs, the file its tools write, the model's turns, and
    the refusals it names in `no_send`, `no_shown`, `no_state` and `no_ask` (empty: it does
    them)."""

    name = ""
    no_send = no_shown = no_state = ""
    no_ask = "signoff offers no ask tool in this framework's shape yet"
    no_thread = ""
    """Why a held call's thread does not name the framework's (empty: it does)."""
    answers_in_place = True

    def __init__(self, runs: ExternalRuns, side_effects: Path) -> None:
        self.runs = runs
        self.side_effects = side_effects
        self._turns: list[int] = []
        """The turn the scripted model played at each of its calls."""

    @property
    def model_turns(self) -> int:
        return len(self._turns)

    def thread_id(self, thread: str) -> str:
        return thread

    async def send(
        self, thread: str, approve: bool, *, user: str | None, seen: Seen = None
    ) -> Outcome:
        raise NotSupported(self.no_send)

    async def shown(self, thread: str) -> dict[str, int]:
        raise NotSupported(self.no_shown)

    async def tamper(self, thread: str, call: Call) -> None:
        raise NotSupported(self.no_state)


class GoesOnByItself:
    """An adapter whose held call waits in memory and goes on by itself once decided: nothing
    resumes it (`no_resumer` says why), and resuming is waiting for its next wait or its end."""

    no_resumer = ""

    async def _next(self, thread: str) -> Outcome:
        raise NotImplementedError

    async def resume(self, thread: str) -> Outcome:
        """The held call goes on by itself once decided: wait for the next wait or the end."""
        return await self._next(thread)

    def resumer(self, thread: str, *, on_resumed: Callable[[Any], Any]) -> Any:
        raise NotSupported(self.no_resumer)

    def text(self, output: Any) -> str | None:
        raise NotSupported("no resumer")


def unique_ids(script: Sequence[Any], why: str) -> None:
    """Refuse (`NotSupported`, `why`) a script whose model gives two calls one id."""
    ids = [c.id for turn in script if not isinstance(turn, str) for c in turn]
    if len(set(ids)) < len(ids):
        raise NotSupported(why)


def step(script: Sequence[Any], turn: int) -> Any:
    """What the script's model plays at `turn`: its calls or its final text (``done`` after
    the script)."""
    return script[turn] if turn < len(script) else "done"


@contextlib.asynccontextmanager
async def connected(connect: Callable[..., ExternalRuns], origin: str, database: str
                    ) -> AsyncIterator[ExternalRuns]:  # fmt: skip
    """The integration's `connect` on the scenarios' policy and previews, closed after."""
    runs = await asyncio.to_thread(
        connect, POLICY, origin=origin, database=database, previews=PREVIEWS
    )
    try:
        yield runs
    finally:
        await asyncio.to_thread(runs.close)


@contextlib.asynccontextmanager
async def opened_with(
    connect: Callable[..., ExternalRuns], origin: str, database: str,
    make: Callable[[ExternalRuns], Any],
) -> AsyncIterator[Any]:  # fmt: skip
    """The adapter `make` builds on the integration's runs (`connected`), closed after."""
    async with connected(connect, origin, database) as runs:
        adapter = make(runs)
        try:
            yield adapter
        finally:
            await adapter.close()


async def stopped(
    task: asyncio.Task[Any], asked: asyncio.Event, waits: Callable[[], Awaitable[bool]]
) -> bool:
    """Wait until a run that goes on by itself in `task` ends (False) or waits on a call nobody
    decided yet (True, by `waits`); `asked` is set each time it may have begun to wait."""
    async with asyncio.timeout(HANG):
        while True:
            asked.clear()
            if task.done():
                return False
            if await waits():
                return True
            # Still going, or still waking up from a decision: until it asks again or ends.
            woken = asyncio.ensure_future(asked.wait())
            try:
                await asyncio.wait([task, woken], return_when=asyncio.FIRST_COMPLETED)
            finally:
                woken.cancel()


async def cancelled(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Stop the runs still waiting on a person (a scenario that stops before the end)."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            async with asyncio.timeout(HANG):
                await task
