"""The ``signoff`` command: thin typer commands over the library."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

import signoff
from signoff.cli import audit, decide, demo, gateway, grants, inbox, policy, serve
from signoff.errors import SignoffError

__all__ = ["app", "main"]

app = typer.Typer(
    name="signoff",
    help="Put a human between AI agents and their risky tool calls.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(policy.app, name="policy")
app.add_typer(audit.app, name="audit")
app.add_typer(grants.app, name="grants")
app.command("demo")(demo.demo)
app.command("serve")(serve.serve)
app.command("approve")(decide.approve)
app.command("reject")(decide.reject)
app.command("inbox")(inbox.inbox)
app.command("mcp-gateway")(gateway.mcp_gateway)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"signoff {signoff.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Put a human between AI agents and their risky tool calls."""


def main() -> None:
    """Entry point: a user's mistake is a message and exit status 1, never a traceback."""
    try:
        app()
    except SignoffError as exc:
        Console(stderr=True, highlight=False, soft_wrap=True).print(
            f"[bold red]error:[/] {escape(str(exc))}"
        )
        sys.exit(1)
