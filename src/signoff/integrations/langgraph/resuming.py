"""`resumer` for LangGraph graphs: a paused thread resumes once every held call of its pause is
decided, in any signoff channel — its graph invoked with signoff's own resume value, under the
resumer's claim of the pause."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from signoff.gate.external import ExternalRuns, Resumed, Resumer
from signoff.integrations._hitl import MARK
from signoff.integrations._pauses import RESUMING

__all__ = ["resumer"]


def resumer(
    graph: Any,
    runs: ExternalRuns,
    *,
    use_async: bool | None = None,
    on_resumed: Callable[[Resumed], Any] | None = None,
) -> Resumer:
    """A `Resumer` that resumes `graph`'s paused threads once every held call of a pause is
    decided — in the web inbox, the API, the terminal, Slack — with no code of the user's:
    ``resumer(graph, runs).start()`` next to the app, or ``await ....work()`` in a task.
    Synchronous graphs (a sync checkpointer: ``SqliteSaver``, ``PostgresSaver``) resume on a
    worker thread; async ones (``AsyncSqliteSaver``, ``AsyncPostgresSaver``) on the loop. The
    graph's state each resume ends with (what ``invoke`` returns) reaches `on_resumed`, and
    ``wait(thread_id)`` / ``await resumed(thread_id)``."""
    if use_async is None:
        use_async = type(getattr(graph, "checkpointer", None)).__name__.startswith("Async")

    async def resume(pause: Any) -> Resumed | None:
        user = pause.data.get("user_id")
        configurable = {"thread_id": pause.thread_id} | ({"user_id": user} if user else {})
        config: RunnableConfig = {"configurable": configurable}
        if use_async:
            state = await graph.aget_state(config, subgraphs=True)
        else:
            state = await asyncio.to_thread(graph.get_state, config, subgraphs=True)
        ids = [i.id for i in _interrupts(state) if _pause_of(i.value) == pause.id]
        if not ids:
            return None  # the thread went on past this pause already
        command: Command[Any] = Command(resume={i: {MARK: {"pause": pause.id}} for i in ids})
        # The invocation goes on under this resumer's claim of the pause (its nodes see this
        # context): another invocation resuming the same checkpoint finds the pause taken.
        token = RESUMING.set((pause.id, pause.lease_owner or ""))
        try:
            if use_async:
                output = await graph.ainvoke(command, config)
            else:
                output = await asyncio.to_thread(graph.invoke, command, config)
        finally:
            RESUMING.reset(token)
        return Resumed(pause.thread_id, output)

    return Resumer(runs, resume, on_resumed=on_resumed)


def _interrupts(state: Any) -> list[Any]:
    found = list(getattr(state, "interrupts", ()) or ())
    for task in getattr(state, "tasks", ()) or ():
        found += list(getattr(task, "interrupts", ()) or ())
        if getattr(task, "state", None) is not None and not isinstance(task.state, dict):
            found += _interrupts(task.state)
    unique: dict[str, Any] = {}
    for item in found:
        unique.setdefault(item.id, item)
    return list(unique.values())


def _pause_of(value: Any) -> str | None:
    if isinstance(value, Mapping) and isinstance(value.get(MARK), Mapping):
        pause = value[MARK].get("pause")
        return pause if isinstance(pause, str) else None
    return None
