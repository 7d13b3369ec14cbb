"""docs/operations.md's way to try sign-on on one machine, as written: its test provider
(oidc-provider-mock) started with the page's command, ``signoff serve`` with the page's config and
environment, and people signing in through the provider's page and out again."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.deadline import HANG
from tests.server.oidc_provider import free_port
from tests.test_docs import ROOT, example, files

DOC = "docs/operations.md"
PORT = "9400"
"""The provider's port on the page; the test's provider listens on a free one."""


def started(command: str, folder: Path, said: re.Pattern[str]) -> tuple[subprocess.Popen[str], str]:
    """`command` run by bash in `folder`, with the venv's programs on the PATH, once it has
    printed a line that `said` matches (the match's first group)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    dropped = ("SIGNOFF_DATABASE_URL", "SIGNOFF_PORT", "SIGNOFF_OIDC_SECRET", "SIGNOFF_SESSION_KEY")
    env = {k: v for k, v in os.environ.items() if k not in dropped} | {"PATH": path}
    process = subprocess.Popen(
        ["bash", "-e", "-c", command], cwd=folder, env=env | {"SIGNOFF_PORT": "0"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    lines: list[str] = []
    while not (found := said.search(lines[-1] if lines else "")):
        line = process.stdout.readline()
        assert line, f"{command!r} ended:\n" + "".join(lines)
        lines.append(line)
    return process, found[1]


def stopped(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.wait(timeout=HANG)
    assert process.stdout is not None
    process.stdout.close()


@pytest.fixture(scope="module")
def inbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The page's set-up in an empty folder, the provider on a free port: the inbox's URL."""
    folder = tmp_path_factory.mktemp("sign-on")
    port = str(free_port())
    config = files(ROOT / DOC)["sign-on.yaml"]
    assert f"http://127.0.0.1:{PORT}" in config
    (folder / "sign-on.yaml").write_text(config.replace(PORT, port), encoding="utf-8")
    install, provider, *serve = example(DOC, "sign-on").splitlines()
    assert install.startswith("pip install oidc-provider-mock ")  # a dev dependency: installed
    assert f"--port {PORT} " in provider
    commands = [provider.replace(PORT, port), "\n".join([*serve[:-1], f"exec {serve[-1]}"])]
    running, _ = started(f"exec {commands[0]}", folder, re.compile(r"(running on)"))
    try:
        serving, url = started(commands[1], folder, re.compile(r"^signoff on (http://\S+)"))
        try:
            yield url
        finally:
            stopped(serving)
    finally:
        stopped(running)


@contextlib.contextmanager
def signed_in(inbox: str, name: str) -> Iterator[httpx.Client]:
    """A browser signed in to the inbox as `name`, as a person does it at the provider's page:
    a name in its form, and Authorize."""
    with httpx.Client(base_url=inbox) as browser:
        at = browser.get("/auth/login").headers["location"]
        form = browser.get(at)
        assert form.status_code == 200 and "Authorize" in form.text
        back = browser.post(at, data={"sub": name})
        assert browser.get(back.headers["location"]).status_code == 303  # signed in, sent on
        yield browser


def test_the_page_s_person_signs_in_with_the_roles_of_her_group(inbox: str):
    assert httpx.get(f"{inbox}/auth/info").json()["sign_on"]["name"] == "the test provider"
    with signed_in(inbox, "ada") as browser:
        me = browser.get("/v1/me").json()
        assert (me["name"], sorted(me["roles"])) == ("ada", ["admin", "ops"])

        # Signing out at signoff leads to the provider's own sign-out.
        out = browser.post("/auth/logout", headers={"Origin": inbox})
        assert httpx.get(out.json()["next"]).status_code == 200
        assert browser.get("/v1/me").status_code == 401


def test_any_other_name_signs_in_with_no_role(inbox: str):
    with signed_in(inbox, "vic") as browser:
        me = browser.get("/v1/me").json()
        assert (me["name"], me["roles"]) == ("vic", [])
