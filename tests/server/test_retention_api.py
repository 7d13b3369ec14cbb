"""Retention through the API: a run whose large payloads were pruned still shows (its messages
and events say what was pruned, never a 500), and a pruned audit log verifies from its anchor."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from signoff import Policy
from signoff.gate import Gate
from signoff.server import Auth, Service, create_app
from signoff.store import AuditRecord, Checkpoint, SQLStore
from signoff.store.blobs import LARGE
from signoff.store.retention import PRUNED, prune_audit, prune_payloads
from signoff.store.runs import RunRecord

OLD = datetime(2025, 1, 1, tzinfo=UTC)


async def test_a_pruned_run_reads_with_its_payloads_marked_pruned(store: SQLStore):
    result = "a log line\n" * (LARGE // 10)
    record = RunRecord(
        id="r-old", thread_id="t-old", agent="ops", status="running", started_by="alice",
        lease_owner="w", version=1,
    )  # fmt: skip
    await store.create_run(
        record,
        at=OLD,
        lease_until=OLD,
        messages=[
            {"role": "user", "content": "read the logs"},
            {"role": "tool", "tool_call_id": "c1", "content": result},
        ],
        events=[("tool_result", {"call_id": "c1", "tool": "read_logs", "result": result})],
    )
    await store.append_to_run("r-old", at=OLD, status="completed", owner="w")
    assert await prune_payloads(store, before=OLD + timedelta(days=1)) == (1, 2)

    service = Service(store=store, gate=Gate(Policy.from_dict({}), store), agents=[])
    app = create_app(service, Auth.none())
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://localhost") as client,
    ):
        run = await client.get("/v1/runs/r-old")
        assert run.status_code == 200, run.text
        assert PRUNED in run.text and "a log line" not in run.text
        events = await client.get("/v1/runs/r-old/events")
        assert events.status_code == 200
        assert "event: tool_result" in events.text
        assert PRUNED in events.text and "a log line" not in events.text


async def test_the_api_verifies_a_pruned_log_from_its_anchor(
    store: SQLStore, monkeypatch: pytest.MonkeyPatch
):
    key = b"k3y-that-the-database-never-sees"
    monkeypatch.setenv("SIGNOFF_AUDIT_KEY", key.decode())
    records = [
        AuditRecord(actor="alice", action="decided", subject=f"a{i}", at=OLD) for i in range(4)
    ]
    await store.append_audit(records)
    head = await store.verify_audit()
    checkpoint = Checkpoint(seq=head.entries, hash=head.last_hash, at=OLD).sign(key)
    bound = OLD + timedelta(days=1)
    await prune_audit(store, before=bound, key=key, checkpoint=checkpoint, now=OLD)

    service = Service(store=store, gate=Gate(Policy.from_dict({}), store), agents=[])
    app = create_app(service, Auth.none())
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://localhost") as client,
    ):
        plain = (await client.get("/v1/audit/verify")).json()
        since = (await client.get("/v1/audit/verify", params={"since": checkpoint.text()})).json()
    assert plain["ok"] and plain["entries"] == 4
    assert plain["reason"].startswith("chain intact (no entries after entry 4; 1 to 4 pruned")
    assert since["ok"] and "entry 4, where the log was pruned, is the one" in since["reason"]
