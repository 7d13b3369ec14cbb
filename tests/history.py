"""A made-up history of decided approvals, written straight into a store's tables in bulk: the
insights tests read a few hundred of them, `bench/insights.py` a million.

Four groups, each with a lesson the suggestions should find, and one with none:

- ``send_email`` of agent ``mailer`` (the ``tools.send_email`` toggle): every mail to
  ``*@example.com`` approved unchanged; mail elsewhere rejected;
- ``delete_file`` of agent ``ops`` (``rules[1]``): rejected 97 times in 100;
- ``charge`` of agent ``billing`` (``rules[2]``): asked for 150 to 1000, edited down to 10 to 95
  three times in four, approved as asked otherwise;
- ``write_file`` of no agent (``rules[3]``): approved, rejected, responded to or expired, mixed;

plus a few calls still pending, and grant uses of a ``read_file`` grant. Each group's calls are
requested by three principals in turn and decided by three people.

`approval_row` and `write_rows` write a history of one's own: a flood from one approver, a
call a person refused among many approved.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from sqlalchemy import Insert, insert
from sqlalchemy.engine import Connection

from signoff.store import SQLStore, schema
from signoff.store.base import AuditRecord
from signoff.store.times import to_micros
from signoff.types import Grant

__all__ = ["POLICY", "approval_row", "approval_rows", "write_history", "write_rows"]

POLICY: dict[str, Any] = {
    "default": "ask",
    "rules": [
        {"allow": ["*_list*", "*_get*"]},
        {"ask": "delete_*"},
        {"ask": "charge"},
        {"ask": "write_file"},
        {"ask": "read_file"},
    ],
    "tools": {"send_email": {"require_approval": True}},
}
"""The policy that asked every call of the history: rule ids as the approvals carry them."""

_DECIDERS = ("alice", "alice", "alice", "bob", "bob", "carol")
_REQUESTERS = ("agent-runner", "nightly", "ann")


def approval_rows(
    count: int, *, now: datetime, days: int = 30, seed: int = 7
) -> Iterator[dict[str, Any]]:
    """`count` rows of the `approvals` table, asked evenly over the `days` before `now`, in
    the order of their ids (which, as signoff's own, sort by time)."""
    rng = random.Random(seed)
    start = to_micros(now - timedelta(days=days))
    span = to_micros(now) - start
    for i in range(count):
        requested_at = start + span * i // count
        pick = rng.random()
        if pick < 0.35:
            row = _send_email(rng)
        elif pick < 0.55:
            row = _delete_file(rng)
        elif pick < 0.75:
            row = _charge(rng)
        else:
            row = _write_file(rng)
        if rng.random() < 0.002:
            row["args"] = row.get("requested_args") or row["args"]
            row["status"], row["decision"], row["requested_args"] = "pending", None, None
        yield _complete(row, i, requested_at, rng)


def _send_email(rng: random.Random) -> dict[str, Any]:
    inside = rng.random() < 0.9
    domain = "example.com" if inside else rng.choice(("gmail.com", "evil.test"))
    args = {"to": f"user{rng.randrange(5000)}@{domain}", "subject": "Weekly report"}
    status, decision = (
        ("approved", {"kind": "approve"})
        if inside
        else ("rejected", {"kind": "reject", "reason": "not ours"})
    )
    return {"tool": "send_email", "rule": "tools.send_email", "agent": "mailer", "args": args,
            "status": status, "decision": decision}  # fmt: skip


def _delete_file(rng: random.Random) -> dict[str, Any]:
    args = {"path": f"/srv/data/{rng.randrange(10_000)}.csv"}
    status, decision = (
        ("rejected", {"kind": "reject", "reason": "keep it"})
        if rng.random() < 0.97
        else ("approved", {"kind": "approve"})
    )
    return {"tool": "delete_file", "rule": "rules[1]", "agent": "ops", "args": args,
            "status": status, "decision": decision}  # fmt: skip


def _charge(rng: random.Random) -> dict[str, Any]:
    asked = {"customer": f"c{rng.randrange(1000)}", "amount": rng.randrange(150, 1001)}
    row: dict[str, Any] = {"tool": "charge", "rule": "rules[2]", "agent": "billing"}
    if rng.random() < 0.75:
        edited = {**asked, "amount": rng.randrange(10, 96)}
        return row | {"args": edited, "requested_args": asked, "status": "edited",
                      "decision": {"kind": "edit", "args": edited}}  # fmt: skip
    return row | {"args": asked, "status": "approved", "decision": {"kind": "approve"}}


def _write_file(rng: random.Random) -> dict[str, Any]:
    args = {"path": rng.choice(("/etc/hosts", "/tmp/out.txt", "/home/me/notes.md"))}
    status, decision = rng.choice(
        (
            ("approved", {"kind": "approve"}),
            ("rejected", {"kind": "reject", "reason": "no"}),
            ("responded", {"kind": "respond", "content": "done by hand"}),
            ("expired", {"kind": "expired"}),
        )
    )
    return {"tool": "write_file", "rule": "rules[3]", "agent": None, "args": args,
            "status": status, "decision": decision}  # fmt: skip


def _complete(row: dict[str, Any], i: int, requested_at: int, rng: random.Random) -> dict[str, Any]:
    person = row["status"] not in ("pending", "expired")
    took = int(rng.expovariate(1 / 240) * 1_000_000) + 1_000_000
    return approval_row(
        i,
        requested_at=requested_at,
        took=took,
        decided_by=rng.choice(_DECIDERS) if person else None,
        requested_by=_REQUESTERS[i % len(_REQUESTERS)],
        **row,
    )


def approval_row(
    i: int,
    *,
    tool: str,
    rule: str | None,
    agent: str | None,
    args: dict[str, Any],
    status: str,
    decision: dict[str, Any] | None,
    requested_at: int,
    decided_by: str | None,
    requested_by: str | None,
    requested_args: dict[str, Any] | None = None,
    took: int = 60_000_000,
) -> dict[str, Any]:
    """One row of the `approvals` table: the `i`-th call of a history (its id sorts by time),
    asked at `requested_at` (microseconds) and, unless pending, decided `took` later."""
    text = json.dumps(args, sort_keys=True, separators=(",", ":"))
    decided = status != "pending"
    approval_id = f"{requested_at:015x}{i:08x}"
    return {
        "id": approval_id,
        "batch_id": approval_id,
        "run_id": None,
        "thread_id": None,
        "origin": "history",
        "call_id": f"call-{i}",
        "tool": tool,
        "server": None,
        "agent": agent,
        "args": text,
        "digest": hashlib.sha256(text.encode()).hexdigest(),
        "rule": rule,
        "reason": f"approval required: {tool}",
        "status": status,
        "requested_at": requested_at,
        "requested_by": requested_by,
        "expires_at": None,
        "approvers": "[]",
        "forbid_self_approval": False,
        "decided_by": decided_by,
        "decided_at": requested_at + took if decided else None,
        "decision": None if decision is None else json.dumps(decision),
        "version": 1 if decided else 0,
        "requested_args": None
        if requested_args is None
        else json.dumps(requested_args, sort_keys=True, separators=(",", ":")),
    }


def _insert(connection: Connection, *, statement: Insert, rows: list[dict[str, Any]]) -> None:
    connection.execute(statement, rows)


async def write_history(
    store: SQLStore,
    count: int,
    *,
    now: datetime,
    days: int = 30,
    grant_uses: int = 0,
    batch: int = 20_000,
) -> None:
    """Insert `count` approvals of the history, and `grant_uses` audit entries of calls one
    ``read_file`` grant let through (chained as the gate writes them)."""
    await write_rows(store, approval_rows(count, now=now, days=days), batch=batch)
    if not grant_uses:
        return
    grant = Grant(
        id="g-read-file", tool="read_file", scope="agent", subject="ops", agent="ops",
        rule="rules[4]", created_by="alice", created_at=now - timedelta(days=days),
    )  # fmt: skip
    from signoff.store.grants import insert_grants

    await store.run(lambda c: insert_grants(c, [grant]))
    step = timedelta(days=days) / grant_uses
    uses = [
        AuditRecord(
            actor="agent-runner",
            action="grant_use",
            subject=grant.id,
            data={"tool": "read_file", "agent": "ops"},
            at=now - timedelta(days=days) + step * i,
        )
        for i in range(grant_uses)
    ]
    for first in range(0, grant_uses, batch):
        await store.append_audit(uses[first : first + batch])


async def write_rows(
    store: SQLStore, rows: Iterable[dict[str, Any]], *, batch: int = 20_000
) -> None:
    """Insert rows of the `approvals` table, `batch` at a time."""
    statement = insert(schema.approvals)
    pending = iter(rows)
    while chunk := [row for _, row in zip(range(batch), pending, strict=False)]:
        await store.run(partial(_insert, statement=statement, rows=chunk))
