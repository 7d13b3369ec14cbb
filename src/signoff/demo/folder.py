"""The demo's data folder: its database and sandbox, the address of the demo serving from it
(so that ``signoff approve`` and ``signoff inbox`` find it with no flags), and a reset."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

from signoff.errors import SignoffError

__all__ = [
    "ADDRESS",
    "DATABASE",
    "SANDBOX",
    "announce",
    "default_data_dir",
    "reset",
    "serving",
    "withdraw",
]

DATABASE = "signoff.db"
SANDBOX = "sandbox"
ADDRESS = "server.json"
"""Kept while a demo serves from the folder, ``{"url": ..., "pid": ...}``; removed when it
stops. One left by a demo that was killed names a process that is gone, and is ignored."""
_DATABASE_FILES = (DATABASE, f"{DATABASE}-wal", f"{DATABASE}-shm", f"{DATABASE}-journal")


def default_data_dir() -> Path:
    """Where the demo keeps its database and sandbox: ``$XDG_DATA_HOME/signoff/demo``."""
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "signoff" / "demo"


def announce(folder: Path, url: str) -> None:
    """Note that this process serves the demo of `folder` at `url`."""
    temporary = folder / f"{ADDRESS}.{os.getpid()}"
    temporary.write_text(json.dumps({"url": url, "pid": os.getpid()}), encoding="utf-8")
    temporary.replace(folder / ADDRESS)  # a reader sees the whole file or none


def withdraw(folder: Path) -> None:
    """Remove the note `announce` wrote, unless another process has written its own since."""
    if _note(folder).get("pid") == os.getpid():
        (folder / ADDRESS).unlink(missing_ok=True)


def serving(folder: Path) -> str | None:
    """The URL of the demo serving from `folder` now, or None."""
    note = _note(folder)
    url, pid = note.get("url"), note.get("pid")
    if not isinstance(url, str) or not isinstance(pid, int) or not _alive(pid):
        return None
    return url


def reset(folder: Path) -> list[str]:
    """Remove the demo's database and sandbox from `folder` (nothing else in it): what was
    removed, in words. Refused while a demo serves from the folder. A folder without the demo's
    database is left alone, sandbox included: it may not be a demo's folder at all."""
    url = serving(folder)
    if url is not None:
        raise SignoffError(f"the demo at {url} serves from {folder}: stop it before a reset")
    if not (folder / DATABASE).is_file():
        return []
    removed: list[str] = []
    for name in _DATABASE_FILES:
        with contextlib.suppress(FileNotFoundError):
            (folder / name).unlink()
            removed.append(name)
    sandbox = folder / SANDBOX
    if sandbox.is_dir():
        count = sum(1 for path in sandbox.rglob("*") if path.is_file())
        shutil.rmtree(sandbox)
        removed.append(f"{SANDBOX}/ ({count} file{'' if count == 1 else 's'})")
    (folder / ADDRESS).unlink(missing_ok=True)  # a killed demo's: it names a process now gone
    return removed


def _note(folder: Path) -> dict[str, object]:
    try:
        data = json.loads((folder / ADDRESS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _alive(pid: int) -> bool:
    if pid <= 0:  # 0 and below name process groups, never one process
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True
