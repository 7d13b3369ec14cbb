"""``signoff`` as the user types it here, for the commands the CLI tells them to run: ``signoff``
when their PATH finds this very program; else its path (``.venv/bin/signoff`` after ``make
demo``, whose folder is not on the PATH), or ``python -m signoff`` when it was started so."""

from __future__ import annotations

import os
import shlex
import shutil
import sys

__all__ = ["program", "typed"]


def program() -> str:
    """How to type the running ``signoff`` in this shell's folder, with its PATH."""
    return typed(sys.argv[0], search=os.environ.get("PATH"), folder=os.getcwd())


def typed(started: str, *, search: str | None, folder: str, python: str = sys.executable) -> str:
    """How to type the program `started` (its ``sys.argv[0]``) from `folder` with the PATH
    `search`: its name when the PATH finds it, else its path, relative to `folder` when that
    is shorter. A module started with ``python -m`` is typed so, with this `python`."""
    if os.path.basename(started) == "__main__.py":
        return f"{_typed(python, search, folder)} -m signoff"
    return _typed(started, search, folder)


def _typed(path: str, search: str | None, folder: str) -> str:
    name = os.path.basename(path)
    found = shutil.which(name, path=search)
    where = os.path.normpath(os.path.join(folder, path))
    if found is not None and _same(os.path.join(folder, found), where):
        return name
    relative = os.path.relpath(where, folder)
    if os.sep not in relative:
        relative = os.path.join(os.curdir, relative)  # a bare name would be looked up on PATH
    return shlex.quote(relative if len(relative) < len(where) else where)


def _same(one: str, other: str) -> bool:
    try:
        return os.path.samefile(one, other)
    except OSError:
        return False
