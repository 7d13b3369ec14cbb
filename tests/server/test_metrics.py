"""``GET /metrics``, in-process: what moves as calls are judged and decided, bounded labels, the
API's tokens, and a listen address of its own."""

from __future__ import annotations

import asyncio
import re
import socket
from pathlib import Path
from typing import Any, get_args

import httpx
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from signoff import Approve, Policy, Scope, ToolCall, telemetry
from signoff.errors import PolicyError
from signoff.gate import Gate
from signoff.gate.once import record_unknown
from signoff.notify import Notifications, NotifySettings, read_notify
from signoff.policy.reader import Reader
from signoff.prometheus import process_observer
from signoff.server import create_app
from signoff.server.auth import Auth
from signoff.server.config import load_config
from signoff.server.metrics import serve_metrics
from signoff.store import SQLStore, open_store
from signoff.store.gauges import OTHER
from signoff.types import ApprovalStatus
from tests.deadline import HANG
from tests.server.test_api import until
from tests.server.test_policy_api import TOKENS, client_of, make_service
from tests.test_docs import ROOT, blocks

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    """Every sample of an exposition, by name and labels."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: Samples, name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


async def scrape(client: httpx.AsyncClient) -> Samples:
    response = await client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return samples(response.text)


async def pause_a_run(client: httpx.AsyncClient, thread: str) -> dict[str, Any]:
    """Start a run whose delete_pod call asks; its pending approval."""
    started = await client.post(
        f"/v1/threads/{thread}/runs", params={"wait": 5}, json={"agent": "ops", "input": "go"}
    )
    run = await until(client, started.json()["id"], "paused")
    listed = await client.get("/v1/approvals", params={"status": "pending"})
    items: list[dict[str, Any]] = listed.json()["items"]
    [approval] = [a for a in items if a["run_id"] == run["id"]]
    return approval


async def test_a_held_call_and_its_decision_move_the_counts(store: SQLStore):
    async with client_of(make_service(store), "admin-token") as client:
        before = await scrape(client)
        approval = await pause_a_run(client, "t1")
        held = await scrape(client)
        assert value(held, "signoff_calls_judged_total", verdict="ask") == (
            value(before, "signoff_calls_judged_total", verdict="ask") + 1
        )
        waiting = {"agent": "ops", "tool": "delete_pod", "rule": ""}
        assert value(held, "signoff_approvals_waiting", **waiting) == 1
        assert value(held, "signoff_pauses_total", kind="runtime") == (
            value(before, "signoff_pauses_total", kind="runtime") + 1
        )
        written = value(held, "signoff_store_transaction_seconds_count", kind="write")
        assert written > value(before, "signoff_store_transaction_seconds_count", kind="write")

        decided = await client.post(
            f"/v1/approvals/{approval['id']}/decision", json={"kind": "approve"}
        )
        assert decided.status_code == 200, decided.text
        await until(client, approval["run_id"], "completed")
        after = await scrape(client)
        api = {"channel": "api", "outcome": "approved"}
        assert value(after, "signoff_decision_seconds_count", **api) == (
            value(held, "signoff_decision_seconds_count", **api) + 1
        )
        assert value(after, "signoff_decision_seconds_bucket", le="+Inf", **api) == (
            value(held, "signoff_decision_seconds_bucket", le="+Inf", **api) + 1
        )
        assert value(after, "signoff_resumes_total", kind="runtime") == (
            value(held, "signoff_resumes_total", kind="runtime") + 1
        )
        # Shown as 0 once decided, rather than vanishing from the dashboards.
        assert after[("signoff_approvals_waiting", frozenset(waiting.items()))] == 0


async def test_a_browsers_decision_is_the_web_inboxs(tmp_path: Path):
    async with (
        open_store(f"sqlite:///{tmp_path / 'signoff.db'}") as store,
        client_of(make_service(store), "ops-token") as client,
    ):
        approval = await pause_a_run(client, "t1")
        before = await scrape(client)
        decided = await client.post(
            f"/v1/approvals/{approval['id']}/decision",
            json={"kind": "reject", "reason": "not now"},
            headers={"Sec-Fetch-Site": "same-origin"},
        )
        assert decided.status_code == 200, decided.text
        after = await scrape(client)
        web = {"channel": "web", "outcome": "rejected"}
        assert value(after, "signoff_decision_seconds_count", **web) == (
            value(before, "signoff_decision_seconds_count", **web) + 1
        )


async def test_metrics_need_a_token_and_any_principal_may_read_them(tmp_path: Path):
    async with (
        open_store(f"sqlite:///{tmp_path / 'signoff.db'}") as store,
        client_of(make_service(store), "ops-token") as client,  # no admin role
    ):
        assert (await client.get("/metrics")).status_code == 200
        for headers in ({"Authorization": ""}, {"Authorization": "Bearer wrong"}):
            refused = await client.get("/metrics", headers=headers)
            assert refused.status_code == 401
            assert "signoff_" not in refused.text


async def test_label_values_name_no_id_and_come_from_bounded_sets(tmp_path: Path):
    async with (
        open_store(f"sqlite:///{tmp_path / 'signoff.db'}") as store,
        client_of(make_service(store), "admin-token") as client,
    ):
        approval = await pause_a_run(client, "thread-with-a-long-name")
        await client.post(f"/v1/approvals/{approval['id']}/decision", json={"kind": "approve"})
        text = (await client.get("/metrics")).text
    for secret in (approval["id"], approval["run_id"], "thread-with-a-long-name", '"a"'):
        assert secret not in text
    bounded = {
        "verdict": {"allow", "ask", "deny"},
        "channel": telemetry.CHANNELS,
        "outcome": set(get_args(ApprovalStatus)) - {"pending"},
        "kind": {"runtime", "framework", "read", "write"},
        "final": {"true", "false"},
        "sink": {"webhook", "slack", "email", "other"},
    }
    seen = set()
    for family in text_string_to_metric_families(text):
        if not family.name.startswith("signoff_") or family.name.startswith(
            ("signoff_approvals_waiting", "signoff_notification_backlog")
        ):
            continue  # those are the policy's own names (agents, tools, rules, sinks), capped
        for sample in family.samples:
            for label, found in sample.labels.items():
                if label != "le":
                    assert found in bounded[label], (family.name, label, found)
                    seen.add(label)
    assert {"verdict", "channel", "outcome", "kind"} <= seen


async def test_waiting_approvals_past_the_largest_groups_are_summed_as_other(store: SQLStore):
    gate = Gate(Policy.from_dict({"default": "ask"}), store)
    calls = [ToolCall(id=f"c{n}", name=f"tool_{n % 4}", args={"n": n}) for n in range(10)]
    await gate.check(calls)  # tool_0 and tool_1 three calls each, tool_2 and tool_3 two
    gauges = await store.gauges(groups=2)
    assert gauges.waiting == {
        ("", "tool_0", ""): 3,
        ("", "tool_1", ""): 3,
        (OTHER, OTHER, OTHER): 4,
    }
    assert (await store.gauges()).waiting[("", "tool_3", "")] == 2


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def test_a_listen_address_of_its_own_serves_the_metrics_without_a_token(tmp_path: Path):
    port = free_port()
    async with open_store(f"sqlite:///{tmp_path / 'signoff.db'}") as store:
        service = make_service(store)
        app = create_app(service, Auth(tokens=TOKENS))
        serve_metrics(app, ("127.0.0.1", port))
        async with app.router.lifespan_context(app):
            await service.gate.check([ToolCall(id="c1", name="delete_pod", args={"name": "x"})])
            async with httpx.AsyncClient() as plain, asyncio.timeout(HANG):
                response = await plain.get(f"http://127.0.0.1:{port}/metrics")
            assert response.status_code == 200
            found = samples(response.text)
            waiting = {"agent": "", "tool": "delete_pod", "rule": ""}
            assert value(found, "signoff_approvals_waiting", **waiting) == 1
            assert value(found, "signoff_calls_judged_total", verdict="ask") >= 1
        with pytest.raises(httpx.ConnectError):  # gone with the app
            httpx.get(f"http://127.0.0.1:{port}/metrics")


@pytest.mark.parametrize(
    ("listen", "problem"),
    [
        ("9464", "metrics.listen must be host:port"),
        ("127.0.0.1:99999", "metrics.listen must be host:port"),
        ("::1:9464", "metrics.listen must be host:port"),
        ("[::1]:9464", None),
    ],
)
def test_the_configs_listen_address_is_checked_where_it_is_written(
    tmp_path: Path, listen: str, problem: str | None
):
    path = tmp_path / "signoff.yaml"
    path.write_text(f'default: ask\nmetrics:\n  listen: "{listen}"\n')
    if problem is None:
        assert load_config(path).metrics.listen == ("::1", 9464)
        return
    with pytest.raises(PolicyError) as raised:
        load_config(path)
    [found] = raised.value.problems
    assert problem in found.message
    assert (found.line, found.column) == (3, 11)


def test_the_process_counts_once_whatever_the_number_of_apps():
    first = process_observer()
    assert process_observer() is first
    assert telemetry.current_observer() is first


async def test_an_observer_that_fails_is_logged_and_the_decision_stands(
    store: SQLStore, caplog: pytest.LogCaptureFixture
):
    class Broken(telemetry.Observer):
        def decided(self, channel: str, outcome: str, seconds: float) -> None:
            raise RuntimeError("the metrics backend is down")

    before = telemetry.observe(Broken())
    try:
        gate = Gate(Policy.from_dict({"default": "ask"}), store)
        [held] = await gate.check([ToolCall(id="c1", name="delete_pod", args={})])
        assert held.approval is not None
        decided = await gate.decide(held.approval.id, Approve(), actor="olga")
    finally:
        telemetry.observe(before)
    assert decided.status == "approved"
    assert (await store.get_approval(held.approval.id)).status == "approved"
    assert "the telemetry observer failed in decided" in caplog.text


OPERATIONS = ROOT / "docs" / "operations.md"


def section(heading: str) -> str:
    """The text of `heading`'s section of docs/operations.md."""
    text = OPERATIONS.read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : None if end < 0 else end]


async def test_the_metrics_the_page_lists_are_the_ones_served(tmp_path: Path):
    rows = [line for line in section("Metrics").splitlines() if line.startswith("| `signoff_")]
    listed = {re.match(r"\| `(\w+)`", row)[1] for row in rows}  # type: ignore[index]
    async with (
        open_store(f"sqlite:///{tmp_path / 'signoff.db'}") as store,
        client_of(make_service(store), "ops-token") as client,
    ):
        text = (await client.get("/metrics")).text
    served = set(re.findall(r"^# HELP (\w+) ", text, re.M))
    assert listed == {name for name in served if not name.endswith("_created")}


def test_the_pages_config_is_read_as_it_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    [config] = [body for _, _, body in blocks("yaml", [OPERATIONS]) if "metrics:" in body]
    monkeypatch.setenv("SIGNOFF_TOKEN_OLGA", "o")
    monkeypatch.setenv("SIGNOFF_TOKEN_PROMETHEUS", "p")
    path = tmp_path / "signoff.yaml"
    path.write_text(config)
    read = load_config(path)
    assert read.metrics.listen == ("127.0.0.1", 9464)
    assert read.tokens["p"].roles == frozenset()  # the scraper needs no role


def counted(name: str, **labels: str) -> float:
    """This process's count of `name` now, as /metrics shows it."""
    registry = CollectorRegistry()
    for collector in process_observer().collectors():
        registry.register(collector)
    return value(samples(generate_latest(registry).decode()), name, **labels)


async def test_grants_used_unknown_outcomes_and_failed_notifications_are_counted(
    tmp_path: Path,
):
    async with open_store(f"sqlite:///{tmp_path / 'signoff.db'}") as store:
        gate = Gate(Policy.from_dict({"default": "ask"}), store)
        notifications = Notifications(store, notify_to(f"http://127.0.0.1:{free_port()}/hook"))
        await store.outbox_events(limit=0)  # the notifier's cursor starts here
        first = ToolCall(id="c1", name="restart", args={"service": "web"}, agent="ops")
        [held] = await gate.check([first])
        assert held.approval is not None
        before = counted("signoff_grants_used_total")
        await gate.decide(held.approval.id, Approve(always=Scope(kind="agent")), actor="olga")
        [again] = await gate.check([ToolCall(id="c2", name="restart", args={"service": "web"},
                                             agent="ops")])  # fmt: skip
        assert again.kind == "run"
        assert counted("signoff_grants_used_total") == before + 1

        unknown = counted("signoff_unknown_outcomes_total")
        for _ in range(2):  # recorded once, however often it is found
            await record_unknown(store, "run-1:0:c9", tool="send_email")
        assert counted("signoff_unknown_outcomes_total") == unknown + 1

        failed = {"sink": "webhook", "final": "true"}
        failures = counted("signoff_notification_failures_total", **failed)
        await notifications.pump()  # nobody listens on that port: each send fails, for good
        assert counted("signoff_notification_failures_total", **failed) > failures
        gauges = await store.gauges()
        assert gauges.backlog == {}  # given up: nothing waits to be sent


def notify_to(url: str) -> NotifySettings:
    reader = Reader()
    settings = read_notify(reader, {"webhooks": [{"url": url}], "retry": {"attempts": 1}})
    assert reader.problems == []
    return settings


async def test_a_frameworks_pause_and_its_resume_by_the_resumer_are_counted(tmp_path: Path):
    pytest.importorskip("pydantic_ai")
    from signoff.integrations.pydantic_ai import SignoffAgent
    from tests.integrations.harness import DEFAULT
    from tests.integrations.pa_app import THREAD, build, open_runs

    runs = await asyncio.to_thread(open_runs, f"sqlite:///{tmp_path / 'pa.db'}")
    try:
        agent = SignoffAgent(build(DEFAULT, tmp_path / "effects", tmp_path / "turns"), runs)
        paused = counted("signoff_pauses_total", kind="framework")
        resumed = counted("signoff_resumes_total", kind="framework")
        await agent.run("go", thread=THREAD)
        assert counted("signoff_pauses_total", kind="framework") == paused + 1
        pending = await runs.bridge.arun(runs.store.list_approvals(status="pending"))
        assert len(pending) == 2  # send_email and the small charge
        framework = {"channel": "framework", "outcome": "approved"}
        decisions = counted("signoff_decision_seconds_count", **framework)
        for approval in pending:  # as the framework sends them: the decisions' channel
            await runs.decide({approval.id: Approve()}, actor="bob", roles=["finance"])
        pause = await runs.open_pause([a.id for a in pending])
        assert pause is not None
        assert await runs.bridge.arun(agent.resumer().resume_ready(pause.id))
        assert counted("signoff_resumes_total", kind="framework") == resumed + 1
        assert counted("signoff_decision_seconds_count", **framework) == decisions + 2
    finally:
        await asyncio.to_thread(runs.close)
