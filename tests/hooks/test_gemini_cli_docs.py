"""docs/integrations/gemini-cli.md, from an empty folder, as a newcomer follows it: the page's
``signoff.yaml`` saved, its token made and its server started with its commands, its install
command run in a project — then the real Gemini CLI (a scripted model asks to remove the build
folder) waits, and the page's ``signoff approve`` lets the command run, once."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.deadline import HANG
from tests.hooks.gemini import Turn, scripted_gemini
from tests.hooks.rig import DOCUMENTED, page_set_up, signoff_line
from tests.hooks.test_gemini_cli import CLI, gemini
from tests.processes import signoff_command
from tests.test_docs import example

DOC = "docs/integrations/gemini-cli.md"

pytestmark = pytest.mark.skipif(
    not CLI.exists(), reason="the Gemini CLI is not installed: `make install` (tests/js)"
)


async def test_the_page_from_an_empty_folder_to_an_approved_command(tmp_path: Path) -> None:
    with page_set_up(DOC, tmp_path) as (url, project, env):
        assert json.loads((project / ".gemini" / "settings.json").read_text())["hooks"]
        turns = [Turn(calls=[("run_shell_command", {"command": "rm -rf build"})]),
                 Turn(text="Removed.")]  # fmt: skip
        with scripted_gemini(turns) as api:
            agent = asyncio.create_task(gemini(project, api, token=env["SIGNOFF_TOKEN"]))
            approval = await _held(url, env["SIGNOFF_TOKEN"], agent)
            approve = [a.replace(DOCUMENTED, url).replace("ID", approval)
                       for a in signoff_line(example(DOC, "approve"))]  # fmt: skip
            approved = await asyncio.to_thread(
                subprocess.run, [*signoff_command(), *approve], env=env, capture_output=True,
                text=True, timeout=HANG, check=False,
            )  # fmt: skip
            assert approved.returncode == 0, approved.stderr
            await agent
    assert not (project / "build").exists()
    [told] = api.results()
    assert "error" not in told


async def _held(url: str, token: str, agent: asyncio.Task[str]) -> str:
    """The id of the call the agent waits on."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=HANG) as http:
        async with asyncio.timeout(HANG * 4):
            while True:
                pending = (await http.get("/v1/approvals", params={"status": "pending"})).json()
                if pending["items"]:
                    found: str = pending["items"][0]["id"]
                    return found
                assert not agent.done(), f"gemini ended, the call not held: {agent.result()}"
                await asyncio.sleep(0.05)
