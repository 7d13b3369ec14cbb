"""Every example in the README and under docs/ runs as written on a fresh clone, and says what
it claims; every link between them leads to a file (and a heading of it)."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from signoff import Policy, PolicyEngine, ToolCall
from signoff.server.config import load_config
from signoff.store import AuditRecord, open_store

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
CODING_AGENTS = frozenset({"claude-code.md", "gemini-cli.md"})
"""Pages of agents that run no app of the reader's: tests/hooks run them, not the guides' tests."""
GUIDES = sorted(
    p for p in (ROOT / "docs" / "integrations").glob("*.md") if p.name not in CODING_AGENTS
)
_BLOCK = re.compile(
    r"(?:<!-- (?P<mark>example|file): (?P<name>[\w.-]+) -->\n)?```(?P<lang>\w+)\n(?P<body>.*?)```",
    re.S,
)
"""A fenced block, and its mark: ``<!-- example: NAME -->`` names an example, ``<!-- file:
NAME -->`` says the reader saves the block as the file NAME (a program run beside a server,
run by tests/test_setups.py, not here)."""


def blocks(lang: str, docs: list[Path] = DOCS) -> list[tuple[str, str, str]]:
    """(document, example name or '', body) of every fenced block in `lang` but files."""
    return [
        (doc.name, m["name"] or "", m["body"])
        for doc in docs
        for m in _BLOCK.finditer(doc.read_text(encoding="utf-8"))
        if m["lang"] == lang and m["mark"] != "file"
    ]


def files(doc: Path) -> dict[str, str]:
    """The files `doc` has its reader save, by name."""
    found = _BLOCK.finditer(doc.read_text(encoding="utf-8"))
    return {m["name"]: m["body"] for m in found if m["mark"] == "file"}


def example(doc: str, name: str) -> str:
    """The block of `doc` (its path in the repository) marked ``<!-- example: NAME -->``."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    [body] = [
        m["body"] for m in _BLOCK.finditer(text) if (m["mark"], m["name"]) == ("example", name)
    ]
    return body


def shell(body: str, folder: Path, **env: str) -> str:
    """`body` run by bash in `folder`, as a terminal with the venv active runs it, stopping at
    the first failure: what it printed."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    result = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", body], cwd=folder, capture_output=True, text=True,
        env=os.environ | {"PATH": path, "COLUMNS": "200"} | env, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def named(name: str) -> PolicyEngine:
    [body] = [body for _, example, body in blocks("yaml") if example == name]
    return PolicyEngine(Policy.from_yaml(body))


def kind(
    engine: PolicyEngine, tool: str, args: dict[str, object] | None = None, **where: Any
) -> str:
    return engine.evaluate(ToolCall(id="c", name=tool, args=args or {}, **where)).kind


@pytest.mark.parametrize(("doc", "name", "body"), blocks("yaml"))
def test_every_yaml_example_is_a_valid_policy(doc: str, name: str, body: str):
    assert Policy.from_yaml(body, source=f"{doc}:{name}").rules


def test_the_unified_example_decides_as_its_comments_say():
    engine = named("unified")
    assert kind(engine, "pod_delete") == "deny"
    assert kind(engine, "pods_list") == "allow"
    assert kind(engine, "write_file", {"path": "/etc/hosts"}) == "ask"
    assert kind(engine, "write_file", {"path": "/tmp/x"}) == "allow"
    assert kind(engine, "deployment_scale", {"replicas": 40}) == "ask"
    assert kind(engine, "deployment_scale", {"replicas": 4}) == "ask"  # the default
    assert (
        kind(engine, "query", {"options": {"mode": "write"}}, server="prod-1", agent="x/untrusted")
        == "deny"
    )
    assert (
        kind(engine, "query", {"options": {"mode": "read"}}, server="prod-1", agent="x/untrusted")
        == "ask"
    )
    assert kind(engine, "search_docs") == "allow"
    assert kind(engine, "delete_file", server="filesystem") == "ask"
    assert kind(engine, "file_delete", server="filesystem") == "deny"  # rules[0]: *_delete*
    assert kind(engine, "write_file", server="filesystem") == "ask"
    assert kind(engine, "read_file", server="filesystem") == "allow"
    assert kind(engine, "anything", agent="coordinator/researcher") == "allow"


def test_the_kinds_example_judges_reads_and_prompts_as_it_says():
    engine = named("kinds")
    assert kind(engine, "read_file") == "allow"
    assert kind(engine, "file:///srv/data/a.txt", kind="resource") == "allow"
    assert kind(engine, "file:///srv/data/secrets/k", kind="resource") == "deny"
    assert kind(engine, "file:///etc/passwd", kind="resource") == "deny"
    assert kind(engine, "file:///home/x", kind="resource") == "ask"  # the default
    assert kind(engine, "read_file", kind="prompt") == "allow"  # a prompt, not the tool
    assert kind(engine, "deploy_app", {"environment": "production"}, kind="prompt") == "ask"
    assert kind(engine, "deploy_app", {"environment": "staging"}, kind="prompt") == "allow"
    assert kind(engine, "file:///srv/data/a.txt") == "ask"  # a tool of that name: the default


def test_the_seed_examples_decide_as_documented():
    def kinds(engine: PolicyEngine, server: str, *tools: str) -> list[str]:
        return [kind(engine, tool, server=server) for tool in tools]

    kagent = named("kagent")
    assert kinds(kagent, "filesystem-server", "read_file", "write_file", "move_file") == [
        "allow", "ask", "deny",
    ]  # fmt: skip
    agent_os = named("agent-os")
    assert kinds(agent_os, "mcp", "search_web", "send_email", "create_ticket", "rm") == [
        "allow", "ask", "allow", "deny",
    ]  # fmt: skip
    assert kind(agent_os, "send_email", server="mcp", agent="coordinator/writer") == "allow"
    dcaf = named("dcaf")
    assert kinds(dcaf, "mcp-duplo", "vm_terminate", "pods_list", "jit_token", "pod_restart") == [
        "deny", "allow", "allow", "ask",
    ]  # fmt: skip


def test_the_reference_examples_decide_as_documented():
    rules = named("rules")
    assert kind(rules, "write_file", {"path": "/srv/data/secrets/key"}) == "deny"
    assert kind(rules, "write_file", {"path": "/srv/data/report"}) == "ask"
    verdict = rules.evaluate(ToolCall(id="c", name="x", server="prod-eu", agent="ops/a"))
    assert (verdict.kind, verdict.timeout, verdict.approvers) == ("ask", 900.0, ("oncall", "sre"))
    sections = named("sections")
    assert kind(sections, "write_file", server="filesystem") == "ask"
    assert kind(sections, "exec", server="filesystem") == "deny"
    assert kind(sections, "delete_repo", server="github") == "deny"
    assert kind(sections, "create_issue", server="github") == "ask"
    assert kind(sections, "collection_write", server="rag") == "ask"
    assert kind(sections, "web_fetch", agent="coordinator/researcher") == "allow"
    assert kind(sections, "shell", agent="coordinator/researcher") == "ask"
    assert kind(sections, "shell") == "allow"


def numbered(found: list[tuple[str, str, str]]) -> list[Any]:
    """`found` as test parameters named by document and example (or place in the document)."""
    seen: dict[str, int] = {}
    params: list[Any] = []
    for doc, name, body in found:
        seen[doc] = seen.get(doc, 0) + 1
        params.append(pytest.param(doc, name, body, id=f"{doc}:{name or seen[doc]}"))
    return params


@pytest.mark.parametrize(("doc", "name", "body"), numbered(blocks("python")))
def test_every_python_example_runs_as_written_from_an_empty_folder(
    doc: str, name: str, body: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # A reader runs an example where they are, with what a fresh clone has: every file it
    # reads, it writes first (or takes from the installed package); every program it starts
    # is there without `make pytest` (no tests/js/node_modules on the PATH).
    assert not any(tmp_path.iterdir())
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)  # examples use their scripted model
    run_example(doc, name, body)


@pytest.mark.parametrize(("doc", "name", "body"), numbered(blocks("python", GUIDES)))
def test_every_framework_example_runs_twice_in_one_folder(
    doc: str, name: str, body: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # The second run finds the first one's signoff.db: what it remembers (every call it judged,
    # by thread and call id) must not be taken for the second run's calls.
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    run_example(doc, name, body)
    assert (tmp_path / "signoff.db").exists()
    run_example(doc, name, body)


@pytest.mark.parametrize(("doc", "name", "body"), numbered(blocks("yaml")))
def test_every_yaml_example_is_a_config_signoff_serve_reads(
    doc: str, name: str, body: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # Its secrets from the environment, as the example names them (each as long as a key).
    for variable in re.findall(r"_env:\s*(\w+)", body):
        monkeypatch.setenv(variable, f"{variable.lower()}-{'k' * 32}")
    (tmp_path / "signoff.yaml").write_text(body, encoding="utf-8")
    load_config(tmp_path / "signoff.yaml")


def run_example(doc: str, name: str, body: str) -> None:
    if "adalflow" in body:
        # AdalFlow downloads tiktoken's encoding at import: give it one offline (as a reader
        # with a network would have it), before the example imports AdalFlow.
        import tests.integrations.af_app  # noqa: F401
    if "from crewai" in body:
        # CrewAI's import makes Python warn of its own module (crewai.rag), an error here: the
        # tests' CrewAI app imports it with that one warning let pass.
        importlib.import_module("tests.integrations.crewai_app")
    exec(compile(body, f"{doc}:{name or 'python'}", "exec"), {})


def test_the_policy_commands_print_what_the_docs_show():
    shells = [body for _, _, body in blocks("sh") if re.search(r"^\.venv/bin/signoff ", body, re.M)]
    assert any("--json" in body for body in shells), "the docs show a command and its JSON answer"
    signoff_bin = Path(sys.executable).parent / "signoff"
    env = {**os.environ, "COLUMNS": "200"}
    answers = 0
    for shell in shells:
        commands = shell.replace("\\\n", " ").splitlines()
        for i, line in enumerate(commands):
            if not line.startswith(".venv/bin/signoff"):
                continue
            argv = [str(signoff_bin), *shlex.split(line)[1:]]
            result = subprocess.run(
                argv, cwd=ROOT, capture_output=True, text=True, env=env, check=False
            )
            assert result.returncode == 0, (line, result.stderr)
            follows = commands[i + 1] if i + 1 < len(commands) else ""
            if follows.startswith("# {"):
                assert result.stdout.strip() == follows[2:]
                answers += 1
    assert answers, "no command's shown answer was compared with what it prints"


def test_the_policy_commands_run_on_the_example_policy_and_its_calls(tmp_path: Path):
    # The page's files are the clone's examples, saved where the commands look for them.
    examples = ROOT / "src" / "signoff" / "examples"
    shutil.copy(examples / "policy.yaml", tmp_path / "signoff.yaml")
    shutil.copy(examples / "calls.yaml", tmp_path / "calls.yaml")
    commands = example("docs/policy.md", "commands")

    said = shell(commands, tmp_path).splitlines()

    assert said[0].startswith("ok signoff.yaml: ")
    keys = commands.splitlines()[-1].partition("# ")[2].split(", ")
    assert list(json.loads(said[-1])) == keys  # the last command's JSON has the keys it names


def test_the_audit_commands_verify_list_and_checkpoint_a_log(tmp_path: Path):
    async def audited() -> None:
        at = datetime.now(UTC)
        records = [AuditRecord(actor="ada", action="decided", subject=s, at=at) for s in "abc"]
        async with open_store(f"sqlite:///{tmp_path / 'signoff.db'}") as store:
            await store.append_audit(records)

    asyncio.run(audited())

    said = shell(example("docs/approvals.md", "audit"), tmp_path).splitlines()

    assert said[0] == example("docs/approvals.md", "verified").strip().replace("57", "3")
    assert [json.loads(line)["seq"] for line in said[1:]] == [1, 2, 3]

    commands = example("docs/approvals.md", "checkpoint")
    checked = shell(commands, tmp_path, DB="sqlite:///signoff.db")

    assert checked.startswith("ok: chain intact (3 entries), and entries 1 to 3 are those of ")
    [kept] = (tmp_path / "checkpoints.txt").read_text().splitlines()
    [shown] = re.findall(r"^# (signoff-audit-.*)$", commands, re.M)
    assert kept.split(".")[:2] == ["signoff-audit-1", "3"]
    assert len(kept.split(".")) == len(shown.split("."))  # its fields, as the page shows them


def test_make_demo_passes_the_docs_args_to_signoff_demo():
    shown = {
        args
        for doc in DOCS
        for args in re.findall(r'`make demo ARGS="([^"]+)"`', doc.read_text(encoding="utf-8"))
    }
    assert shown, "the docs show how to pass options to the demo"
    for args, command in [*((a, f"signoff demo {a}") for a in sorted(shown)), ("", "signoff demo")]:
        dry = subprocess.run(
            ["make", "--dry-run", "--no-print-directory", "demo", f"ARGS={args}"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert dry.stdout.splitlines()[-1].strip().endswith(command)


_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def anchors(doc: Path) -> set[str]:
    """The anchors GitHub gives the headings of `doc`."""
    found: set[str] = set()
    for heading in re.findall(r"^#+ (.+)$", _FENCE.sub("", doc.read_text(encoding="utf-8")), re.M):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        anchor, n = slug, 0
        while anchor in found:
            n += 1
            anchor = f"{slug}-{n}"
        found.add(anchor)
    return found


def links(doc: Path) -> list[str]:
    """The relative links and images of `doc`, outside code."""
    text = re.sub(r"`[^`\n]*`", "", _FENCE.sub("", doc.read_text(encoding="utf-8")))
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: str(doc.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_its_heading(doc: Path):
    def leads(link: str) -> bool:
        path, _, anchor = link.partition("#")
        target = (doc.parent / path).resolve() if path else doc
        if not target.is_file():
            return False
        return not anchor or target.suffix != ".md" or anchor in anchors(target)

    assert [link for link in links(doc) if not leads(link)] == []


def test_the_link_check_sees_links_and_headings():
    readme = ROOT / "README.md"
    assert "docs/policy.md" in links(readme)
    assert "what-signoff-does" in anchors(readme)
    assert "signoff-serve---config-file" in anchors(ROOT / "docs/server.md")
