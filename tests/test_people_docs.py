"""docs/four-eyes.md and docs/delegation.md as written: a page's files saved in an empty folder,
its server started with the page's command (on a free port instead of its own), and every other
shell example of the page run there with bash, as another terminal would, printing what the
comments under its commands show (``ID`` for an approval's id)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.deadline import HANG
from tests.processes import signoff_command
from tests.test_docs import ROOT, blocks, files, shell

PAGES = [ROOT / "docs" / "four-eyes.md", ROOT / "docs" / "delegation.md"]
DOCUMENTED = "http://127.0.0.1:8001"
"""Where the pages' servers listen."""


def environment() -> dict[str, str]:
    """A reader's shell (the suite's has no SIGNOFF_SERVER, SIGNOFF_TOKEN …: tests/conftest.py),
    printing each line as it comes."""
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


@contextmanager
def serving(block: str, folder: Path) -> Iterator[str]:
    """The page's server, started in `folder` as the shell example `block` starts it (its
    ``export``s, then ``signoff serve``), on a free port: its URL, while the block lasts."""
    env = environment()
    serve: list[str] = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["export"]:
            env |= dict(word.split("=", 1) for word in words[1:])
        elif words[:2] == ["signoff", "serve"]:
            serve = words[1:]
    assert serve[-2:] == ["--port", DOCUMENTED.rpartition(":")[2]], serve
    process = subprocess.Popen(
        [*signoff_command(), *serve[:-1], "0"], cwd=folder, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        said: list[str] = []
        while not (found := re.search(r"http://127\.0\.0\.1:\d+", "".join(said[-1:]))):
            line = process.stdout.readline()
            assert line, "signoff serve ended before serving:\n" + "".join(said)
            said.append(line)
        yield found[0]
    finally:
        process.terminate()
        process.wait(timeout=HANG)
        process.stdout.close()


def shown(block: str) -> list[str]:
    """What the comments under the commands of `block` say they print."""
    return [line[2:] for line in block.splitlines() if line.startswith("# ")]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_shell_example_of_the_page_runs_against_its_server_as_written(
    page: Path, tmp_path: Path
):
    for name, body in files(page).items():
        (tmp_path / name).write_text(body, encoding="utf-8")
    examples = [body for _, _, body in blocks("sh", [page])]
    [serve] = [body for body in examples if "signoff serve" in body]
    others = [body for body in examples if body != serve]
    assert others, f"{page.name} shows what to do once its server runs"
    with serving(serve, tmp_path) as url:
        for example in others:
            said = shell(example.replace(DOCUMENTED, url), tmp_path).splitlines()
            expected = [re.escape(line).replace("ID", r"[0-9a-f]{32}") for line in shown(example)]
            assert len(said) == len(expected), said
            for line, pattern in zip(said, expected, strict=True):
                assert re.fullmatch(pattern, line), (line, pattern)


def test_delegation_says_what_a_name_no_token_gives_is_told(tmp_path: Path):
    page = PAGES[1]
    for name, body in files(page).items():
        (tmp_path / name).write_text(body, encoding="utf-8")
    [serve] = [body for _, _, body in blocks("sh", [page]) if "signoff serve" in body]
    [quoted] = re.findall(r"`('fay' is not a known principal: [^`]*)`", page.read_text())
    with serving(serve, tmp_path) as url:
        held = shell("python hold.py", tmp_path).strip()
        env = environment() | {"SIGNOFF_TOKEN": "dan-s3cret"}
        refused = subprocess.run(
            [*signoff_command(), "assign", held, "fay", "--server", url], cwd=tmp_path,
            env=env, capture_output=True, text=True, timeout=HANG, check=False,
        )  # fmt: skip
    assert refused.returncode == 1
    assert refused.stderr == f"error: {url} said 422: {' '.join(quoted.split())}\n"
