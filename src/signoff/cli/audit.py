"""``signoff audit verify``, ``signoff audit checkpoint`` and ``signoff audit list``.

``verify`` checks the log of the database given (``--database``), or through a server
(``--server URL --token T``); with neither, of ``signoff.db`` here if there is one, else through
the demo running on this machine. ``checkpoint`` and ``list`` read a database.

Exit statuses of ``verify`` and ``checkpoint``: 0 the log is intact, 1 it is not (the first
fault is named), 2 it cannot be checked — a checkpoint that is not one, or whose signature the
key does not match, or a database that cannot be opened.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from signoff.cli.client import on_server
from signoff.cli.program import program
from signoff.cli.target import Server, StoreOption, Token, where
from signoff.errors import CheckpointError, SignoffError, StoreError
from signoff.store.checkpoint import KEY_VARIABLE

if TYPE_CHECKING:
    from signoff.store import AuditReport, Checkpoint
    from signoff.types import AuditEntry

__all__ = ["app"]


app = typer.Typer(help="Read and verify the hash-chained audit log.", no_args_is_help=True)

SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="CHECKPOINT",
        help="A checkpoint printed by `signoff audit checkpoint`: prove that no entry up to it "
        f"was removed or rewritten (a signed one needs {KEY_VARIABLE}).",
    ),
]
_UNSIGNED = (
    "the checkpoint is unsigned: it proves this only if it was kept where the database's "
    f"writers cannot change it (set {KEY_VARIABLE} to sign checkpoints)"
)

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


@app.command()
def verify(
    database: Annotated[
        str | None,
        typer.Option(
            "--database",
            "-d",
            help="Check this database (its URL) instead. Default: signoff.db here if there is "
            "one, else through the demo running here.",
            envvar="SIGNOFF_DATABASE_URL",
            show_default=False,
        ),
    ] = None,
    since: SinceOption = None,
    server: Server = None,
    token: Token = None,
) -> None:
    """Check the chain: exit 0 intact, 1 naming the first fault, 2 for a bad checkpoint.

    Without --since it cannot tell that the newest entries were cut off along with the head.
    """
    if not (server or database) and Path(_HERE).is_file():
        database = f"sqlite:///{_HERE}"
    server, database = where("audit verify", server, database)
    if server:
        report = _checked_by(server, token, since)
        signed = report["checkpoint"] is None or report["checkpoint"]["signed"]
    else:
        checkpoint = _checkpoint(since)
        checked = _check(database, checkpoint)
        report = {"ok": checked.ok, "reason": checked.reason}
        signed = checkpoint is None or checkpoint.signed
    if not report["ok"]:
        err.print(f"[bold red]broken:[/] {escape(report['reason'])}")
        raise typer.Exit(1)
    out.print(f"[green]ok:[/] {escape(report['reason'])}")
    if since is not None and not signed:
        err.print(f"[yellow]note:[/] {escape(_UNSIGNED)}")


_HERE = "signoff.db"
"""The database ``verify`` checks by default, in the folder it runs in: the one a gateway or a
server configured with no database keeps."""


def _checked_by(server: str, token: str | None, since: str | None) -> dict[str, Any]:
    """The server's report; one it cannot make (a bad checkpoint, no access) is exit 2."""
    try:
        return on_server(server, token, "GET", "/v1/audit/verify", params={"since": since})
    except SignoffError as exc:
        _usage(exc)


@app.command()
def checkpoint(database: StoreOption = None, since: SinceOption = None) -> None:
    """Verify the log and print its head as a checkpoint to keep outside the database.

    Signed with SIGNOFF_AUDIT_KEY when it is set; check the log against it with
    `signoff audit verify --since CHECKPOINT`.
    """
    from signoff.store import Checkpoint

    previous = _checkpoint(since)
    key = _key()
    report = _check(database, previous)
    if not report.ok:
        err.print(f"[bold red]not checkpointed, the log is broken:[/] {escape(report.reason)}")
        raise typer.Exit(1)
    made = Checkpoint(
        seq=report.entries, hash=report.last_hash, at=datetime.now(UTC).replace(microsecond=0)
    )
    if key is not None:
        made = made.sign(key)
    typer.echo(made.text())
    entries = "1 entry" if report.entries == 1 else f"{report.entries} entries"
    if key is not None:
        err.print(
            f"checkpoint of {entries}, signed with {KEY_VARIABLE}: keep it outside the database "
            f"and check the log with `{program()} audit verify --since CHECKPOINT`"
        )
    else:
        err.print(
            f"[yellow]unsigned[/] checkpoint of {entries} ({KEY_VARIABLE} is not set): it proves "
            "nothing unless kept where the database's writers cannot change it"
        )


@app.command("list")
def list_entries(
    database: StoreOption = None,
    after: Annotated[int, typer.Option(min=0, help="Show entries after this sequence number.")] = 0,
    limit: Annotated[int, typer.Option(min=1, help="How many entries to show.")] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Show audit entries in order: who did what, to what, when (or what is damaged)."""
    import asyncio

    from rich.table import Table

    from signoff.store import open_store

    async def read() -> list[AuditEntry]:
        async with open_store(database, migrate=False) as store:
            return await store.audit_log(after=after, limit=limit)

    entries = asyncio.run(read())
    if as_json:
        for entry in entries:
            typer.echo(
                json.dumps(
                    {
                        "seq": entry.seq,
                        "at": None if entry.at is None else entry.at.isoformat(),
                        "actor": entry.actor,
                        "action": entry.action,
                        "subject": entry.subject,
                        "data": entry.data,
                        "hash": entry.hash,
                        "problem": entry.problem,
                    },
                    ensure_ascii=False,
                )
            )
        return
    table = Table(header_style="bold")
    for column in ("seq", "at", "actor", "action", "subject", "data"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        table.add_row(
            str(entry.seq),
            "?" if entry.at is None else entry.at.strftime("%Y-%m-%d %H:%M:%S"),
            escape(entry.actor),
            escape(entry.action),
            escape(entry.subject),
            f"[red]damaged: {escape(entry.problem)}[/]"
            if entry.problem
            else escape(json.dumps(entry.data, ensure_ascii=False)),
        )
    Console(highlight=False).print(table)


def _check(database: str | None, since: Checkpoint | None) -> AuditReport:
    """The report; a database that cannot be opened is exit 2, so that 1 means a fault."""
    import asyncio

    from signoff.store import open_store

    async def check() -> AuditReport:
        async with open_store(database, migrate=False) as store:
            return await store.verify_audit(since=since)

    try:
        return asyncio.run(check())
    except StoreError as exc:
        _usage(exc)


def _checkpoint(text: str | None) -> Checkpoint | None:
    """The checkpoint given, checked against the key; a usage error (exit 2) if it is not
    one, or cannot be trusted."""
    if text is None:
        return None
    from signoff.store import Checkpoint
    from signoff.store.checkpoint import audit_key

    try:
        checkpoint = Checkpoint.parse(text)
        checkpoint.check(audit_key())
    except CheckpointError as exc:
        _usage(exc)
    return checkpoint


def _key() -> bytes | None:
    from signoff.store.checkpoint import audit_key

    try:
        return audit_key()
    except CheckpointError as exc:
        _usage(exc)


def _usage(exc: SignoffError) -> NoReturn:
    err.print(f"[bold red]error:[/] {escape(str(exc))}")
    raise typer.Exit(2)
