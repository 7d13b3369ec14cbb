"""What the ``signoff`` command loads to start: its commands' signatures, not what they use.

The store (SQLAlchemy), the server (FastAPI, uvicorn), the protocols' SDKs, the policy's YAML
and JSON Schema load inside the command that needs them; `--help` and a command through a
server never do. Proved by what a fresh interpreter has loaded, never by a clock."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from signoff.cli import app
from tests.test_public_api import leaks, loaded_by

HEAVY = [
    "sqlalchemy", "aiosqlite", "asyncpg", "fastapi", "starlette", "uvicorn", "mcp", "a2a",
    "ag_ui", "httpx", "yaml", "jsonschema", "pydantic", "asyncio", "signoff.store.sql",
    "signoff.gate.core", "signoff.server", "signoff.protocols", "signoff.policy", "signoff.agent",
    "signoff.demo.agents",
]  # fmt: skip
"""(`signoff.store.checkpoint` and `signoff.gate.ids` may load: plain Python, no SQLAlchemy.)"""


def test_importing_the_cli_loads_none_of_what_its_commands_use():
    assert leaks(loaded_by("import signoff.cli"), HEAVY) == []


def test_importing_signoff_loads_neither_the_policy_nor_the_store():
    assert leaks(loaded_by("import signoff"), HEAVY) == []


def help_of(*words: str) -> tuple[str, set[str]]:
    """What ``signoff WORDS --help`` prints, and the modules it loaded to print it."""
    probe = (
        "import json, sys\n"
        "from signoff.cli import main\n"
        f"sys.argv = ['signoff', *{list(words)!r}, '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    return done.stdout, set(json.loads(done.stderr))


def words(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


def test_the_help_shows_every_command_with_its_help_and_loads_none_of_what_they_use():
    shown, loaded = help_of()
    for command in app.registered_commands:
        assert command.callback is not None
        summary = (command.callback.__doc__ or "").split(".")[0]
        assert f"│ {command.name} " in shown and words(summary) in words(shown), command.name
    for group in app.registered_groups:
        assert group.typer_instance is not None
        summary = str(group.typer_instance.info.help)
        assert f"│ {group.name} " in shown and words(summary) in words(shown), group.name
    assert leaks(loaded, HEAVY) == []


@pytest.mark.parametrize(
    "command",
    [
        ("inbox",),
        ("approve",),
        ("serve",),
        ("mcp-gateway",),
        ("audit", "verify"),
        ("insights",),
        ("policy", "suggest"),
    ],
)
def test_a_command_s_help_loads_none_of_what_the_command_uses(command: tuple[str, ...]):
    shown, loaded = help_of(*command)
    assert f"Usage: signoff {' '.join(command)} [OPTIONS]" in shown
    # typer (0.29) builds a command's parameters with pydantic: its cost, not one of signoff's.
    assert leaks(loaded, [name for name in HEAVY if name != "pydantic"]) == []
