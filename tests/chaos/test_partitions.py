"""Replicas partitioned from their PostgreSQL and SIGKILLed while runs start, calls are decided
and grants given and revoked (`tests.chaos.partitions`, at its small size; `make chaos` runs
the large one): the checker finds nothing wrong, and finds each fault planted in a copy of
what happened."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.partitions import SMALL, figures, trial, why_not


@pytest.mark.heavy
async def test_partitions_and_kills_lose_no_decision_and_run_no_call_twice(tmp_path: Path):
    reason = why_not()
    if reason is not None:
        pytest.skip(f"the partition test cannot run here: {reason}")
    done = await trial(tmp_path, SMALL, plant=True)
    assert done.anomalies == []
    seen = figures(done)
    # The nemesis bit: replicas were cut off (once in the middle of a write transaction),
    # killed and paused, requests went unanswered, and the grants and revocations were exercised.
    assert (seen["partitions"], seen["kills"], seen["pauses"]) == (2, 1, 1)
    assert any(what.startswith("open transaction cut off") for _, what in done.nemesis)
    assert seen["requests unknown (5xx or no answer)"] > 0
    assert seen["grant uses"] > 0 and seen["revocations"] > 0
    assert seen["tool executions"] > 0
    # And the checker sees each kind of fault it is there for.
    assert all(done.planted.values()), done.planted
    assert len(done.planted) == 12
