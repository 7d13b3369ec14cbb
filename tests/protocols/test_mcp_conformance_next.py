"""The MCP gateway checked by the conformance suite's newest release, 0.2.0-alpha.11 (in tests/js
as ``mcp-conformance-next``, beside 0.1.16), which scores each specification revision by the
requirement set frozen at its release: the 2025-11-25 and 2026-07-28 sets, run against the suite's
own reference server (tests/js/conformance-next) directly and through ``signoff mcp-gateway
--transport http --no-auth`` with ``default: allow``.

Counted as issue 50's table counts them: a scenario passes when none of its checks is a FAILURE
(a WARNING is not one), and only the scenarios the set scores count (a run also runs some it
reports but never scores: the tasks extension, pending ones). Each run must fail exactly the
scenarios `EXPECTED_FAILURES` lists for it: one that starts passing, or another that starts
failing, fails the test until the list says so."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any, Literal

import pytest
import pytest_asyncio

from tests.deadline import HANG
from tests.processes import signoff_server
from tests.protocols.test_mcp_conformance import (
    ROOT,
    free_port,
    gateway_config,
    passed,
    suite_checks,
)
from tests.protocols.test_mcp_gateway import node_22

Revision = Literal["2025-11-25", "2026-07-28"]
Route = Literal["direct", "gateway"]

RESULT_TYPE = "the reference server leaves the required `resultType` out of its tools/call results"
REFUSED = (
    "the gateway refuses the reference server's tools/call result without `resultType`, saying "
    "so in an isError text (tools-call-simple-text, -error and -with-progress pass on that text)"
)

EXPECTED_FAILURES: dict[tuple[Revision, Route], dict[str, str]] = {
    ("2025-11-25", "direct"): {},
    ("2025-11-25", "gateway"): {},
    ("2026-07-28", "direct"): {
        "tools-call-simple-text": RESULT_TYPE,
        "tools-call-image": RESULT_TYPE,
        "tools-call-audio": RESULT_TYPE,
        "tools-call-embedded-resource": RESULT_TYPE,
        "tools-call-mixed-content": RESULT_TYPE,
        "tools-call-error": RESULT_TYPE,
        "tools-call-with-progress": RESULT_TYPE,
    },
    ("2026-07-28", "gateway"): {
        "tools-call-image": REFUSED,
        "tools-call-audio": REFUSED,
        "tools-call-embedded-resource": REFUSED,
        "tools-call-mixed-content": REFUSED,
    },
}
"""The scored scenarios each run fails, and why, one line a scenario — or one a check,
``scenario/check-id``, where the scenario's other checks pass and must go on passing (a
scenario of many checks, some of them skipped until the gateway offers what they test)."""

SCORED = {"2025-11-25": 30, "2026-07-28": 37}
"""How many server scenarios each frozen requirement set scores (issue 50's table)."""

JS = ROOT / "tests/js"
NEXT = JS / "node_modules/mcp-conformance-next/dist/index.js"
REFERENCE = JS / "conformance-next/everything-server.ts"

pytestmark = pytest.mark.skipif(
    not NEXT.exists(),
    reason="the conformance suite 0.2.0-alpha.11 is not in tests/js: `make pytest` installs it",
)

Checks = dict[str, list[dict[str, Any]]]


async def scored(revision: Revision) -> list[str]:
    """The server scenarios `revision`'s requirement set scores, as the suite lists them."""
    process = await asyncio.create_subprocess_exec(
        node_22(), str(NEXT), "list", "--server", "--requirements", revision,
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(HANG):
        said, _ = await process.communicate()
    section = said.decode().split("Server scenarios (test against a server):\n")[1]
    listed = section.split("\n\n")[0].splitlines()
    return [line.removeprefix("  - ") for line in listed]


@contextlib.asynccontextmanager
async def reference_server() -> AsyncIterator[str]:
    """The suite's reference server (TypeScript, run by tsx in the process itself): its URL."""
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        node_22(), "--import", "tsx", REFERENCE.name, cwd=REFERENCE.parent,
        env=os.environ | {"PORT": str(port)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        async with asyncio.timeout(HANG):
            said = await process.stdout.readline()
        assert f"running on http://localhost:{port}".encode() in said, said
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        await process.communicate()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[Revision, Route], Checks]:
    """The four runs, each revision's set directly and through the gateway, all at once against
    one reference server: each run has sessions of its own (run one at a time, their checks
    came out the same, every check of every scenario)."""
    folder = tmp_path_factory.mktemp("conformance-next")
    async with reference_server() as url:
        # `input-required-result-capability-check`'s client declares sampling alone: its
        # server's form goes to signoff's inbox (the gateway declares elicitation for it), and
        # nobody answers it — the client gets the sampling request once it expires, within the
        # suite's own time bound, so the gateway waits 1 s, not 30.
        path = gateway_config(folder, default="allow", servers={"everything": {"url": url}},
                              gateway={"wait": "1s"})  # fmt: skip
        serve = ["mcp-gateway", "--config", str(path), "--transport", "http", "--no-auth"]
        async with signoff_server(*serve, "--port", "0") as (front, _):
            targets = {"direct": url, "gateway": f"{front}/mcp"}
            keys = list(EXPECTED_FAILURES)
            done = await asyncio.gather(*(
                suite_checks(NEXT, targets[way], folder / f"{r}-{way}", "--requirements", r)
                for r, way in keys
            ))  # fmt: skip
    return dict(zip(keys, done, strict=True))


def failures(checks: Checks, required: list[str], listed: dict[str, str]) -> dict[str, str]:
    """What fails of the `required` scenarios, named as `listed` names it: the scenario, or
    each of its failing checks where `listed` names that scenario's checks; with what it said."""
    found: dict[str, str] = {}
    for name in required:
        if passed(checks[name]):
            continue
        failed = {
            c["id"]: c.get("errorMessage", "") for c in checks[name] if c["status"] == "FAILURE"
        }
        if any(key.startswith(f"{name}/") for key in listed):
            found |= {f"{name}/{check}": said for check, said in failed.items()}
        else:
            found[name] = "; ".join(f"{check}: {said}" for check, said in failed.items())
    return found


@pytest.mark.heavy
@pytest.mark.parametrize(("revision", "route"), list(EXPECTED_FAILURES))
async def test_a_requirement_set_fails_only_the_scenarios_listed_with_their_reason(
    runs: dict[tuple[Revision, Route], Checks], revision: Revision, route: Route
) -> None:
    """Every scored scenario runs, and fails only as listed: what the reference server passes
    directly, the gateway passes too, but for the failures listed as the gateway's."""
    required = await scored(revision)
    assert len(required) == SCORED[revision]
    checks = runs[revision, route]
    assert [name for name in required if name not in checks] == [], "scored but not run"
    listed = EXPECTED_FAILURES[revision, route]
    found = failures(checks, required, listed)
    assert {name: said for name, said in found.items() if name not in listed} == {}, "newly failing"
    assert [name for name in listed if name not in found] == [], "listed as failing, now passing"
