"""The insights' queries, on SQLite and on the real PostgreSQL server: each figure checked
against the same history counted row by row here."""

from __future__ import annotations

import math
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from signoff.store import SQLStore, insights
from signoff.store.insights import STATUSES
from signoff.store.times import to_micros
from tests.history import approval_rows, write_history

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
COUNT = 400


def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


async def test_each_group_counts_its_calls_by_status_with_times_and_deciders(store: SQLStore):
    await write_history(store, COUNT, now=NOW, grant_uses=7)
    rows = list(approval_rows(COUNT, now=NOW))

    stats = await store.decision_stats(since=NOW - timedelta(days=30))

    expected = Counter((r["rule"], r["tool"], r["agent"], r["status"]) for r in rows)
    groups = {(g.rule, g.tool, g.agent): g for g in stats}
    assert set(groups) == {
        ("tools.send_email", "send_email", "mailer"),
        ("rules[1]", "delete_file", "ops"),
        ("rules[2]", "charge", "billing"),
        ("rules[3]", "write_file", None),
        ("rules[4]", "read_file", "ops"),  # grant uses only
    }
    for key, group in groups.items():
        assert group.counts == {s: expected[(*key, s)] for s in STATUSES}
    assert [g.asked for g in stats] == sorted((g.asked for g in stats), reverse=True)

    write_file = groups[("rules[3]", "write_file", None)]
    by_person = [r for r in rows if r["tool"] == "write_file" and r["decided_by"] is not None]
    took = [(r["decided_at"] - r["requested_at"]) / 1_000_000 for r in by_person]
    assert write_file.time_to_decision is not None
    assert write_file.time_to_decision.median_seconds == nearest_rank(took, 0.5)
    assert write_file.time_to_decision.p90_seconds == nearest_rank(took, 0.9)
    people = Counter(r["decided_by"] for r in by_person)
    assert write_file.deciders == tuple(sorted(people.items(), key=lambda p: (-p[1], p[0]))[:3])
    assert write_file.grant_uses == 0

    granted = groups[("rules[4]", "read_file", "ops")]
    assert (granted.asked, granted.grant_uses, granted.time_to_decision) == (0, 7, None)


async def test_the_window_counts_only_the_calls_asked_in_it(store: SQLStore):
    await write_history(store, COUNT, now=NOW, grant_uses=30)
    since = NOW - timedelta(days=7)
    rows = [r for r in approval_rows(COUNT, now=NOW) if r["requested_at"] >= to_micros(since)]

    stats = await store.decision_stats(since=since)

    assert sum(g.asked for g in stats) == len(rows) < COUNT
    uses = {g.tool: g.grant_uses for g in stats}["read_file"]
    assert 0 < uses < 30


async def test_matching_calls_are_counted_by_a_case_sensitive_test_of_one_argument(
    store: SQLStore,
):
    await write_history(store, COUNT, now=NOW)
    rows = [r for r in approval_rows(COUNT, now=NOW) if r["tool"] == "send_email"]
    group = ("tools.send_email", "send_email", "mailer")
    since = NOW - timedelta(days=30)

    inside = await store.count_matching(
        group, since=since, key="to", test="suffix", value="@example.com"
    )
    shouting = await store.count_matching(
        group, since=since, key="to", test="suffix", value="@EXAMPLE.COM"
    )
    fixed = await store.count_matching(
        group, since=since, key="subject", test="eq", value="Weekly report"
    )
    users = await store.count_matching(group, since=since, key="to", test="prefix", value="user")

    ours = Counter(r["status"] for r in rows if r["args"].endswith('@example.com"}'))
    assert inside == {s: ours[s] for s in STATUSES}
    assert sum(shouting.values()) == 0
    assert sum(fixed.values()) == sum(users.values()) == len(rows)


async def test_a_sample_is_the_newest_calls_of_one_group_and_status(store: SQLStore):
    await write_history(store, COUNT, now=NOW)
    rows = [
        r for r in approval_rows(COUNT, now=NOW)
        if r["tool"] == "charge" and r["status"] == "edited"
    ]  # fmt: skip

    sample = await store.group_sample(
        ("rules[2]", "charge", "billing"), status="edited", since=NOW - timedelta(days=30), limit=5
    )

    assert [a.id for a in sample] == [r["id"] for r in reversed(rows)][:5]
    assert all(a.requested_args is not None for a in sample)


async def test_times_to_a_decision_come_from_each_groups_newest_decisions(
    store: SQLStore, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(insights, "TIMED", 10)
    await write_history(store, COUNT, now=NOW)
    decided = [
        r for r in approval_rows(COUNT, now=NOW)
        if r["tool"] == "delete_file" and r["decided_by"] is not None
    ]  # fmt: skip
    newest = [(r["decided_at"] - r["requested_at"]) / 1_000_000 for r in decided[-10:]]

    stats = await store.decision_stats(since=NOW - timedelta(days=30))

    [deletes] = [g for g in stats if g.tool == "delete_file"]
    assert deletes.time_to_decision == insights.TimeToDecision(
        median_seconds=nearest_rank(newest, 0.5), p90_seconds=nearest_rank(newest, 0.9)
    )
