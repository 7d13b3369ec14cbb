"""The one interface every store implements; the Gate and the runtime see only this.

It names the values of every concern of the store (`signoff.store.records` and the concerns'
own modules), and nothing of the store imports it back: it stands above them, under the one
implementation (`signoff.store.sql`)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from signoff.store.records import AuditRecord, DecisionPlan, HoldPlan, Moment
from signoff.types import Approval, ApprovalStatus, AuditEntry, Grant

if TYPE_CHECKING:
    from signoff.store.catalog import Catalog
    from signoff.store.checkpoint import Checkpoint
    from signoff.store.external import ExternalRecord, LedgerClaim
    from signoff.store.gauges import Gauges
    from signoff.store.insights import ArgumentMatch, ArgumentTest, GroupKey, GroupStats, Tally
    from signoff.store.ledger import LedgerEntry
    from signoff.store.notes import Note
    from signoff.store.outbox import Delivery, DeliveryStatus, NewDelivery, OutboxEvent
    from signoff.store.pauses import NewPause, Pause, PauseStatus
    from signoff.store.runs import (
        OpenTurn,
        ResumedTurn,
        RunRecord,
        RunStatus,
        RunWrite,
        StoredEvent,
    )
    from signoff.store.verification import AuditReport

__all__ = ["AuditRecord", "DecisionPlan", "HoldPlan", "Moment", "Store"]


class Store(Protocol):
    """Durable approvals, grants and the hash-chained audit log."""

    url: str

    @property
    def notifies_across_processes(self) -> bool: ...

    async def listen(self, callback: Callable[[str], None]) -> None: ...

    async def close(self) -> None: ...

    async def create_approvals(
        self, approvals: Sequence[Approval], *, audit: Sequence[AuditRecord] = ()
    ) -> None: ...

    async def get_approval(self, approval_id: str) -> Approval: ...

    async def get_approvals(self, approval_ids: Sequence[str]) -> list[Approval]: ...

    async def list_approvals(
        self,
        *,
        status: str | None = None,
        run_id: str | None = None,
        batch_id: str | None = None,
        agent: str | None = None,
        tool: str | None = None,
        origin: str | None = None,
        thread_id: str | None = None,
        assigned_to: Collection[str] | None = None,
        before: str | None = None,
        limit: int = 100,
    ) -> list[Approval]: ...

    async def find_approvals(self, short_id: str, *, limit: int = 10) -> list[Approval]: ...

    async def hold(
        self,
        tools: Collection[str],
        plan: Callable[
            [list[Grant], dict[str, tuple[ExternalRecord, Approval | None]], datetime], HoldPlan
        ],
        *,
        keys: Sequence[str] = (),
    ) -> tuple[HoldPlan, list[StoredEvent]]: ...

    async def external_verdicts(
        self, keys: Sequence[str]
    ) -> dict[str, tuple[ExternalRecord, Approval | None]]: ...

    async def resume_turn(
        self,
        run_id: str,
        *,
        agent: str,
        path: str,
        root_id: str,
        owner: str,
        now: datetime,
        lease: timedelta,
    ) -> ResumedTurn | None: ...

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

    async def due_for_expiry(self, now: datetime, *, limit: int = 500) -> list[Approval]: ...

    async def due_for_escalation(self, now: datetime, *, limit: int = 500) -> list[Approval]: ...

    async def clock(self) -> datetime: ...

    def now(self) -> datetime: ...

    async def lease(self, name: str, *, owner: str, now: datetime, until: datetime) -> bool: ...

    async def save_policy(
        self,
        version: str,
        document: dict[str, Any],
        *,
        actor: str,
        at: datetime,
        audit: Sequence[AuditRecord] = (),
        replaces: str | None = None,
    ) -> None: ...

    async def known_policy(self, version: str) -> bool: ...

    async def latest_policy(self) -> tuple[str, dict[str, Any]] | None: ...

    async def latest_policy_version(self) -> str | None: ...

    async def saved_policies(self, versions: Collection[str]) -> frozenset[str]: ...

    async def list_grants(
        self,
        *,
        tool: str | None = None,
        tools: Sequence[str] | None = None,
        revoked: bool = False,
    ) -> list[Grant]: ...

    async def get_grant(self, grant_id: str) -> Grant: ...

    async def revoke_grant(
        self, grant_id: str, *, actor: str, at: datetime, audit: Sequence[AuditRecord] = ()
    ) -> None: ...

    async def audit_length(self) -> int: ...

    async def audit_log(self, *, after: int = 0, limit: int = 1000) -> list[AuditEntry]: ...

    async def audit_changes(
        self, *, after: int = 0, limit: int = 1000
    ) -> tuple[int, list[tuple[int, str]]]: ...

    async def verify_audit(
        self, *, since: Checkpoint | None = None, batch: int = 5000
    ) -> AuditReport: ...

    # -- the runtime's runs (see signoff.store.runs) --

    async def create_run(
        self,
        record: RunRecord,
        *,
        at: datetime,
        lease_until: datetime,
        messages: Sequence[dict[str, Any]] = (),
        events: Sequence[tuple[str, dict[str, Any]]] = (),
    ) -> list[StoredEvent]: ...

    async def append_to_run(
        self,
        run_id: str,
        *,
        at: datetime,
        messages: Sequence[dict[str, Any]] = (),
        events: Sequence[tuple[str, dict[str, Any]]] = (),
        status: RunStatus | None = None,
        owner: str | None = None,
        lease_until: datetime | None = None,
        ancestors: Sequence[str] = (),
    ) -> list[StoredEvent]: ...

    async def claim_run(
        self, run_id: str, *, owner: str, now: datetime, lease: timedelta
    ) -> bool: ...

    async def get_run(self, run_id: str) -> RunRecord: ...

    async def run_exists(self, run_id: str) -> bool: ...

    async def list_runs(
        self,
        *,
        agent: str | None = None,
        status: str | None = None,
        thread_id: str | None = None,
        roots: bool = False,
        updated_after: datetime | None = None,
        before: str | None = None,
        limit: int = 50,
    ) -> list[RunRecord]: ...

    async def count_runs(
        self,
        *,
        agent: str | None = None,
        status: str | None = None,
        thread_id: str | None = None,
        roots: bool = False,
        updated_after: datetime | None = None,
    ) -> int: ...

    async def ready_runs(self, agent: str, *, now: datetime, limit: int = 100) -> list[str]: ...

    async def child_run(self, parent_id: str, parent_key: str) -> RunRecord | None: ...

    async def open_turn(self, run_id: str) -> OpenTurn: ...

    async def run_messages(self, run_id: str) -> list[dict[str, Any]]: ...

    async def run_inputs(self, run_ids: Collection[str]) -> dict[str, str]: ...

    async def thread_messages(self, thread_id: str) -> list[dict[str, Any]]: ...

    async def thread_texts(self, thread_id: str) -> list[str]: ...

    async def add_note(
        self, channel: str, subject: str, key: str, data: dict[str, Any], *, at: datetime
    ) -> bool: ...

    async def notes(self, channel: str, subject: str, *, key: str | None = None) -> list[Note]: ...

    async def end_session(self, session_id: str, *, until: datetime, now: datetime) -> None: ...

    async def session_ended(self, session_id: str) -> bool: ...

    async def run_events(self, run_id: str, *, after: int = 0) -> list[StoredEvent]: ...

    async def events_since(
        self,
        at: datetime,
        *,
        after: tuple[datetime, str, int] | None = None,
        limit: int = 1000,
    ) -> list[StoredEvent]: ...

    async def ledger_start(
        self,
        key: str,
        *,
        run_id: str,
        call_id: str,
        tool: str,
        digest: str,
        at: datetime,
        then: Callable[[LedgerEntry | None], RunWrite | None] | None = None,
        audit: Sequence[AuditRecord] = (),
    ) -> tuple[LedgerEntry | None, list[StoredEvent]]: ...

    async def ledger_entry(self, key: str) -> LedgerEntry | None: ...

    async def ledger_finish(
        self,
        key: str,
        *,
        result: dict[str, Any],
        at: datetime,
        owner: str | None = None,
        fence: int | None = None,
        write: RunWrite | None = None,
        audit: Sequence[AuditRecord] = (),
        durable: bool = True,
    ) -> list[StoredEvent]: ...

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

    # -- the notifications' outbox (signoff.store.outbox) --

    async def outbox_events(self, *, limit: int = 500) -> tuple[int, int, list[OutboxEvent]]: ...

    async def outbox_add(
        self,
        deliveries: Sequence[NewDelivery],
        *,
        cursor: int,
        last: int,
        ids: Callable[[], str],
        at: datetime,
    ) -> bool: ...

    async def outbox_claim(
        self,
        *,
        owner: str,
        now: datetime,
        lease: timedelta,
        sinks: Sequence[str],
        due: datetime | None = None,
        limit: int = 20,
    ) -> list[Delivery]: ...

    async def outbox_done(
        self,
        delivery_id: str,
        *,
        owner: str,
        at: datetime,
        error: str | None = None,
        retry_at: datetime | None = None,
    ) -> bool: ...

    async def outbox(
        self, *, status: DeliveryStatus | None = None, limit: int = 100
    ) -> list[Delivery]: ...

    async def record_unknown(self, record: AuditRecord) -> bool: ...

    async def gauges(self, *, groups: int = 200) -> Gauges: ...

    async def catalog(self, *, limit: int = 200) -> Catalog: ...

    async def decision_stats(
        self, *, since: datetime, top_deciders: int = 3
    ) -> list[GroupStats]: ...

    async def group_sample(
        self, group: GroupKey, *, status: ApprovalStatus, since: datetime, limit: int
    ) -> list[Approval]: ...

    async def count_matching(
        self, group: GroupKey, *, since: datetime, key: str, test: ArgumentTest, value: str
    ) -> dict[str, int]: ...

    async def tally(
        self, group: GroupKey, *, since: datetime, match: ArgumentMatch | None = None
    ) -> Tally: ...

    async def refused_like(
        self, tool: str, *, agent: str | None, since: datetime, match: ArgumentMatch, limit: int
    ) -> list[Approval]: ...
