"""Exactly-once execution over the ledger, for any caller: `await ledger.once(key, fn)`.

ledger = Ledger(store)
result = await ledger.once("langgraph:t1:call_7", lambda: send_email(...))

The first caller of a key claims it in the database and runs `fn`, renewing its claim while
`fn` runs; its result (any JSON value) is recorded. Every later caller — a re-run node, a
resumed copy of the same saved state, another process — gets that recorded result without
running anything. A caller that finds the key claimed by a live worker waits for its result.
One whose worker died mid-call (its process gone, or its claim run out) raises `OutcomeUnknown`:
whether the call happened is unknown, and it is never run again — unless `idempotent`, when the
caller takes the key over and runs it. Each claim carries a fencing token (the store's count of
the key's claims): a worker whose claim was taken over meanwhile records nothing — its `finish`
raises `ClaimLost` — so the new holder's result stands, and `Claim.lost` tells it to stop early.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import logging
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from signoff import telemetry
from signoff.errors import ClaimLost, ExecutionFailed, OutcomeUnknown, SignoffError
from signoff.gate.ids import new_id
from signoff.store.base import AuditRecord, Store
from signoff.store.external import ExternalRecord, LedgerClaim

__all__ = ["Claim", "Ledger", "Recorded", "record_unknown"]

logger = logging.getLogger(__name__)

_HOST = socket.gethostname()
_TICK = timedelta(microseconds=1)


class Ledger:
    """Runs each key's call at most once across processes and crashes (see the module)."""

    def __init__(
        self,
        store: Store,
        *,
        lease: timedelta = timedelta(seconds=30),
        poll_interval: float = 0.2,
        owner: str | None = None,
        renew_on: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self.store = store
        self.lease = lease
        """How long a claim holds without renewal: a worker that stops renewing (a lost
        machine) is taken for dead after it. A worker on this machine whose process is gone is
        taken for dead at once."""
        self.poll_interval = poll_interval
        self.owner = owner or f"{_HOST}:{os.getpid()}:{new_id()[-8:]}"
        self.renew_on = renew_on if getattr(store, "any_loop", False) else None
        """The loop claims are renewed on (a `Bridge`'s, running on a thread of its own), so
        that a caller's loop kept busy by the call itself does not stop the renewals — for a
        store that serves any loop; None: the loop each claim is made on."""
        self._renewals: _Renewals | None = None

    @property
    def renew_every(self) -> float:
        """Seconds between a claim's renewals: a third of its lease."""
        return max(self.lease.total_seconds() / 3, 0.05)

    def renewals(self, loop: asyncio.AbstractEventLoop) -> _Renewals:
        """The claims renewed on `loop` (`renew_on`), by one task."""
        if self._renewals is None or self._renewals.loop is not loop:
            self._renewals = _Renewals(self, loop)
        return self._renewals

    async def once(
        self,
        key: str,
        fn: Callable[[], Awaitable[Any]],
        *,
        idempotent: bool = False,
        wait: float | None = None,
        tool: str = "",
        digest: str = "",
    ) -> Any:
        """Run `fn` once for `key`; return its result (a JSON value), or the one recorded.

        Raises `OutcomeUnknown` for a key whose worker died mid-call (unless `idempotent`),
        `ExecutionFailed` for one whose single execution raised (the first caller gets the
        exception itself), and `TimeoutError` when a live worker has not finished within
        `wait` seconds (None waits as long as it lives)."""
        claim = await self.claim(key, idempotent=idempotent, wait=wait, tool=tool, digest=digest)
        if isinstance(claim, Recorded):
            return claim.value
        try:
            value = await fn()
        except Exception as exc:
            await claim.fail(exc)
            raise
        except BaseException:
            await claim.abandon()  # cancelled midway: whether it ran is unknown
            raise
        await claim.finish(value)
        return value

    async def claim(
        self,
        key: str,
        *,
        idempotent: bool = False,
        wait: float | None = None,
        tool: str = "",
        digest: str = "",
        judged: ExternalRecord | None = None,
    ) -> Claim | Recorded:
        """`once` in two steps, for callers that run the call themselves (on another thread,
        in another loop): the key claimed — run it, then `finish` — or its recorded result.
        `judged`: the key's verdict to run the call, written with the claim
        (`ExternalStore.ledger_claim`). An `idempotent` call's claim and result do not wait for
        the disk: lost with the machine (or, on PostgreSQL, with the server), the key is free
        again and the call runs again, which it may."""
        deadline = None if wait is None else time.monotonic() + wait
        dead_until: datetime | None = None
        while True:
            now = self.store.now()
            # The store takes over a claim whose lease ran out by `now`. One whose worker's
            # process is gone while its lease still runs is taken over as of that lease's end:
            # a compare-and-set on the lease seen, which a renewal or another taker moves on.
            at = now if dead_until is None else max(now, dead_until)
            found = await self.store.ledger_claim(
                key, owner=self.owner, now=at, lease=self.lease, takeover=idempotent,
                tool=tool, digest=digest, judged=judged, durable=not idempotent,
            )  # fmt: skip
            judged = None  # written: a second round only claims
            if found.claimed:
                return Claim(key, self, fence=found.fence, idempotent=idempotent)
            if found.status == "finished":
                return Recorded(value=_recorded(key, found.result))
            if not _alive(found, now):
                if idempotent:
                    # Its worker is gone: the next round takes the key over.
                    dead_until = None if found.lease_until is None else found.lease_until + _TICK
                    continue
                await record_unknown(self.store, key, tool=tool, owner=found.owner)
                raise OutcomeUnknown(
                    f"the call under {key!r} was started by {found.owner or 'a worker'} that "
                    "stopped before recording its result; whether it ran is unknown, so it is "
                    "not run again"
                )
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"the call under {key!r} is still running elsewhere")
            await asyncio.sleep(self.poll_interval)


@dataclass(frozen=True)
class Recorded:
    """The result recorded for a key by its one execution."""

    value: Any


class Claim:
    """A key claimed to run its call now: `finish` with the result, or `fail` with the
    exception the call raised. The claim is renewed until then.

    A claim whose renewals stopped reaching the store for longer than its lease (a stalled
    process, a lost network) may be taken over by an idempotent caller, which runs the call
    again: from then on this claim records nothing. `lost` is set as soon as a renewal finds
    that, and `finish` and `fail` raise `ClaimLost`."""

    def __init__(self, key: str, ledger: Ledger, *, fence: int, idempotent: bool = False) -> None:
        self.key = key
        self.fence = fence
        """Which claim of the key this is (the store counts them): what fences it out once
        another caller takes the key over."""
        self.idempotent = idempotent
        """Whether the call may run again: its result, like its claim, need not wait for the
        disk."""
        self.lost = asyncio.Event()
        """Set once the key is found taken over: the work can stop, its result will not be
        recorded."""
        self._ledger = ledger
        self._loop = asyncio.get_running_loop()
        there = ledger.renew_on
        self._halted = False
        self._renewing: asyncio.Task[None] | None = None
        self._renewals: _Renewals | None = None
        self._guard = threading.Lock()
        """Orders stopping against a renewal beginning on the renewals' loop."""
        self._inflight: concurrent.futures.Future[None] | None = None
        """The renewal under way on the renewals' loop, if one is."""
        if there is None or there is self._loop or not there.is_running():
            self._renewing = asyncio.create_task(self._renew())
        else:
            self._renewals = ledger.renewals(there)
            self._renewals.join(self)

    async def finish(self, value: Any) -> None:
        """Record `value` as the call's result. Raises `ClaimLost` (nothing recorded) when the
        key was taken over meanwhile."""
        await self._record({"value": value})

    async def fail(self, exc: BaseException) -> None:
        """Record that the call raised `exc`; raises `ClaimLost` like `finish`."""
        # It ran (or began to): a second caller gets this, never a second execution.
        await self._record({"error": f"{type(exc).__name__}: {exc}"})

    async def abandon(self) -> None:
        """Stop renewing without a result: the key's outcome stays unknown — to whoever waits
        on it, at once (the claim ends now, not when its lease would have run out)."""
        await self._stop(wait=True)
        store = self._ledger.store
        with contextlib.suppress(Exception):  # unended, it runs out with its lease
            # Fenced like every renewal: a claim taken over never ends the new holder's.
            await store.ledger_renew(
                self.key, owner=self._ledger.owner, fence=self.fence, until=store.now()
            )

    async def _record(self, result: dict[str, Any]) -> None:
        await self._stop()
        owner = self._ledger.owner
        store = self._ledger.store
        # On SQLite the result need not wait for the disk: lost only with the machine, before
        # the next durable commit, it leaves the claim as a crash inside the call leaves it
        # (its outcome unknown, the call never run again), where the claim itself, made
        # before the call ran, waited for the disk. An idempotent call's result never waits:
        # lost, its key is free or unknown, and the call may run again.
        durable = not (self.idempotent or getattr(store, "unsynced_commits_last", False))
        try:
            await store.ledger_finish(
                self.key, result=result, at=store.now(), owner=owner, fence=self.fence,
                durable=durable,
            )  # fmt: skip
        except ClaimLost:
            self._lose()
            logger.warning(
                "the result of the call under %r was not recorded: %s's claim %d was taken "
                "over by another worker, whose result stands",
                self.key, owner, self.fence,
            )  # fmt: skip
            raise

    def _lose(self) -> None:
        """Set `lost`, from whichever loop found it (an `asyncio.Event` is its loop's alone)."""
        if asyncio.get_running_loop() is self._loop:
            self.lost.set()
        else:
            with contextlib.suppress(RuntimeError):  # the claim's loop is gone: nobody waits
                self._loop.call_soon_threadsafe(self.lost.set)

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self._ledger.renew_every)
            if not await self._renew_once():
                return

    async def _renew_once(self) -> bool:
        """Renew the claim once; False once it is over (taken over, or finished)."""
        ledger = self._ledger
        try:
            renewed = await ledger.store.ledger_renew(
                self.key,
                owner=ledger.owner,
                fence=self.fence,
                until=ledger.store.now() + ledger.lease,
            )
        except Exception:  # a missed renewal only shortens the claim
            return True
        if renewed:
            return True
        if not self._halted:  # else finished meanwhile, by this claim's holder
            self._lose()
            logger.warning(
                "%s's claim %d on %r was taken over by another worker while its call ran; "
                "its result will not be recorded",
                ledger.owner, self.fence, self.key,
            )  # fmt: skip
        return False

    async def _stop(self, *, wait: bool = False) -> None:
        """Stop renewing. Renewing here, the renewals are awaited to their end. On another
        loop, only with `wait`: a renewal under way that then finds the key finished fails
        its compare-and-set, harmlessly (it is not taken for a loss once stopped) — but one
        that lands after the claim was ended would hold the key a lease longer."""
        with self._guard:
            self._halted = True
            inflight = self._inflight
        if self._renewals is None:
            assert self._renewing is not None
            self._renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewing
            return
        self._renewals.leave(self)
        if wait and inflight is not None and self._renewals.loop.is_running():
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                async with asyncio.timeout(10):  # its loop may stop before it ends
                    await asyncio.wrap_future(inflight)


class _Renewals:
    """The claims of one ledger renewed on another loop than their own (a bridge's), all by one
    task: a claim joins and leaves without a hop to that loop and back — the ledger's work,
    not each call's. Each is renewed every `Ledger.renew_every` at most, as a claim renewing
    itself is."""

    def __init__(self, ledger: Ledger, loop: asyncio.AbstractEventLoop) -> None:
        self.ledger = ledger
        self.loop = loop
        self._claims: dict[int, Claim] = {}
        self._lock = threading.Lock()
        self._running = False

    def join(self, claim: Claim) -> None:
        with self._lock:
            self._claims[id(claim)] = claim
            if self._running:
                return
            self._running = True
        try:
            asyncio.run_coroutine_threadsafe(self._renew(), self.loop)
        except RuntimeError:  # its loop closed meanwhile: the claim runs out with its lease
            with self._lock:
                self._running = False
            raise

    def leave(self, claim: Claim) -> None:
        with self._lock:
            self._claims.pop(id(claim), None)

    async def _renew(self) -> None:
        try:
            while True:
                await asyncio.sleep(self.ledger.renew_every)
                with self._lock:
                    claims = list(self._claims.values())
                    if not claims:
                        self._running = False  # the next claim starts it again
                        return
                for claim in claims:
                    await self._renew_one(claim)
        finally:
            with self._lock:
                self._running = False

    async def _renew_one(self, claim: Claim) -> None:
        with claim._guard:
            if claim._halted:
                return
            done: concurrent.futures.Future[None] = concurrent.futures.Future()
            claim._inflight = done
        try:
            if not await claim._renew_once():
                self.leave(claim)
        finally:
            done.set_result(None)


def _recorded(key: str, result: dict[str, Any] | None) -> Any:
    if result is None:  # pragma: no cover - finished entries carry their result
        raise OutcomeUnknown(f"the call under {key!r} finished without a result")
    if "error" in result:
        raise ExecutionFailed(f"the one execution of the call under {key!r} failed: "
                              f"{result['error']}")  # fmt: skip
    if "value" not in result:
        # Written by another writer of the ledger (signoff's runtime, the MCP gateway): as is.
        return result
    return result["value"]


def _alive(claim: LedgerClaim, now: datetime) -> bool:
    """Whether the worker that started the call may still be running it."""
    if claim.owner is None or claim.lease_until is None or claim.lease_until <= now:
        return False
    return owner_alive(claim.owner)


def owner_alive(owner: str) -> bool:
    """Whether the process an owner string (``host:pid:...``, a `Ledger`'s) names may still
    run: False only for a process of this machine that is gone."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host == _HOST and pid.isdigit():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return False  # on this machine, and gone
        except PermissionError:
            return True
    return True


async def record_unknown(
    store: Store,
    key: str,
    *,
    tool: str,
    owner: str | None = None,
    run_id: str | None = None,
    call_id: str | None = None,
) -> None:
    """Audit, once per key, that the call under `key` may or may not have run: a person must
    find out (the notifications tell of it). A store away now only loses this record; the
    next caller that finds the key so records it."""
    data = {"tool": tool, "key": key[:500], "owner": owner, "run_id": run_id, "call_id": call_id}
    subject = hashlib.sha256(key.encode()).hexdigest()
    record = AuditRecord(
        actor="signoff", action="unknown", subject=subject, at=store.now(), data=data
    )
    try:
        if await store.record_unknown(record):
            telemetry.observer.unknown_outcome()
    except SignoffError:
        logger.exception("recording the unknown outcome of %r failed", key)
