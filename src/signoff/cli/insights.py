"""``signoff insights`` and ``signoff policy suggest``: what the decisions of a window teach, read
through a server (``GET /v1/insights``) or straight from a database, by the server or database
given, else the demo running here."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from signoff.cli.client import on_server
from signoff.cli.tables import table_console
from signoff.cli.target import Database, Server, Token, where
from signoff.errors import SignoffError
from signoff.insights.report import DEFAULT_DAYS, MAX_DAYS

__all__ = ["Days", "insights", "report", "show_suggestions"]

Days = Annotated[
    int,
    typer.Option(min=1, max=MAX_DAYS, help="The window: calls asked in this many days up to now."),
]
_STATUSES = ("approved", "edited", "responded", "answered", "rejected", "expired")


def insights(
    days: Days = DEFAULT_DAYS,
    server: Server = None,
    token: Token = None,
    database: Database = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON, as the API answers.")
    ] = False,
) -> None:
    """Per rule, tool and agent: how many calls asked and how each ended, the median and 90th
    percentile time to a decision, who decides, and how often grants let calls through."""
    found = report("insights", days=days, server=server, token=token, database=database)
    if as_json:
        import json

        typer.echo(json.dumps(found, ensure_ascii=False))
        return
    console = table_console()
    console.print(_table(found))
    count = len(found["suggestions"])
    if count:
        console.print(
            f"{count} suggestion(s); see them with `signoff policy suggest --days {days}`"
        )
    elif nearest := found.get("nearest"):
        console.print(
            f"no suggestions; the nearest: {escape(nearest[0]['text'])} (see the others with "
            f"`signoff policy suggest --days {days}`)",
            soft_wrap=True,
        )


def report(
    command: str,
    *,
    days: int,
    server: str | None,
    token: str | None,
    database: str | None,
    config: Path | None = None,
    flag: str = "--server",
) -> dict[str, Any]:
    """The insights and suggestions as ``GET /v1/insights`` answers them: from the server, or
    computed from the database (suggested for the policy of `config`, else the one its servers
    put in force last). `flag` is the command's option for a server's URL."""
    if config is not None and (server or not database):
        raise typer.BadParameter(
            "a server suggests for its own policy: give --config FILE with --database URL, "
            "where the decisions are read",
            param_hint="--config",
        )
    server, database = where(command, server, database, flag=flag)
    if server:
        return on_server(server, token, "GET", "/v1/insights", params={"days": days})
    assert database is not None  # where() gave one or the other
    import asyncio

    return asyncio.run(_computed(database, days, config))


async def _computed(url: str, days: int, config: Path | None) -> dict[str, Any]:
    from signoff.insights import gather, weigh
    from signoff.policy import Policy, PolicyEngine
    from signoff.policy.source import parse_text
    from signoff.store import open_store

    now = datetime.now(UTC)
    async with open_store(url, migrate=False) as store:
        found = await gather(store, days=days, now=now)
        document: Any = None
        if config is not None:
            document = parse_text(config.read_text(encoding="utf-8"), source=str(config))
            policy = Policy.from_file(config)
        elif (latest := await store.latest_policy()) is not None:
            version, document = latest
            policy = Policy.from_dict(document, source=f"policy version {version}")
        suggestions: list[dict[str, Any]] = []
        nearest: list[dict[str, Any]] = []
        if isinstance(document, dict):
            engine = PolicyEngine(policy)
            weighed = await weigh(store, engine, document, days=days, now=now, groups=found.groups)
            suggestions = [s.to_json() for s in weighed.suggestions]
            nearest = [c.to_json() for c in weighed.nearest]
        return {
            **found.to_json(),
            "policy_version": None if document is None else policy.version,
            "suggestions": suggestions,
            "nearest": nearest,
            "can_apply": False,
        }


def show_suggestions(found: dict[str, Any], console: Console) -> None:
    """Each suggestion: its sentence (with its evidence: how many calls, decided by how many
    people, requested by how many principals), what was checked — that the policy with it
    judges its calls as it says, and lets through none of the calls people refused like them —
    and its diff; then the candidates not offered that came nearest, each bar with how far its
    calls got, or why it was dropped."""
    if found["policy_version"] is None:
        raise SignoffError("no policy to suggest changes to: give --config FILE")
    if not found["suggestions"]:
        console.print(f"no suggestions from the decisions of the last {found['days']} days")
    for item in found["suggestions"]:
        console.print(f"[bold]{escape(item['text'])}[/]")
        console.print(
            f"checked: the policy with this rule judges the {_calls(item['checked'])} behind "
            f"it as said{_refusals(item)}"
        )
        for line in item["diff"].splitlines():
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
            console.print(f"[{style}]{escape(line)}[/]" if style else escape(line))
        console.print()
    if nearest := found.get("nearest"):
        console.print("nearest to a suggestion:")
        for item in nearest:
            console.print(f"  {escape(item['text'])}")


def _table(found: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table(
        title=f"Decisions of the last {found['days']} days",
        caption="appr: approved unchanged · edit: edited · resp: responded to · ans: a question "
        "answered · rej: rejected · exp: expired · time: to a decision, median / p90",
        header_style="bold",
    )
    for column in ("rule", "tool", "agent", "asked", "appr", "edit", "resp", "ans", "rej",
                   "exp", "time"):  # fmt: skip
        table.add_column(column, no_wrap=True)
    table.add_column("top deciders", overflow="fold")
    table.add_column("grant uses", no_wrap=True)
    for group in found["groups"]:
        times = (group["median_seconds"], group["p90_seconds"])
        table.add_row(
            escape(group["rule"] or "(default)"),
            escape(group["tool"]),
            escape(group["agent"] or ""),
            str(group["asked"]),
            *(str(group[status]) for status in _STATUSES),
            "" if None in times else " / ".join(_duration(t) for t in times),
            escape(", ".join(f"{d['name']} {d['count']}" for d in group["deciders"])),
            str(group["grant_uses"]),
        )
    return table


def _refusals(item: dict[str, Any]) -> str:
    if item["kind"] == "deny":  # lets nothing through
        return ""
    if not item["refused"]:
        return "; people refused no call like them"
    return (
        f"; it lets through {item['let_through']} of the {_calls(item['refused'])} like them "
        "that people refused"
    )


def _calls(count: int) -> str:
    return "1 call" if count == 1 else f"{count:,} calls"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
