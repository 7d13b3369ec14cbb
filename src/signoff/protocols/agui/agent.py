"""One AG-UI run of an agent, start to end: a new turn of the conversation starts a task, a run
with ``resume[]`` answers the interrupts the thread's last task raised and streams it on.

Each AG-UI run is mapped to the task it starts or resumes (`threads`). A held batch ends the run
with ``RUN_FINISHED`` ``outcome: interrupt``: one interrupt per pending call, after the
assistant's words, one ``ACTIVITY_SNAPSHOT`` (``HITL_FORM``) per call and a ``STATE_DELTA``. The
next run on the thread answers every open interrupt in ``resume[]``; its decisions go through the
gate like any other, and the task goes on in the same run log the web inbox and A2A read. That run
opens with a ``MESSAGES_SNAPSHOT`` of the conversation so far: the results it streams answer calls
an earlier run streamed.

An answer made on a version of a call that changed since (edited, voted on, in the inbox or
anywhere) takes nothing, and the run ends on the open interrupts again, each with its call as it
stands, saying what changed.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ag_ui.core import (
    BaseEvent,
    MessagesSnapshotEvent,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
)

from signoff.errors import (
    ConflictError,
    ForbiddenError,
    InvalidDecisionError,
    InvalidEditError,
    StaleDecisionError,
)
from signoff.gate.ids import new_id
from signoff.protocols.agui.mapping import (
    Projection,
    Refused,
    activity_delta,
    decided_patch,
    decision_of,
    last_user,
    ops,
    settled_patch,
)
from signoff.protocols.agui.questions import asked
from signoff.protocols.agui.stream import TaskStream
from signoff.protocols.agui.threads import CHANNEL, Task, Threads
from signoff.protocols.ids import id_problem
from signoff.server.service import Principal, Service
from signoff.types import Approval, Decision, Reject

__all__ = ["AguiAgent"]

logger = logging.getLogger("signoff.protocols.agui")


class AguiAgent:
    """The AG-UI endpoint of one agent, over the service that runs it."""

    def __init__(self, service: Service, agent: str) -> None:
        self.service = service
        self.agent = agent
        self.store = service.store
        self.threads = Threads(service.store, agent, service.redaction)
        self.projection = Projection(service.redaction, service.gate.edit_schema)
        self.stream = TaskStream(service, self.threads, self.projection)

    async def run(self, body: RunAgentInput, who: Principal) -> AsyncIterator[BaseEvent]:
        """The AG-UI events of one run: a new turn of the conversation, or the resume of the
        task its last run left waiting. Whatever goes wrong ends it with RUN_ERROR."""
        yield RunStartedEvent(thread_id=body.thread_id, run_id=body.run_id)
        try:
            async for event in self._run(body, who):
                yield event
        except Refused as refused:  # raised before anything changed
            yield RunErrorEvent(message=str(refused), code=refused.code)
        except Exception:
            logger.exception("AG-UI run %s of thread %s failed", body.run_id, body.thread_id)
            yield RunErrorEvent(message="the server failed on this run", code="internal_error")

    async def _run(self, body: RunAgentInput, who: Principal) -> AsyncIterator[BaseEvent]:
        thread, run_id = body.thread_id, body.run_id
        for name, value in (("threadId", thread), ("runId", run_id)):
            problem = id_problem(name, value, required=True)
            if problem is not None:  # before the store reads anything with them
                raise Refused(problem, "invalid_input")
        await self.threads.check(thread)
        state = await self.threads.state(thread)  # as the run finds it: changes come as deltas
        yield StateSnapshotEvent(snapshot=state)
        message_id, text = last_user(body.messages)
        planned: str | None = None
        # This very turn sent again (a retry; a resume sent again is taken as a resume).
        retries = [] if body.resume else await self.store.notes(CHANNEL, thread, key=run_id)
        for taken in retries:
            planned = str(taken.data["task"])
            if await self.store.run_exists(planned):
                retried = await self.threads.read(planned)
                async for event in self.stream.run(thread, state, retried, run_id=run_id, after=0):
                    yield event
                return
        resolved: dict[str, Decision] = {}
        task: Task | None = None
        after = 0
        if body.resume:
            try:
                resumed = await self._resumed(thread, body.resume, message_id, who)
            except StaleDecisionError as stale:
                async for event in self._asked_again(thread, run_id, stale):
                    yield event
                return
            for event in resumed.told:
                yield event
            task, resolved, after = resumed.task, resumed.resolved, resumed.after
        if task is None:
            task = await self._start(thread, run_id, planned, message_id, text, who)
            after = 0
        else:
            await self.store.add_note(
                CHANNEL, thread, run_id, {"task": task.run.id, "message": message_id},
                at=datetime.now(UTC),
            )  # fmt: skip
            state, delta = await self.threads.delta(thread, state)
            if delta:
                yield StateDeltaEvent(delta=ops(delta))
        async for event in self.stream.run(
            thread, state, task, run_id=run_id, after=after, resolved=resolved
        ):
            yield event

    async def _resumed(
        self,
        thread: str,
        resume: Sequence[ResumeEntry],
        message_id: str | None,
        who: Principal,
    ) -> _Resumed:
        """Take `resume` (`_resume`): where the run goes on from, and what it tells first."""
        task, resolved, earlier = await self._resume(thread, resume, message_id, who)
        after = task.view.last_seq
        counted = await self._counted(task, resolved)
        if counted is not None:
            # Approvals counted toward calls that need more people: the task waits on, and
            # this run tells its pause again, at once.
            after = counted
            resolved = {}
        done = task.view.state in ("completed", "failed")
        # The interrupts were decided elsewhere and the task is over: the new words go on.
        moves_on = not task.open and done and self._new(message_id, await self.threads.said(thread))
        told: list[BaseEvent] = []
        if not moves_on:
            # This run streams the results of calls an earlier run started: it opens with the
            # conversation so far, those calls in it, so that the run read alone (a validator's
            # view, a client that joins now) knows what the results answer.
            told.append(
                MessagesSnapshotEvent(messages=await self.threads.conversation(thread, task))
            )
        told += [activity_delta(i, decided_patch(d)) for i, d in resolved.items()]
        told += [activity_delta(i, settled_patch(a, done=done)) for i, a in earlier.items()]
        return _Resumed(task=None if moves_on else task, resolved=resolved, after=after, told=told)

    # -- starting and resuming ---------------------------------------------------------------

    async def _start(
        self,
        thread: str,
        run_id: str,
        planned: str | None,
        message_id: str | None,
        text: str,
        who: Principal,
    ) -> Task:
        """A new turn: the task started, its id reserved for this AG-UI run first (a retry of
        the run streams the same task instead of starting another)."""
        latest = await self.threads.latest(thread)
        if latest is not None and latest.open:
            raise Refused(
                "the thread's last run ended on interrupts that are still open: "
                f"{', '.join(latest.open)}; answer each of them in resume[]",
                "open_interrupts",
            )
        if not text:
            raise Refused("the input has no user message to run on", "no_input")
        if planned is None:
            planned = new_id()
            mapping = {"task": planned, "message": message_id}
            if not await self.store.add_note(
                CHANNEL, thread, run_id, mapping, at=datetime.now(UTC)
            ):
                [taken] = await self.store.notes(CHANNEL, thread, key=run_id)
                planned = str(taken.data["task"])  # a retry running beside this one
        try:
            await self.service.start_run(
                self.agent, thread, text, started_by=who.name, run_id=planned
            )
        except ConflictError as exc:
            if not await self.store.run_exists(planned):
                raise Refused(f"the thread has a run still going: {exc}", "busy") from None
        return await self.threads.read(planned)

    async def _resume(
        self,
        thread: str,
        resume: Sequence[ResumeEntry],
        message_id: str | None,
        who: Principal,
    ) -> tuple[Task, dict[str, Decision], dict[str, Approval]]:
        """Take `resume`: the task it answers (as it was before), the decisions taken on its
        open interrupts, and the interrupts it names that were decided already (elsewhere, or
        by this same resume sent before) — those it leaves as they were."""
        task = await self.threads.latest(thread)
        if task is None:
            raise Refused("the thread has no run to resume", "nothing_to_resume")
        named = [entry.interrupt_id for entry in resume]
        _check_answers(named, task)
        by_id = {interrupt: approval for approval, interrupt in task.ids.items()}
        questions = {a.id for a in (*task.pending, *task.decided) if asked(a)}
        answers = {
            entry.interrupt_id: decision_of(entry, question=by_id[entry.interrupt_id] in questions)
            for entry in resume
        }
        decisions = {interrupt: decision for interrupt, (decision, _) in answers.items()}
        opened = task.open
        if (
            not opened
            and task.view.state == "working"
            and self._new(message_id, await self.threads.said(thread))
        ):
            raise Refused(
                "the thread's task is still going (its interrupts were decided elsewhere): "
                "send the new message once it has finished; nothing changed",
                "busy",
            )
        earlier = {i: a for a in task.decided for i in named if by_id.get(i) == a.id}
        taking = {i: d for i, d in decisions.items() if i in opened}
        if taking:
            seen = {
                opened[i].id: v for i, (_, v) in answers.items() if i in taking and v is not None
            }
            if not await self._decide(task, taking, seen, who):
                # Decided meanwhile (the inbox, or this same resume sent twice at once).
                now = await self.threads.read(task.run.id)
                earlier |= {i: a for a in now.decided for i in taking if by_id.get(i) == a.id}
                taking = {}
        for interrupt, approval in earlier.items():
            _check_answered_once(interrupt, approval, decisions[interrupt])
        return task, taking, earlier

    async def _decide(
        self, task: Task, taking: Mapping[str, Decision], seen: dict[str, int], who: Principal
    ) -> bool:
        """Decide the open interrupts `taking` answers, each on the version `seen` names; False
        when all of them were decided meanwhile. `StaleDecisionError` when one changed since
        (nothing taken: the run asks again, `_asked_again`); `Refused` for a decision refused."""
        opened = task.open
        try:
            await self.service.decide_batch(
                {opened[i].id: d for i, d in taking.items()},
                actor=who.name,
                roles=who.roles,
                versions=seen,
            )
        except InvalidEditError as exc:
            raise Refused(
                f"{exc} (at {exc.path or '/'}); nothing changed", "invalid_edit"
            ) from None
        except (InvalidDecisionError, ForbiddenError) as exc:
            raise Refused(f"{exc}; nothing changed", "refused") from None
        except ConflictError:
            now = await self.threads.read(task.run.id)
            if any(i in now.open for i in taking):
                raise
            return False
        return True

    async def _asked_again(
        self, thread: str, run_id: str, stale: StaleDecisionError
    ) -> AsyncIterator[BaseEvent]:
        """The run's end when its resume was made on a version of a call that changed since:
        nothing was taken, and the open interrupts come again, each with its call as it stands
        now (its activity too), the changed one saying what changed — the next run answers
        them. (AG-UI lets a run whose answers leave interrupts open end on them again.)"""
        task = await self.threads.latest(thread)
        if task is None or not task.open:  # decided meanwhile after all: nothing to answer
            raise Refused(f"{stale}; nothing was decided by this resume", "stale_decision")
        refusal = f"Nothing was decided: {stale}."
        words = self.projection.request_words(task.open.values(), agent=task.run.agent)
        for event in self.stream.activities(task, f"{refusal}\n\n{words}"):
            yield event
        yield self.stream.interrupted(
            task, run_id, refusal=lambda a: refusal if a.id == stale.approval_id else None
        )

    async def _counted(self, task: Task, resolved: Mapping[str, Decision]) -> int | None:
        """When this resume's decisions left some of them open — approvals counted toward a
        call that needs several people — the number of the event before the task's last
        pause; else None."""
        opened = task.open
        if not any(opened[i].quorum is not None for i in resolved if i in opened):
            return None  # no call that needs several people: each decision decided it
        now = await self.threads.read(task.run.id)
        if not any(i in now.open for i in resolved):
            return None
        paused = [e.seq for e in await self.store.run_events(task.run.id) if e.type == "paused"]
        return paused[-1] - 1 if paused else None

    def _new(self, message_id: str | None, said: set[str]) -> bool:
        """Whether the input's last user message is one no earlier run was given."""
        return message_id is not None and message_id not in said


@dataclass(frozen=True, kw_only=True)
class _Resumed:
    """Where a run that resumes goes on from, once its ``resume[]`` is taken."""

    task: Task | None
    """The task it streams on; None when the task is over and the new words start another."""
    resolved: dict[str, Decision]
    """The decisions it took, by interrupt id."""
    after: int
    """The number of the log's last event the stream goes on after."""
    told: list[BaseEvent]
    """What the run tells first: the conversation so far, and what was decided."""


def _check_answered_once(interrupt: str, approval: Approval, decision: Decision) -> None:
    """`Refused` naming who answered, for another answer to a question answered already (the
    same answer again is a retry; a cancelled entry lets it go)."""
    if not asked(approval) or isinstance(decision, Reject) or decision == approval.decision:
        return
    by = f" by {approval.decided_by!r}" if approval.decided_by else ""
    raise Refused(
        f"resume entry {interrupt}: the question was already {approval.status}{by}; nothing "
        "changed (resume it with status cancelled to go on)",
        "conflict",
    )


def _check_answers(named: list[str], task: Task) -> None:
    """`Refused` unless the interrupts `named` answer each open interrupt of `task` once, and
    nothing else."""
    twice = sorted({i for i in named if named.count(i) > 1})
    unknown = [i for i in named if i not in task.ids.values()]
    missing = [i for i in task.open if i not in named]
    problems = [f"answered twice: {', '.join(twice)}"] if twice else []
    if unknown:
        problems.append(f"not interrupts of the thread's last task: {', '.join(unknown)}")
    if missing:
        problems.append(f"not answered: {', '.join(missing)}")
    if problems:
        raise Refused(
            "resume[] must answer every open interrupt exactly once — "
            + "; ".join(problems)
            + "; nothing changed",
            "invalid_resume",
        )
