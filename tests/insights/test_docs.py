"""docs/insights.md as written: its commands run against a database holding the test suite's
history and print what it shows; its API request answers with what it shows."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import yaml

from signoff import Policy
from signoff.store import SQLStore, open_store
from tests.history import POLICY, write_history
from tests.server.test_policy_api import client_of, make_service

DOC = Path(__file__).resolve().parents[2] / "docs" / "insights.md"


def example(name: str, lang: str) -> str:
    found = re.search(rf"<!-- example: {name} -->\n```{lang}\n(.*?)```", DOC.read_text(), re.S)
    assert found, name
    return found.group(1)


def test_the_commands_run_as_written_and_print_what_the_page_shows(tmp_path: Path):
    async def fill() -> None:
        async with open_store(f"sqlite:///{tmp_path / 'signoff.db'}") as store:
            now = datetime.now(UTC)
            await write_history(store, 400, now=now, days=20)
            await store.save_policy(Policy.from_dict(POLICY).version, POLICY, actor="ci", at=now)

    asyncio.run(fill())
    (tmp_path / "signoff.yaml").write_text(yaml.safe_dump(POLICY))
    signoff = Path(sys.executable).parent / "signoff"
    env = {**os.environ, "COLUMNS": "200"}
    printed = {}
    for line in example("cli", "sh").splitlines():
        argv = [str(signoff), *shlex.split(line)[1:]]
        result = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, env=env)
        assert result.returncode == 0, (line, result.stderr)
        printed[line] = result.stdout

    suggested = printed["signoff policy suggest --database sqlite:///signoff.db"]
    assert example("suggest-output", "text") in suggested
    assert example("nearest-output", "text") in suggested
    assert json.loads(printed["signoff insights --database sqlite:///signoff.db --days 7 --json"])


async def test_the_api_request_answers_as_the_page_shows(store: SQLStore):
    await write_history(store, 400, now=datetime.now(UTC), days=20)
    [request] = example("api", "sh").splitlines()
    url = httpx.URL(shlex.split(request)[-1])
    shown = json.loads(example("api-answer", "json"))

    async with client_of(make_service(store, POLICY), "admin-token") as admin:
        answer = (await admin.get(url.path, params=url.params)).json()

    datetime.fromisoformat(answer.pop("since"))
    shown.pop("since")
    like(shown, answer)


def like(shown: Any, real: Any, where: str = "") -> None:
    """`real` is what the page shows: the same keys and values, where ``…`` stands for anything,
    a text ending in ``…`` for any text that begins the same, and a list's items shown for
    some of its items."""
    if isinstance(shown, str) and shown.endswith("…"):
        assert isinstance(real, str | dict | list), (where, real)
        if isinstance(real, str):
            assert real.startswith(shown[:-1]), (where, real)
        return
    if isinstance(shown, dict):
        assert isinstance(real, dict) and sorted(shown) == sorted(real), (where, real)
        for key, value in shown.items():
            like(value, real[key], f"{where}.{key}")
    elif isinstance(shown, list):
        assert isinstance(real, list), (where, real)
        for n, item in enumerate(shown):
            assert any(_alike(item, candidate) for candidate in real), (f"{where}[{n}]", real)
    else:
        assert (type(shown), shown) == (type(real), real), (where, real)


def _alike(shown: Any, real: Any) -> bool:
    try:
        like(shown, real)
    except AssertionError:
        return False
    return True
