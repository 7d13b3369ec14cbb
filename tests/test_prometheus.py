"""signoff's counts in a framework app's own process: in the registry the app serves, from zero,
and — the set-up docs/operations.md describes — a real Prometheus scraping ``signoff serve`` and a
Pydantic AI app on its database, whose calls the page's queries count."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
from prometheus_client import CollectorRegistry, generate_latest

from signoff.integrations.pydantic_ai import SignoffAgent
from signoff.prometheus import PrometheusObserver, count_metrics
from tests.deadline import HANG
from tests.integrations.harness import opened
from tests.integrations.pa_app import DEFAULT, THREAD, build, open_runs
from tests.processes import served
from tests.server.test_metrics import OPERATIONS, Samples, free_port, samples, value
from tests.server.test_prometheus import (
    TOKEN,
    api_job,
    documented,
    prometheus_binary,
    query,
    read_back,
    scraping,
    until,
)
from tests.test_docs import ROOT, blocks


def served_by(registry: CollectorRegistry) -> Samples:
    return samples(generate_latest(registry).decode())


def test_every_verdict_and_kind_of_run_is_served_at_zero_before_anything_is_counted():
    # A series that first appears at 1 shows Prometheus's `rate` no increase: an app's first
    # calls would be lost to the page's queries.
    registry = CollectorRegistry()
    for collector in PrometheusObserver().collectors():
        registry.register(collector)
    shown = served_by(registry)
    for verdict in ("allow", "ask", "deny"):
        assert shown[("signoff_calls_judged_total", frozenset({("verdict", verdict)}))] == 0
    for name in ("signoff_pauses_total", "signoff_resumes_total"):
        for kind in ("runtime", "framework"):
            assert shown[(name, frozenset({("kind", kind)}))] == 0


async def test_an_app_counts_its_framework_calls_and_pauses_in_the_registry_it_serves(
    tmp_path: Path,
):
    registry = CollectorRegistry()
    count_metrics(registry)
    count_metrics(registry)  # again: nothing registered twice
    before = served_by(registry)
    async with opened("sqlite", tmp_path, open_runs) as (_, runs, side_effects, calls):
        agent = SignoffAgent(build(DEFAULT, side_effects, calls), runs, requested_by="alice")
        await agent.run("go", thread=THREAD)
    after = served_by(registry)

    def counted(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    judged = {v: counted("signoff_calls_judged_total", verdict=v) for v in ("allow", "ask", "deny")}
    # The default script: a read runs, a large charge is denied, an email and a charge wait.
    assert judged == {"allow": 1, "ask": 2, "deny": 1}
    assert counted("signoff_pauses_total", kind="framework") == 1


CONFIG = """\
database: sqlite:///{folder}/signoff.db
auth:
  tokens:
    - {{principal: olga, roles: [ops, finance], token_env: SIGNOFF_TEST_TOKEN}}
    - {{principal: prometheus, token_env: SIGNOFF_TEST_SCRAPER}}
default: ask
"""


def documented_query(comment: str) -> str:
    """The query under `comment` in docs/operations.md's queries for a dashboard."""
    [queries] = [body for _, _, body in blocks("text", [OPERATIONS]) if f"# {comment}" in body]
    lines = queries.splitlines()
    [at] = [i for i, line in enumerate(lines) if line.startswith(f"# {comment}")]
    return lines[at + 1]


def test_the_documented_share_of_calls_that_needed_a_person_counts_a_framework_apps_calls(
    tmp_path: Path,
):
    prometheus_binary()  # skip before starting anything
    (tmp_path / "signoff.yaml").write_text(CONFIG.format(folder=tmp_path))
    env = os.environ | {"SIGNOFF_TEST_TOKEN": "t0ken", "SIGNOFF_TEST_SCRAPER": TOKEN}
    arguments = ["serve", "--config", str(tmp_path / "signoff.yaml")]
    (tmp_path / "prometheus").mkdir()
    token_file = tmp_path / "prometheus" / "signoff-token"
    token_file.write_text(TOKEN)
    port = free_port()
    with (
        served(arguments, env) as (url, _),
        (tmp_path / "app.txt").open("w") as errors,
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.integrations.pa_metered",
                f"sqlite:///{tmp_path / 'signoff.db'}",
                str(tmp_path),
                str(port),
            ],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        ) as app,  # fmt: skip
    ):
        assert app.stdin is not None and app.stdout is not None

        def said() -> str:
            line = app.stdout.readline().rstrip("\n")  # type: ignore[union-attr]
            assert line, (tmp_path / "app.txt").read_text()
            return line

        try:
            assert said() == "serving"
            jobs = [api_job(token_file, url.removeprefix("http://")),
                    documented("my-agent", f"127.0.0.1:{port}")]  # fmt: skip
            with scraping(jobs, tmp_path / "prometheus") as prometheus:
                # Prometheus has read the app's counts before its first call.
                read_back(prometheus, 'signoff_calls_judged_total{job="my-agent", verdict="ask"}',
                          0)  # fmt: skip
                app.stdin.write("go\n")
                app.stdin.flush()
                held = list(iter(said, "held"))
                assert len(held) == 2, held  # the email, and the small charge
                for approval in held:
                    decided = httpx.post(
                        f"{url}/v1/approvals/{approval}/decision", json={"kind": "approve"},
                        headers={"Authorization": "Bearer t0ken"}, timeout=HANG,
                    )  # fmt: skip
                    assert decided.status_code == 200, decided.text
                assert said() == "resumed"

                share = documented_query("Share of calls that needed a person")
                shown = near(prometheus, share, 0.5)  # two of the four calls asked
                assert shown["metric"] == {}
                read_back(prometheus, 'sum(signoff_pauses_total{kind="framework"})', 1)
                read_back(prometheus, 'sum(signoff_resumes_total{kind="framework"})', 1)
                read_back(
                    prometheus,
                    'sum(signoff_decision_seconds_count{job="signoff", channel="api"})',
                    2,
                )
        finally:
            app.stdin.close()
            app.wait(timeout=HANG)
    assert app.returncode == 0, (tmp_path / "app.txt").read_text()


def near(prometheus: httpx.Client, expression: str, wanted: float) -> dict[str, Any]:
    """The one series of `expression` once its value is `wanted`, give or take the rounding of
    a sum of rates."""

    def found() -> dict[str, Any] | None:
        result = query(prometheus, expression)
        if len(result) == 1 and abs(float(result[0]["value"][1]) - wanted) < 1e-9:
            return result[0]
        return None

    series: dict[str, Any] = until(f"{expression} == {wanted}", found)
    return series
