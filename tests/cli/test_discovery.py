"""`signoff audit verify` and `signoff policy explain` find the server or database to work on
as `approve`, `inbox` and `grants` do: as given, else the demo running here (the others, with
the demo: tests/server/test_demo.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from signoff.demo.folder import ADDRESS
from tests.cli.test_grants_cli import granted
from tests.processes import signoff_says, signoff_server, typed_here


async def says(folder: Path, *args: str) -> tuple[int, str, str]:
    """What ``signoff ARGS`` run in `folder` exits with and prints."""
    return await signoff_says(*args, cwd=folder)


DELETE = ("--tool", "delete_pod", "--agent", "ops", "--args", '{"name": "nginx-123"}')


async def test_audit_verify_and_policy_explain_work_through_the_demo_running_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    address = tmp_path / "signoff" / "demo" / ADDRESS
    here = tmp_path / "work"
    here.mkdir()
    async with signoff_server("demo", "--port", "0") as (url, _):
        code, out, err = await says(here, "audit", "verify")
        assert (code, out.split(":")[0]) == (0, "ok")
        assert err == (
            f"signoff audit verify: through the demo at {url} (from {address}; "
            "--server URL names another)\n"
        )
        code, out, err = await says(here, "policy", "explain", *DELETE, "--json")
        assert code == 0
        assert (json.loads(out)["verdict"], json.loads(out)["grant"]) == ("ask", None)
        assert err == (
            f"signoff policy explain: through the demo at {url} (from {address}; "
            "--url URL names another)\n"
        )
        code, table, _ = await says(here, "policy", "explain", *DELETE)
        assert code == 0 and "│ delete_pod │" in table and "│ ask " in table
        # Named, the server is the one given: no word on stderr.
        assert await says(here, "audit", "verify", "--url", url) == (0, out_of(url), "")
        code, _, err = await says(here, "audit", "verify", "--server", url, "--since", "x")
        assert code == 2 and err.startswith(f"error: {url} said 400: ")
        code, _, err = await says(here, "policy", "explain", "--url", url, "-c", "p.yaml", *DELETE)
        assert code == 2 and "give --config or --url" in err
    assert not address.exists()
    code, out, err = await says(here, "audit", "verify")
    assert (code, out) == (2, "")
    assert err == (
        "signoff audit verify: no server given and no demo running here: pass --server URL "
        f"(with --token) or --database URL, or start one with `{typed_here(here)} demo`\n"
    )
    code, out, err = await says(here, "policy", "explain", *DELETE)
    assert (code, out) == (2, "")
    assert err == (
        "signoff policy explain: no server given and no demo running here: pass --url URL "
        "(with --token), --config FILE or --database URL, or start one with "
        f"`{typed_here(here)} demo`\n"
    )


def out_of(url: str) -> str:
    """What `audit verify` prints of the demo's log at `url`: its own words, read again."""
    import urllib.request

    with urllib.request.urlopen(f"{url}/v1/audit/verify") as answer:
        return f"ok: {json.loads(answer.read())['reason']}\n"


async def test_the_files_here_come_before_the_demo_as_they_did(tmp_path: Path):
    here = tmp_path / "work"
    here.mkdir()
    policy = Path(__file__).parents[2] / "src" / "signoff" / "examples" / "policy.yaml"
    shutil.copy(policy, here / "signoff.yaml")
    code, out, _ = await says(here, "policy", "explain", "--tool", "pod_delete", "--json")
    assert (code, json.loads(out)["reason"]) == (
        0,
        "destructive operations are not allowed from agents",
    )
    await granted(f"sqlite:///{here / 'signoff.db'}")
    code, out, err = await says(here, "audit", "verify")
    assert (code, out.split(":")[0], err) == (0, "ok", "")


async def test_policy_explain_on_a_database_weighs_its_grants_by_the_policy_it_keeps(
    store_url: str, tmp_path: Path
):
    grant_id = await granted(store_url)
    asked = ("--tool", "delete_pod", "--args", '{"name": "p1"}', "--json")
    code, out, err = await says(
        tmp_path, "policy", "explain", "--database", store_url, *asked,
        "--thread", "t1", "--requested-by", "carol",
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert json.loads(out)["grant"]["id"] == grant_id
    code, out, _ = await says(tmp_path, "policy", "explain", "--database", store_url, *asked)
    assert code == 0 and json.loads(out)["grant"] is None  # another thread: not covered
    assert json.loads(out)["grants_passed_over"][0]["id"] == grant_id
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    code, _, err = await says(tmp_path, "audit", "verify", "--database", empty)
    assert code == 2  # no database there
