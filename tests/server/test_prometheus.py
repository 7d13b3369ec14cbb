"""A real Prometheus (Debian's package: its own process, a config file, a scratch database)
scraping a real ``signoff serve`` every second — on the API with a bearer token (the job
docs/operations.md shows, its interval, token file and target the test's), on the config's
metrics address without one, and on the API without a token (refused) — and the decisions read
back through Prometheus's HTTP API. Without the prometheus binary these tests are skipped, except
under CI, where they fail."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.deadline import HANG
from tests.installed import program
from tests.processes import served
from tests.server.test_metrics import free_port
from tests.server.test_serve import ROOT
from tests.test_docs import files

TOKEN = "scr4per"
CONFIG = """\
database: sqlite:///{folder}/signoff.db
auth:
  tokens:
    - {{principal: olga, roles: [ops], token_env: SIGNOFF_TEST_TOKEN}}
    - {{principal: prometheus, token_env: SIGNOFF_TEST_SCRAPER}}
metrics: {{listen: "127.0.0.1:{metrics_port}"}}
default: ask
"""
EXTRA_JOBS = """\
- job_name: signoff-metrics-address
  static_configs: [{{targets: ["{metrics}"]}}]
- job_name: signoff-without-token
  static_configs: [{{targets: ["{api}"]}}]
"""


def documented(job: str, target: str) -> dict[str, Any]:
    """docs/operations.md's scrape job `job`, scraping `target` every second."""
    jobs = yaml.safe_load(files(ROOT / "docs" / "operations.md")["prometheus.yml"])
    [found] = [j for j in jobs["scrape_configs"] if j["job_name"] == job]
    found["scrape_interval"] = "1s"
    found["static_configs"] = [{"targets": [target]}]
    return dict(found)


def api_job(token_file: Path, api: str) -> dict[str, Any]:
    """docs/operations.md's job that scrapes the API, at `api` with the token in `token_file`."""
    job = documented("signoff", api)
    job["authorization"]["credentials_file"] = str(token_file)
    return job


def scrapes(token_file: Path, api: str, metrics: str) -> list[dict[str, Any]]:
    """docs/operations.md's job, scraping `api` every second with the token in `token_file`;
    and two more jobs, on the metrics address and without a token."""
    extra = yaml.safe_load(EXTRA_JOBS.format(api=api, metrics=metrics))
    return [api_job(token_file, api), *extra]


HEADERS = {"Authorization": "Bearer t0ken"}


def prometheus_binary() -> str:
    return program("prometheus")


def until(what: str, check: Any) -> Any:
    """Poll `check` until it returns something true; fail after the tests' deadline."""
    deadline = time.monotonic() + HANG
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def signoff(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """`signoff serve` for the module: its URL and its metrics port."""
    prometheus_binary()  # skip before starting anything
    folder = tmp_path_factory.mktemp("signoff")
    metrics_port = free_port()
    config = folder / "signoff.yaml"
    config.write_text(CONFIG.format(folder=folder, metrics_port=metrics_port))
    env = os.environ | {
        "SIGNOFF_TEST_TOKEN": "t0ken",
        "SIGNOFF_TEST_SCRAPER": TOKEN,
        "SIGNOFF_TEST_SIDE_FILE": str(folder / "side.txt"),
        "PYTHONPATH": str(ROOT),
    }
    arguments = ["serve", "--config", str(config), "--agents", "tests.server.serve_agents:agents"]
    with served(arguments, env) as (url, _):
        yield url, metrics_port


@pytest.fixture(scope="module")
def prometheus(
    signoff: tuple[str, int], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    """A Prometheus scraping `signoff` every second, for the module: a client of its API."""
    url, metrics_port = signoff
    folder = tmp_path_factory.mktemp("prometheus")
    token_file = folder / "signoff-token"
    token_file.write_text(TOKEN)
    api = url.removeprefix("http://")
    with scraping(scrapes(token_file, api, f"127.0.0.1:{metrics_port}"), folder) as client:
        yield client


@contextlib.contextmanager
def scraping(jobs: list[dict[str, Any]], folder: Path) -> Iterator[httpx.Client]:
    """A Prometheus running `jobs` every second, its files in `folder`: a client of its API."""
    config = folder / "prometheus.yml"
    config.write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s"}, "scrape_configs": jobs,
    }))  # fmt: skip
    port = free_port()
    with (folder / "log.txt").open("w") as log:
        process = subprocess.Popen(
            [prometheus_binary(), f"--config.file={config}",
             f"--storage.tsdb.path={folder / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=HANG) as client:

            def ready() -> bool:
                try:
                    return client.get("/-/ready").status_code == 200
                except httpx.TransportError:
                    assert process.poll() is None, (folder / "log.txt").read_text()
                    return False

            until("Prometheus to start", ready)
            yield client
    finally:
        process.terminate()
        process.wait(timeout=HANG)


def query(prometheus: httpx.Client, expression: str) -> list[dict[str, Any]]:
    """The instant vector `expression` gives now (through ``/api/v1/query``)."""
    answer = prometheus.get("/api/v1/query", params={"query": expression}).json()
    assert answer["status"] == "success", answer
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


def read_back(prometheus: httpx.Client, expression: str, wanted: float) -> dict[str, Any]:
    """The first series of `expression` once its value is `wanted`."""

    def found() -> dict[str, Any] | None:
        for series in query(prometheus, expression):
            if float(series["value"][1]) == wanted:
                return series
        return None

    series: dict[str, Any] = until(f"{expression} == {wanted}", found)
    return series


def paused_run(url: str) -> str:
    """Start a run of the ops agent: paused on its delete_pod call, whose approval's id this
    is."""
    run = httpx.post(
        f"{url}/v1/threads/t/runs", params={"wait": 10}, headers=HEADERS,
        json={"agent": "ops", "input": "delete nginx-1"}, timeout=HANG,
    ).json()  # fmt: skip
    assert run["status"] == "paused", run
    [held] = run["pending_approvals"]
    return str(held)


@pytest.mark.heavy
def test_prometheus_reads_a_decision_back_from_signoffs_metrics(
    signoff: tuple[str, int], prometheus: httpx.Client
):
    url, _ = signoff
    held = paused_run(url)
    waiting = read_back(
        prometheus,
        'signoff_approvals_waiting{job="signoff", agent="ops", tool="delete_pod"}',
        1,
    )
    assert "rule" not in waiting["metric"]  # empty, as Prometheus keeps it: the default asked
    decided = httpx.post(
        f"{url}/v1/approvals/{held}/decision", json={"kind": "approve"}, headers=HEADERS
    )
    assert decided.status_code == 200, decided.text

    series = read_back(
        prometheus,
        'sum by (channel, outcome) (signoff_decision_seconds_count{job="signoff"})',
        1,
    )
    assert series["metric"] == {"channel": "api", "outcome": "approved"}
    # The time to decision as a dashboard asks for it: a number of seconds, within the buckets.
    [quantile] = query(
        prometheus,
        'histogram_quantile(0.9, sum by (le) (signoff_decision_seconds_bucket{job="signoff"}))',
    )
    assert 0 < float(quantile["value"][1]) <= 604800
    read_back(prometheus, 'signoff_resumes_total{job="signoff", kind="runtime"}', 1)
    read_back(prometheus, 'signoff_approvals_waiting{job="signoff", tool="delete_pod"}', 0)


def test_the_metrics_address_needs_no_token_and_the_api_refuses_a_scrape_without_one(
    signoff: tuple[str, int], prometheus: httpx.Client
):
    read_back(prometheus, 'up{job="signoff"}', 1)
    read_back(prometheus, 'up{job="signoff-metrics-address"}', 1)
    read_back(prometheus, 'up{job="signoff-without-token"}', 0)
    targets = prometheus.get("/api/v1/targets").json()["data"]["activeTargets"]
    [refused] = [t for t in targets if t["labels"]["job"] == "signoff-without-token"]
    assert "401" in refused["lastError"], json.dumps(refused)
    # Both scrapes see the same counts: one process, one store.
    read_back(
        prometheus,
        'signoff_calls_judged_total{job="signoff-metrics-address", verdict="ask"}'
        ' - on(verdict) signoff_calls_judged_total{job="signoff", verdict="ask"}',
        0,
    )
