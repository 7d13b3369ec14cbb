"""The one interface every store implements; the Gate and the runtime see only this.

`Store` is the union of the store's concerns — each module's `…Store` protocol (approvals,
grants, runs, the ledger, the outbox, …), written once there with the implementation over a
transaction (`run`) that every store provides — and of what a store does as a whole: its
connection, its clock, deciding, the audit log. Nothing of the store imports it back: it stands
above the concerns, under the one implementation (`signoff.store.sql`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from signoff.store.approvals import ApprovalStore
from signoff.store.catalog import CatalogStore
from signoff.store.gauges import GaugeStore
from signoff.store.grants import GrantStore
from signoff.store.holding import HoldStore
from signoff.store.insights import InsightStore
from signoff.store.ledger import LedgerStore
from signoff.store.log import LogStore
from signoff.store.notes import NoteStore
from signoff.store.outbox import OutboxStore
from signoff.store.policies import PolicyStore
from signoff.store.records import AuditRecord, DecisionPlan, HoldPlan, Moment
from signoff.store.resume import ResumeStore
from signoff.store.runs import RunStore
from signoff.store.sessions import SessionStore
from signoff.types import Approval, AuditEntry, Grant

if TYPE_CHECKING:
    from signoff.store.checkpoint import Checkpoint
    from signoff.store.external import ExternalRecord, LedgerClaim
    from signoff.store.pauses import NewPause, Pause, PauseStatus
    from signoff.store.verification import AuditReport

__all__ = ["AuditRecord", "DecisionPlan", "HoldPlan", "Moment", "Store"]


class Store(
    ApprovalStore,
    HoldStore,
    PolicyStore,
    RunStore,
    ResumeStore,
    LogStore,
    LedgerStore,
    NoteStore,
    GrantStore,
    OutboxStore,
    InsightStore,
    GaugeStore,
    CatalogStore,
    SessionStore,
    Protocol,
):
    """Durable approvals, grants and the hash-chained audit log."""

    url: str

    @property
    def notifies_across_processes(self) -> bool: ...

    async def listen(self, callback: Callable[[str], None]) -> None: ...

    async def close(self) -> None: ...

    async def decide(
        self,
        approval_ids: Sequence[str],
        plan: Callable[[list[Approval], Moment], DecisionPlan],
    ) -> DecisionPlan: ...

    async def save_decisions(
        self,
        changes: Sequence[tuple[Approval, int]],
        *,
        grants: Sequence[Grant] = (),
        audit: Sequence[AuditRecord] = (),
    ) -> bool: ...

    async def clock(self) -> datetime: ...

    def now(self) -> datetime: ...

    async def lease(self, name: str, *, owner: str, now: datetime, until: datetime) -> bool: ...

    async def audit_length(self) -> int: ...

    async def audit_log(self, *, after: int = 0, limit: int = 1000) -> list[AuditEntry]: ...

    async def audit_changes(
        self, *, after: int = 0, limit: int = 1000
    ) -> tuple[int, list[tuple[int, str]]]: ...

    async def verify_audit(
        self, *, since: Checkpoint | None = None, batch: int = 5000
    ) -> AuditReport: ...

    async def append_audit(self, records: Sequence[AuditRecord]) -> None: ...

    # -- other frameworks' runs (see signoff.store.external) --

    async def external_calls(self, keys: Sequence[str]) -> dict[str, ExternalRecord]: ...

    async def save_pause(self, pause: NewPause) -> Pause: ...

    async def append_paused(
        self,
        origin: str,
        thread_id: str,
        items: Sequence[str],
        *,
        after: int,
        now: datetime,
        pause: NewPause,
    ) -> Pause | None: ...

    async def get_pause(self, pause_id: str) -> Pause | None: ...

    async def ready_pauses(self, origin: str, *, now: datetime, limit: int = 100) -> list[str]: ...

    async def claim_pause(
        self, pause_id: str, *, owner: str, now: datetime, lease: timedelta
    ) -> Pause | None: ...

    async def release_pause(
        self, pause_id: str, *, owner: str, status: PauseStatus, now: datetime
    ) -> bool: ...

    async def finish_pause(self, pause_id: str, *, now: datetime) -> None: ...

    async def open_pause(self, approval_ids: Sequence[str]) -> Pause | None: ...

    async def last_pause(self, approval_ids: Sequence[str]) -> Pause | None: ...

    async def take_pause(
        self,
        pause_id: str,
        *,
        seen: Pause,
        status: PauseStatus,
        owner: str | None,
        until: datetime | None,
        now: datetime,
    ) -> bool: ...

    async def finish_pauses(self, approval_ids: Sequence[str], *, now: datetime) -> None: ...

    async def history(self, origin: str, thread_id: str) -> list[str]: ...

    async def append_history(
        self, origin: str, thread_id: str, items: Sequence[str], *, after: int, now: datetime
    ) -> bool: ...

    async def ledger_claim(
        self,
        key: str,
        *,
        owner: str,
        now: datetime,
        lease: timedelta,
        takeover: bool,
        tool: str = "",
        digest: str = "",
        run_id: str = "external",
        judged: ExternalRecord | None = None,
    ) -> LedgerClaim: ...

    async def ledger_renew(self, key: str, *, owner: str, fence: int, until: datetime) -> bool: ...
