"""``signoff backup FILE``: a consistent copy of a SQLite store, taken while the server runs.

SQLite's online backup API copies the database as one read transaction: in WAL mode writers go
on meanwhile, and the copy is the database as it was when the read began. The copy is written
beside `FILE` under a temporary name, checked, flushed to disk and renamed over `FILE`, so that
`FILE` is always either the previous backup or a whole new one. PostgreSQL is backed up with
its own tools (``pg_dump``): docs/operations.md, "Backups".
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from signoff.cli.target import StoreOption

__all__ = ["backup", "copy_sqlite"]

err = Console(stderr=True, highlight=False, soft_wrap=True)


def backup(
    file: Annotated[
        Path,
        typer.Argument(help="Where to write the copy (replaced if it exists).", metavar="FILE"),
    ],
    database: StoreOption = None,
) -> None:
    """Copy a SQLite store to FILE while it is in use (PostgreSQL: use pg_dump)."""
    import sqlite3

    from signoff.store import shown, store_url
    from signoff.store.sqlite import database_file

    url = store_url(database)
    if url.startswith("postgresql"):
        _fail(
            f"{shown(url)} is a PostgreSQL database: back it up with pg_dump "
            "(pg_dump --format=custom --file=signoff.dump DBNAME), as docs/operations.md "
            "shows under Backups"
        )
    if not url.startswith("sqlite"):
        _fail(f"{shown(url)!r} is not a database URL signoff backs up: use sqlite:///FILE")
    source = database_file(url)
    if source is None or not source.is_file():
        _fail(f"there is no SQLite database to back up at {url!r}")
    if file.resolve() == source.resolve():
        _fail(f"{file} is the database itself: back it up to another file")
    try:
        size = copy_sqlite(source, file)
    except (OSError, sqlite3.Error) as exc:
        _fail(f"cannot back up {source} to {file}: {exc}")
    typer.echo(f"backed up {source} to {file} ({size} bytes)")


def copy_sqlite(source: Path, target: Path) -> int:
    """Copy the SQLite database `source` to `target` atomically; the copy's size in bytes."""
    import sqlite3

    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        # Readable by whom may read the database, from its first byte: a copy of the audit log
        # and the calls' arguments is no more public than they are.
        os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        os.chmod(partial, stat.S_IMODE(source.stat().st_mode))
        with (
            contextlib.closing(sqlite3.connect(source, timeout=30)) as reading,
            contextlib.closing(sqlite3.connect(partial)) as writing,
        ):
            reading.backup(writing)  # every page in one step: one read transaction
            # A copy that is not whole never replaces the last good one.
            [check] = writing.execute("PRAGMA quick_check").fetchone()
            if check != "ok":
                raise sqlite3.DatabaseError(f"the copy does not check: {check}")
            writing.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
        with open(partial, "rb") as written:
            os.fsync(written.fileno())
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    _sync_folder(target.parent)
    return target.stat().st_size


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (where the system lets a folder be opened)."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def _fail(message: str) -> NoReturn:
    err.print(f"[bold red]error:[/] {escape(message)}")
    raise typer.Exit(2)
