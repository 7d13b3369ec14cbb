"""What the coding agents' tests share: a scripted API served on loopback, the policy their
server judges by (the agent's shell tool named), waiting for a held call and deciding it as a
person would, the file that counts what ran, and a docs page's commands run as written."""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from tests.deadline import HANG

__all__ = [
    "DOCUMENTED", "TOKENS", "bash", "config", "decide", "loopback", "page_set_up", "ran",
    "signoff_line",
]  # fmt: skip

TOKENS = {"SIGNOFF_TOKEN_DEV": "dev-token", "SIGNOFF_TOKEN_OLGA": "olga-token"}
"""dev runs the agents; olga, of ops, decides."""


def config(shell: str, more: str = "") -> str:
    """The servers' config: `shell` (the agent's shell tool) may echo and append to the
    effects file, never remove wholesale; anything else asks; `more` rules after those."""
    return f"""\
auth:
  tokens:
    - {{principal: dev, token_env: SIGNOFF_TOKEN_DEV}}
    - {{principal: olga, roles: [ops], token_env: SIGNOFF_TOKEN_OLGA}}
hooks: {{wait: 10m}}
default: ask
rules:
  - deny: {shell}
    when: {{command: {{glob: "rm -rf*"}}}}
    reason: nothing is removed wholesale here
  - allow: {shell}
    when: {{command: {{glob: "echo *"}}}}
  - allow: {shell}               # each redirection is a part of its own: this one is allowed
    when: {{command: {{eq: ">> effects.txt"}}}}
{more}"""


@contextmanager
def loopback(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """`handler` serving on a free loopback port, on threads, for the block: its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def decide(
    server: str, command: str, decision: dict[str, Any], agent: asyncio.Task[str]
) -> dict[str, Any]:
    """Wait for the held call of `command` (while the `agent` runs: one that ends first never
    held it), and decide it as olga: the approval as it was held."""
    headers = {"Authorization": "Bearer olga-token"}
    async with httpx.AsyncClient(base_url=server, headers=headers, timeout=HANG) as http:
        async with asyncio.timeout(HANG * 4):
            while True:
                pending = await http.get("/v1/approvals", params={"status": "pending"})
                found = [a for a in pending.json()["items"] if a["args"]["command"] == command]
                if found:
                    break
                assert not agent.done(), f"the agent ended, the call not held: {agent.result()}"
                await asyncio.sleep(0.05)
        [approval] = found
        decided = await http.post(f"/v1/approvals/{approval['id']}/decision", json=decision)
        assert decided.status_code == 200, decided.text
        held: dict[str, Any] = approval
        return held


def ran(folder: Path) -> list[str]:
    """What the commands that ran in `folder` wrote to its effects file, a line each."""
    effects = folder / "effects.txt"
    return effects.read_text().splitlines() if effects.exists() else []


def bash(body: str, folder: Path, env: dict[str, str]) -> str:
    """A docs page's shell lines run in `folder`, stopping at the first failure: what they
    printed."""
    done = subprocess.run(
        ["bash", "-e", "-c", body], cwd=folder, env=env, capture_output=True, text=True,
        timeout=HANG, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def signoff_line(body: str) -> list[str]:
    """The arguments after ``signoff`` of a docs page example's one command."""
    [line] = [x for x in body.splitlines() if x.strip() and not x.startswith("#")]
    words = shlex.split(line)
    assert words[0] == "signoff", line
    return words[1:]


DOCUMENTED = "http://127.0.0.1:8000"
"""Where a docs page's server listens; the tests' listens on a free port."""


@contextmanager
def page_set_up(doc: str, tmp_path: Path) -> Iterator[tuple[str, Path, dict[str, str]]]:
    """A coding agent's docs page (`doc`, its path in the repository) followed from an empty
    folder: its ``signoff.yaml`` saved, its token made and its server started with its
    commands, its install command run in a project (``shop``, with a ``build`` folder). Yields
    the server's URL, the project, and the environment with the token."""
    from tests.processes import served, signoff_command
    from tests.test_docs import ROOT, example, files

    folder, project = tmp_path / "signoff", tmp_path / "shop"
    folder.mkdir()
    (project / "build").mkdir(parents=True)
    (folder / "signoff.yaml").write_text(files(ROOT / doc)["signoff.yaml"])
    env = os.environ | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env["SIGNOFF_TOKEN"] = bash(example(doc, "token") + 'printf %s "$SIGNOFF_TOKEN"', folder, env)
    assert len(env["SIGNOFF_TOKEN"]) >= 24
    with served(signoff_line(example(doc, "serve")), env, cwd=folder) as (url, _):
        install = [a.replace(DOCUMENTED, url) for a in signoff_line(example(doc, "install"))]
        done = subprocess.run(
            [*signoff_command(), *install], cwd=project, env=env, capture_output=True,
            text=True, timeout=HANG, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        yield url, project, env
