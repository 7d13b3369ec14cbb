"""The insights' queries, on SQLite and on the real PostgreSQL server: each figure checked
against the same history counted row by row here."""

from __future__ import annotations

import math
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from signoff.insights.patterns import shared
from signoff.store import SQLStore, insights
from signoff.store.insights import STATUSES, ArgumentMatch, Voices
from signoff.store.times import to_micros
from signoff.types import ToolCall
from tests.history import approval_row, approval_rows, write_history, write_rows

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


def decided(
    n: int, args: dict[str, Any], *, status: str = "approved", tool: str = "t",
    agent: str | None = "a", by: str | None = "alice", requester: str | None = "ann",
    requested_args: dict[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The `n`-th call of a small history, asked `n` minutes after the window opened."""
    return approval_row(
        n, tool=tool, rule="r", agent=agent, args=args, status=status, decision=None,
        requested_at=to_micros(NOW - timedelta(days=1) + timedelta(minutes=n)),
        decided_by=by, requested_by=requester, requested_args=requested_args,
    )  # fmt: skip


TRICKY = (
    "/tmp/a", "/tmp/cache-1.json", "/tmp/...", "/tmp/..", "/tmp/.", "/tmp/", "/tmp/a/b",
    "/tmp//a", "/tmp/../etc/shadow", "/tmp/a b", "/tmp/a\\b", "/tmp/x\n", "/tmp/\tx", "/tmpa",
    "/tmp/caf\u00e9", "/tmp/\uff41", "/tmp/a*", "/tmp/[a]", "/tmp/a%", "/tmp/a_", "x/tmp/a",
    "ann@example.com", "a.b+c@example.com", "@example.com", "a@b@example.com",
    "attacker@evil.test, boss@example.com", "a;b@example.com", "a b@example.com",
    "<a@example.com>", "a@example.com\n", "a@example.com.evil", "\u00e9@example.com",
    "A_Z-9@example.com", "a@EXAMPLE.com", "a%b@example.com",
)  # fmt: skip


@pytest.mark.parametrize("examples", [("/tmp/a", "/tmp/b"), ("a@example.com", "b@example.com")])
async def test_one_name_in_a_folder_or_at_a_domain_is_counted_as_the_policy_judges_it(
    store: SQLStore, examples: tuple[str, str]
):
    [pattern] = shared([ToolCall(id=v, name="t", args={"v": v}) for v in examples])
    assert pattern.test in ("in_folder", "at_domain")
    await write_rows(store, [decided(n, {"v": value}) for n, value in enumerate(TRICKY)])

    counts = await store.count_matching(
        ("r", "t", "a"), since=NOW - timedelta(days=2), key="v", test=pattern.test,
        value=pattern.value,
    )  # fmt: skip

    held = [value for value in TRICKY if pattern.holds(value)]
    assert counts["approved"] == len(held) >= 3


async def test_voices_count_each_person_and_each_requester_once(store: SQLStore):
    rows = [decided(n, {"v": "/tmp/a"}, by="alice", requester="ann") for n in range(10)]
    rows += [decided(10, {"v": "/tmp/b"}, by="ALICE", requester=None)]
    rows += [decided(11, {"v": "/tmp/c"}, by="bob", requester=None)]
    rows += [decided(12, {"v": "/tmp/d/e"}, by="carol", requester="cy")]
    rows += [decided(13, {"v": "/tmp/f"}, status="rejected", by="dave", requester="di")]
    await write_rows(store, rows)
    group, since = ("r", "t", "a"), NOW - timedelta(days=2)

    folder = ArgumentMatch(key="v", test="in_folder", value="/tmp/")
    in_folder = await store.tally(group, since=since, match=folder)
    everyone = await store.tally(group, since=since)

    # alice and ALICE are one person; calls of no known requester count as one requester
    assert in_folder.voices["approved"] == Voices(people=2, requesters=2)
    assert in_folder.counts["approved"] == 12
    assert everyone.voices["approved"] == Voices(people=3, requesters=3)
    assert everyone.voices["rejected"] == Voices(people=1, requesters=1)
    assert everyone.voices["edited"] == Voices(people=0, requesters=0)


async def test_answered_questions_count_among_the_decided_calls_and_on_their_own(store: SQLStore):
    ask = {"question": "Which region?", "choices": ["eu", "us"]}
    rows = [decided(n, ask, status="answered", tool="ask_person", by="bob") for n in range(3)]
    rows += [decided(3, ask, status="rejected", tool="ask_person", by="carol")]
    rows += [decided(4, ask, status="pending", tool="ask_person", by=None)]
    await write_rows(store, rows)

    [group] = await store.decision_stats(since=NOW - timedelta(days=2))

    assert (group.counts["answered"], group.counts["rejected"], group.asked) == (3, 1, 5)
    assert group.deciders == (("bob", 3), ("carol", 1))
    assert group.time_to_decision is not None  # an answer is a person's decision
    assert group.time_to_decision.median_seconds == 60


async def test_the_refused_calls_like_a_condition_are_read_newest_first_within_a_limit(
    store: SQLStore,
):
    rows = [
        decided(0, {"v": "/tmp/a"}, status="rejected"),
        decided(1, {"v": "/tmp/b"}, status="responded"),
        decided(2, {"v": "/srv/x"}, status="edited", requested_args={"v": "/tmp/c"}),
        decided(3, {"v": "/tmp/d"}, status="edited", requested_args={"v": "/srv/y"}),
        decided(4, {"v": "/tmp/e"}),
        decided(5, {"v": "/tmp/f"}, status="expired", by=None),
        decided(6, {"v": "/tmp/g"}, status="rejected", agent="other"),
        decided(7, {"v": "/tmp/h"}, status="rejected", agent=None),
        decided(8, {"v": "/tmp/i"}, status="rejected", tool="u"),
        decided(9, {"v": 7}, status="rejected"),
    ]
    await write_rows(store, rows)
    near = ArgumentMatch(key="v", test="prefix", value="/tmp/")
    since = NOW - timedelta(days=2)

    ours = await store.refused_like("t", agent="a", since=since, match=near, limit=10)
    anyone = await store.refused_like("t", agent=None, since=since, match=near, limit=10)
    newest = await store.refused_like("t", agent=None, since=since, match=near, limit=2)

    assert [a.requested_call.args["v"] for a in ours] == ["/tmp/c", "/tmp/b", "/tmp/a"]
    assert [a.requested_call.args["v"] for a in anyone] == [
        "/tmp/h", "/tmp/g", "/tmp/c", "/tmp/b", "/tmp/a"
    ]  # fmt: skip
    assert [a.requested_call.args["v"] for a in newest] == ["/tmp/h", "/tmp/g"]


async def test_refused_numbers_at_most_a_bound_are_read_and_no_other_kind(store: SQLStore):
    amounts: list[object] = [5, 9.5, 10, 10.5, 1e300, "5", True, None, [1]]
    rows = [decided(n, {"v": a}, status="rejected") for n, a in enumerate(amounts)]
    await write_rows(store, [*rows, decided(99, {"w": 1}, status="rejected")])

    found = await store.refused_like(
        "t", agent="a", since=NOW - timedelta(days=2),
        match=ArgumentMatch(key="v", test="at_most", value=10), limit=100,
    )  # fmt: skip

    assert sorted(a.requested_call.args["v"] for a in found) == [5, 9.5, 10]


@pytest.mark.parametrize(
    ("test", "value"),
    [
        ("at_most", "10"),
        ("prefix", 10),
        ("in_folder", 1.5),
        ("at_most", True),
        ("in_folder", "/tmp"),
        ("at_domain", "example.com"),
    ],
)
def test_a_test_of_the_wrong_kind_of_value_is_refused(test: str, value: object):
    with pytest.raises(ValueError, match="needs"):
        ArgumentMatch(key="v", test=test, value=value)  # type: ignore[arg-type]
