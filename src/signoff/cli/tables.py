"""How the commands print tables: on a console as wide as a table needs when written to a pipe
or a file, and the table of calls with their verdicts (``policy explain``, ``demo --explain``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from signoff.types import ToolCall, Verdict

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["explain_table", "table_console"]

_STYLE = {"allow": "bold green", "ask": "bold yellow", "deny": "bold red"}


def table_console() -> Console:
    """A console for tables: written to a pipe or a file, 140 columns rather than rich's 80."""
    console = Console(highlight=False)
    return console if console.is_terminal else Console(highlight=False, width=140)


def explain_table(calls: Sequence[ToolCall], verdicts: Sequence[Verdict]) -> Table:
    """One row per call: the call, the verdict, the deciding rule and why."""
    from rich.table import Table

    table = Table(show_lines=False, header_style="bold")
    for column in ("tool", "server", "agent", "arguments", "verdict", "rule", "reason"):
        table.add_column(column, overflow="fold")
    for call, verdict in zip(calls, verdicts, strict=True):
        arguments = json.dumps(call.args, ensure_ascii=False)
        table.add_row(
            escape(call.name),
            escape(call.server or ""),
            escape(call.agent or ""),
            escape(arguments if len(arguments) <= 60 else arguments[:57] + "..."),
            f"[{_STYLE[verdict.kind]}]{verdict.kind}[/]",
            escape(verdict.rule or "(default)"),
            escape(verdict.reason),
        )
    return table
