"""An agent whose tool has a preview, for `signoff serve --agents tests.web.preview_agents:agents`
in the browser tests: ``files`` writes the file its user names in SIGNOFF_TEST_DEMO_DIR,
``write_file`` showing the unified diff a write would make."""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from pathlib import Path

from signoff.agent import Agent, Message, ModelTurn, tool
from signoff.testing import ScriptedModel, call


def _folder() -> Path:
    return Path(os.environ["SIGNOFF_TEST_DEMO_DIR"])


def diff_of(path: str, content: str) -> str:
    """The unified diff writing `content` to `path` would make; it writes nothing."""
    target = _folder() / path
    before = target.read_text().splitlines(keepends=True) if target.exists() else []
    after = content.splitlines(keepends=True)
    return "".join(difflib.unified_diff(before, after, f"a/{path}", f"b/{path}"))


@tool(preview=diff_of)
def write_file(path: str, content: str) -> str:
    """Write a file."""
    (_folder() / path).write_text(content)
    return f"wrote {path}"


def _step(messages: Sequence[Message]) -> ModelTurn:
    """Write what the user asked (``PATH: CONTENT``), then say it is done."""
    last = messages[-1]
    if last.role == "tool":
        return ModelTurn(text="done")
    path, _, content = str(last.content).partition(": ")
    return ModelTurn(tool_calls=(call("write_file", path=path, content=content + "\n"),))


def agents() -> list[Agent]:
    (_folder() / "app.conf").write_text("port = 80\nworkers = 2\n")
    return [Agent(name="files", model=ScriptedModel([_step] * 100), tools=[write_file])]
