"""The shared preview mechanism (`signoff.gate.preview`): what a preview function returns
becomes a bounded `Preview`; a slow or failing one says so; the gate previews only the calls it
holds, once."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from signoff import Approve, Gate, Policy, Preview, Scope
from signoff.gate import CheckContext
from signoff.gate.preview import Previews, as_preview
from signoff.store import SQLStore
from signoff.testing import call

DIFF = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-1\n+2\n"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (DIFF, Preview(kind="diff", body=DIFF)),
        ("  " + DIFF, Preview(kind="diff", body="  " + DIFF)),
        ("3 rows", Preview(kind="text", body="3 rows")),
        ([{"id": 1, "at": object, "ok": True}], Preview(kind="table",
         body=[{"id": 1, "at": "<class 'object'>", "ok": True}])),
        ([], Preview(kind="table", body=[])),
        ({"pods": 2}, Preview(kind="text", body='{\n  "pods": 2\n}')),
        ([{"x": float("nan")}], Preview(kind="table", body=[{"x": "nan"}])),
        (Preview(kind="table", body="not rows"), Preview(kind="text", body="not rows")),
        ("lone \ud800", Preview(kind="text", body="lone ?")),
    ],
    ids=["diff", "indented-diff", "text", "table", "no-rows", "json", "nan", "bad-table",
         "surrogate"],
)  # fmt: skip
def test_what_a_preview_returns_becomes_a_preview_of_its_kind(value: Any, expected: Preview):
    assert as_preview(value) == expected


def test_a_preview_past_its_size_is_cut_with_a_note():
    text = as_preview("é" * 5000, max_bytes=4096)
    assert isinstance(text.body, str) and text.truncated
    assert text.body.endswith("… (preview cut at 4,096 bytes)")
    assert text.body.startswith("é" * 2048) and "é" * 2049 not in text.body

    rows = as_preview([{"n": i} for i in range(1000)], max_bytes=1024)
    assert rows.truncated and rows.body == [{"n": i} for i in range(len(rows.body))]
    assert 50 < len(rows.body) < 1024 // 8

    assert not as_preview([{"n": 1}], max_bytes=1024).truncated


async def test_sync_previews_run_in_a_thread_and_async_ones_on_the_loop():
    threads: list[str] = []

    def sync(name: str) -> str:
        threads.append(threading.current_thread().name)
        return f"sync {name}"

    async def in_loop(name: str) -> str:
        return f"async {name}"

    previews = Previews({"a": sync, "b": in_loop})
    calls = [call("a", name="x"), call("b", name="y"), call("c", name="z")]
    found = await previews.of_many(calls)
    assert {k: p.body for k, p in found.items()} == {
        calls[0].id: "sync x",
        calls[1].id: "async y",
    }
    assert threads and threads[0] != threading.current_thread().name


async def test_a_failing_or_slow_preview_says_so_within_its_bound():
    async def never(**_: Any) -> str:
        await asyncio.get_running_loop().create_future()
        return ""

    def broken(**_: Any) -> str:
        raise KeyError("pods")

    previews = Previews({"slow": never, "broken": broken}, timeout=0.05)
    assert await previews.of(call("slow")) == Preview(error="preview took longer than 0.05 s")
    assert await previews.of(call("broken")) == Preview(error="preview failed: KeyError: 'pods'")
    wrong = await previews.of(call("broken", unexpected=1), {"other": 2})
    assert wrong == Preview(error="preview failed: KeyError: 'pods'")
    assert await previews.of(call("none")) is None


def test_the_bounds_are_checked():
    with pytest.raises(ValueError, match="timeout must be positive"):
        Previews(timeout=0)
    with pytest.raises(ValueError, match="1024 bytes or more"):
        Previews(max_bytes=10)


POLICY = Policy.from_dict(
    {"rules": [{"allow": "read"}, {"deny": "drop"}, {"ask": ["write", "scale"]}]}
)


async def test_the_gate_previews_only_the_calls_it_holds(store: SQLStore):
    seen: list[str] = []

    def noted(name: str) -> str:
        seen.append(name)
        return f"would touch {name}"

    names = ["read", "drop", "write"]
    gate = Gate(POLICY, store)
    outcomes, _ = await gate.hold(
        [call(n, name=n) for n in names], previews=Previews(dict.fromkeys(names, noted))
    )
    assert seen == ["write"]
    [held] = [o.approval for o in outcomes if o.approval is not None]
    assert held.preview == Preview(body="would touch write")
    assert (await store.get_approval(held.id)).preview == held.preview


async def test_a_call_a_grant_lets_through_keeps_no_preview(store: SQLStore):
    gate = Gate(POLICY, store)
    previews = Previews({"scale": lambda replicas: f"to {replicas}"})
    context = CheckContext(run_id="r1", requested_by="alice")
    [first], _ = await gate.hold([call("scale", replicas=3)], context, previews=previews)
    assert first.approval is not None and first.approval.preview is not None
    await gate.decide(first.approval.id, Approve(always=Scope(kind="run")), actor="bob")

    [again], _ = await gate.hold([call("scale", replicas=3)], context, previews=previews)
    assert again.kind == "run" and again.approval is None


async def test_a_call_judged_again_is_not_previewed_again(store: SQLStore):
    seen: list[int] = []

    def counted(replicas: int) -> str:
        seen.append(replicas)
        return f"to {replicas}"

    gate = Gate(POLICY, store)
    previews = Previews({"scale": counted})
    context = CheckContext(thread_id="t1", origin="langgraph")
    scale = call("scale", replicas=3)
    [first] = await gate.hold_external([scale], context, previews=previews)
    [again] = await gate.hold_external([scale], context, previews=previews)
    assert again.recorded and again.approval is not None and first.approval is not None
    assert again.approval.id == first.approval.id
    assert again.approval.preview == Preview(body="to 3")
    assert seen == [3]
