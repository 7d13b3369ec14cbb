"""Time in the Gate: waiting for a decision, and what happens when none comes in time — a call
expires, or signoff decides it as its rule's `on_timeout` says; escalation steps are announced as
they come. What falls due is judged by the store's clock (one for every replica), and swept on
the one replica that holds the sweeper's lease; each change is a compare-and-set, so it is made
once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from signoff import telemetry
from signoff.errors import ApprovalTimeout, SignoffError
from signoff.gate.base import GateBase
from signoff.gate.deciders import applied, approval_of, approvers_at, escalations_due
from signoff.gate.ids import new_id
from signoff.gate.records import escalation_record, lapse_record
from signoff.gate.versions import changed
from signoff.types import AUTOMATIC, Approval, Decision, Expired, Reject

__all__ = ["SWEEPER", "Timing"]

logger = logging.getLogger("signoff.gate")

SWEEPER = "sweeper"
"""The store's lease on letting due approvals lapse and announcing due escalations."""


class Timing(GateBase):
    """The Gate's waiting and sweeping (the Gate is one)."""

    async def wait(
        self, approval_id: str, timeout: float | None = None, *, past: int | None = None
    ) -> Approval:
        """Wait until the approval is decided or expires — or, with `past`, until it is no
        longer at that version (a channel that shows it, to show it again); `ApprovalTimeout`
        after `timeout` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        await self.listen()
        with self.notifier.subscription(approval_id) as decided:
            while True:
                decided.clear()
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise ApprovalTimeout(
                        f"approval {approval_id!r} was not decided within {timeout} s"
                    )
                try:
                    # The read itself may queue behind other work: it gets the time left, no more.
                    async with asyncio.timeout(left):
                        approval = await self.store.get_approval(approval_id)
                        if not approval.pending or past not in (None, approval.version):
                            return approval
                        now = await self.time()
                        if approval.expires_at is not None and approval.expires_at <= now:
                            [expired] = await self.expire([approval])
                            return expired
                except TimeoutError:
                    raise ApprovalTimeout(
                        f"approval {approval_id!r} was not decided within {timeout} s"
                    ) from None
                pause = self._poll if left is None else min(self._poll, left)
                if approval.expires_at is not None:
                    pause = min(pause, (approval.expires_at - now).total_seconds())
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(pause):
                        await decided.wait()

    async def listen(self) -> None:
        """Have decisions taken in other processes wake this gate's waiters (where the store
        can tell: PostgreSQL). Idempotent."""
        if not self._listening:
            await self.store.listen(self.notifier.notify)
            self._listening = True

    async def expire(
        self, approvals: Sequence[Approval], *, now: datetime | None = None
    ) -> list[Approval]:
        """Let pending approvals lapse — each once, a decision that won first standing: one
        whose time is up (at `now`, default this gate's clock) as its rule's `on_timeout`
        says, and any other (a waiter that gives up before then) expires: it never runs."""
        out = []
        await self.catch_up()  # what signoff decides on timeout is by the policy of now
        for approval in approvals:
            moment = now or await self.time()
            lapsed = self._lapse(approval, moment)
            record = lapse_record(approval, lapsed, at=moment)
            if await self.store.save_decisions([(lapsed, approval.version)], audit=[record]):
                self.notifier.notify(approval.id)
                telemetry.decided([lapsed])
                out.append(lapsed)
            else:
                out.append(await self.store.get_approval(approval.id))
        return out

    def _lapse(self, approval: Approval, now: datetime) -> Approval:
        """`approval` as its time running out leaves it: expired, or — once its rule's time has
        come, not before — decided by signoff as the rule's `on_timeout` says; never approved
        when the policy in force denies its call: rejected, saying so."""
        on_timeout = approval.on_timeout
        due = approval.expires_at is not None and approval.expires_at <= now
        decision: Decision
        if on_timeout is None or not due:
            decision = Expired()
        elif on_timeout.decide == "approve":
            denied = self.denied_now(approval)
            if denied is not None:
                decision = Reject(reason=denied)
            elif approval.quorum is not None and approval.requested_args is not None:
                # Edited by one of the people it needs, and nobody else approved the edit:
                # approving it would run one person's choice. The call asked for was replaced.
                decision = Reject(reason="its arguments were edited, and nobody else approved "
                                         "the edit in time")  # fmt: skip
            else:
                decision = approval_of(approval)
        else:
            decision = Reject(reason=on_timeout.reason or "nobody decided in time")
        return applied(approval, decision, actor=AUTOMATIC, at=now)

    async def expire_due(self, now: datetime | None = None) -> list[Approval]:
        """Let every pending approval whose time is up at `now` (default: the store's clock,
        or the clock this gate was given) lapse; return those that lapsed now."""
        now = now or await self.time()
        due = await self.store.due_for_expiry(now)
        return [a for a in await self.expire(due, now=now) if a.decided_by == AUTOMATIC]

    async def escalate_due(self, now: datetime | None = None) -> list[Approval]:
        """Announce each escalation step whose time has come at `now` (as for `expire_due`),
        once: a compare-and-set on the approval, with the audit entry that tells its new
        deciders (the notifier reads it)."""
        now = now or await self.time()
        out = []
        for approval in await self.store.due_for_escalation(now):
            reached = escalations_due(approval, now)
            if reached <= approval.escalated:
                continue
            steps = approval.escalate[approval.escalated : reached]
            deciders = approvers_at(approval, now)
            told = sorted({role for step in steps for role in step.to})
            note = (
                f"{', '.join(told)} may decide it too" if approval.approvers
                else f"{', '.join(told)} told"
            )  # fmt: skip
            escalated = changed(replace(approval, escalated=reached), "escalate", by=AUTOMATIC,
                                at=now, note=note, base=approval)  # fmt: skip
            record = escalation_record(approval, escalated, steps, deciders, at=now)
            if await self.store.save_decisions([(escalated, approval.version)], audit=[record]):
                self.notifier.notify(approval.id)
                out.append(escalated)
        return out

    async def sweep(self, owner: str, *, lease: float = 5.0) -> bool:
        """One round of the sweeper, if `owner` holds (or takes) the store's lease on it for
        `lease` seconds: due approvals lapse, due escalations are announced. Whether it swept:
        one replica at a time does, and another takes over once a lease runs out."""
        now = await self.time()
        until = now + timedelta(seconds=lease)
        if not await self.store.lease(SWEEPER, owner=owner, now=now, until=until):
            return False
        await self.catch_up()  # what signoff decides on timeout is by the policy of now
        await self.expire_due(now)
        await self.escalate_due(now)
        return True

    async def run_sweeper(self, interval: float = 1.0) -> None:
        """Sweep every `interval` seconds until cancelled, on the replica that holds the
        sweeper's lease (renewed each round; another takes it over after five missed rounds).
        A failed round (the database away for a moment) is logged and tried again at the
        next."""
        owner = f"{socket.gethostname()}:{os.getpid()}:{new_id()}"
        while True:
            try:
                await self.sweep(owner, lease=5 * interval)
            except SignoffError:
                logger.exception(
                    "the sweep of due approvals failed; trying again in %s s", interval
                )
            await asyncio.sleep(interval)
