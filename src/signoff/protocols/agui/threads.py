"""An agent's AG-UI threads as the store holds them: each task with the interrupts it raised,
the thread's shared state and its JSON Patches, the conversation a client holds — each read
afresh, so a reload, another replica or a client that joins now sees what the streams showed.

The channel's notes map each AG-UI run of a thread to the task (the signoff run) it started or
resumed, ``{threadId, runId} → taskId``, with the id of the user message it was given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jsonpatch
from ag_ui.core import Message

from signoff.protocols.a2a.tasks import TaskView, task_state
from signoff.protocols.agui.mapping import Refused, interrupt_id, summary, task_messages
from signoff.redaction import Redaction
from signoff.store import Store
from signoff.store.runs import RunRecord
from signoff.types import Approval

__all__ = ["CHANNEL", "Task", "Threads"]

CHANNEL = "agui"
"""The store's notes of this channel: which task each AG-UI run of a thread started or resumed."""


@dataclass(kw_only=True)
class Task:
    """One task of the thread as the state shows it, with what the stream needs of it."""

    run: RunRecord
    view: TaskView
    ids: dict[str, str]
    """Interrupt id by approval id, in the order the task held them."""
    pending: list[Approval]
    decided: list[Approval]

    @property
    def open(self) -> dict[str, Approval]:
        """The pending calls by interrupt id, in the order the task held them."""
        waiting = {a.id: a for a in self.pending}
        return {i: waiting[a] for a, i in self.ids.items() if a in waiting}


class Threads:
    """The threads of `agent` in `store`, arguments masked by `redaction`."""

    def __init__(self, store: Store, agent: str, redaction: Redaction) -> None:
        self.store = store
        self.agent = agent
        self.redaction = redaction

    async def read(self, run_id: str, record: RunRecord | None = None) -> Task:
        """The task as it stands now."""
        run = record or await self.store.get_run(run_id)
        view = TaskView(
            run_id=run.id, agent=run.agent, context_id=run.thread_id, redaction=self.redaction
        )
        for event in await self.store.run_events(run.id):
            view.see(event)
        ids = {a: interrupt_id(run.id, n) for n, a in enumerate(view.requested, 1)}
        pending = await self.store.list_approvals(status="pending", run_id=run.id, limit=500)
        waiting = {a.id for a in pending}
        decided = await self.store.get_approvals([a for a in view.requested if a not in waiting])
        return Task(run=run, view=view, ids=ids, pending=pending, decided=decided)

    async def latest(self, thread: str) -> Task | None:
        """The thread's last task, if it has one."""
        for run in await self.store.list_runs(
            thread_id=thread, agent=self.agent, roots=True, limit=1
        ):
            return await self.read(run.id, run)
        return None

    async def check(self, thread: str) -> None:
        """`Refused` for a thread that is another agent's conversation (or a sub-agent's)."""
        for latest in await self.store.list_runs(thread_id=thread, limit=1):
            if latest.agent != self.agent or latest.parent_id is not None:
                raise Refused(
                    f"thread {thread!r} is a conversation of another agent", "wrong_thread"
                )

    async def said(self, thread: str) -> set[str]:
        """The ids of the user messages the thread's runs were given."""
        return {str(n.data.get("message")) for n in await self.store.notes(CHANNEL, thread)}

    async def conversation(self, thread: str, resumed: Task) -> list[Message]:
        """The thread's conversation as its streams showed it, over the tasks the state covers
        (the 50 most recent); the resumed task's up to where this run takes it on."""
        started: dict[str, str | None] = {}
        for note in await self.store.notes(CHANNEL, thread):  # the first: the run that started it
            started.setdefault(str(note.data["task"]), note.data.get("message"))
        messages: list[Message] = []
        runs = await self.store.list_runs(thread_id=thread, agent=self.agent, roots=True)
        for run in reversed(runs):
            events = await self.store.run_events(run.id)
            if run.id == resumed.run.id:
                events = [e for e in events if e.seq <= resumed.view.last_seq]
            user = started.get(run.id)
            if user in {m.id for m in messages}:
                user = None  # a resume's last user message, which another task started with
            messages += task_messages(run, events, user, self.redaction)
        return messages

    async def state(self, thread: str) -> dict[str, Any]:
        """The thread's shared state, read afresh."""
        last_runs: dict[str, str] = {}
        for note in await self.store.notes(CHANNEL, thread):
            last_runs[str(note.data["task"])] = note.key
        tasks: dict[str, Any] = {}
        pending: dict[str, Any] = {}
        runs = await self.store.list_runs(thread_id=thread, agent=self.agent, roots=True)
        for run in reversed(runs):
            task = await self.read(run.id, run)
            status = task_state(task.view.state, run.status, bool(task.pending))
            tasks[run.id] = {
                "status": status,
                "lastRunId": last_runs.get(run.id),
                "lastInterruptId": next(reversed(task.ids.values()), None),
                "summaries": [summary(a) for a in task.decided],
            }
            for interrupt, approval in task.open.items():
                pending[interrupt] = {
                    "interruptId": interrupt,
                    "taskId": run.id,
                    "toolCallId": f"{run.id}-{approval.call.id}",
                    "tool": approval.call.name,
                    "reason": approval.reason,
                    "version": approval.version,
                }
        return {"view": {"tasks": tasks, "pendingInterrupts": pending}}

    async def delta(
        self, thread: str, before: dict[str, Any]
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The state now, and the JSON Patch from `before` to it."""
        after = await self.state(thread)
        return after, list(jsonpatch.make_patch(before, after))
