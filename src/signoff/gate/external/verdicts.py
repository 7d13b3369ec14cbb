"""How the calls of a framework's run were judged, and how they stand now: `judge` (the gate
holds each, kept by origin, thread, model response and call id, so a re-run node, a retry or
another replica gets the same verdict and the same approval), and `judged` / `held` /
`records` / `known`, which read it again — from what this process saw where a verdict cannot
have changed, else from the store."""

from __future__ import annotations

import copy
from collections.abc import Collection, Sequence

from signoff.gate.external.base import RunsBase
from signoff.gate.outcome import CheckContext, Outcome
from signoff.gate.steps import Held
from signoff.store.external import ExternalRecord
from signoff.types import Approval, ToolCall

__all__ = ["Verdicts"]


class Verdicts(RunsBase):
    """`ExternalRuns`' judging, and its reading of verdicts and approvals."""

    async def judge(
        self,
        calls: Sequence[ToolCall],
        *,
        thread: str,
        requested_by: str | None = None,
        turn: str | None = None,
    ) -> list[Outcome]:
        """Judge the calls of one model turn (on the bridge's loop): run, block or hold — or, for
        calls judged before, the same outcome with their approval as it stands now. `turn`
        names the model response they came from, where the framework knows it: the same call
        id in another response is another call."""
        calls = [self.kinded(c) for c in calls]
        context = CheckContext(
            thread_id=thread, requested_by=requested_by, origin=self.origin, turn=turn
        )
        unwritten = self._unwritten.get_many(self.key(thread, c.id, turn) for c in calls)
        outcomes = await self.near(
            self.gate.hold_external(calls, context, unwritten=unwritten, previews=self.previews)
        )
        kept = [(o.record.key, o.record, o.written) for o in outcomes if o.record is not None]
        self._records.add((key, record) for key, record, _ in kept)
        # Verdicts to run, written with each call's claim (`claim`); one the store had stands.
        self._unwritten.drop(key for key, _, written in kept if written)
        self._unwritten.add((key, record) for key, record, written in kept if not written)
        return outcomes

    async def judged(
        self,
        calls: Sequence[ToolCall],
        *,
        thread: str,
        requested_by: str | None = None,
        turn: str | None = None,
    ) -> dict[str, Held]:
        """`judge` the turn's calls: how each stands, by call id (as `held` says it)."""
        calls = [self.kinded(c) for c in calls]
        seen = self._records.get_many({self.key(thread, c.id, turn) for c in calls})
        fresh = [c for c in calls if self.key(thread, c.id, turn) not in seen]
        if not fresh:
            return await self.held(thread, [c.id for c in calls], turn=turn)  # only read again
        outcomes = await self.judge(fresh, thread=thread, requested_by=requested_by, turn=turn)
        # The record a call is kept under, with its approval as the same transaction read it —
        # but for a held call proposed again with other arguments, blocked without it.
        found = {o.call.id: Held(record=o.record, approval=o.approval)
                 for o in outcomes if o.record is not None}  # fmt: skip
        again = [i for i, h in found.items() if h.record.kind == "hold" and h.approval is None]
        again += [c.id for c in calls if c.id not in found]  # judged before, by this process
        return found | (await self.held(thread, again, turn=turn) if again else {})

    async def held(
        self, thread: str, call_ids: Sequence[str], *, turn: str | None = None
    ) -> dict[str, Held]:
        """The calls of `thread` (and `turn`) judged before, by call id, with their approvals
        now."""
        known = self.known(thread, call_ids, turn=turn)
        if known is not None:
            return known

        async def read() -> dict[str, Held]:
            records = await self.records(thread, call_ids, turn=turn)
            ids = [r.approval_id for r in records.values() if r.approval_id is not None]
            approvals = await self._approvals(ids)
            return {
                call_id: Held(
                    record=r,
                    approval=None if r.approval_id is None else approvals.get(r.approval_id),
                )
                for call_id, r in records.items()
            }

        return await self.near(read())

    async def records(
        self, thread: str, call_ids: Sequence[str], *, turn: str | None = None
    ) -> dict[str, ExternalRecord]:
        """How the calls of `thread` (and `turn`) were judged, by call id: the verdicts alone,
        which never change (`held` adds the approvals as they stand)."""
        keys = {self.key(thread, i, turn): i for i in call_ids}
        records = self._seen(keys)
        missing = [k for k in keys if k not in records]
        if missing:
            found = await self.near(self.store.external_calls(missing))
            self._records.add(found.items())
            records.update(found)
        return {keys[k]: r for k, r in records.items()}

    async def _approvals(self, ids: Sequence[str]) -> dict[str, Approval]:
        """The approvals by id as they stand (read from the store unless decided: final). Each
        caller gets its own copy: a call's arguments are a dict it may change."""
        found = {i: copy.deepcopy(a) for i, a in self._decided.get_many(ids).items()}
        wanted = [i for i in ids if i not in found]
        if wanted:
            read = await self.store.get_approvals(wanted)
            self._decided.add((a.id, copy.deepcopy(a)) for a in read if not a.pending)
            found.update((a.id, a) for a in read)
        return found

    def known(
        self, thread: str, call_ids: Sequence[str], *, turn: str | None = None
    ) -> dict[str, Held] | None:
        """How the calls stand, without the store, when this process saw every one judged and
        none was held (a verdict to run or block never changes; an approval may): else None."""
        keys = {self.key(thread, i, turn): i for i in call_ids}
        records = self._seen(keys)
        if len(records) < len(keys) or any(r.kind == "hold" for r in records.values()):
            return None
        return {keys[k]: Held(record=r, approval=None) for k, r in records.items()}

    def _seen(self, keys: Collection[str]) -> dict[str, ExternalRecord]:
        """The records of these keys this process judged or read (a verdict never changes)."""
        return self._unwritten.get_many(keys) | self._records.get_many(keys)
