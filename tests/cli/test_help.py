"""Every command's ``--help`` says what its author wrote: no words eaten, no type on a flag."""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import pairwise
from typing import TYPE_CHECKING

import pytest
import typer
from rich.text import Text
from typer.testing import CliRunner

from signoff.cli import app

if TYPE_CHECKING:
    from typer._click import Command

runner = CliRunner()


def commands(
    command: Command, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Command]]:
    """Each command under `command` (itself included), with its words on the command line."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from commands(sub, (*path, name))


ROOT = typer.main.get_command(app)
EVERY = [pytest.param(path, id=" ".join(path) or "signoff") for path, _ in commands(ROOT)]


@pytest.mark.parametrize("path", EVERY)
def test_a_help_shows_no_value_type_on_a_flag_and_no_hole_in_its_words(path: tuple[str, ...]):
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output
    words = " ".join(result.output.replace("│", " ").split())
    assert not re.search(r"\s[.,;:)]", words), words  # "... decide through ." had lost a part


@pytest.mark.parametrize("path", EVERY)
def test_no_help_text_is_taken_for_markup(path: tuple[str, ...]):
    command = dict(commands(ROOT))[path]
    texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
    for text in texts:
        assert Text.from_markup(text).plain == text, f"rich would show {text!r} cut"


WIDTH = 200


@pytest.mark.parametrize("path", EVERY)
def test_a_help_s_paragraphs_wrap_at_the_terminal_s_width_not_at_the_docstring_s(
    path: tuple[str, ...],
):
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": str(WIDTH)})
    text = [line.rstrip() for line in result.output.splitlines() if not line.startswith("│")]
    for line, following in pairwise(text):
        if line.strip() and following.strip() and not following.lstrip().startswith("╰"):
            # The next line's first word would have fit on this one: a break the author made.
            assert len(line) + 1 + len(following.split()[0]) > WIDTH - 4, (line, following)
    command = dict(commands(ROOT))[path]
    shown = {line.strip() for line in text}
    for paragraph in (command.help or "").split("\n\n"):
        assert " ".join(paragraph.split()) in shown or len(paragraph) > WIDTH - 4, paragraph
