"""``signoff prune --config FILE``: remove now what the config's ``retention:`` no longer keeps.

The audit log goes first, behind a checkpoint signed with ``SIGNOFF_AUDIT_KEY`` (``--checkpoint``,
or the one it was last pruned behind); when it cannot be pruned nothing is (exit 2). Then
delivered notifications and finished runs' large payloads. Each kind is removed in transactions
that leave the store consistent wherever they stop; ``--dry-run`` counts and rolls back.

The server does not prune by itself: run this from cron (or a Kubernetes CronJob) with the key
in its environment, which the server then never needs.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from signoff.errors import CheckpointError, MissingExtraError, StoreError

if TYPE_CHECKING:
    from signoff.server.retention import RetentionSettings
    from signoff.store import Checkpoint, SQLStore

__all__ = ["prune"]

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def prune(
    config: Annotated[
        Path, typer.Option(help="The config file: its database and retention: section.")
    ],
    checkpoint: Annotated[
        str | None,
        typer.Option(
            "--checkpoint",
            metavar="CHECKPOINT",
            help="A checkpoint signed with SIGNOFF_AUDIT_KEY (`signoff audit checkpoint`): "
            "audit entries up to it may go. Default: the one the log was last pruned behind.",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would go; remove nothing.")
    ] = False,
) -> None:
    """Remove what retention: no longer keeps: old audit entries (behind a signed
    checkpoint), delivered notifications, finished runs' large payloads. Prints the counts."""
    try:
        from signoff.server.config import load_config
    except ImportError:
        raise MissingExtraError("signoff prune", "server") from None
    from signoff.store import store_url

    settings = load_config(config, secrets=False)  # it serves nothing: only its own key
    import asyncio

    if not settings.retention.configured:
        _fail(f"{config} has no retention: section, so nothing is to be pruned")
    lines = asyncio.run(
        _prune(store_url(settings.database), settings.retention, checkpoint, dry_run=dry_run)
    )
    for line in lines:
        out.print(line)


async def _prune(
    database: str, retention: RetentionSettings, given: str | None, *, dry_run: bool
) -> list[str]:
    from signoff.store import open_store

    try:
        async with open_store(database, migrate=False) as store:
            now = await store.clock()
            lines = await _audit(store, retention.audit, given, now=now, dry_run=dry_run)
            lines += await _others(store, retention, now=now, dry_run=dry_run)
    except (CheckpointError, StoreError) as exc:
        _fail(str(exc))
    if dry_run:
        lines.append("dry run: nothing was removed")
    return lines


async def _audit(
    store: SQLStore, bound: timedelta | None, given: str | None, *, now: datetime, dry_run: bool
) -> list[str]:
    from signoff.store.checkpoint import audit_key
    from signoff.store.retention import prune_audit

    if bound is None:
        if given is not None:
            raise CheckpointError("--checkpoint is for the audit log, which retention: keeps")
        return ["audit:    kept (retention: names no bound for audit)"]
    pruned = await prune_audit(
        store,
        before=now - bound,
        key=audit_key(),
        checkpoint=_parsed(given),
        now=now,
        dry_run=dry_run,
    )
    verb = "would remove" if dry_run else "removed"
    if pruned.entries == 0:
        done = f"up to entry {pruned.through}" if pruned.through else "none yet"
        return [f"audit:    nothing to remove (pruned {done}; the rest is newer or not yet sent)"]
    first = pruned.through - pruned.entries + 1
    return [
        f"audit:    {verb} {pruned.entries} entries ({first} to {pruned.through}) "
        f"behind the checkpoint of entry {pruned.checkpoint.seq if pruned.checkpoint else '?'}"
    ]


async def _others(
    store: SQLStore, retention: RetentionSettings, *, now: datetime, dry_run: bool
) -> list[str]:
    from signoff.store.retention import prune_outbox, prune_payloads

    verb = "would remove" if dry_run else "removed"
    lines = []
    if retention.outbox is None:
        lines.append("outbox:   kept (retention: names no bound for outbox)")
    else:
        sent = await prune_outbox(store, before=now - retention.outbox, dry_run=dry_run)
        lines.append(f"outbox:   {verb} {sent} delivered notifications")
    if retention.payloads is None:
        lines.append("payloads: kept (retention: names no bound for payloads)")
    else:
        runs, blobs = await prune_payloads(store, before=now - retention.payloads, dry_run=dry_run)
        lines.append(f"payloads: {verb} the large payloads of {runs} finished runs ({blobs} blobs)")
    return lines


def _parsed(text: str | None) -> Checkpoint | None:
    from signoff.store import Checkpoint

    return None if text is None else Checkpoint.parse(text)


def _fail(message: str) -> NoReturn:
    err.print(f"[bold red]error:[/] {escape(message)}")
    raise typer.Exit(2)
