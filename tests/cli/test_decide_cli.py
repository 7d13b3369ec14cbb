"""`signoff approve` and `signoff reject`, straight on a database (through a server: see
tests/server/test_demo.py)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess

from signoff import Policy, ToolCall
from signoff.gate import Gate
from signoff.store import open_store
from tests.processes import signoff_command


def signoff(*args: str) -> tuple[int, str, str]:
    result = subprocess.run(
        [*signoff_command(), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )
    return result.returncode, result.stdout, " ".join(result.stderr.split())


async def held(url: str, count: int) -> list[str]:
    async with open_store(url) as store:
        gate = Gate(
            Policy.from_dict({"rules": [{"ask": "delete_pod", "approvers": ["ops"]}]}), store
        )
        calls = [
            ToolCall(id=f"c{i}", name="delete_pod", args={"name": f"p{i}"}) for i in range(count)
        ]
        return [o.approval.id for o in await gate.check(calls) if o.approval is not None]


def test_approve_and_reject_on_a_database_as_a_named_decider(store_url: str):
    first, second = asyncio.run(held(store_url, 2))
    code, out, err = signoff(
        "approve", first, "--database", store_url, "--as", "olga", "--role", "ops"
    )
    assert (code, out, err) == (0, f"{first}: approved by olga (delete_pod)\n", "")
    code, out, _ = signoff(
        "reject", second, "--reason", "p1 serves traffic", "--database", store_url,
        "--as", "olga", "--role", "ops",
    )  # fmt: skip
    assert (code, out) == (0, f"{second}: rejected by olga (delete_pod)\n")
    # A different decision afterwards is refused, and says why.
    code, out, err = signoff(
        "reject", first, "--reason", "no", "--database", store_url, "--role", "ops"
    )
    assert code == 1
    assert "already approved" in err or "conflict" in err.lower(), err


def test_the_rule_s_roles_hold_on_the_command_line_too(store_url: str):
    [approval] = asyncio.run(held(store_url, 1))
    code, _, err = signoff("approve", approval, "--database", store_url, "--as", "bob")
    assert code == 1
    assert "needs one of the roles ['ops']" in err


def test_approve_needs_somewhere_to_decide():
    env = {
        k: v for k, v in os.environ.items() if k not in ("SIGNOFF_SERVER", "SIGNOFF_DATABASE_URL")
    }
    result = subprocess.run(
        [*signoff_command(), "approve", "x"], capture_output=True, text=True, env=env,
        check=False,
    )  # fmt: skip
    assert result.returncode == 2
    words = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.stderr).split())  # rich's box, undone
    assert "give --server URL (with --token) or --database URL" in words
