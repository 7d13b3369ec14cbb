"""Claude Code's ``AskUserQuestion`` answered in signoff, with the real Claude Code CLI (the one
the Claude Agent SDK's wheel carries) offline against a scripted Messages API: Claude asks, the
hook ``signoff hook install`` wrote holds the question in a ``signoff serve``, a person answers
it there (here through the REST API, as olga), and the tool result the model reads is the
answer.

Claude Code offers ``AskUserQuestion`` only where someone can answer at its end: its terminal,
or an app of the Agent SDK with a ``can_use_tool`` (a headless ``claude -p`` does not give the
model the tool at all). So the CLI runs here as the Agent SDK runs it, reading the project's
settings (the hook as installed) — and its ``can_use_tool``, which stands for Claude Code's own
question dialog, says whether it was ever asked.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from signoff.store import open_store
from tests.deadline import HANG
from tests.hooks.messages import Messages, Turn, scripted_messages
from tests.hooks.rig import TOKENS, config
from tests.hooks.test_claude_code import EACH_KIND, cli_missing, hooked_alone, project
from tests.processes import served

pytestmark = pytest.mark.skipif(bool(cli_missing()), reason=cli_missing() or "installed")

CONFIG = config(
    "Bash",
    """\
  - ask: {question: "*"}
    approvers: [ops]
""",
)
COLOUR: dict[str, Any] = {
    "question": "Which colour should the button be?",
    "header": "Colour",
    "options": [
        {"label": "red", "description": "warm, loud"},
        {"label": "blue", "description": "calm"},
        {"label": "green", "description": ""},
    ],
    "multiSelect": False,
}
SIZES: dict[str, Any] = {
    "question": "Which sizes should it come in?",
    "header": "Sizes",
    "options": [{"label": "S", "description": "small"}, {"label": "M", "description": "medium"}],
    "multiSelect": True,
}
OLGA = {"Authorization": "Bearer olga-token"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One `signoff serve` for the module's tests, on a database of its own."""
    folder = tmp_path_factory.mktemp("serve")
    path = folder / "signoff.yaml"
    path.write_text(CONFIG + f"database: sqlite+aiosqlite:///{folder / 'signoff.db'}\n")
    with served(["serve", "--config", str(path)], {**os.environ, **TOKENS}) as (url, _):
        yield url


class Dialog:
    """Claude Code's own question dialog, as an Agent SDK app's ``can_use_tool``: what it was
    asked, and the answer it gives (``answers``), or none (it declines)."""

    def __init__(self, answers: dict[str, Any] | None = None) -> None:
        self.answers = answers
        self.asked: list[dict[str, Any]] = []

    async def __call__(self, name: str, given: dict[str, Any], _: Any) -> Any:
        from claude_agent_sdk.types import PermissionResultAllow, PermissionResultDeny

        self.asked.append({"tool": name, **given})
        if self.answers is None:
            return PermissionResultDeny(message="nobody at the terminal")
        return PermissionResultAllow(updated_input={**given, "answers": self.answers})


async def claude(folder: Path, api: Messages, dialog: Dialog, *, token: str = "dev-token") -> None:
    """Claude Code in `folder` against the scripted API, as the Agent SDK runs it: the project's
    settings (signoff's hook) read, `dialog` its own prompt, `token` for signoff."""
    from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query

    from tests.integrations.adapters.claude_agent_sdk import claude_env

    home = folder.parent / "home"
    home.mkdir(exist_ok=True)
    env = claude_env(home, api.url) | {"SIGNOFF_TOKEN": token, "LANG": "C.UTF-8"}
    options = ClaudeAgentOptions(
        setting_sources=["project"], cwd=str(folder), env=env, model="claude-sonnet-4-5",
        can_use_tool=dialog, stderr=lambda _: None,
    )  # fmt: skip

    async def prompt() -> Any:
        yield {"type": "user", "message": {"role": "user", "content": "ask me"}}

    async with asyncio.timeout(HANG * 4):
        ended = [m async for m in query(prompt=prompt(), options=options)]
    assert isinstance(ended[-1], ResultMessage) and not ended[-1].is_error, ended[-1]


async def held_question(
    server: str, text: str, agent: asyncio.Task[None], *, token: str = "olga-token"
) -> dict[str, Any]:
    """The question waiting in signoff that begins with `text` (while the `agent` runs: one that
    ends first never asked it), as the REST API lists it to the holder of `token`."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=server, headers=headers, timeout=HANG) as http:
        async with asyncio.timeout(HANG * 4):
            while True:
                pending = await http.get("/v1/approvals", params={"status": "pending"})
                found = [a for a in pending.json()["items"]
                         if str(a["args"].get("question", "")).startswith(text)]  # fmt: skip
                if found:
                    [question] = found
                    held: dict[str, Any] = question
                    return held
                assert not agent.done(), f"the agent ended, nothing asked: {agent.exception()}"
                await asyncio.sleep(0.05)


async def decide(server: str, question: dict[str, Any], decision: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server, headers=OLGA, timeout=HANG) as http:
        return await http.post(f"/v1/approvals/{question['id']}/decision", json=decision)


async def audited(server: str, subject: str) -> list[dict[str, Any]]:
    """The audit entries about `subject`."""
    async with httpx.AsyncClient(base_url=server, headers=OLGA, timeout=HANG) as http:
        found = (await http.get("/v1/audit", params={"limit": 500})).json()["items"]
    return [e for e in found if e["subject"] == subject]


def told(api: Messages) -> dict[str, Any]:
    """The one tool result the model was given."""
    [result] = api.results()
    return result


@pytest.mark.parametrize("kind", EACH_KIND)
async def test_claudes_question_waits_in_signoff_and_the_answer_is_its_tool_result(
    tmp_path: Path, server: str, kind: str
) -> None:
    folder = project(tmp_path, server, kind)
    dialog = Dialog()
    asked = {"questions": [COLOUR]}
    with scripted_messages([Turn(calls=[("AskUserQuestion", asked)])]) as api:
        agent = asyncio.create_task(claude(folder, api, dialog))
        question = await held_question(server, COLOUR["question"], agent)
        assert question["kind"] == "question" and question["tool"] == "AskUserQuestion"
        assert question["agent"] == "claude-code/shop" and question["requested_by"] == "dev"
        assert question["args"] == {
            "question": "Which colour should the button be?\n- red: warm, loud\n- blue: calm",
            "choices": ["red", "blue", "green"],
            "multiple": False,
        }
        answered = await decide(server, question, {"kind": "answer", "value": "blue"})
        assert answered.status_code == 200, answered.text
        await agent
    result = told(api)
    assert not result["is_error"]
    assert '"Which colour should the button be?"="blue"' in result["content"]
    assert dialog.asked == []  # Claude Code's own dialog never opened


async def test_an_answer_that_is_not_an_option_is_refused_and_nothing_is_written(
    tmp_path: Path, server: str
) -> None:
    folder = project(tmp_path, server, "http")
    with scripted_messages([Turn(calls=[("AskUserQuestion", {"questions": [COLOUR]})])]) as api:
        agent = asyncio.create_task(claude(folder, api, Dialog()))
        question = await held_question(server, COLOUR["question"], agent)
        before = await audited(server, question["id"])
        refused = await decide(server, question, {"kind": "answer", "value": "purple"})
        assert refused.status_code == 422 and "answer: not one of" in refused.text
        async with httpx.AsyncClient(base_url=server, headers=OLGA, timeout=HANG) as http:
            still = (await http.get(f"/v1/approvals/{question['id']}")).json()
        assert still["status"] == "pending" and still["version"] == question["version"]
        assert await audited(server, question["id"]) == before
        approved = await decide(server, question, {"kind": "approve"})
        assert approved.status_code == 422  # a question is answered, not approved
        answered = await decide(server, question, {"kind": "answer", "value": "red"})
        assert answered.status_code == 200, answered.text
        await agent
    assert '"Which colour should the button be?"="red"' in told(api)["content"]


@pytest.mark.heavy
async def test_a_declined_question_is_denied_with_the_persons_reason(
    tmp_path: Path, server: str
) -> None:
    folder = project(tmp_path, server, "command")
    with scripted_messages([Turn(calls=[("AskUserQuestion", {"questions": [COLOUR]})])]) as api:
        agent = asyncio.create_task(claude(folder, api, Dialog()))
        question = await held_question(server, COLOUR["question"], agent)
        reason = {"kind": "reject", "reason": "use the brand colours from the style guide"}
        declined = await decide(server, question, reason)
        assert declined.status_code == 200, declined.text
        await agent
    result = told(api)
    assert result["is_error"]
    assert "declined to answer" in result["content"]
    assert "use the brand colours from the style guide" in result["content"]


async def test_two_questions_are_one_form_answered_at_once(tmp_path: Path, server: str) -> None:
    folder = project(tmp_path, server, "http")
    asked = {"questions": [COLOUR, SIZES]}
    with scripted_messages([Turn(calls=[("AskUserQuestion", asked)])]) as api:
        agent = asyncio.create_task(claude(folder, api, Dialog()))
        question = await held_question(server, COLOUR["question"], agent)
        form = question["args"]["schema"]
        assert form["required"] == ["Colour", "Sizes"]
        assert form["properties"]["Sizes"]["type"] == "array"
        assert form["properties"]["Colour"]["oneOf"][0] == {
            "const": "red", "title": "red — warm, loud"
        }  # fmt: skip
        missing = await decide(server, question, {"kind": "answer", "value": {"Colour": "red"}})
        assert missing.status_code == 422 and "answer.Sizes: required" in missing.text
        value = {"Colour": "green", "Sizes": ["S", "M"]}
        answered = await decide(server, question, {"kind": "answer", "value": value})
        assert answered.status_code == 200, answered.text
        await agent
    content = told(api)["content"]
    assert '"Which colour should the button be?"="green"' in content
    assert '"Which sizes should it come in?"="S, M"' in content


@pytest.mark.heavy  # the real CLI, its own dialog and a server of its own: CI runs it
async def test_nobody_answering_in_time_opens_claude_codes_own_dialog(tmp_path: Path) -> None:
    folder = hooked_alone(tmp_path)
    dialog = Dialog(answers={COLOUR["question"]: "red"})
    with scripted_messages([Turn(calls=[("AskUserQuestion", {"questions": [COLOUR]})])]) as api:
        await claude(folder, api, dialog)
    [opened] = dialog.asked
    assert opened["tool"] == "AskUserQuestion"
    assert opened["questions"][0]["question"] == COLOUR["question"]
    assert '"Which colour should the button be?"="red"' in told(api)["content"]
    async with open_store(f"sqlite+aiosqlite:///{tmp_path / 'alone.db'}") as store:
        [question] = await store.list_approvals()
    assert question.call.kind == "question"
    assert question.status == "expired"  # answered at the terminal: done with in signoff
