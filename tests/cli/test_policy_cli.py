"""`signoff policy check|explain` and `signoff --version`, as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import signoff
from signoff.cli import app

EXAMPLE = Path(signoff.__file__).parent / "examples" / "policy.yaml"
runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


def signoff_command(*args: str) -> tuple[int, str, str]:
    """The real entry point in a child process, as a user's shell runs it."""
    result = subprocess.run(
        [sys.executable, "-m", "signoff", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )
    return result.returncode, result.stdout, result.stderr


@pytest.fixture
def bad_policy(tmp_path: Path) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text('rules:\n  - deny: ["a[", ok]\n    timout: 3\n')
    return path


def test_version_prints_the_package_version():
    assert run("--version") == (0, f"signoff {signoff.__version__}\n", "")


def test_check_summarizes_a_valid_policy():
    code, out, _ = run("policy", "check", str(EXAMPLE))
    assert code == 0
    assert out.startswith(f"ok {EXAMPLE}: 10 rules (4 allow, 4 ask, 2 deny), default ask, version ")


def test_check_lists_every_problem_with_its_location_and_exits_1(bad_policy: Path):
    code, out, err = run("policy", "check", str(bad_policy))
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"{bad_policy}:2:12: rules[0].deny[0]: invalid glob 'a[': '[' at position 2 is never "
        "closed; close the set with ']' or write '[[]' for a literal '['",
        f"{bad_policy}:3:5: rules[0].timout: unknown key 'timout' in a rule; did you mean "
        "'timeout'? (expected one of: agent, allow, approvals, approvers, ask, deny, destructive, "
        "escalate, except, forbid_self_approval, id, idempotent, on_timeout, priority, reason, "
        "server, timeout, when)",
        f"2 problem(s) in {bad_policy}",
    ]


def test_check_prints_warnings_for_ignored_toggles(tmp_path: Path):
    path = tmp_path / "p.yaml"
    path.write_text("servers:\n  s:\n    tools: [a]\n    tool_approvals: {b: true}\n")
    code, out, _ = run("policy", "check", str(path))
    assert code == 0
    assert out.splitlines()[0] == (
        f"warning: {path}:4:22: servers.s.tool_approvals.b: ignored: 'b' is not one of the "
        "listed tools ['a']"
    )


def test_explain_json_prints_one_object_with_verdict_rule_and_reason():
    code, out, _ = run(
        "policy", "explain", "--config", str(EXAMPLE), "--tool", "write_file",
        "--args", '{"path": "/etc/hosts"}', "--json",
    )  # fmt: skip
    assert code == 0
    assert json.loads(out) == {
        "verdict": "ask",
        "rule": "rules[2]",
        "reason": "approval required: write_file when path glob '/etc/**'",
        "shadowed": [],
        "grant": None,
        "grants_passed_over": [],
    }


def test_explain_says_what_the_gate_does_with_arguments_nested_past_its_limit():
    deep = "[" * 800 + "]" * 800
    code, out, _ = run(
        "policy", "explain", "-c", str(EXAMPLE), "-t", "write_file", "--args", f'{{"a": {deep}}}',
        "--json",
    )  # fmt: skip
    assert code == 0
    assert json.loads(out)["verdict"] == "deny"
    assert "nested more than 64 levels deep" in json.loads(out)["reason"]
    code, _, err = run("policy", "explain", "-c", str(EXAMPLE), "-t", "x", "--args", "[" * 5000)
    assert code == 2 and "nested too deep to read" in err


def test_explain_json_gives_a_null_rule_when_the_default_decides():
    code, out, _ = run("policy", "explain", "-c", str(EXAMPLE), "-t", "restart_service", "--json")
    assert code == 0
    assert json.loads(out)["rule"] is None
    assert json.loads(out)["verdict"] == "ask"


def test_explain_takes_server_and_agent():
    code, out, _ = run(
        "policy", "explain", "-c", str(EXAMPLE), "-t", "move_file", "--server", "filesystem",
        "--json",
    )  # fmt: skip
    assert (code, json.loads(out)["verdict"]) == (0, "deny")
    code, out, _ = run(
        "policy", "explain", "-c", str(EXAMPLE), "-t", "web_fetch", "--agent",
        "coordinator/researcher", "--json",
    )  # fmt: skip
    assert json.loads(out)["rule"] == "agents.coordinator/researcher.default"


def test_explain_takes_the_kind_of_a_read_or_a_prompt(tmp_path: Path):
    policy = tmp_path / "kinds.yaml"
    policy.write_text('default: allow\nrules:\n  - deny: {resource: "file:///etc/*"}\n')
    explain = ("policy", "explain", "-c", str(policy), "-t", "file:///etc/passwd", "--json")
    code, out, _ = run(*explain, "--kind", "resource")
    assert (code, json.loads(out)["verdict"], json.loads(out)["rule"]) == (0, "deny", "rules[0]")
    code, out, _ = run(*explain)  # a tool of that name: no rule judges it
    assert (code, json.loads(out)["verdict"]) == (0, "allow")
    code, _, err = run(*explain, "--kind", "file")
    assert code == 2 and "'file' is not one of" in err


def test_explain_prints_a_table_for_a_file_of_calls(tmp_path: Path):
    calls = tmp_path / "calls.yaml"
    calls.write_text("- {tool: pod_delete}\n- {tool: pods_list, args: {namespace: x}}\n")
    code, out, _ = run("policy", "explain", "-c", str(EXAMPLE), "--calls", str(calls))
    assert code == 0
    rows = [line for line in out.splitlines() if "pod" in line]
    assert "deny" in rows[0] and "rules[0]" in rows[0]
    assert "allow" in rows[1] and "rules[1]" in rows[1]


def test_a_bad_calls_file_names_the_call_and_its_line(tmp_path: Path):
    calls = tmp_path / "calls.yaml"
    calls.write_text("- {tool: ok}\n- {name: oops}\n")
    code, _, err = signoff_command("policy", "explain", "-c", str(EXAMPLE), "--calls", str(calls))
    assert code == 1
    assert err.startswith(f"error: {calls}:2:3: [1]: unknown keys ['name']")


def test_explain_refuses_args_that_are_not_json_with_the_column():
    code, _, err = run("policy", "explain", "-c", str(EXAMPLE), "-t", "x", "--args", "{path: 1}")
    assert code == 2
    assert "not valid JSON at column 2" in err


def test_explain_needs_exactly_one_of_tool_or_calls():
    code, _, err = run("policy", "explain", "-c", str(EXAMPLE))
    assert code == 2
    assert "give either --tool or --calls" in err


def test_a_user_mistake_is_a_message_and_exit_1_never_a_traceback(bad_policy: Path):
    code, out, err = signoff_command("policy", "explain", "-c", str(bad_policy), "-t", "x")
    assert (code, out) == (1, "")
    assert err.startswith(f"error: {bad_policy}:2:12: rules[0].deny[0]: invalid glob")
    assert "Traceback" not in err
