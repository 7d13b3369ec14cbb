"""The agents and tools approvals name (`Store.catalog`), on SQLite and PostgreSQL: each once, in
order, from approvals of every status, read from the indexes rather than the table."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.dialects import sqlite

from signoff.store import SQLStore, open_store
from signoff.store.catalog import _CATALOG, Catalog
from signoff.types import Approval, ApprovalStatus, ToolCall

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def approval(
    id: str,
    tool: str,
    agent: str | None,
    status: ApprovalStatus = "pending",
    server: str | None = None,
) -> Approval:
    return Approval(
        id=id,
        call=ToolCall(id=f"call-{id}", name=tool, args={}, agent=agent, server=server),
        batch_id=f"b-{id}",
        origin="langgraph",
        thread_id="t1",
        rule="rules[0]",
        reason="approval required",
        requested_at=T0,
        status=status,
    )


async def test_the_catalog_names_each_agent_and_tool_of_approvals_of_every_status_once(
    store: SQLStore,
):
    assert await store.catalog() == Catalog(agents=[], tools=[])
    await store.create_approvals(
        [
            approval("a1", "transfer", "billing/payer"),
            approval("a2", "transfer", "billing/payer", "approved"),
            approval("a3", "refund", "billing", "rejected"),
            approval("a4", "delete_pod", "ops", "expired"),
            # The MCP gateway's calls name a server and no agent.
            approval("a5", "write_file", None, "cancelled", server="fs"),
            approval("a6", "delete_pod", "ops/db", "edited"),
        ]
    )
    assert await store.catalog() == Catalog(
        agents=["billing", "billing/payer", "ops", "ops/db"],
        tools=["delete_pod", "refund", "transfer", "write_file"],
    )
    assert await store.catalog(limit=2) == Catalog(
        agents=["billing", "billing/payer"], tools=["delete_pod", "refund"]
    )


async def test_the_catalog_seeks_its_names_in_the_indexes_without_reading_the_table(
    tmp_path: Path,
):
    """Each name one seek, however many approvals share it: checked on SQLite's plan
    (PostgreSQL plans by the table's size, and a test's table is small enough to read whole)."""
    compiled = _CATALOG.compile(dialect=sqlite.dialect())
    params = compiled.construct_params({"limit": 200})
    positional = tuple(params[name] for name in compiled.positiontup or ())
    async with open_store(f"sqlite:///{tmp_path / 'signoff.db'}") as store:
        plan = await store.run(
            lambda c: c.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}", positional).all(),
            write=False,
        )
    reads = [row.detail for row in plan if "approvals" in row.detail]
    assert reads and all(
        read.startswith("SEARCH approvals USING COVERING INDEX approvals_status_") for read in reads
    ), reads
