"""``signoff hook install|uninstall`` on a coding agent's settings file: signoff's entries written
(an HTTP hook that blocks when the server fails, or the command hook), replaced on a second
install, removed by uninstall — every other setting and hook kept; a file that is not JSON refused
with its line and column, and left as it was. And ``signoff hook claude-code`` itself blocks a
call (status 2, the reason on stderr) when it cannot ask anyone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from signoff.cli import app

runner = CliRunner()

THEIRS = {"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint-commands.sh"}]}


def settings(folder: Path, agent: str = ".claude") -> dict[str, Any]:
    found: dict[str, Any] = json.loads((folder / agent / "settings.json").read_text())
    return found


def test_install_writes_an_http_hook_that_blocks_when_the_server_fails(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    kept = {"model": "opus", "hooks": {"PreToolUse": [THEIRS]}}
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(kept))
    server = "https://signoff.example.com"
    for _ in range(2):  # again: replaced, not added
        done = runner.invoke(
            app, ["hook", "install", "claude-code", "--project", str(tmp_path), "--server", server]
        )
        assert done.exit_code == 0, done.output
    written = settings(tmp_path)
    assert written["model"] == "opus"
    theirs, ours = written["hooks"]["PreToolUse"]
    assert theirs == THEIRS
    [hook] = ours["hooks"]
    assert hook["url"] == f"{server}/v1/hooks/claude-code?wait=300"
    assert hook["headers"] == {"Authorization": "Bearer $SIGNOFF_TOKEN"}
    assert hook["allowedEnvVars"] == ["SIGNOFF_TOKEN"]
    assert (hook["onFailure"], hook["timeout"]) == ("block", 330)
    assert [len(written["hooks"][e]) for e in ("PostToolUse", "PostToolUseFailure")] == [1, 1]

    done = runner.invoke(app, ["hook", "uninstall", "claude-code", "--project", str(tmp_path)])
    assert done.exit_code == 0, done.output
    assert "3 signoff hook entries removed" in done.output
    assert settings(tmp_path) == kept


def test_install_for_gemini_cli_writes_the_command_hook_in_milliseconds(tmp_path: Path) -> None:
    config = tmp_path / "signoff.yaml"
    config.write_text("default: ask\n")
    arguments = ["hook", "install", "gemini-cli", "--project", str(tmp_path)]
    done = runner.invoke(app, [*arguments, "--config", str(config), "--wait", "60"])
    assert done.exit_code == 0, done.output
    written = settings(tmp_path, ".gemini")
    [group] = written["hooks"]["BeforeTool"]
    [hook] = group["hooks"]
    assert hook["type"] == "command" and hook["timeout"] == 90_000
    assert hook["command"].endswith(f"hook gemini-cli --config {config} --wait 60")
    assert written["hooks"]["AfterTool"] == [group]


def test_a_settings_file_that_is_not_json_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    broken = '{\n  "hooks": {\n    "PreToolUse": [,]\n  }\n}\n'
    (tmp_path / ".claude" / "settings.json").write_text(broken)
    done = runner.invoke(
        app, ["hook", "install", "claude-code", "--project", str(tmp_path), "--server", "http://x"]
    )
    assert done.exit_code == 1
    assert "settings.json:3:20: not JSON" in done.output and "nothing was written" in done.output
    assert (tmp_path / ".claude" / "settings.json").read_text() == broken
    assert [p.name for p in (tmp_path / ".claude").iterdir()] == ["settings.json"]


def test_the_command_hook_blocks_a_call_it_cannot_ask_anyone_about(tmp_path: Path) -> None:
    body = json.dumps({"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Bash",
                       "tool_input": {"command": "ls"}, "tool_use_id": "t"})  # fmt: skip
    unreachable = runner.invoke(
        app, ["hook", "claude-code", "--server", "http://127.0.0.1:9"], input=body
    )
    assert unreachable.exit_code == 2
    assert "signoff blocked this call: signoff at http://127.0.0.1:9 cannot be reached" in (
        unreachable.output
    )
    garbled = runner.invoke(
        app, ["hook", "claude-code", "--server", "http://127.0.0.1:9"], input="{not json"
    )
    assert garbled.exit_code == 2 and "the hook's input is not JSON" in garbled.output


def test_install_refuses_an_event_that_is_not_a_list_and_keeps_the_files_mode(
    tmp_path: Path,
) -> None:
    (tmp_path / ".claude").mkdir()
    path = tmp_path / ".claude" / "settings.json"
    odd = json.dumps({"hooks": {"PreToolUse": THEIRS}})
    path.write_text(odd)
    arguments = ["hook", "install", "claude-code", "--project", str(tmp_path)]
    refused = runner.invoke(app, [*arguments, "--server", "http://x"])
    assert refused.exit_code == 1 and "hooks.PreToolUse is not a list" in refused.output
    assert path.read_text() == odd
    path.write_text("{}")
    path.chmod(0o640)
    done = runner.invoke(app, [*arguments, "--server", "http://x", "--command"])
    assert done.exit_code == 0, done.output
    assert path.stat().st_mode & 0o777 == 0o640
    [hook] = settings(tmp_path)["hooks"]["PreToolUse"][0]["hooks"]
    assert hook["type"] == "command" and hook["onFailure"] == "block"
    assert hook["command"].endswith("hook claude-code --server http://x --wait 300")
