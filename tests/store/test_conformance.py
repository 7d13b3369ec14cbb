"""One conformance suite, run against SQLite and against the real PostgreSQL server."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from signoff import (
    Approve,
    Context,
    Edit,
    Expired,
    Grant,
    NotFoundError,
    Reject,
    Scope,
    ToolCall,
)
from signoff.errors import (
    ClaimLost,
    ConflictError,
    InvalidArgumentsError,
    OutcomeUnknown,
    StoreError,
)
from signoff.gate.once import Ledger
from signoff.store import AuditRecord, DecisionPlan, SQLStore, Store, open_store
from signoff.store.base import Moment
from signoff.store.external import LedgerClaim
from signoff.store.ledger import LedgerEntry
from signoff.store.migrations import LATEST
from signoff.store.pauses import NewPause, Pause
from signoff.types import Approval

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def approval(id: str, *, tool: str = "delete_pod", batch: str = "b1", **fields: object) -> Approval:
    return Approval(
        id=id,
        call=ToolCall(
            id=f"call-{id}", name=tool, args={"name": "nginx-123", "n": [1, "é"]}, agent="ops"
        ),
        batch_id=batch,
        run_id=fields.pop("run_id", "r1"),  # type: ignore[arg-type]
        thread_id="t1",
        rule="rules[0]",
        reason="approval required: delete_pod",
        requested_at=T0,
        **fields,  # type: ignore[arg-type]
    )


def record(action: str, subject: str, **data: object) -> AuditRecord:
    return AuditRecord(actor="alice", action=action, subject=subject, data=dict(data), at=T0)


async def test_an_approval_round_trips_exactly(store: SQLStore):
    original = approval(
        "a1", expires_at=T0 + timedelta(minutes=30), approvers=("ops",), forbid_self_approval=True,
        destructive=True, requested_by="bob",
    )  # fmt: skip
    await store.create_approvals([original])
    assert await store.get_approval("a1") == original


async def test_a_resource_read_and_its_grant_keep_their_kind(store: SQLStore):
    read = ToolCall(id="r", name="file:///secrets/a", server="fs", kind="resource")
    held = replace(approval("a1"), call=read)
    await store.create_approvals([held])
    assert await store.get_approval("a1") == held
    grant = Grant(
        id="g1", tool=read.name, server="fs", kind="resource", scope="global", created_by="alice",
        created_at=T0,
    )  # fmt: skip
    decided = replace(held, status="approved", decision=Approve(always=Scope(kind="global")))
    assert await store.save_decisions([(replace(decided, version=2), 1)], grants=[grant])
    assert await store.list_grants(tool=read.name) == [grant]


async def test_an_unknown_approval_is_not_found(store: SQLStore):
    with pytest.raises(NotFoundError, match="no approval with id 'nope'"):
        await store.get_approval("nope")
    await store.create_approvals([approval("a1")])
    with pytest.raises(NotFoundError, match="'x'"):
        await store.get_approvals(["a1", "x"])


async def test_listing_is_newest_first_filtered_and_paged(store: SQLStore):
    await store.create_approvals(
        [approval(f"a{i}", tool="rm" if i % 2 else "cp") for i in range(1, 8)]
    )
    assert [a.id for a in await store.list_approvals(tool="rm")] == ["a7", "a5", "a3", "a1"]
    first = await store.list_approvals(limit=3)
    assert [a.id for a in first] == ["a7", "a6", "a5"]
    assert [a.id for a in await store.list_approvals(limit=3, before=first[-1].id)] == [
        "a4",
        "a3",
        "a2",
    ]
    assert await store.list_approvals(status="approved") == []


async def test_approvals_are_found_by_the_exact_end_of_their_id(store: SQLStore):
    await store.create_approvals([approval(i) for i in ("a1-x_y", "a2-X_Y", "a3-x%y", "a4-zx_y")])
    assert [a.id for a in await store.find_approvals("x_y")] == ["a4-zx_y", "a1-x_y"]
    assert [a.id for a in await store.find_approvals("x_y", limit=1)] == ["a4-zx_y"]
    assert [a.id for a in await store.find_approvals("X_Y")] == ["a2-X_Y"]  # case counts
    assert [a.id for a in await store.find_approvals("%y")] == ["a3-x%y"]  # no wildcards
    assert [a.id for a in await store.find_approvals("a1-x_y")] == ["a1-x_y"]  # a whole id
    assert await store.find_approvals("0a1-x_y") == []
    assert await store.find_approvals("_") == []


async def test_a_decision_is_a_compare_and_set_on_the_version(store: SQLStore):
    pending = approval("a1")
    await store.create_approvals([pending])
    decided = replace(
        pending, status="approved", decision=Approve(), decided_by="alice", decided_at=T0, version=2
    )
    assert await store.save_decisions([(decided, 1)], audit=[record("decision", "a1")])
    assert await store.get_approval("a1") == decided
    rejected = replace(decided, status="rejected", decision=Reject(reason="x"))
    assert not await store.save_decisions([(rejected, 1)], audit=[record("decision", "a1")])
    assert not await store.save_decisions([(rejected, 2)])  # no longer pending
    assert (await store.get_approval("a1")).status == "approved"
    assert [e.action for e in await store.audit_log()] == ["decision"]


async def test_saving_several_decisions_is_all_or_nothing(store: SQLStore):
    await store.create_approvals([approval("a1"), approval("a2")])
    a1, a2 = await store.get_approvals(["a1", "a2"])
    ok = replace(a1, status="approved", decision=Approve(), version=2)
    stale = replace(a2, status="approved", decision=Approve(), version=2)
    assert not await store.save_decisions([(ok, 1), (stale, 7)], audit=[record("decision", "a1")])
    assert [a.status for a in await store.get_approvals(["a1", "a2"])] == ["pending", "pending"]
    assert await store.audit_log() == []


async def test_an_edit_stores_the_new_arguments_and_digest(store: SQLStore):
    await store.create_approvals([approval("a1")])
    [pending] = await store.get_approvals(["a1"])
    call = replace(pending.call, args={"name": "nginx-999"})
    edit = Edit(args={"name": "nginx-999"})
    edited = replace(pending, call=call, status="edited", decision=edit, version=2)
    assert await store.save_decisions([(edited, 1)])
    stored = await store.get_approval("a1")
    assert stored.call.args == {"name": "nginx-999"}
    assert stored.call.digest == call.digest != pending.call.digest


async def test_a_group_of_decisions_appends_each_to_its_own_runs_log(store: SQLStore):
    from signoff.store.runs import RunRecord

    for run_id in ("r1", "r2", "r3"):
        record_ = RunRecord(
            id=run_id, thread_id=f"t-{run_id}", agent="ops", status="paused", started_by=None,
            lease_owner=None, version=1,
        )  # fmt: skip
        await store.create_run(
            record_, at=T0, lease_until=T0, events=[("started", {"run": run_id})]
        )
    pending = [approval("a1", run_id="r1"), approval("a2", run_id="r2"),
               approval("a3", run_id="r2"), approval("a4", run_id="r3")]  # fmt: skip
    await store.create_approvals(pending)

    def deciding(ids: list[str], reject: bool = False):
        def plan(current: list[Approval], _: Moment) -> DecisionPlan:
            if reject:
                raise ConflictError("refused by its own plan")
            decided = [
                replace(a, status="approved", decision=Approve(), decided_by="alice",
                        decided_at=T0 + timedelta(seconds=1), version=a.version + 1)
                for a in current
            ]  # fmt: skip
            return DecisionPlan(
                changes=[(d, a.version) for d, a in zip(decided, current, strict=True)],
                audit=[record("decision", d.id) for d in decided],
            )

        return store.decide(ids, plan)

    results = await asyncio.gather(
        deciding(["a1"]), deciding(["a2", "a3"]), deciding(["a4"], reject=True),
        return_exceptions=True,
    )  # fmt: skip
    assert isinstance(results[2], ConflictError)
    for run_id, decided in (("r1", ["a1"]), ("r2", ["a2", "a3"]), ("r3", [])):
        events = await store.run_events(run_id)
        assert [e.type for e in events] == ["started"] + ["decision"] * len(decided)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert [e.data["approval_id"] for e in events[1:]] == decided
    assert [a.status for a in await store.get_approvals(["a1", "a2", "a3", "a4"])] == [
        "approved", "approved", "approved", "pending"
    ]  # fmt: skip
    assert (await store.verify_audit()).ok


async def test_grants_are_listed_by_tool_and_revocable(store: SQLStore):
    grant = Grant(
        id="g1", tool="send_email", scope="thread", subject="t1", created_by="alice", created_at=T0
    )
    other = Grant(
        id="g2", tool="rm", scope="global", args_digest="ab" * 32, created_by="bob", created_at=T0
    )
    await store.create_approvals([approval("a1"), approval("a2")])
    [a1, a2] = await store.get_approvals(["a1", "a2"])
    approve = Approve(always=Scope(kind="thread"))
    assert await store.save_decisions(
        [(replace(a1, status="approved", decision=approve, version=2), 1),
         (replace(a2, status="approved", decision=approve, version=2), 1)],
        grants=[grant, other],
    )  # fmt: skip
    assert await store.list_grants(tool="send_email") == [grant]
    assert len(await store.list_grants()) == 2
    await store.revoke_grant("g1", actor="carol", at=T0, audit=[record("revoke", "g1")])
    assert await store.list_grants(tool="send_email") == []
    with pytest.raises(NotFoundError, match="no grant in force with id 'g1'"):
        await store.revoke_grant("g1", actor="carol", at=T0)


async def test_expiry_finds_pending_approvals_whose_time_is_up(store: SQLStore):
    await store.create_approvals(
        [approval("a1", expires_at=T0 + timedelta(seconds=5)), approval("a2"),
         approval("a3", expires_at=T0 + timedelta(hours=1))]
    )  # fmt: skip
    assert [a.id for a in await store.due_for_expiry(T0 + timedelta(seconds=10))] == ["a1"]


async def test_the_audit_chain_links_each_entry_to_the_one_before(store: SQLStore):
    await store.create_approvals([approval("a1")], audit=[record("verdict", "a1", verdict="ask")])
    await store.create_approvals(
        [], audit=[record("decision", "a1", status="approved"), record("grant", "g1")]
    )
    log = await store.audit_log()
    assert [(e.seq, e.action) for e in log] == [(1, "verdict"), (2, "decision"), (3, "grant")]
    assert log[1].prev_hash == log[0].hash and log[0].prev_hash == "0" * 64
    assert await store.audit_length() == 3
    report = await store.verify_audit()
    assert (report.ok, report.entries, report.last_hash) == (True, 3, log[2].hash)


async def test_concurrent_audit_writers_never_fork_the_chain(store: SQLStore):
    await asyncio.gather(
        *(
            store.create_approvals([], audit=[record("verdict", f"s{i}"), record("x", f"s{i}")])
            for i in range(20)
        )
    )
    log = await store.audit_log()
    assert [e.seq for e in log] == list(range(1, 41))
    assert (await store.verify_audit()).ok


@pytest.mark.empty_database
async def test_migrating_from_empty_reaches_the_latest_version_and_is_idempotent(store_url: str):
    async with open_store(store_url) as store:
        assert await store.migrate() == LATEST
        version = await store.run(
            lambda c: c.execute(text("SELECT version FROM signoff_schema")).scalar(), write=False
        )
        assert version == LATEST
    async with open_store(store_url) as again:
        assert await again.migrate() == LATEST


async def test_the_sql_store_implements_the_store_protocol(store: SQLStore):
    typed: Store = store  # checked by mypy: SQLStore must satisfy the protocol
    assert typed.url == store.url


async def test_a_store_without_the_schema_is_refused_when_not_migrating(store_url: str):
    async with open_store(store_url) as store:
        await store.run(lambda c: c.execute(text("UPDATE signoff_schema SET version = 99")))
    with pytest.raises(StoreError, match=f"schema version 99, not version {LATEST}"):
        async with open_store(store_url, migrate=False):
            pass
    with pytest.raises(StoreError, match="newer than this signoff"):
        async with open_store(store_url):
            pass


async def test_open_store_reads_the_url_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    url = f"sqlite:///{tmp_path / 'env.db'}"
    monkeypatch.setenv("SIGNOFF_DATABASE_URL", url)
    async with open_store() as store:
        assert store.url == url
    assert (tmp_path / "env.db").exists()


async def test_an_unsupported_url_is_a_store_error():
    with pytest.raises(StoreError, match="unsupported database URL 'mysql://x'"):
        async with open_store("mysql://x"):
            pass


@pytest.mark.empty_database
@pytest.mark.parametrize("start", range(LATEST))
async def test_migrating_from_every_earlier_version_reaches_the_current_schema(
    store_url: str, start: int
):
    from sqlalchemy import Connection, inspect

    from signoff.store import schema
    from signoff.store.migrations import migrate
    from signoff.store.postgres import postgres_runner
    from signoff.store.sqlite import sqlite_runner

    runner = (
        sqlite_runner(store_url) if store_url.startswith("sqlite") else postgres_runner(store_url)
    )
    bare = SQLStore(runner, url=store_url)
    await bare.run(lambda c: migrate(c, target=start))
    await bare.close()

    def columns(connection: Connection) -> dict[str, dict[str, tuple[str, bool | None]]]:
        # A key's nullability is left out: SQLite lets a key that is not an integer hold NULL
        # unless the column says NOT NULL, which the tables created in SQL by hand do not say.
        inspector = inspect(connection)
        return {
            t: {
                c["name"]: (str(c["type"]), None if c["name"] in keys else c["nullable"])
                for c in inspector.get_columns(t)
            }
            for t in inspector.get_table_names()
            for keys in [inspector.get_pk_constraint(t)["constrained_columns"]]
        }

    def indexes(connection: Connection) -> set[str]:
        inspector = inspect(connection)
        return {
            str(i["name"]) for t in inspector.get_table_names() for i in inspector.get_indexes(t)
        }

    async with open_store(store_url) as store:
        found = await store.run(columns, write=False)
        found_indexes = await store.run(indexes, write=False)
    dialect = store.engine.dialect
    expected = {
        t.name: {
            c.name: (str(c.type.compile(dialect)), None if c.primary_key else c.nullable)
            for c in t.columns
        }
        for t in schema.metadata.sorted_tables
    }
    assert found == expected  # every column, of the type (and nullability) the schema says
    declared = {str(i.name) for t in schema.metadata.sorted_tables for i in t.indexes}
    assert found_indexes >= declared | {"messages_by_role", "events_by_type", "events_by_time"}


@pytest.mark.empty_database
async def test_migrating_binds_each_grant_to_the_agent_and_requester_of_its_approval(
    store_url: str,
):
    from sqlalchemy import Connection, text

    from signoff.store.migrations import migrate
    from signoff.store.postgres import postgres_runner
    from signoff.store.sqlite import sqlite_runner

    runner = (
        sqlite_runner(store_url) if store_url.startswith("sqlite") else postgres_runner(store_url)
    )
    bare = SQLStore(runner, url=store_url)

    def before(connection: Connection) -> None:
        migrate(connection, target=8)  # the last version whose grants knew neither
        connection.execute(
            text(
                "INSERT INTO approvals (id, batch_id, origin, call_id, tool, agent, args, digest,"
                " reason, status, requested_at, requested_by, approvers, forbid_self_approval,"
                " version) VALUES ('a1', 'b1', 'gate', 'c1', 'charge', 'billing', '{}', 'd',"
                " 'asked', 'approved', 0, 'olga', '[]', :no, 2)"
            ),
            {"no": False},
        )
        for grant_id, approval_id in (("g1", "a1"), ("g2", "gone")):
            connection.execute(
                text(
                    "INSERT INTO grants (id, tool, scope, subject, approval_id, created_by,"
                    " created_at) VALUES (:id, 'charge', 'thread', 't1', :approval, 'bob', 0)"
                ),
                {"id": grant_id, "approval": approval_id},
            )

    await bare.run(before)
    await bare.close()
    async with open_store(store_url) as store:
        bound, orphan = await store.get_grant("g1"), await store.get_grant("g2")
    assert (bound.agent, bound.requested_by) == ("billing", "olga")
    # Its approval gone, a thread grant knows no requester: it covers nothing any more.
    assert (orphan.agent, orphan.requested_by) == (None, None)
    call = ToolCall(id="c", name="charge")
    assert not orphan.covers(call, Context(thread_id="t1", requested_by="olga"))


async def test_an_unreachable_database_is_a_store_error_that_hides_the_password():
    with pytest.raises(StoreError, match="cannot open the store at") as caught:
        async with open_store("postgresql+asyncpg://postgres:hunter2@127.0.0.1:1/nowhere"):
            pass
    assert "hunter2" not in str(caught.value)
    assert "***" in str(caught.value)


async def test_an_aiosqlite_url_names_the_same_sqlite_database(tmp_path: Path):
    path = tmp_path / "same.db"
    async with open_store(f"sqlite+aiosqlite:///{path}") as store:
        await store.create_approvals([approval("a1")])
    async with open_store(f"sqlite:///{path}") as store:
        assert (await store.get_approval("a1")).id == "a1"


async def test_a_note_is_kept_once_per_key_and_read_back_in_time_order(store: SQLStore):
    early, late = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)
    assert await store.add_note("a2a", "task-1", "m2", {"said": "later"}, at=late)
    assert await store.add_note("a2a", "task-1", "m1", {"said": "first", "n": [1, 2]}, at=early)
    # The same key again keeps the first note: a client's retried message is not kept twice.
    assert not await store.add_note("a2a", "task-1", "m1", {"said": "changed"}, at=late)
    assert await store.add_note("a2a", "task-2", "m1", {"said": "elsewhere"}, at=early)
    assert await store.add_note("agui", "task-1", "m1", {"said": "another channel"}, at=early)
    notes = await store.notes("a2a", "task-1")
    assert [(n.key, n.at, n.data) for n in notes] == [
        ("m1", early, {"said": "first", "n": [1, 2]}),
        ("m2", late, {"said": "later"}),
    ]
    assert await store.notes("a2a", "task-3") == []


async def test_runs_are_listed_and_counted_by_thread_state_root_and_update(store: SQLStore):
    from signoff.store.runs import RunRecord

    def run(id: str, thread: str, *, parent: str | None = None, done: bool = False) -> RunRecord:
        return RunRecord(
            id=id, thread_id=thread, agent="ops", status="completed" if done else "running",
            started_by="alice",
            lease_owner="w", version=1, parent_id=parent, parent_key=parent and f"{parent}:1:c",
        )  # fmt: skip

    for n, record in enumerate(
        [run("r1", "t1", done=True), run("r2", "t2"), run("r3", "t1"), run("r4", "t9", parent="r3")]
    ):
        at = T0 + timedelta(seconds=n)
        await store.create_run(record, at=at, lease_until=at + timedelta(minutes=5))
    listed = await store.list_runs(agent="ops", thread_id="t1")
    assert [r.id for r in listed] == ["r3", "r1"]
    assert [r.id for r in await store.list_runs(roots=True)] == ["r3", "r2", "r1"]
    assert await store.count_runs(roots=True) == 3
    assert await store.count_runs() == 4
    assert await store.count_runs(thread_id="t1", status="running") == 1
    assert await store.count_runs(status="completed") == 1
    assert await store.count_runs(status="paused") == 0
    later = T0 + timedelta(seconds=1)
    assert [r.id for r in await store.list_runs(updated_after=later)] == ["r4", "r3"]
    assert await store.count_runs(updated_after=later, roots=True) == 1


async def test_a_run_exists_once_created(store: SQLStore):
    from signoff.store.runs import RunRecord

    assert not await store.run_exists("r-new")
    record = RunRecord(
        id="r-new", thread_id="t", agent="ops", status="running", started_by=None,
        lease_owner="w", version=1,
    )  # fmt: skip
    await store.create_run(record, at=T0, lease_until=T0 + timedelta(minutes=5))
    assert await store.run_exists("r-new")
    again = replace(record, thread_id="t-other")  # on another thread too
    with pytest.raises(ConflictError, match="exists already"):
        await store.create_run(again, at=T0, lease_until=T0 + timedelta(minutes=5))


async def test_a_ledger_entry_is_started_once_and_finished_with_its_audit(store: SQLStore):
    """The runtime's ledger: an entry started once (with its audit entry, in the same
    transaction), then finished with its result."""
    entry, _ = await store.ledger_start(
        "run:a1", run_id="r1", call_id="call-a1", tool="delete_pod", digest="d", at=T0,
        audit=[record("forward", "a1")],
    )  # fmt: skip
    assert entry is None
    assert await store.ledger_entry("run:a1") == LedgerEntry(
        key="run:a1", status="started", result=None
    )
    await store.ledger_finish("run:a1", result={"ran": True}, at=T0)
    assert (await store.ledger_entry("run:a1")) == LedgerEntry(
        key="run:a1", status="finished", result={"ran": True}
    )
    assert await store.ledger_entry("run:none") is None
    # Started again: the entry is there, and nothing more is audited.
    again, _ = await store.ledger_start(
        "run:a1", run_id="r1", call_id="call-a1", tool="delete_pod", digest="d", at=T0,
        audit=[record("forward", "a1")],
    )  # fmt: skip
    assert again is not None and again.status == "finished"
    await store.ledger_finish("run:a2", result={"x": 1}, at=T0)  # no entry: nothing changes
    assert await store.ledger_entry("run:a2") is None
    await store.ledger_start("run:a2", run_id="r1", call_id="call-a2", tool="t", digest="d", at=T0)
    await store.ledger_finish("run:a2", result={"x": 1}, at=T0, audit=[record("result", "a2")])
    assert [(e.action, e.subject) for e in await store.audit_log()] == [
        ("forward", "a1"),
        ("result", "a2"),
    ]
    assert (await store.verify_audit()).ok
    await store.append_audit([record("forward", "c9")])
    assert (await store.audit_log())[-1].subject == "c9"


# -- other frameworks' runs: their pauses and the ledger's claims ----------------------------


async def pause(
    store: SQLStore,
    id: str = "p1",
    approvals: tuple[str, ...] = ("a1", "a2"),
    *,
    origin: str = "langgraph",
    data: dict[str, object] | None = None,
    at: datetime = T0,
) -> Pause:
    return await store.save_pause(
        NewPause(id=id, origin=origin, thread_id="t1", agent="coordinator",
                 data=data or {"step": 1}, approvals=list(approvals), at=at)
    )  # fmt: skip


def decided(original: Approval, status: str) -> tuple[Approval, int]:
    decision = Approve() if status == "approved" else Expired()
    changed = replace(original, status=status, decision=decision, decided_by="alice",  # type: ignore[arg-type]
                      decided_at=T0, version=original.version + 1)  # fmt: skip
    return changed, original.version


async def test_a_pause_saved_twice_is_stored_once_as_first_saved(store: SQLStore):
    first = await pause(store, approvals=("a2", "a1"))
    again = await pause(store, approvals=("a1",), data={"step": 2}, at=T0 + timedelta(hours=1))
    assert again == first == await store.get_pause("p1")
    assert first == Pause(
        id="p1", origin="langgraph", thread_id="t1", agent="coordinator", status="waiting",
        data={"step": 1}, approvals=("a1", "a2"), attempts=0, created_at=T0, updated_at=T0,
    )  # fmt: skip
    assert await store.get_pause("nope") is None


async def test_a_threads_entries_and_its_pause_are_written_together_or_not_at_all(
    store: SQLStore,
):
    """A run that pauses appends its entries and records its pause in one transaction: never a
    thread that waits with no pause to point a resumer at it, nor a pause past a thread
    another writer extended."""
    paused = NewPause(id="p1", origin="pydantic-ai", thread_id="t1", agent=None,
                      data={"asked": ["a1"]}, approvals=["a1"], at=T0)  # fmt: skip
    saved = await store.append_paused("pydantic-ai", "t1", ["m1", "m2"], after=0, now=T0,
                                      pause=paused)  # fmt: skip
    assert saved is not None and saved.approvals == ("a1",) and saved.status == "waiting"
    assert await store.history("pydantic-ai", "t1") == ["m1", "m2"]
    # Read one entry long: the thread grew since; nothing of either is written.
    late = replace(paused, id="p2", approvals=["a2"])
    assert await store.append_paused("pydantic-ai", "t1", ["m3"], after=1, now=T0,
                                     pause=late) is None  # fmt: skip
    assert await store.get_pause("p2") is None
    # A pause that cannot be written takes the entries with it.
    broken = replace(paused, id="p3", data={"asked": object()})
    with pytest.raises(InvalidArgumentsError, match="not representable as JSON"):
        await store.append_paused("pydantic-ai", "t1", ["m3"], after=2, now=T0, pause=broken)
    assert await store.history("pydantic-ai", "t1") == ["m1", "m2"]
    assert await store.get_pause("p3") is None


async def test_a_pause_is_ready_once_every_approval_is_decided_or_expired(store: SQLStore):
    a1, a2 = approval("a1"), approval("a2")
    await store.create_approvals([a1, a2])
    await pause(store)
    await pause(store, "p-adk", approvals=(), origin="google_adk")
    assert await store.ready_pauses("langgraph", now=T0) == []
    assert await store.save_decisions([decided(a1, "approved")])
    assert await store.ready_pauses("langgraph", now=T0) == []
    assert await store.save_decisions([decided(a2, "expired")])
    assert await store.ready_pauses("langgraph", now=T0) == ["p1"]
    assert await store.ready_pauses("google_adk", now=T0) == ["p-adk"]


async def test_a_pause_is_not_claimed_while_one_of_its_approvals_is_pending(store: SQLStore):
    a1, a2 = approval("a1"), approval("a2")
    await store.create_approvals([a1, a2])
    await pause(store)
    await store.save_decisions([decided(a1, "approved")])
    assert await store.claim_pause("p1", owner="a", now=T0, lease=timedelta(minutes=5)) is None
    await store.save_decisions([decided(a2, "approved")])
    claimed = await store.claim_pause("p1", owner="a", now=T0, lease=timedelta(minutes=5))
    assert claimed is not None and claimed.attempts == 1


async def test_a_pause_is_claimed_by_one_worker_until_its_lease_runs_out(store: SQLStore):
    await pause(store, approvals=())
    lease = timedelta(milliseconds=1)
    claims = await asyncio.gather(
        *(store.claim_pause("p1", owner=owner, now=T0, lease=lease) for owner in ("a", "b"))
    )
    [won] = [c for c in claims if c is not None]
    assert (won.status, won.attempts, won.lease_until) == ("resuming", 1, T0 + lease)
    assert won.lease_owner in ("a", "b")
    assert await store.ready_pauses("langgraph", now=T0) == []
    assert await store.claim_pause("p1", owner="c", now=T0, lease=lease) is None
    later = T0 + timedelta(seconds=1)  # its lease ran out: its worker is taken for gone
    assert await store.ready_pauses("langgraph", now=later) == ["p1"]
    taken = await store.claim_pause("p1", owner="c", now=later, lease=timedelta(minutes=5))
    assert taken is not None and (taken.lease_owner, taken.attempts) == ("c", 2)
    # The first worker's claim is over: its release changes nothing.
    assert not await store.release_pause("p1", owner=won.lease_owner, status="done", now=later)
    stored = await store.get_pause("p1")
    assert stored is not None and (stored.status, stored.lease_owner) == ("resuming", "c")


async def test_a_pause_released_waiting_is_claimable_again(store: SQLStore):
    await pause(store, approvals=())
    lease = timedelta(minutes=5)
    assert await store.claim_pause("p1", owner="a", now=T0, lease=lease) is not None
    assert not await store.release_pause("p1", owner="b", status="waiting", now=T0)
    assert await store.release_pause("p1", owner="a", status="waiting", now=T0)
    stored = await store.get_pause("p1")
    assert stored is not None
    assert (stored.status, stored.lease_owner, stored.lease_until) == ("waiting", None, None)
    assert await store.ready_pauses("langgraph", now=T0) == ["p1"]
    again = await store.claim_pause("p1", owner="b", now=T0, lease=lease)
    assert again is not None and again.attempts == 2
    assert await store.release_pause("p1", owner="b", status="done", now=T0)
    assert await store.ready_pauses("langgraph", now=T0 + timedelta(days=1)) == []
    assert await store.claim_pause("p1", owner="c", now=T0 + timedelta(days=1), lease=lease) is None


async def test_a_finished_pause_is_never_ready_nor_claimed_again(store: SQLStore):
    await pause(store, approvals=())
    lease = timedelta(milliseconds=1)
    assert await store.claim_pause("p1", owner="a", now=T0, lease=lease) is not None
    await store.finish_pause("p1", now=T0)  # whoever holds it: the run went on
    later = T0 + timedelta(days=1)
    assert await store.ready_pauses("langgraph", now=later) == []
    assert await store.claim_pause("p1", owner="b", now=later, lease=lease) is None
    assert not await store.release_pause("p1", owner="a", status="waiting", now=later)
    again = await pause(store, approvals=())
    assert (again.status, again.lease_owner) == ("done", None)


async def test_the_open_pause_of_some_approvals_is_the_newest_not_done(store: SQLStore):
    await pause(store, "p1", approvals=("a1",))
    await pause(store, "p2", approvals=("a1", "a2"), at=T0 + timedelta(seconds=1))
    assert await store.open_pause([]) is None
    assert await store.open_pause(["a3"]) is None
    assert [(await store.open_pause(ids)).id for ids in (["a1"], ["a2"])] == ["p2", "p2"]  # type: ignore[union-attr]
    await store.finish_pauses(["a2"], now=T0)
    found = await store.open_pause(["a1", "a2"])
    assert found is not None and found.id == "p1"
    await store.finish_pauses(["a1"], now=T0)
    assert await store.open_pause(["a1", "a2"]) is None
    assert [(await store.get_pause(p)).status for p in ("p1", "p2")] == ["done", "done"]  # type: ignore[union-attr]


async def test_a_ledger_key_is_claimed_once_and_taken_over_only_once_its_lease_ran_out(
    store: SQLStore,
):
    lease = timedelta(seconds=30)
    claims = await asyncio.gather(
        *(store.ledger_claim("k", owner=o, now=T0, lease=lease, takeover=False) for o in "ab")
    )
    [first] = [c for c in claims if c.claimed]
    owner, other = (first.owner, "b" if first.owner == "a" else "a")
    assert (first.status, first.lease_until) == ("started", T0 + lease)
    assert owner is not None
    soon, late = T0 + timedelta(seconds=1), T0 + timedelta(seconds=31)
    for now, takeover in ((soon, False), (soon, True), (late, False)):
        found = await store.ledger_claim("k", owner=other, now=now, lease=lease, takeover=takeover)
        assert (found.claimed, found.status, found.owner) == (False, "started", owner)
    until = T0 + timedelta(minutes=2)
    assert await store.ledger_renew("k", owner=owner, fence=first.fence, until=until)
    assert not await store.ledger_renew("k", owner=other, fence=first.fence, until=until)
    held = await store.ledger_claim("k", owner=other, now=late, lease=lease, takeover=True)
    assert (held.claimed, held.lease_until) == (False, until)
    taken = await store.ledger_claim(
        "k", owner=other, now=until + lease, lease=lease, takeover=True
    )
    assert (taken.claimed, taken.owner, taken.fence) == (True, other, first.fence + 1)
    assert not await store.ledger_renew("k", owner=owner, fence=first.fence, until=until + lease)
    await store.ledger_finish(
        "k", result={"value": 1}, at=until + lease, owner=other, fence=taken.fence
    )
    done = await store.ledger_claim("k", owner="c", now=until + lease * 9, lease=lease,
                                    takeover=True)  # fmt: skip
    assert (done.claimed, done.status, done.result) == (False, "finished", {"value": 1})
    after = until + lease * 9
    assert not await store.ledger_renew("k", owner=other, fence=taken.fence, until=after)


async def claimed_then_taken_over(
    store: SQLStore, *, first: str = "a", second: str = "b"
) -> tuple[LedgerClaim, LedgerClaim]:
    """`first` claims key "k" at T0 for a millisecond; `second` takes it over a second later
    for five minutes (an idempotent call run again)."""
    held = await store.ledger_claim(
        "k", owner=first, now=T0, lease=timedelta(milliseconds=1), takeover=False
    )
    taken = await store.ledger_claim(
        "k", owner=second, now=T0 + timedelta(seconds=1), lease=timedelta(minutes=5),
        takeover=True,
    )  # fmt: skip
    assert held.claimed and taken.claimed
    return held, taken


async def test_a_holder_whose_claim_was_taken_over_cannot_record_its_result(store: SQLStore):
    held, taken = await claimed_then_taken_over(store)
    assert taken.fence == held.fence + 1
    later = T0 + timedelta(seconds=2)
    # Before the new holder finishes, and after: the first holder's result is refused both times.
    with pytest.raises(ClaimLost, match="the ledger key 'k' is no longer held by claim 1 of 'a'"):
        await store.ledger_finish(
            "k", result={"value": "first"}, at=later, owner="a", fence=held.fence,
            audit=[record("result", "first")],
        )  # fmt: skip
    await store.ledger_finish("k", result={"value": "second"}, at=later, owner="b", fence=2)
    with pytest.raises(ClaimLost):
        await store.ledger_finish(
            "k", result={"value": "first"}, at=later, owner="a", fence=held.fence
        )
    found = await store.ledger_claim("k", owner="c", now=later, lease=timedelta(0), takeover=True)
    assert (found.status, found.result, found.owner) == ("finished", {"value": "second"}, "b")
    assert await store.audit_log() == []  # the refused finish wrote nothing of its transaction


async def test_the_same_owner_claiming_a_key_again_fences_out_its_earlier_claim(store: SQLStore):
    held, again = await claimed_then_taken_over(store, first="a", second="a")
    later = T0 + timedelta(seconds=2)
    assert not await store.ledger_renew("k", owner="a", fence=held.fence, until=later)
    with pytest.raises(ClaimLost):
        await store.ledger_finish("k", result={"value": 1}, at=later, owner="a", fence=held.fence)
    await store.ledger_finish("k", result={"value": 2}, at=later, owner="a", fence=again.fence)
    assert await store.ledger_entry("k") == LedgerEntry(
        key="k", status="finished", result={"value": 2}
    )


async def test_a_renewal_by_a_fenced_out_holder_does_not_move_the_new_holders_lease(
    store: SQLStore,
):
    held, taken = await claimed_then_taken_over(store)
    assert taken.lease_until == T0 + timedelta(seconds=1, minutes=5)
    # Neither extended (a renewal) nor ended at once (an abandoned claim).
    for until in (T0 + timedelta(days=1), T0 + timedelta(seconds=1)):
        assert not await store.ledger_renew("k", owner="a", fence=held.fence, until=until)
        seen = await store.ledger_claim(
            "k", owner="c", now=T0 + timedelta(seconds=2), lease=timedelta(0), takeover=True
        )
        assert (seen.claimed, seen.owner, seen.lease_until) == (False, "b", taken.lease_until)
    assert await store.ledger_renew("k", owner="b", fence=taken.fence, until=T0 + timedelta(days=1))


@pytest.mark.empty_database
async def test_ledger_entries_written_before_version_5_are_read_after_migrating(store_url: str):
    from signoff.store.migrations import migrate
    from signoff.store.postgres import postgres_runner
    from signoff.store.sqlite import sqlite_runner

    runner = (
        sqlite_runner(store_url) if store_url.startswith("sqlite") else postgres_runner(store_url)
    )
    bare = SQLStore(runner, url=store_url)
    await bare.run(lambda c: migrate(c, target=4))
    insert = text(
        "INSERT INTO ledger (key, run_id, call_id, tool, digest, status, result, started_at) "
        "VALUES (:key, 'r1', :key, 't', 'd', :status, :result, 0)"
    )
    await bare.run(lambda c: c.execute(insert, [
        {"key": "finished", "status": "finished", "result": '{"content": "as written"}'},
        {"key": "started", "status": "started", "result": None},
    ]))  # fmt: skip
    await bare.close()
    async with open_store(store_url) as store:
        ledger = Ledger(store)

        async def never() -> None:
            raise AssertionError("a recorded call ran again")

        assert await ledger.once("finished", never) == {"content": "as written"}
        with pytest.raises(OutcomeUnknown):
            await ledger.once("started", never)
        taken = await store.ledger_claim(
            "started", owner="x", now=T0, lease=timedelta(seconds=1), takeover=True
        )
        assert taken.claimed


@pytest.mark.empty_database
async def test_a_claim_made_before_version_9_is_fenced_out_once_taken_over(store_url: str):
    from signoff.store.migrations import migrate
    from signoff.store.postgres import postgres_runner
    from signoff.store.sqlite import sqlite_runner

    runner = (
        sqlite_runner(store_url) if store_url.startswith("sqlite") else postgres_runner(store_url)
    )
    bare = SQLStore(runner, url=store_url)
    await bare.run(lambda c: migrate(c, target=8))
    insert = text(
        "INSERT INTO ledger (key, run_id, call_id, tool, digest, status, started_at, owner, "
        "lease_until) VALUES ('k', 'external', 'k', 't', 'd', 'started', 0, 'old', 0)"
    )
    await bare.run(lambda c: c.execute(insert))
    await bare.close()
    async with open_store(store_url) as store:
        taken = await store.ledger_claim(
            "k", owner="new", now=T0, lease=timedelta(minutes=5), takeover=True
        )
        assert (taken.claimed, taken.fence) == (True, 1)
        assert not await store.ledger_renew("k", owner="old", fence=0, until=T0 + timedelta(days=1))
        with pytest.raises(ClaimLost):
            await store.ledger_finish("k", result={"value": "old"}, at=T0, owner="old", fence=0)
        await store.ledger_finish("k", result={"value": "new"}, at=T0, owner="new", fence=1)
        assert await store.ledger_entry("k") == LedgerEntry(
            key="k", status="finished", result={"value": "new"}
        )


async def test_a_history_grows_only_from_the_length_its_writer_read(store: SQLStore):
    now = datetime.now(UTC)
    assert await store.history("pydantic-ai", "t") == []
    assert await store.append_history("pydantic-ai", "t", ["a", "b"], after=0, now=now)
    # Two writers that read the same length: the first extends it, the second writes nothing.
    assert await store.append_history("pydantic-ai", "t", ["c"], after=2, now=now)
    assert not await store.append_history("pydantic-ai", "t", ["x", "y"], after=2, now=now)
    assert not await store.append_history("pydantic-ai", "t", ["z"], after=5, now=now)
    assert await store.history("pydantic-ai", "t") == ["a", "b", "c"]
    assert await store.history("pydantic-ai", "other") == []
    assert await store.history("langgraph", "t") == []
