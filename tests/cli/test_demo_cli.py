"""`signoff demo --explain`, the demo's data folder and its reset, and the port checks of every
command that serves (the demo serving for real: tests/server/test_demo.py)."""

from __future__ import annotations

import re
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from importlib.resources import as_file, files
from pathlib import Path

import pytest
from typer.testing import CliRunner

from signoff.cli import app
from signoff.cli.calls import load_calls
from signoff.demo.agents import cluster_pods, demo_agents
from signoff.demo.folder import announce, reset, serving, withdraw
from signoff.demo.model import ScriptedDemoModel
from signoff.errors import SignoffError

runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


def test_demo_explain_judges_calls_of_the_demo_agents_own_tools_by_the_demo_s_policy():
    code, out, _ = run("demo", "--explain")
    assert code == 0
    assert "13 sample calls of the demo agents' tools against the demo's policy" in out
    verdicts = {
        (cells[3].strip(), cells[1].strip()): cells[5].strip()
        for line in out.splitlines()
        if line.startswith("│") and (cells := line.split("│"))[1].strip()
    }
    assert verdicts[("files", "read_file")] == "allow"
    assert verdicts[("files", "write_file")] == "ask"
    assert verdicts[("ops", "list_pods")] == "allow"
    assert verdicts[("ops", "delete_pod")] == "ask"
    assert verdicts[("ops", "admin_reset_cluster")] == "deny"
    assert verdicts[("ops/db", "drop_table")] == "ask"


def test_the_sample_calls_are_the_demo_agents_tools_every_one_of_them(tmp_path: Path):
    agents = demo_agents(tmp_path, tmp_path / "signoff.db", ScriptedDemoModel())
    tools = {
        (path, name)
        for agent in agents
        for path, specs in agent.schemas().items()
        for name in specs
    }
    with as_file(files("signoff") / "examples" / "demo-calls.yaml") as path:
        sampled = {(call.agent, call.name) for call in load_calls(path)}
    assert sampled == tools


@pytest.mark.parametrize(
    "command",
    [
        ["demo"],
        ["serve", "--config", "signoff.yaml"],
        ["mcp-gateway", "--config", "signoff.yaml", "--transport", "http"],
    ],
)
@pytest.mark.parametrize("port", ["99999", "-1"])
def test_a_port_out_of_range_is_one_line_naming_port_and_a_usage_error(
    command: list[str], port: str
):
    code, out, err = run(*command, "--port", port)
    name = command[0]
    assert (code, out) == (2, "")
    assert err == f"signoff {name}: --port {port} is not a port (0-65535; 0 picks a free one)\n"


@pytest.fixture
def taken() -> Iterator[int]:
    """A port another program listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def test_a_taken_port_is_one_line_saying_how_to_pick_another(taken: int, tmp_path: Path):
    code, out, err = run("demo", "--port", str(taken), "--data-dir", str(tmp_path / "demo"))
    assert (code, out) == (1, "")
    assert err == (
        f"signoff demo: port {taken} on 127.0.0.1 is taken; pass --port N (0 picks a free one)\n"
    )
    assert not (tmp_path / "demo").exists()  # nothing was started, or made


def test_serve_says_so_too_when_its_port_is_taken(taken: int, tmp_path: Path):
    config = tmp_path / "signoff.yaml"
    config.write_text(f"database: sqlite:///{tmp_path / 'signoff.db'}\ndefault: ask\n")
    code, out, err = run("serve", "--config", str(config), "--no-auth", "--port", str(taken))
    assert (code, out) == (1, "")
    assert err == (
        f"signoff serve: port {taken} on 127.0.0.1 is taken; pass --port N (0 picks a free one)\n"
    )


def used_demo_folder(folder: Path) -> Path:
    """A demo folder as a demo leaves it: a pod deleted, a file written in the sandbox."""
    folder.mkdir()
    database = folder / "signoff.db"
    demo_agents(folder, database, ScriptedDemoModel())
    (folder / "sandbox" / "mine.txt").write_text("written by an agent")
    with sqlite3.connect(database) as connection:
        connection.execute("""UPDATE demo_cluster SET state = '{"pods": []}'""")
    connection.close()
    assert cluster_pods(database) == []
    return folder


def test_a_reset_removes_the_demo_s_database_and_sandbox_and_says_so(tmp_path: Path):
    folder = used_demo_folder(tmp_path / "demo")
    (folder / "keep.txt").write_text("not the demo's")
    assert reset(folder) == ["signoff.db", "sandbox/ (3 files)"]
    assert sorted(p.name for p in folder.iterdir()) == ["keep.txt"]
    demo_agents(folder, folder / "signoff.db", ScriptedDemoModel())  # as the next start does
    assert "nginx-123" in cluster_pods(folder / "signoff.db")
    assert reset(tmp_path / "nowhere") == []


def test_a_reset_leaves_a_folder_without_the_demo_s_database_alone(tmp_path: Path):
    (tmp_path / "sandbox").mkdir()
    (tmp_path / "sandbox" / "thesis.tex").write_text("someone's work")
    assert reset(tmp_path) == []
    assert (tmp_path / "sandbox" / "thesis.tex").exists()


def test_a_reset_is_refused_while_a_demo_serves_from_the_folder(tmp_path: Path):
    folder = used_demo_folder(tmp_path / "demo")
    announce(folder, "http://127.0.0.1:8123")  # this process stands for the serving demo
    assert serving(folder) == "http://127.0.0.1:8123"
    with pytest.raises(SignoffError, match=re.escape("the demo at http://127.0.0.1:8123 serves")):
        reset(folder)
    withdraw(folder)
    assert serving(folder) is None
    assert reset(folder) == ["signoff.db", "sandbox/ (3 files)"]


def test_a_demo_that_died_without_withdrawing_is_not_serving(tmp_path: Path):
    gone = subprocess.Popen([sys.executable, "-c", ""])
    gone.wait()
    for pid in (gone.pid, 0):
        (tmp_path / "server.json").write_text(f'{{"url": "http://127.0.0.1:8123", "pid": {pid}}}')
        assert serving(tmp_path) is None
    (tmp_path / "server.json").write_text("not json")
    assert serving(tmp_path) is None
