"""A task's log followed as AG-UI events, from where an AG-UI run takes it on until the task
waits or ends: the words, tool calls and their results as they come, then the run's end — on
the interrupts of a pause (the assistant's words, each call's ``HITL_FORM`` activity) or on the
task's answer or failure. The thread's shared state follows as ``STATE_DELTA`` JSON Patches,
each computed against a fresh reading of the store, so the deltas applied to the snapshot always
give what a new snapshot would.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from ag_ui.core import (
    ActivitySnapshotEvent,
    BaseEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    StateDeltaEvent,
)

from signoff.protocols.a2a.tasks import TaskView
from signoff.protocols.agui.mapping import (
    ACTIVITY,
    COMPLETED,
    Projection,
    activity_delta,
    ops,
    said,
)
from signoff.protocols.agui.threads import Task, Threads
from signoff.server.service import Service
from signoff.types import Approval, Decision

__all__ = ["TaskStream"]


class TaskStream:
    """Streams the tasks of `threads`, run by `service`, as `projection` shows them."""

    def __init__(self, service: Service, threads: Threads, projection: Projection) -> None:
        self.service = service
        self.threads = threads
        self.projection = projection

    async def run(
        self,
        thread: str,
        state: dict[str, Any],
        task: Task,
        *,
        run_id: str,
        after: int,
        resolved: dict[str, Decision] | None = None,
    ) -> AsyncIterator[BaseEvent]:
        """The task's events after `after` as AG-UI events, until it waits or ends — the
        decisions this run took (`resolved`) done with at the end — with the thread's shared
        state, `state` as the run last told it, brought up to date by JSON Patches."""
        async for event in self._follow(task, after=after, run_id=run_id, resolved=resolved or {}):
            if isinstance(event, StateDeltaEvent):
                state, delta = await self.threads.delta(thread, state)
                if delta:
                    yield StateDeltaEvent(delta=ops(delta))
            else:
                yield event

    async def _follow(
        self, task: Task, *, after: int, run_id: str, resolved: dict[str, Decision]
    ) -> AsyncIterator[BaseEvent]:
        """The task's events after `after` as AG-UI events, until it waits or ends. A
        `StateDeltaEvent` with no delta marks where the state may have changed."""
        view = TaskView(run_id=task.run.id, agent=task.run.agent, context_id=task.run.thread_id)
        async for event in self.service.follow(task.run.id, after=0):
            view.see(event)
            if event.seq <= after:
                continue
            for out in self.projection.events(task.run.id, event):
                yield out
            if event.type == "paused":
                current = await self.threads.read(task.run.id)
                own = set(event.data["approvals"])
                if not any(a.id in own for a in current.pending):
                    continue  # decided meanwhile: the run went on (to this pause's end, or on)
                for interrupt in resolved:  # what this run resumed is done with
                    yield activity_delta(interrupt, COMPLETED)
                words = self.projection.request_words(
                    current.open.values(), agent=current.run.agent
                )
                for out in said(f"{task.run.id}-{event.seq}-ask", words):
                    yield out
                for out in self.activities(current, words):
                    yield out
                yield StateDeltaEvent(delta=[])
                yield self.interrupted(current, run_id)
                return
            if event.type in ("completed", "failed"):
                for out in self._ending(task, view, run_id=run_id, resolved=resolved):
                    yield out
                return
        # The log had ended before `after` (a resume sent again): the run ends as the task did.
        for out in self._ending(task, view, run_id=run_id, resolved={}):
            yield out

    def activities(self, task: Task, words: str) -> Iterable[BaseEvent]:
        """The ``HITL_FORM`` activity of each open interrupt, asking in `words`."""
        for interrupt, approval in task.open.items():
            yield ActivitySnapshotEvent(
                message_id=interrupt,
                activity_type=ACTIVITY,
                content=self.projection.activity(task.run.id, interrupt, approval, words),
            )

    def interrupted(
        self, task: Task, run_id: str, *, refusal: Callable[[Approval], str | None] | None = None
    ) -> RunFinishedEvent:
        """The run's end on the task's open interrupts; `refusal` says of each call why an
        answer to it was not taken (None: it needs no such words)."""
        interrupts = [
            self.projection.interrupt(task.run.id, i, a, refusal=refusal and refusal(a))
            for i, a in task.open.items()
        ]
        return RunFinishedEvent(
            thread_id=task.run.thread_id,
            run_id=run_id,
            outcome=RunFinishedInterruptOutcome(interrupts=interrupts),
        )

    def _ending(
        self, task: Task, view: TaskView, *, run_id: str, resolved: dict[str, Decision]
    ) -> Iterable[BaseEvent]:
        for interrupt in resolved:
            yield activity_delta(interrupt, COMPLETED)
        yield StateDeltaEvent(delta=[])
        if view.state == "failed":
            reason = "".join(p.get("text", "") for p in (view.failure or {}).get("parts", []))
            yield RunErrorEvent(message=reason or "the run failed", code="run_failed")
            return
        answer = view.answer
        text = "".join(p.get("text", "") for p in answer["parts"]) if answer else ""
        yield RunFinishedEvent(thread_id=task.run.thread_id, run_id=run_id, result=text or None)
