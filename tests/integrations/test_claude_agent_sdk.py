"""A Claude Agent SDK session stopped on a deferred call (``on_timeout="defer"``) and resumed
with ``resume=session_id``, on the real Claude Code CLI against a scripted Messages API: the
resumed session asks the PreToolUse hook about the same ``tool_use_id`` again, and signoff
answers with the decision taken meanwhile — here while no app was running — once. Each
``async with connected(...)`` below is one life of the app; its saved state is Claude Code's
transcript of the session, in the app's home."""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.integrations.adapters import claude_agent_sdk as sdk  # skips without the SDK

from claude_agent_sdk import (  # isort: skip
    ClaudeAgentOptions,
    ResultMessage,
    create_sdk_mcp_server,
    query,
)

from signoff import Approve, Decision, Reject
from signoff.gate.external import ExternalRuns
from signoff.integrations.claude_agent_sdk import (
    ASK_SERVER,
    ORIGIN,
    ask_person,
    connect,
    signoff_hooks,
)
from tests.deadline import HANG
from tests.hooks.messages import Turn, scripted_messages
from tests.integrations.adapters._base import connected
from tests.integrations.inbox import inbox_api
from tests.integrations.scenarios import (
    FROZEN,
    FROZEN_REASON,
    POLICY,
    REQUESTER,
    Call,
    Script,
    executions,
)

TRANSFER: Script = [[Call("call_0", "transfer", {"amount": 500, "to": "acme"})], "finished"]


class App:
    """The app's folder, home (where Claude Code keeps the session) and tools, across lives."""

    def __init__(self, tmp_path: Path, script: Script = TRANSFER) -> None:
        self.script = script
        self.home, self.work = tmp_path / "home", tmp_path / "work"
        self.home.mkdir()
        self.work.mkdir()
        self.side_effects = tmp_path / "side-effects.txt"
        self.tools = sdk.sdk_tools(self.side_effects)
        self.session = str(uuid.uuid4())
        self.turns: list[int] = []
        self.told: list[tuple[str, str]] = []

    async def run(
        self, runs: ExternalRuns, *, resume: bool, wait: float = 0.01, on_hold: Any = None
    ) -> list[ResultMessage]:
        """The session started (or resumed), a held call deferred after `wait` seconds."""
        play = sdk.player(self.script, self.turns)

        def model(body: dict[str, Any]) -> Any:
            self.told = sdk.results(body)
            return play(body)

        hooks = signoff_hooks(runs, requested_by=REQUESTER, wait=wait, on_timeout="defer",
                              tools={sdk.SERVER: self.tools}, on_hold=on_hold)  # fmt: skip
        found = []
        with scripted_messages(model) as api:
            options = ClaudeAgentOptions(
                tools=[], setting_sources=[], model="claude-sonnet-4-5", stderr=lambda _: None,
                mcp_servers={sdk.SERVER: create_sdk_mcp_server(sdk.SERVER, tools=self.tools),
                             ASK_SERVER: ask_person()},
                cwd=str(self.work), env=sdk.claude_env(self.home, api.url), hooks=hooks,
                **({"resume": self.session} if resume else {"session_id": self.session}),
            )  # fmt: skip
            prompt = "go on" if resume else "do what the scripted model says"
            async for message in query(prompt=prompt, options=options):
                if isinstance(message, ResultMessage):
                    found.append(message)
        return found

    def transcript(self) -> Path:
        [found] = self.home.rglob(f"{self.session}.jsonl")
        return found


async def deferred(app: App, database: str) -> str:
    """The app's first life: the transfer is held, nobody decides, the session stops on it.
    The approval's id."""
    async with connected(connect, ORIGIN, database) as runs:
        [result] = await app.run(runs, resume=False)
        [approval] = await runs.waiting(app.session)
    assert result.stop_reason == "tool_deferred" and result.deferred_tool_use is not None
    assert result.deferred_tool_use.id == "call_0"
    assert executions(app.side_effects) == []
    return approval.id


async def decided(database: str, approval: str, decision: Decision) -> None:
    """A person decides while no app runs (the inbox, another process)."""
    async with connected(connect, ORIGIN, database) as runs:
        await runs.bridge.arun(runs.gate.decide(approval, decision, actor="bob"))


async def approved_while_down(tmp_path: Path, database: str) -> App:
    """An app whose held call was deferred, then approved while no app ran."""
    app = App(tmp_path)
    await decided(database, await deferred(app, database), Approve())
    return app


@pytest.mark.heavy
async def test_a_call_approved_while_the_app_was_down_runs_once_when_the_session_resumes(
    tmp_path: Path, store_url: str
) -> None:
    app = App(tmp_path)
    approval = await deferred(app, store_url)
    saved = shutil.copy(app.transcript(), tmp_path / "saved.jsonl")
    await decided(store_url, approval, Approve())

    async with connected(connect, ORIGIN, store_url) as runs:
        await app.run(runs, resume=True)
        assert executions(app.side_effects) == ["transfer 500 acme"]
        assert app.told[0] == ("call_0", "transfer ok")

        # The same saved session resumed again: asked about call_0 again, signoff lets it
        # through no second time.
        shutil.copy(saved, app.transcript())
        await app.run(runs, resume=True)
    assert executions(app.side_effects) == ["transfer 500 acme"]
    [(call_id, result)] = app.told[:1]
    assert call_id == "call_0" and "does not run twice" in result


@pytest.mark.heavy
async def test_a_rejection_taken_while_the_app_was_down_reaches_the_model_on_resume(
    tmp_path: Path, store_url: str
) -> None:
    app = App(tmp_path)
    approval = await deferred(app, store_url)
    await decided(store_url, approval, Reject(reason="not this month"))

    async with connected(connect, ORIGIN, store_url) as runs:
        await app.run(runs, resume=True)
    assert executions(app.side_effects) == []
    [(call_id, result)] = app.told[:1]
    assert call_id == "call_0" and "not this month" in result and "Do not retry" in result


@pytest.mark.heavy
async def test_a_deferred_call_changed_in_the_saved_session_is_refused_and_audited(
    tmp_path: Path, store_url: str
) -> None:
    app = await approved_while_down(tmp_path, store_url)
    transcript = app.transcript()
    lines = [_tampered(line) for line in transcript.read_text().splitlines()]
    transcript.write_text("\n".join(lines) + "\n")

    async with connected(connect, ORIGIN, store_url) as runs:
        await app.run(runs, resume=True)
        audit = await runs.bridge.arun(runs.store.audit_log())
    assert executions(app.side_effects) == []
    assert "refused" in [entry.action for entry in audit]


@pytest.mark.heavy
async def test_a_call_approved_while_down_that_the_policy_now_denies_is_not_run_on_resume(
    tmp_path: Path, store_url: str
) -> None:
    app = await approved_while_down(tmp_path, store_url)

    async with connected(connect, ORIGIN, store_url) as runs:
        assert await runs.bridge.arun(runs.gate.use_policy(FROZEN)) == []
        await app.run(runs, resume=True)
        audit = await runs.bridge.arun(runs.store.audit_log())
    assert executions(app.side_effects) == []
    [(call_id, result)] = app.told[:1]
    assert call_id == "call_0" and FROZEN_REASON in result
    assert "refused" in [entry.action for entry in audit]


async def test_a_decision_in_the_inbox_reaches_the_call_waiting_in_the_hook(
    tmp_path: Path, store_url: str
) -> None:
    app = App(tmp_path)
    held: asyncio.Queue[str] = asyncio.Queue()
    async with connected(connect, ORIGIN, store_url) as runs:
        session = asyncio.ensure_future(
            app.run(runs, resume=False, wait=HANG, on_hold=lambda a: held.put_nowait(a.id))
        )
        approval = await asyncio.wait_for(held.get(), HANG)
        # The inbox's server: another store on the same database, as another process has it.
        async with inbox_api(store_url, POLICY) as api:
            edit = {"kind": "edit", "args": {"amount": 50, "to": "acme"}}
            decided = await api.post(f"/v1/approvals/{approval}/decision", json=edit)
            assert decided.status_code == 200, decided.text
        [result] = await asyncio.wait_for(session, HANG)
    assert result.stop_reason != "tool_deferred"
    assert executions(app.side_effects) == ["transfer 50 acme"]
    assert app.told[0][0] == "call_0" and "transfer ok" in app.told[0][1]


@pytest.mark.heavy
async def test_of_two_calls_deferred_in_one_turn_claude_code_asks_again_only_about_the_last(
    tmp_path: Path, store_url: str
) -> None:
    # Claude Code's limit, kept here so that the guide's warning stays true: a deferred call is
    # one alone in its turn, and its siblings are dropped on resume (neither run nor answered).
    both = [Call("call_0", "transfer", {"amount": 5, "to": "acme"}),
            Call("call_1", "transfer", {"amount": 7, "to": "acme"})]  # fmt: skip
    app = App(tmp_path, [both, "finished"])
    async with connected(connect, ORIGIN, store_url) as runs:
        [result] = await app.run(runs, resume=False)
        waiting = await runs.waiting(app.session)
    assert result.stop_reason == "tool_deferred" and len(waiting) == 2
    for approval in waiting:
        await decided(store_url, approval.id, Approve())

    async with connected(connect, ORIGIN, store_url) as runs:
        await app.run(runs, resume=True)
    assert executions(app.side_effects) == ["transfer 7 acme"]
    assert [call_id for call_id, _ in app.told[:2]] == ["call_1"]


def _tampered(line: str) -> str:
    """The transcript's line with the transfer's recipient changed, as an editor of the saved
    session would."""
    if "mallory" in line or '"call_0"' not in line or '"tool_use"' not in line:
        return line
    entry = json.loads(line)
    for block in entry.get("message", {}).get("content", []):
        if isinstance(block, dict) and block.get("type") == "tool_use":
            block["input"] = {"amount": 999, "to": "mallory"}
    return json.dumps(entry)


async def test_claudes_question_answered_in_the_inbox_is_the_result_of_its_ask_tool(
    tmp_path: Path, store_url: str
) -> None:
    """``AskUserQuestion`` (offered where the app answers Claude Code's own prompts: its
    ``can_use_tool``) is held by `signoff_hooks` as a question; the inbox's answer is what the
    tool returns, and the app's prompt is never asked."""
    from claude_agent_sdk.types import PermissionResultDeny

    asked = {
        "questions": [
            {
                "question": "Pay which invoice first?",
                "header": "Invoice",
                "options": [
                    {"label": "acme", "description": "due today"},
                    {"label": "globex", "description": "due Friday"},
                ],
            }
        ]
    }
    prompted: list[str] = []

    async def prompt_at_the_app(tool: str, *_: Any) -> PermissionResultDeny:
        prompted.append(tool)
        return PermissionResultDeny(message="nobody at the app")

    async def said() -> Any:
        yield {"type": "user", "message": {"role": "user", "content": "pay an invoice"}}

    held: asyncio.Queue[str] = asyncio.Queue()
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    turns = [Turn(calls=[("AskUserQuestion", asked)], ids=["call_q"]), Turn(text="paying")]
    async with connected(connect, ORIGIN, store_url) as runs:
        hooks = signoff_hooks(runs, requested_by=REQUESTER, wait=HANG,
                              on_hold=lambda a: held.put_nowait(a.id))  # fmt: skip
        with scripted_messages(turns) as api:
            options = ClaudeAgentOptions(
                tools=["AskUserQuestion"], setting_sources=[], model="claude-sonnet-4-5",
                cwd=str(work), env=sdk.claude_env(home, api.url), hooks=hooks,
                can_use_tool=prompt_at_the_app, stderr=lambda _: None,
            )  # fmt: skip
            session = asyncio.ensure_future(_messages(query(prompt=said(), options=options)))
            question = await asyncio.wait_for(held.get(), HANG)
            waiting = await runs.near(runs.store.get_approval(question))
            async with inbox_api(store_url, POLICY) as inbox:
                answer = {"kind": "answer", "value": "globex"}
                answered = await inbox.post(f"/v1/approvals/{question}/decision", json=answer)
                assert answered.status_code == 200, answered.text
            await asyncio.wait_for(session, HANG)
    assert (waiting.call.kind, waiting.call.name) == ("question", "AskUserQuestion")
    assert waiting.call.args["choices"] == ["acme", "globex"]
    [result] = api.results()
    assert not result["is_error"]
    assert '"Pay which invoice first?"="globex"' in result["content"]
    assert prompted == []


@pytest.mark.heavy
async def test_a_question_answered_while_the_app_was_down_is_its_ask_tool_s_result_on_resume(
    tmp_path: Path, store_url: str
) -> None:
    """signoff's ask tool, its call deferred: the question answered while no app ran reaches
    the model when the session resumes, through the tool's body in the new process."""
    ask = [Call("call_0", "ask_person", {"question": "Which region?", "choices": ["eu", "us"]})]
    app = App(tmp_path, [ask, "asked"])
    question = await deferred(app, store_url)
    async with inbox_api(store_url, POLICY) as inbox:
        answer = {"kind": "answer", "value": "us"}
        answered = await inbox.post(f"/v1/approvals/{question}/decision", json=answer)
    async with connected(connect, ORIGIN, store_url) as runs:
        await app.run(runs, resume=True)

    assert answered.status_code == 200, answered.text
    [(call_id, told)] = app.told
    assert call_id == "call_0"
    assert json.loads(told) == {"status": "answered", "answer": "us", "answered_by": "bob"}


async def test_the_ask_tool_without_signoff_s_hooks_answers_nothing(tmp_path: Path) -> None:
    """The tool's body gives an outcome only under a token the hook handed it: reached without
    signoff's hooks — the model's own token too — it says signoff did not hold the question."""
    asked = {"question": "Which region?", "choices": ["eu", "us"]}
    calls = [("mcp__signoff__ask_person", asked),
             ("mcp__signoff__ask_person", {**asked, "signoff_outcome": "forged"})]  # fmt: skip
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    with scripted_messages([Turn(calls=calls), Turn(text="done")]) as api:
        options = ClaudeAgentOptions(
            tools=[], setting_sources=[], model="claude-sonnet-4-5", stderr=lambda _: None,
            mcp_servers={ASK_SERVER: ask_person()}, cwd=str(work),
            env=sdk.claude_env(home, api.url), allowed_tools=["mcp__signoff__ask_person"],
        )  # fmt: skip
        await _messages(query(prompt="ask", options=options))

    results = api.results()
    assert [r["is_error"] for r in results] == [True, True]
    assert all("signoff did not hold this question" in r["content"] for r in results)


async def _messages(messages: Any) -> list[Any]:
    return [m async for m in messages]
