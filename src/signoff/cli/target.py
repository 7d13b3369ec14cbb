"""Where a command works: the options every command that reads or decides shares (``--server``
with ``--token``, or ``--database``, and on a database ``--as`` and ``--role``), and the
server or database they name — else the demo running on this machine."""

from __future__ import annotations

from typing import Annotated

import typer

from signoff.cli.listen import stop
from signoff.cli.program import program

__all__ = ["Actor", "Database", "Roles", "Server", "StoreOption", "Token", "deciding", "where"]

Server = Annotated[
    str | None,
    typer.Option(
        "--server",
        "--url",
        help="The URL of the signoff server to work through (default: the demo running here).",
        envvar="SIGNOFF_SERVER",
        show_default=False,
    ),
]

Token = Annotated[
    str | None, typer.Option(help="Its bearer token.", envvar="SIGNOFF_TOKEN", show_default=False)
]

Database = Annotated[
    str | None,
    typer.Option(
        help="Work straight on this database instead (its URL).",
        envvar="SIGNOFF_DATABASE_URL",
        show_default=False,
    ),
]

Actor = Annotated[
    str | None,
    typer.Option("--as", help="Who decides, on a database (default: your user name)."),
]

Roles = Annotated[
    list[str] | None, typer.Option("--role", help="A role of the decider, on a database.")
]
StoreOption = Annotated[
    str | None,
    typer.Option(
        "--database",
        "-d",
        help="The store's URL (default: SIGNOFF_DATABASE_URL, or signoff.db here).",
        envvar="SIGNOFF_DATABASE_URL",
    ),
]
"""The database of a command that works on one only (``audit``, ``backup``)."""


def where(
    command: str,
    server: str | None,
    database: str | None,
    *,
    flag: str = "--server",
    more: str = "",
) -> tuple[str | None, str | None]:
    """The server or the database `command` works on: as given (an option, or its environment
    variable); with neither, the demo serving from its default data folder, said on stderr;
    with no demo serving either, one line on how to name one (status 2): `flag` (the
    command's option for a server's URL), `more` (its other ways, if any) or ``--database``."""
    if server or database:
        return server, database
    from signoff.demo.folder import ADDRESS, default_data_dir, serving

    folder = default_data_dir()
    url = serving(folder)
    if url is None:
        stop(
            command,
            f"no server given and no demo running here: pass {flag} URL (with --token){more} "
            f"or --database URL, or start one with `{program()} demo`",
            code=2,
        )
    typer.echo(
        f"signoff {command}: through the demo at {url} (from {folder / ADDRESS}; "
        f"{flag} URL names another)",
        err=True,
    )
    return url, None


def deciding(
    command: str,
    server: str | None,
    database: str | None,
    actor: str | None,
    roles: list[str] | None,
) -> tuple[str | None, str | None]:
    """The server or the database `command` decides on (`where`), refusing ``--as`` and
    ``--role`` through a server (`_as_yourself`)."""
    server, database = where(command, server, database)
    _as_yourself(command, server, database, actor, roles)
    return server, database


def _as_yourself(
    command: str,
    server: str | None,
    database: str | None,
    actor: str | None,
    roles: list[str] | None,
) -> None:
    """Stop (status 2) when `command` is given ``--as`` or ``--role`` for a server: a server
    decides who you are from your token, so they could not apply, and taken silently the
    decision would be someone else's than the one meant."""
    if not server or (actor is None and not roles):
        return
    if actor is not None:
        given, instead = f"--as {actor}", f"To act as {actor}, give {actor}'s token"
    else:
        assert roles  # one of the two is given, checked above
        given, instead = f"--role {roles[0]}", "To act with other roles, give a token that has them"
    place = "a database (--database URL)"
    if database:  # the environment's server, say, beside a database typed
        place += ", given no server: one is given too (--server or SIGNOFF_SERVER), and it wins"
    stop(
        command,
        f"{given} cannot apply through a server ({server}): it decides who you are from your "
        "token (one without authentication, as the demo, takes everyone for 'local'). "
        f"{instead} (--token T, or SIGNOFF_TOKEN); --as and --role are for working straight "
        f"on {place}",
        code=2,
    )
