"""The ``signoff`` command: thin typer commands over the library."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup, TyperOption

import signoff
from signoff.cli import (
    answer,
    audit,
    backup,
    decide,
    demo,
    gateway,
    grants,
    hook,
    inbox,
    insights,
    policy,
    prune,
    serve,
)
from signoff.errors import SignoffError

if TYPE_CHECKING:
    from typer._click import Command, Context, Parameter

__all__ = ["app", "main"]


class _Group(TyperGroup):
    """The ``signoff`` group, which also tidies what typer (0.29) shows in its own help and in
    every command's under it, each resolved through it before its options are parsed or shown:
    a flag is not shown as taking a value (``--json <bool>``), and a docstring's paragraphs are
    each one line, for rich to wrap at the terminal's width (it keeps the docstring's line
    breaks past the first paragraph: ragged lines)."""

    def get_params(self, ctx: Context) -> list[Parameter]:
        params = super().get_params(ctx)
        _show_no_value(params)
        return params

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _show_no_value_under(command, ctx)
        return command


def _show_no_value_under(command: Command, ctx: Context) -> None:
    # The help option is made on first use and kept: made here, it is the one shown later.
    _show_no_value([*command.params, command.get_help_option(ctx)])
    if command.help:
        command.help = unwrapped(command.help)
    for sub in getattr(command, "commands", {}).values():
        _show_no_value_under(sub, ctx)


def unwrapped(text: str) -> str:
    """`text` with each paragraph (they are apart by a blank line) on one line."""
    paragraphs = (" ".join(paragraph.split()) for paragraph in text.split("\n\n"))
    return "\n\n".join(p for p in paragraphs if p)


def _show_no_value(params: Iterable[Parameter | None]) -> None:
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""


app = typer.Typer(
    cls=_Group,
    name="signoff",
    help="Put a human between AI agents and their risky tool calls.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(policy.app, name="policy")
app.add_typer(audit.app, name="audit")
app.add_typer(grants.app, name="grants")
app.add_typer(hook.app, name="hook")
app.command("demo")(demo.demo)
app.command("serve")(serve.serve)
app.command("approve")(decide.approve)
app.command("reject")(decide.reject)
app.command("answer")(answer.answer)
app.command("assign")(decide.assign)
app.command("inbox")(inbox.inbox)
app.command("insights")(insights.insights)
app.command("mcp-gateway")(gateway.mcp_gateway)
app.command("prune")(prune.prune)
app.command("backup")(backup.backup)


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
