"""``signoff audit verify`` and ``signoff audit list``."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from signoff.store import open_store
from signoff.types import AuditEntry

__all__ = ["app"]

app = typer.Typer(help="Read and verify the hash-chained audit log.", no_args_is_help=True)

DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--database",
        "-d",
        help="The store's URL (default: SIGNOFF_DATABASE_URL, or signoff.db here).",
        envvar="SIGNOFF_DATABASE_URL",
    ),
]


@app.command()
def verify(database: DatabaseOption = None) -> None:
    """Check every entry's hash: exit 0, or 1 naming the first entry edited or deleted."""

    async def check() -> tuple[int | None, int]:
        async with open_store(database, migrate=False) as store:
            return await store.verify_audit(), await store.audit_length()

    broken, count = asyncio.run(check())
    console = Console(highlight=False, soft_wrap=True)
    if broken is not None:
        Console(stderr=True, highlight=False, soft_wrap=True).print(
            f"[bold red]broken[/] at entry {broken}: it or an entry before it was edited, "
            "deleted or reordered"
        )
        raise typer.Exit(1)
    console.print(f"[green]ok[/] {count} audit entries, chain intact")


@app.command("list")
def list_entries(
    database: DatabaseOption = None,
    after: Annotated[int, typer.Option(min=0, help="Show entries after this sequence number.")] = 0,
    limit: Annotated[int, typer.Option(min=1, help="How many entries to show.")] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Show audit entries in order: who did what, to what, when."""

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
                        "at": entry.at.isoformat(),
                        "actor": entry.actor,
                        "action": entry.action,
                        "subject": entry.subject,
                        "data": entry.data,
                        "hash": entry.hash,
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
            entry.at.strftime("%Y-%m-%d %H:%M:%S"),
            escape(entry.actor),
            entry.action,
            escape(entry.subject),
            escape(json.dumps(entry.data, ensure_ascii=False)),
        )
    Console(highlight=False).print(table)
