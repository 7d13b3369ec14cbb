"""The real set-up of each framework guide, and of docs/getting-started.md, runs as its page writes
it: the page's files saved in an empty folder, ``signoff serve`` started with the page's command,
``python app.py`` run as written, the call it holds approved — with the page's ``signoff
approve``, as a third terminal would, or (getting started) by real Chromium clicking Approve in
the inbox — and the app printing what the page says it prints, its resumed run's answer last,
then exiting 0.

The pages share one ``signoff.yaml`` and one serve command (checked), so one server serves them
all, in one folder, and the apps run there one after another: each finds the others' runs in
``signoff.db``, as a second run of itself would (every run takes a new thread)."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.deadline import HANG
from tests.hooks.messages import Turn, scripted_messages
from tests.processes import signoff_command
from tests.test_docs import _BLOCK, GUIDES, ROOT, files
from tests.web.conftest import FLAGS, TIMEOUT, chromium, screenshot

GETTING_STARTED = ROOT / "docs" / "getting-started.md"
PAGES = [*GUIDES, GETTING_STARTED]
"""In the order the tests take them."""
DOCUMENTED = "http://127.0.0.1:8000"
"""Where the pages' server listens; the tests' listens on a free port (``--port 0``), which the
apps are told in ``SIGNOFF_SERVER``, as the pages say to tell them of another port."""


@dataclass(frozen=True, kw_only=True)
class SetUp:
    """What a page has its reader save and run."""

    files: dict[str, str]
    serve: list[str]
    """The serve command's arguments after ``signoff``."""
    app: list[str]
    """The app's command's arguments after ``python``."""
    approve: list[str] | None
    """``signoff approve``'s arguments after ``signoff``, with ID for the approval's id."""
    prints: list[str]
    """What the app prints, with ID for the approval's id."""


def set_up(page: Path) -> SetUp:
    named = {
        m["name"]: m["body"]
        for m in _BLOCK.finditer(page.read_text(encoding="utf-8"))
        if m["mark"] == "example"
    }
    commands = [shlex.split(line, comments=True) for line in named["set-up"].splitlines()]
    [serve] = [c[1:] for c in commands if c[:2] == ["signoff", "serve"]]
    [app] = [c[1:] for c in commands if c[:1] == ["python"]]
    approve = named.get("approve")
    return SetUp(
        files=files(page),
        serve=serve,
        app=app,
        approve=shlex.split(approve, comments=True)[1:] if approve else None,
        prints=named["app-output"].splitlines(),
    )


@dataclass(frozen=True, kw_only=True)
class Served:
    folder: Path
    url: str
    setup: SetUp
    """What the server was started from."""
    claude: str
    """The scripted Messages API that plays Claude for the Claude Agent SDK's page."""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One `signoff serve`, as getting started starts it, in a folder of its own with its
    config: the guides' are the same (each test checks its own)."""
    first = set_up(GETTING_STARTED)
    folder = tmp_path_factory.mktemp("my-agent")
    (folder / "signoff.yaml").write_text(first.files["signoff.yaml"], encoding="utf-8")
    port = first.serve.index("--port") + 1
    assert first.serve[port] == "8000", "the page shows the port"
    free = [
        *first.serve[:port],
        "0",
        *first.serve[port + 1 :],
    ]  # the page's command, on a free port
    process = subprocess.Popen(
        [*signoff_command(), *free], cwd=folder, env=environment(),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    stack = contextlib.ExitStack()
    try:
        api = stack.enter_context(scripted_messages(CLAUDE))
        said: list[str] = []
        while not (found := re.search(r"http://127\.0\.0\.1:(\d+)", "".join(said[-1:]))):
            line = process.stdout.readline()
            assert line, "signoff serve ended before serving:\n" + "".join(said)
            said.append(line)
        assert found[1] != "8000", "serve listens where --port says"
        yield Served(folder=folder, url=found[0], setup=first, claude=api.url)
    finally:
        stack.close()
        process.terminate()
        process.wait(timeout=HANG)
        process.stdout.close()


def environment() -> dict[str, str]:
    """A reader's shell: no database named elsewhere, the scripted models offline."""
    dropped = ("SIGNOFF_DATABASE_URL", "OPENAI_BASE_URL", "SIGNOFF_MODEL", "SIGNOFF_PORT")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return env | {"PYTHONUNBUFFERED": "1"}  # each line as printed, as in a terminal


class App:
    """``python app.py`` as a page runs it, in the server's folder."""

    def __init__(self, setup: SetUp, served: Served) -> None:
        for name, body in setup.files.items():
            (served.folder / name).write_text(body, encoding="utf-8")
        env = environment() | {"SIGNOFF_SERVER": served.url}  # the page's port is not free here
        if "adalflow" in setup.files["app.py"]:
            env = offline_tiktoken(served.folder, env)
        if "claude_agent_sdk" in setup.files["app.py"]:
            env = offline_claude(served, env)
        if "crewai" in setup.files["app.py"]:  # its files (kickoff outputs) not in the home
            env = env | {"CREWAI_STORAGE_DIR": str(served.folder / ".crewai")}
        self.setup = setup
        self.prints = [line.replace(DOCUMENTED, served.url) for line in setup.prints]
        """What the page says the app prints, with the server's address (ID for the id)."""
        self.errors = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed by close()
        self.process = subprocess.Popen(
            [sys.executable, *setup.app], cwd=served.folder, env=env,
            stdout=subprocess.PIPE, stderr=self.errors, text=True,
        )  # fmt: skip
        self.said: list[str] = []
        self.approval: str | None = None

    def waits(self) -> str | None:
        """The id of the approval the app says it waits for, once it has said so; None if it
        ended first."""
        assert self.process.stdout is not None
        # Whatever address it names (the test's, checked once it has finished).
        pattern = re.escape(self.setup.prints[0]).replace(re.escape(DOCUMENTED), r"\S+")
        pattern = pattern.replace("ID", r"(?P<id>[\w-]+)")
        while self.approval is None:
            line = self.process.stdout.readline()
            if not line:
                return None
            self.said.append(line.rstrip("\n"))
            if found := re.fullmatch(pattern, self.said[-1]):
                self.approval = found["id"]
        return self.approval

    def finished(self, approval: str) -> None:
        """The app exits 0, having printed what its page says."""
        try:
            out, _ = self.process.communicate(timeout=HANG)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise
        self.said += out.splitlines()
        assert self.process.returncode == 0, self.failed()
        assert self.said == [line.replace("ID", approval) for line in self.prints]

    def failed(self) -> str:
        self.process.wait(timeout=HANG)
        self.errors.seek(0)
        return "\n".join([*self.said, self.errors.read()])

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=HANG)
        assert self.process.stdout is not None
        self.process.stdout.close()
        self.errors.close()


class Apps:
    """The pages' apps, each started when its predecessor has said that it waits (so has long
    read its ``app.py``, which the next one's overwrites): one starts while the last is decided
    and resumed."""

    def __init__(self, served: Served) -> None:
        self.served = served
        self.started: dict[Path, App] = {}
        self.last: App | None = None

    def start(self, page: Path) -> App:
        if page not in self.started:
            if self.last is not None:
                self.last.waits()
            self.last = self.started[page] = App(set_up(page), self.served)
        return self.started[page]

    def take(self, page: Path) -> tuple[App, str]:
        """`page`'s app once it waits, and the approval it waits for; the next page's starts."""
        app = self.start(page)
        approval = app.waits()
        assert approval is not None, app.failed()
        later = PAGES[PAGES.index(page) + 1 :]
        if (following := next((p for p in later if p not in self.started), None)) is not None:
            self.start(following)
        return app, approval


@pytest.fixture(scope="module")
def apps(served: Served) -> Iterator[Apps]:
    started = Apps(served)
    yield started
    for app in started.started.values():
        app.close()


@pytest.mark.parametrize("page", GUIDES, ids=lambda page: page.name)
def test_a_guide_s_app_prints_its_resumed_run_s_answer_once_its_call_is_approved(
    page: Path, served: Served, apps: Apps
):
    setup = set_up(page)
    assert setup.files["signoff.yaml"] == served.setup.files["signoff.yaml"]
    assert setup.serve == served.setup.serve
    assert setup.approve is not None, f"{page.name} shows how to approve from a terminal"
    app, approval = apps.take(page)
    argv = [a.replace("ID", approval).replace(DOCUMENTED, served.url) for a in setup.approve]
    approved = subprocess.run(
        [*signoff_command(), *argv], cwd=served.folder, env=environment(),
        capture_output=True, text=True, timeout=HANG, check=False,
    )  # fmt: skip
    assert approved.returncode == 0, approved.stderr
    app.finished(approval)


def offline_tiktoken(folder: Path, env: dict[str, str]) -> dict[str, str]:
    """`env` with tiktoken's ``cl100k_base`` given offline, which AdalFlow downloads as it is
    imported (a reader with a network has it): tests/integrations/af_app.py's, for a process."""
    site = folder / ".offline"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(
        "import tiktoken.registry\n"
        "from tiktoken.core import Encoding\n"
        "tiktoken.registry.ENCODINGS.setdefault('cl100k_base', Encoding(\n"
        "    name='cl100k_base', pat_str=r'\\S+|\\s+',\n"
        "    mergeable_ranks={bytes([i]): i for i in range(256)},\n"
        "    special_tokens={'<|endoftext|>': 256}))\n",
        encoding="utf-8",
    )
    return env | {"PYTHONPATH": os.pathsep.join([str(site), env.get("PYTHONPATH", "")])}


CLAUDE = [
    Turn(calls=[("mcp__notes__read_notes", {"day": "monday"})]),
    Turn(calls=[("mcp__notes__send_email", {"to": "bob@example.com"})]),
    Turn(text="I emailed Monday's notes to Bob."),
]
"""Claude, as the Claude Agent SDK page's prompt would have it answer."""


def offline_claude(served: Served, env: dict[str, str]) -> dict[str, str]:
    """`env` with Claude played by the scripted Messages API (a reader has a key and
    Anthropic's), and Claude Code's home a folder of the test's."""
    home = served.folder / ".claude-home"
    home.mkdir(exist_ok=True)
    return env | {
        "HOME": str(home), "ANTHROPIC_BASE_URL": served.claude,
        "ANTHROPIC_API_KEY": "sk-ant-offline", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
    }  # fmt: skip


def test_getting_started_runs_as_written_and_approve_in_the_inbox_prints_the_answer(
    served: Served, apps: Apps
):
    path = chromium()
    app, approval = apps.take(GETTING_STARTED)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(served.url)  # the inbox, as the page says: the link goes to its card too
            card = page.locator(f"#inbox-list article[data-approval-id='{approval}']")
            expect(card.locator(".tool")).to_have_text("send_email", timeout=TIMEOUT)
            screenshot(page, "getting-started")
            card.locator("button[data-action=approve]").click()
            app.finished(approval)
        finally:
            browser.close()
