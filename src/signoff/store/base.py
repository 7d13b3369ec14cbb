"""The one interface every store implements; the Gate and the runtime see only this.

`Store` is the union of the store's concerns — each module's `…Store` protocol (approvals,
grants, runs, the ledger, other frameworks' runs, the outbox, …), written once there with its
implementation over a transaction (`run`) that every store provides — and of what a store does
as a whole: its connection, its clock, deciding, the audit log. Nothing of the store imports it
back: it stands above the concerns, under the one implementation (`signoff.store.sql`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from signoff.store.approvals import ApprovalStore
from signoff.store.catalog import CatalogStore
from signoff.store.external import ExternalStore
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
    ExternalStore,
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
