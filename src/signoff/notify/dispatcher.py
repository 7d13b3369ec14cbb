"""The notifier: reads the audit log's events into the outbox, and sends what is due.

Every replica runs one. Reading is a compare-and-set on the outbox's cursor, sending a claim
with a lease (see `signoff.store.outbox`): each notification goes out from one replica, is
tried again with a growing wait while its receiver is down, and survives restarts, since it
waits in the database. A notification can still arrive twice — a sender that dies after its
receiver took the request and before it recorded that — so it carries the same id on every
attempt (the webhook's ``Signoff-Delivery``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

import httpx

from signoff import telemetry
from signoff.errors import NotFoundError
from signoff.gate.background import background
from signoff.gate.ids import new_id
from signoff.gate.notifier import ANY, Notifier
from signoff.notify.email import Email
from signoff.notify.notice import Notice
from signoff.notify.settings import CHANGES, EVENTS, NotifySettings
from signoff.notify.slack import Slack
from signoff.notify.transport import SendFailed, Sink
from signoff.notify.webhook import Webhook
from signoff.store.base import Store
from signoff.store.outbox import Delivery, NewDelivery, OutboxEvent
from signoff.store.times import from_micros
from signoff.types import Approval, approval_to_dict

__all__ = ["Notifications"]

logger = logging.getLogger(__name__)

CLAIM = 10
"""Deliveries claimed at a time."""

Describe = Callable[[Approval, Mapping[str, str]], dict[str, Any]]
"""The approval as a notice shows it, given what its run was started with (by run id)."""


def _plain(approval: Approval, inputs: Mapping[str, str]) -> dict[str, Any]:
    data = approval_to_dict(approval)
    data["input"] = None if approval.run_id is None else inputs.get(approval.run_id)
    return data


class Notifications:
    """Tell the configured sinks of requests, the changes to them (as each sink asks), decisions,
    expiries and unknown outcomes."""

    def __init__(
        self,
        store: Store,
        settings: NotifySettings,
        *,
        base_url: str | None = None,
        describe: Describe = _plain,
        notifier: Notifier | None = None,
        interval: float = 1.0,
        lease: timedelta | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.base_url = (settings.base_url or base_url or "").rstrip("/") or None
        """Links open ``<base_url>/approvals/<id>``; None: the notices carry no link."""
        self.describe = describe
        """The approval as a notice shows it: the API's shape (with ``input``, what the user
        asked its run), its arguments masked."""
        self.notifier = notifier
        self.interval = interval
        """How often the outbox is read when nothing in this process woke the notifier."""
        timeouts = [
            *(hook.timeout for hook in settings.webhooks),
            *(slack.timeout for slack in settings.slack),
            *(mail.timeout for mail in settings.email),
        ]
        self.lease = lease or timedelta(seconds=max(120.0, 2 * CLAIM * max(timeouts, default=0)))
        """How long a claimed batch is this sender's: past what its sends may take, however
        slow each receiver is (each send is held to its sink's timeout)."""
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{new_id()[-8:]}"
        self._http = http or httpx.AsyncClient(follow_redirects=False)
        self._own_http = http is None
        self.sinks: dict[str, Sink] = {}
        for hook in settings.webhooks:
            self.sinks[hook.filters.name] = Webhook(hook, self._http)
        for slack in settings.slack:
            self.sinks[slack.filters.name] = Slack(
                slack, self._http, store=store, current=self.current
            )
        for mail in settings.email:
            self.sinks[mail.filters.name] = Email(mail)

    async def current(self, approval_id: str) -> dict[str, Any] | None:
        """The approval as a notice shows it, read now; None when it is gone."""
        approval = (await self._approvals([approval_id])).get(approval_id)
        if approval is None:
            return None
        runs = set() if approval.run_id is None else {approval.run_id}
        return self.describe(approval, await self.store.run_inputs(runs))

    def slack(self, name: str) -> Slack | None:
        sink = self.sinks.get(name)
        return sink if isinstance(sink, Slack) else None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Notifications]:
        """Send for as long as the block lasts. The outbox's cursor is placed first, so every
        event from then on is told."""
        await self.store.outbox_events(limit=0)
        try:
            async with background(self.run()):
                yield self
        finally:
            if self._own_http:
                await self._http.aclose()

    async def run(self) -> None:
        woken = asyncio.Event()
        with (
            self.notifier.subscription(ANY)
            if self.notifier is not None
            else contextlib.nullcontext(woken)
        ) as woken:
            while True:
                woken.clear()
                try:
                    await self.pump()
                except Exception:  # the database away, or a bug: never the end of notifying
                    logger.exception("sending notifications failed; trying again")
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.interval):
                        await woken.wait()

    async def pump(self) -> int:
        """Read every new event into the outbox, then send every due notification; return
        how many were sent."""
        while await self.fill():
            pass
        sent = 0
        started = await self.store.clock()  # what failed during this round waits for the next
        while True:
            claimed = await self.store.outbox_claim(
                owner=self.owner, now=self.store.now(), due=started, lease=self.lease,
                sinks=list(self.sinks), limit=CLAIM,
            )  # fmt: skip
            if not claimed:
                return sent
            # The batch's approvals read once, whatever number of sinks tell of each.
            approvals = await self._approvals([d.subject for d in claimed if d.kind != "unknown"])
            runs = {a.run_id for a in approvals.values() if a.run_id is not None}
            inputs = await self.store.run_inputs(runs)
            shown = {i: self.describe(a, inputs) for i, a in approvals.items()}
            # Sinks at once; each sink's in order, so a decision never arrives before its request.
            by_sink: dict[str, list[Delivery]] = {}
            for delivery in claimed:
                by_sink.setdefault(delivery.sink, []).append(delivery)
            results = await asyncio.gather(*(self._in_order(d, shown) for d in by_sink.values()))
            sent += sum(results)

    async def _in_order(
        self, deliveries: Sequence[Delivery], approvals: Mapping[str, dict[str, Any]]
    ) -> int:
        # A delivery whose claim may have run out (slow receivers before it) is left for the
        # next round: another sender may have it by now.
        until = time.monotonic() + self.lease.total_seconds() * 0.8
        sent = 0
        for delivery in deliveries:
            if time.monotonic() >= until:
                break
            sent += await self._deliver(delivery, approvals.get(delivery.subject))
        return sent

    async def fill(self, *, limit: int = 500) -> bool:
        """Turn the next audit entries into deliveries; whether there may be more."""
        cursor, last, events = await self.store.outbox_events(limit=limit)
        if last == cursor:
            return False
        approvals = await self._approvals([e.subject for e in events if e.kind != "unknown"])
        deliveries = [
            NewDelivery(sink=name, event=event)
            for event in events
            for name, sink in self.sinks.items()
            if _wanted(sink, event, approvals.get(event.subject))
        ]
        # Not moved: another replica read these; the next read goes on from where it left.
        return await self.store.outbox_add(
            deliveries, cursor=cursor, last=last, ids=new_id, at=self.store.now()
        )

    async def _approvals(self, ids: Sequence[str]) -> dict[str, Approval]:
        """The approvals of `ids` in one read; one by one only when some id names none (a
        row deleted by hand), to leave out just those."""
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        try:
            return {a.id: a for a in await self.store.get_approvals(wanted)}
        except NotFoundError:
            found: dict[str, Approval] = {}
            for approval_id in wanted:
                with contextlib.suppress(NotFoundError):
                    found[approval_id] = await self.store.get_approval(approval_id)
            return found

    async def _deliver(self, delivery: Delivery, approval: dict[str, Any] | None) -> bool:
        sink = self.sinks[delivery.sink]  # only this sender's sinks are claimed
        try:
            await sink.send(self._notice(delivery, approval))
        except Exception as exc:
            if not isinstance(exc, SendFailed):  # a bug, or data no sink can send: given up
                logger.exception("notifying %s of %s failed", delivery.sink, delivery.kind)
                exc = SendFailed(f"{type(exc).__name__}: {exc}", retry=False)
            now = self.store.now()
            attempts = delivery.attempts + 1
            retry = exc.retry and attempts < self.settings.retry.attempts
            wait = self.settings.retry.delay(attempts)
            telemetry.observer.notification_failed(type(sink).__name__.lower(), not retry)
            level = logging.INFO if retry else logging.WARNING
            logger.log(level, "notifying %s of %s failed (attempt %d): %s",
                       delivery.sink, delivery.kind, attempts, exc)  # fmt: skip
            await self.store.outbox_done(
                delivery.id, owner=self.owner, at=now, error=str(exc),
                retry_at=now + timedelta(seconds=wait) if retry else None,
            )  # fmt: skip
            return False
        await self.store.outbox_done(delivery.id, owner=self.owner, at=self.store.now())
        return True

    def _notice(self, delivery: Delivery, approval: dict[str, Any] | None) -> Notice:
        """The notice of `delivery`, with its approval as `describe` shows it (None: an
        unknown outcome, or an approval no longer there)."""
        event = delivery.data
        data = event.get("data", {})
        tool = (approval or {}).get("tool") or data.get("tool") or "a tool call"
        return Notice(
            id=delivery.id,
            kind=delivery.kind,
            at=from_micros(event.get("at", 0)),
            actor=str(event.get("actor", "signoff")),
            tool=str(tool),
            approval=approval,
            data=data,
            link=self._link(delivery, data),
        )

    def _link(self, delivery: Delivery, data: dict[str, Any]) -> str | None:
        if self.base_url is None:
            return None
        if delivery.kind != "unknown":
            return f"{self.base_url}/approvals/{delivery.subject}"
        run_id = data.get("run_id")
        return f"{self.base_url}/#/runs/{run_id}" if run_id else f"{self.base_url}/"


def _wanted(sink: Sink, event: OutboxEvent, approval: Approval | None) -> bool:
    filters = sink.filters
    if isinstance(sink, Slack) and sink.updates and event.kind in CHANGES:
        # A bot keeps its messages about a call up to date: every change to a call it may
        # have posted about is one for it, whatever events it posts.
        filters = replace(filters, events=frozenset(EVENTS))
    facts: dict[str, Any] = (
        {"agent": approval.call.agent, "tool": approval.call.name, "rule": approval.rule}
        if approval is not None
        else event.data
    )
    agent, tool, rule = (facts.get(k) for k in ("agent", "tool", "rule"))
    if event.kind == "unknown":
        # The ledger knows the tool, not the agent or rule: a call that may have run twice, or
        # not at all, is told to every sink that hears of unknown outcomes of that tool.
        return filters.wants("unknown", agent=None, tool=_text(tool), rule=None, loose=True)
    return filters.wants(
        event.kind,
        agent=_text(agent),
        tool=_text(tool),
        rule=_text(rule),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
