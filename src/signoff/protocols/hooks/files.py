"""A coding agent's file tools judged on the file they touch: the path made absolute against the
agent's folder, ``..`` collapsed and — where the folder is on this machine — symlinks resolved,
so a rule for ``/work/shop/**`` never lets ``/work/shop/../../etc/passwd`` or a link out of the
project through. The call that runs is the one judged: the agent is told to use the resolved path.

And what a write would change, for the card: a unified diff of an edit's old and new text, or of
a file and what a write puts there. The file on disk is read only where the hook runs as the
agent's own user (the command hook): a server never reads a file a request names.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from signoff.gate.preview import PreviewFunction

__all__ = ["PATHS", "previews", "resolved"]

PATHS: dict[str, str] = {
    # Claude Code
    "Read": "file_path", "Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path", "Grep": "path", "Glob": "path", "LS": "path",
    # Gemini CLI
    "read_file": "file_path", "write_file": "file_path", "replace": "file_path",
}  # fmt: skip
"""The file tools of the coding agents, and the argument naming the file (or the folder a
search reads)."""
_READ_AT_MOST = 256 * 1024
"""The biggest file a preview reads."""


def resolved(tool: str, args: Mapping[str, Any], cwd: str | None, *, local: bool) -> dict[str, Any]:
    """`args` with the file a file tool touches as an absolute, normalized path — symlinks
    resolved too where the agent's files are this process's (`local`: the command hook, an
    app's hooks; a server looks at no path a request names); other tools' arguments as they
    are."""
    argument = PATHS.get(tool)
    if argument is None:
        return dict(args)
    given = args.get(argument)
    if not isinstance(given, str) or not given or "\0" in given:
        return dict(args)
    path = given if os.path.isabs(given) or not cwd else os.path.join(cwd, given)
    path = os.path.normpath(path)
    if local and os.path.isabs(path):
        path = os.path.realpath(path)
    return {**args, argument: path}


def previews(*, from_disk: bool) -> dict[str, PreviewFunction]:
    """The preview of each file tool that writes: a diff (with the file's current text when
    `from_disk`)."""

    def edit(file_path: str, old_string: str = "", new_string: str = "",
             replace_all: bool = False, **_: Any) -> str:  # fmt: skip
        before = _text(file_path) if from_disk else None
        if before is None or old_string not in before:
            return _diff(file_path, old_string, new_string)
        count = -1 if replace_all else 1
        return _diff(file_path, before, before.replace(old_string, new_string, count))

    def multi_edit(file_path: str, edits: Any = (), **_: Any) -> str:
        before = (_text(file_path) if from_disk else None) or ""
        after = before
        for one in edits if isinstance(edits, list) else []:
            if isinstance(one, dict) and isinstance(one.get("old_string"), str):
                count = -1 if one.get("replace_all") else 1
                after = after.replace(one["old_string"], str(one.get("new_string", "")), count)
        return _diff(file_path, before, after)

    def write(file_path: str, content: str = "", **_: Any) -> str:
        before = (_text(file_path) if from_disk else None) or ""
        return _diff(file_path, before, content)

    return {"Edit": edit, "replace": edit, "MultiEdit": multi_edit, "Write": write,
            "write_file": write}  # fmt: skip


def _text(path: str) -> str | None:
    """The file's text, when it is a readable text file of a reasonable size."""
    try:
        file = Path(path)
        if not file.is_file() or file.stat().st_size > _READ_AT_MOST:
            return None
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _diff(path: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile=f"a{path}", tofile=f"b{path}",
    )  # fmt: skip
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines) or (
        f"--- a{path}\n+++ b{path}\n"
    )
