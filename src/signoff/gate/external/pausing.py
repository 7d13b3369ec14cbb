"""The pauses of a framework's runs: the pause a run stops on (one per run and set of held
calls, whoever records it), what resuming it needs and the conversation for the people who
decide; the calls that wait on a person; a pause claimed by compare-and-set; and the threads an
integration keeps in signoff's store, appended to with the pause the run ends on."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from signoff import telemetry
from signoff.gate.external.base import RunsBase
from signoff.gate.transcript import bounded
from signoff.store.pauses import NewPause, Pause, PauseStatus
from signoff.types import Approval, canonical_json

__all__ = ["Pausing"]


class Pausing(RunsBase):
    """`ExternalRuns`' pauses, and the threads it keeps."""

    def pause_of(
        self,
        *,
        thread: str,
        approvals: Sequence[str],
        data: Mapping[str, Any],
        agent: str | None = None,
        conversation: Sequence[Mapping[str, Any]] | None = None,
    ) -> NewPause:
        """The pause of the run of `thread` on `approvals`, with what resuming it needs and —
        for the people who decide — the thread's `conversation` so far (`transcript` messages,
        kept `bounded`): the same run paused on the same calls (a re-run, another process) is
        the same pause. Recorded by `pause`, or with the thread's new entries
        (`append_history`)."""
        if conversation is not None:
            data = {**data, "conversation": bounded(conversation)}
        pause_id = hashlib.sha256(
            canonical_json([self.origin, thread, sorted(approvals)])
        ).hexdigest()
        return NewPause(id=pause_id, origin=self.origin, thread_id=thread, agent=agent,
                        data=dict(data), approvals=list(approvals),
                        at=self.now())  # fmt: skip

    async def pause(
        self,
        *,
        thread: str,
        approvals: Sequence[str],
        data: Mapping[str, Any],
        agent: str | None = None,
        conversation: Sequence[Mapping[str, Any]] | None = None,
    ) -> Pause:
        """Record the run's pause (`pause_of`)."""
        new = self.pause_of(thread=thread, approvals=approvals, data=data, agent=agent,
                            conversation=conversation)  # fmt: skip
        return self.paused(new, await self.near(self.store.save_pause(new)))

    def paused(self, new: NewPause, saved: Pause) -> Pause:
        """`saved`, the pause `new` as recorded, counted unless recorded before."""
        if saved.created_at == new.at:
            telemetry.observer.paused("framework")
        return saved

    async def went_on(self, approvals: Sequence[str]) -> None:
        """The run went on past every pause on these approvals: no resumer needs to resume
        them."""
        await self.near(self.store.finish_pauses(approvals, now=self.now()))

    async def waiting(self, thread: str, *, limit: int = 100) -> list[Approval]:
        """The calls of `thread` (of this origin) that wait for a person now, newest first:
        what an app tells its user to decide (each approval's ``/approvals/{id}`` page)."""
        pending = self.store.list_approvals(
            status="pending", origin=self.origin, thread_id=thread, limit=limit
        )
        return await self.near(pending)

    async def open_pause(self, approvals: Sequence[str]) -> Pause | None:
        """The newest pause not done on any of these approvals (the run's last interrupt)."""
        return await self.near(self.store.open_pause(approvals))

    async def get_pause(self, pause_id: str) -> Pause | None:
        """The pause as it stands now (None: there is none of that id)."""
        return await self.store.get_pause(pause_id)

    async def take_pause(
        self, seen: Pause, *, status: PauseStatus, owner: str | None, until: datetime | None,
        now: datetime,
    ) -> bool:  # fmt: skip
        """Set the pause's status and claim (`owner` until `until`) if they still stand as in
        `seen`; False (nothing changed) when another writer moved it since (a
        compare-and-set: `Store.take_pause`)."""
        return await self.store.take_pause(
            seen.id, seen=seen, status=status, owner=owner, until=until, now=now
        )

    # -- threads the framework leaves to the app to keep -------------------------------------

    async def append_history(
        self,
        origin: str,
        thread: str,
        items: Sequence[str],
        *,
        after: int,
        pause: NewPause | None = None,
    ) -> bool:
        """Append `items` to the thread's kept history after the `after` entries read, with
        `pause` recorded in the same transaction — a thread never waits with no pause that
        points a resumer at it. False (nothing written) when another writer appended first."""
        at = self.now()
        if pause is None:
            return await self.near(
                self.store.append_history(origin, thread, items, after=after, now=at)
            )
        saved = await self.near(
            self.store.append_paused(origin, thread, items, after=after, now=at, pause=pause)
        )
        if saved is None:
            return False
        self.paused(pause, saved)
        return True
