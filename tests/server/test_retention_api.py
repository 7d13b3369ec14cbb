"""A run whose large payloads were pruned still shows, through the API the run page reads: its
messages and events say what was pruned, never a 500."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from signoff import Policy
from signoff.gate import Gate
from signoff.server import Auth, Service, create_app
from signoff.store import SQLStore
from signoff.store.blobs import LARGE
from signoff.store.retention import PRUNED, prune_payloads
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
