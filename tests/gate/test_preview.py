"""The shared preview mechanism (`signoff.gate.preview`): what a preview function returns
becomes a bounded `Preview`, its redacted arguments masked; a slow or failing one says so, and
one that hangs holds only a preview thread; the gate previews only the calls it holds, once."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading
from typing import Any

import pytest

from signoff import Approve, Gate, Policy, Preview, Scope, ToolCall
from signoff.gate import CheckContext
from signoff.gate.preview import Previews, PreviewThreads, as_preview, masked
from signoff.redaction import MASK, Redaction
from signoff.store import SQLStore
from signoff.testing import call
from tests.deadline import HANG

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


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        ("the cluster cannot be reached", "preview failed: the cluster cannot be reached"),
        ("  ", "preview failed"),
        ("no preview for dry runs", "no preview for dry runs"),
    ],
)
def test_a_preview_that_says_why_it_has_none_says_it_failed(error: str, shown: str):
    assert as_preview(Preview(error=error)) == Preview(error=shown)


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


def test_the_threads_of_previews_are_bounded():
    with pytest.raises(ValueError, match="at least one thread"):
        PreviewThreads(0)
    with pytest.raises(ValueError, match="at least one at a time"):
        Previews(at_once=0)


class Stuck:
    """A synchronous preview that blocks until `release` (or a hang), keeping the threads it
    ran on."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.threads: list[threading.Thread] = []

    def __call__(self, **_: Any) -> str:
        self.threads.append(threading.current_thread())
        self.release.wait(HANG)
        return "late"


async def test_a_hung_preview_is_abandoned_and_when_every_thread_is_held_a_preview_fails_at_once():
    stuck = Stuck()
    threads = PreviewThreads(1)
    try:
        hung = Previews({"hang": stuck}, timeout=0.05, threads=threads)
        assert await hung.of(call("hang")) == Preview(error="preview took longer than 0.05 s")
        assert threads.busy == 1  # abandoned, not stopped

        # No queueing behind it: were this one to wait for the thread, it would wait a hang.
        patient = Previews({"quick": lambda: "quick"}, timeout=HANG, threads=threads)
        refused = await patient.of(call("quick"))
        assert refused is not None and (refused.error or "").startswith(
            "preview not run: the preview threads it may use are busy"
        )
    finally:
        stuck.release.set()
    [thread] = stuck.threads
    thread.join(HANG)
    assert thread.daemon and threads.busy == 0
    assert await patient.of(call("quick")) == Preview(body="quick")


async def test_a_tool_whose_previews_hang_holds_only_its_share_of_the_threads():
    stuck = Stuck()
    threads = PreviewThreads(8, per_tool=2)
    try:
        hung = Previews({"hang": stuck}, timeout=0.05, threads=threads)
        for _ in range(5):  # turn after turn of calls whose previews never return
            await hung.of(call("hang"))
        assert threads.busy == 2  # its share, no more: the rest of the threads are free
        other = Previews({"quick": lambda: "quick"}, timeout=HANG, threads=threads)
        assert await other.of(call("quick")) == Preview(body="quick")
    finally:
        stuck.release.set()
    for thread in stuck.threads:
        thread.join(HANG)
    assert threads.busy == 0


async def test_the_previews_of_calls_held_together_run_a_few_at_once_within_one_bound():
    stuck = Stuck()
    threads = PreviewThreads(8)
    try:
        previews = Previews({"hang": stuck}, timeout=0.1, at_once=2, threads=threads)
        calls = [ToolCall(id=f"c{n}", name="hang", args={}) for n in range(5)]
        found = await previews.of_many(calls)
        errors = sorted(str(p.error) for p in found.values())
        assert (
            errors
            == [
                "preview not run: it waited 0.1 s for its turn behind the previews of the calls "
                "held with it"
            ]
            * 3
            + ["preview took longer than 0.1 s"] * 2
        )
        assert threads.busy == 2  # the other calls never took a thread
    finally:
        stuck.release.set()


def test_a_hung_synchronous_preview_does_not_keep_its_process_from_exiting():
    script = textwrap.dedent(
        """
        import asyncio, threading
        from signoff.gate.preview import Previews
        from signoff.testing import call

        never = threading.Event()
        previews = Previews({"hang": lambda: never.wait()}, timeout=0.05)
        print(asyncio.run(previews.of(call("hang"))).error)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG
    )
    assert (done.returncode, done.stdout) == (0, "preview took longer than 0.05 s\n"), done.stderr


async def test_a_preview_masks_the_redacted_values_of_its_arguments_however_it_shows_them():
    def report(user: str, password: str, headers: dict[str, str], pin: str) -> Any:
        if user == "table":
            return [{"user": user, password: "the column", "auth": headers["authorization"]}]
        if user == "fails":
            raise PermissionError(f"login refused for {user}:{password}")
        return (
            f"login {user}:{password}\n"
            f"{json.dumps({'password': password, 'headers': headers})}\n"
            f"{json.dumps(password, ensure_ascii=False)} pin {pin}"
        )

    secret = 'pa"ss-wörd'
    args = {"password": secret, "headers": {"authorization": "Bearer t0k3n"}, "pin": "42"}
    previews = Previews({"login": report}, redaction=Redaction(["password", "headers.*", "pin"]))

    text = await previews.of(call("login", user="ann", **args))
    assert text == Preview(
        body=f'login ann:{MASK}\n{{"password": "{MASK}", "headers": {{"authorization": "{MASK}"}}}}'
        f'\n"{MASK}" pin 42'
    )  # a value under four characters is not looked for: "42" stays
    table = await previews.of(call("login", user="table", **args))
    assert table == Preview(kind="table", body=[
        {"user": "table", MASK: "the column", "auth": MASK},
    ])  # fmt: skip
    failed = await previews.of(call("login", user="fails", **args))
    assert failed == Preview(
        error=f"preview failed: PermissionError: login refused for fails:{MASK}"
    )


def test_a_preview_cut_in_the_middle_of_a_redacted_value_masks_its_start():
    secret = "s3cr3t-value-0123456789"
    cut = as_preview("x" * 1010 + secret, max_bytes=1024)
    assert cut.truncated and secret[:14] in str(cut.body)

    shown = masked(cut, Redaction(["key"]), {"key": secret})
    assert shown.body == "x" * 1010 + MASK + "\n… (preview cut at 1,024 bytes)"
    assert masked(cut, Redaction(), {"key": secret}) == cut
