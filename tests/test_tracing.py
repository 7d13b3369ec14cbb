"""OpenTelemetry spans, read with the SDK's in-memory exporter: judge, hold, decide, resume and
execute with their attributes; a request's ``traceparent`` as their parent; a framework's span as
theirs; no spans, and no trouble, without OpenTelemetry; and ``signoff serve`` sending its spans
where OpenTelemetry's variables say (the console exporter, read from its output)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from signoff import Approve, Policy, Reject, ToolCall, telemetry
from signoff.errors import ConflictError
from signoff.gate import Gate
from signoff.gate.external import ExternalRuns
from signoff.server.tracing import export_spans
from signoff.store import SQLStore, open_store
from tests.deadline import HANG
from tests.processes import served, signoff_command
from tests.server.test_api import until
from tests.server.test_policy_api import client_of, make_service
from tests.server.test_serve import ROOT
from tests.test_docs import files

SERVE_CONFIG = """\
database: sqlite:///{folder}/signoff.db
auth: {{tokens: [{{principal: olga, roles: [ops], token_env: SIGNOFF_TEST_TOKEN}}]}}
default: ask
"""

_EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module", autouse=True)
def provider() -> Iterator[TracerProvider]:
    """A tracer provider with the in-memory exporter, signoff's while this file runs (the
    global one stays as it is: the process's other tests make no spans)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    telemetry.trace(provider=provider)
    yield provider
    telemetry.trace()
    provider.shutdown()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLStore]:
    async with open_store(f"sqlite:///{tmp_path / 'signoff.db'}") as opened:
        yield opened


def named(found: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in found if s.name == name]


def ancestors(span: ReadableSpan, found: Sequence[ReadableSpan]) -> list[int]:
    """The span ids above `span`, nearest first, as far as `found` has them (and the first
    one it lacks)."""
    by_id = {s.context.span_id: s for s in found if s.context is not None}
    chain: list[int] = []
    parent = span.parent
    while parent is not None:
        chain.append(parent.span_id)
        above = by_id.get(parent.span_id)
        parent = None if above is None else above.parent
    return chain


async def test_judging_holding_and_deciding_make_spans_with_ids_and_verdicts(
    store: SQLStore, spans: InMemorySpanExporter
):
    gate = Gate(Policy.from_dict({"default": "ask", "rules": [{"allow": "list_*"}]}), store)
    calls = [
        ToolCall(id="c1", name="list_pods", args={}),
        ToolCall(id="c2", name="delete_pod", args={"name": "secret-name"}),
    ]
    outcomes = await gate.check(calls)
    held = outcomes[1].approval
    assert held is not None
    await gate.decide(held.id, Approve(), actor="alice")

    found = spans.get_finished_spans()
    [judge] = named(found, "signoff.judge")
    assert dict(judge.attributes or {}) == {
        "signoff.calls": 2,
        "signoff.tool": ("list_pods", "delete_pod"),
        "signoff.verdict": ("allow", "ask"),
        "signoff.approval_id": (held.id,),  # of several calls, a list: of those held
    }
    [hold] = named(found, "signoff.hold")
    assert hold.parent is not None and judge.context is not None
    assert hold.parent.span_id == judge.context.span_id
    assert dict(hold.attributes or {}) == {
        "signoff.approval_id": held.id,
        "signoff.tool": "delete_pod",
        "signoff.verdict": "ask",
    }
    [decide] = named(found, "signoff.decide")
    assert dict(decide.attributes or {}) == {
        "signoff.approval_id": held.id,
        "signoff.outcome": "approved",
        "signoff.channel": "other",  # a library's own gate
    }
    for span in found:  # arguments are never an attribute
        assert "secret-name" not in str(span.attributes)


async def test_a_requests_traceparent_is_the_parent_of_its_spans(
    store: SQLStore, spans: InMemorySpanExporter
):
    trace_id, parent_id = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    traceparent = f"00-{trace_id}-{parent_id}-01"
    async with client_of(make_service(store), "admin-token") as client:
        started = await client.post(
            "/v1/threads/t1/runs", params={"wait": 5}, json={"agent": "ops", "input": "go"}
        )
        run = await until(client, started.json()["id"], "paused")
        [approval] = (await client.get("/v1/approvals", params={"status": "pending"})).json()[
            "items"
        ]
        spans.clear()
        decided = await client.post(
            f"/v1/approvals/{approval['id']}/decision",
            json={"kind": "approve"},
            headers={"traceparent": traceparent},
        )
        assert decided.status_code == 200
        await until(client, run["id"], "completed")

    found = spans.get_finished_spans()
    [decide] = named(found, "signoff.decide")
    assert decide.context is not None and decide.parent is not None
    assert format(decide.context.trace_id, "032x") == trace_id
    assert format(decide.parent.span_id, "016x") == parent_id
    assert decide.parent.is_remote
    assert (decide.attributes or {})["signoff.channel"] == "api"
    # The run resumes on the server's worker, and runs the approved call under its approval.
    [resume] = named(found, "signoff.resume")
    [execute] = named(found, "signoff.execute")
    assert resume.context is not None
    assert ancestors(execute, found)[0] == resume.context.span_id
    assert dict(execute.attributes or {}) == {
        "signoff.tool": "delete_pod",
        "signoff.verdict": "ask",
        "signoff.approval_id": approval["id"],
    }


async def test_a_frameworks_span_is_the_parent_of_signoffs(
    tmp_path: Path, spans: InMemorySpanExporter, provider: TracerProvider
):
    pytest.importorskip("pydantic_ai")
    from signoff.integrations.pydantic_ai import SignoffAgent
    from tests.integrations.harness import DEFAULT
    from tests.integrations.pa_app import THREAD, build, open_runs

    runs: ExternalRuns = await asyncio.to_thread(open_runs, f"sqlite:///{tmp_path / 'pa.db'}")
    try:
        agent = SignoffAgent(build(DEFAULT, tmp_path / "effects", tmp_path / "turns"), runs)
        tracer = provider.get_tracer("a framework")
        with tracer.start_as_current_span("agent run") as framework:
            async with asyncio.timeout(HANG):
                await agent.run("go", thread=THREAD)
    finally:
        await asyncio.to_thread(runs.close)

    found = spans.get_finished_spans()
    root = framework.get_span_context().span_id
    judged = named(found, "signoff.judge")
    executed = named(found, "signoff.execute")
    assert judged and executed
    for span in [*judged, *executed]:  # the integration hops to its own loop: joined still
        assert root in ancestors(span, found), span.name
    [read] = executed
    assert (read.attributes or {})["signoff.tool"] == "read_file"
    held = [s for s in named(found, "signoff.hold") if root in ancestors(s, found)]
    assert {(s.attributes or {})["signoff.tool"] for s in held} == {"send_email", "charge"}


def test_without_opentelemetry_signoff_works_and_makes_no_spans(tmp_path: Path):
    script = textwrap.dedent(
        """
        import asyncio, sys
        sys.modules["opentelemetry"] = None  # as if it were not installed
        from signoff import Approve, Gate, Policy, ToolCall, telemetry
        from signoff.store import open_store

        async def main():
            async with open_store(sys.argv[1]) as store:
                gate = Gate(Policy.from_dict({"default": "ask"}), store)
                [held] = await gate.check([ToolCall(id="c1", name="rm", args={})])
                decided = await gate.decide(held.approval.id, Approve(), actor="alice")
                with telemetry.span("signoff.anything") as span:
                    print(decided.status, span)

        asyncio.run(main())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, f"sqlite:///{tmp_path / 'signoff.db'}"],
        capture_output=True,
        text=True,
        timeout=HANG,
        env={**os.environ, "PYTHONWARNINGS": "error"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["approved", "None"]
    assert "opentelemetry" not in done.stderr


def test_serve_sends_its_spans_where_opentelemetrys_variables_say(tmp_path: Path):
    config = tmp_path / "signoff.yaml"
    config.write_text(SERVE_CONFIG.format(folder=tmp_path))
    env = os.environ | {
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_SERVICE_NAME": "signoff-under-test",
        "SIGNOFF_TEST_TOKEN": "t0ken",
        "SIGNOFF_TEST_SIDE_FILE": str(tmp_path / "side.txt"),
        "PYTHONPATH": str(ROOT),
    }
    trace_id, parent_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    arguments = ["serve", "--config", str(config), "--agents", "tests.server.serve_agents:agents"]
    with served(arguments, env) as (url, process):
        assert process.stdout is not None
        headers = {"Authorization": "Bearer t0ken"}
        run = httpx.post(
            f"{url}/v1/threads/t/runs", params={"wait": 10}, headers=headers,
            json={"agent": "ops", "input": "delete nginx-1"}, timeout=HANG,
        ).json()  # fmt: skip
        [held] = run["pending_approvals"]
        decided = httpx.post(
            f"{url}/v1/approvals/{held}/decision", json={"kind": "approve"},
            headers=headers | {"traceparent": f"00-{trace_id}-{parent_id}-01"}, timeout=HANG,
        )  # fmt: skip
        assert decided.status_code == 200, decided.text
        printed = ""
        wanted = ['"name": "signoff.decide"', f'"trace_id": "0x{trace_id}"',
                  f'"parent_id": "0x{parent_id}"', '"service.name": "signoff-under-test"',
                  f'"signoff.approval_id": "{held}"']  # fmt: skip
        while not all(w in printed for w in wanted):  # each span printed as it ends
            line = process.stdout.readline()
            assert line, f"the server ended; it printed:\n{printed}"
            printed += line


def test_an_exporter_serve_cannot_send_with_is_named():
    assert export_spans({}) is None  # no variables: no spans sent anywhere
    with pytest.raises(ValueError, match="OTEL_TRACES_EXPORTER='zipkin' is not one"):
        export_spans({"OTEL_TRACES_EXPORTER": "zipkin"})


def test_serve_without_the_otlp_exporter_says_which_extra_sends_spans(tmp_path: Path):
    try:
        otlp = importlib.util.find_spec("opentelemetry.exporter.otlp.proto.http")
    except ModuleNotFoundError:  # a package above it is missing
        otlp = None
    if otlp is not None:
        pytest.skip("the OTLP exporter is installed here")
    config = tmp_path / "signoff.yaml"
    config.write_text(SERVE_CONFIG.format(folder=tmp_path))
    env = os.environ | {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
                        "SIGNOFF_TEST_TOKEN": "t0ken"}  # fmt: skip
    done = subprocess.run(
        [*signoff_command(), "serve", "--config", str(config), "--port", "0"],
        capture_output=True, text=True, env=env, timeout=HANG, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert "pip install 'signoff[otel]'" in done.stdout + done.stderr


def test_the_pages_traced_program_prints_signoffs_spans_in_its_trace(tmp_path: Path):
    program = files(ROOT / "docs" / "operations.md")["traced.py"]
    (tmp_path / "traced.py").write_text(program)
    done = subprocess.run(
        [sys.executable, "traced.py"], cwd=tmp_path, capture_output=True, text=True,
        timeout=HANG, check=False, env=os.environ | {"PYTHONWARNINGS": "error"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed, decoder, at = [], json.JSONDecoder(), 0
    while at < len(done.stdout.rstrip()):
        span, at = decoder.raw_decode(done.stdout, at)
        printed.append(span)
        at += len(done.stdout[at:]) - len(done.stdout[at:].lstrip())
    by_name = {span["name"]: span for span in printed}
    assert sorted(by_name) == ["agent turn", "signoff.decide", "signoff.hold", "signoff.judge"]
    turn = by_name["agent turn"]["context"]["span_id"]
    assert by_name["signoff.judge"]["parent_id"] == turn
    assert by_name["signoff.decide"]["parent_id"] == turn
    assert by_name["signoff.hold"]["parent_id"] == by_name["signoff.judge"]["context"]["span_id"]


async def test_a_decision_refused_leaves_a_failed_span(
    store: SQLStore, spans: InMemorySpanExporter
):
    gate = Gate(Policy.from_dict({"default": "ask"}), store)
    [held] = await gate.check([ToolCall(id="c1", name="rm", args={})])
    assert held.approval is not None
    await gate.decide(held.approval.id, Approve(), actor="alice")
    spans.clear()
    with pytest.raises(ConflictError):
        await gate.decide(held.approval.id, Reject(reason="no"), actor="bob")
    [decide] = named(spans.get_finished_spans(), "signoff.decide")
    assert decide.status.status_code is StatusCode.ERROR
    assert [event.name for event in decide.events] == ["exception"]
