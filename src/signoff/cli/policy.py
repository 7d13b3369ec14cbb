"""``signoff policy check``, ``signoff policy explain`` and ``signoff policy suggest``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from signoff.cli.calls import load_calls, parse_args
from signoff.cli.client import on_server
from signoff.cli.insights import Days
from signoff.cli.tables import explain_table, table_console
from signoff.cli.target import Token, where
from signoff.errors import PolicyError, SignoffError
from signoff.insights.report import DEFAULT_DAYS
from signoff.types import Context, ToolCall, Verdict

if TYPE_CHECKING:
    from signoff.policy import Explanation, PolicyEngine
    from signoff.types import Grant


class CallKindOption(StrEnum):
    """What `signoff policy explain` explains: a tool call, a resource read, a prompt got."""

    tool = "tool"
    resource = "resource"
    prompt = "prompt"


__all__ = ["app"]

app = typer.Typer(
    help="Validate a policy, explain its verdicts, and see what the decisions suggest.",
    no_args_is_help=True,
)


def _asking(what: str) -> Any:
    """The ``--url`` option of a command that can ask a server for `what` instead."""
    return typer.Option(
        "--url",
        help=f"Ask the signoff server at this URL: {what}.",
        envvar="SIGNOFF_SERVER",
        show_default=False,
    )


@app.command()
def check(
    file: Annotated[Path, typer.Argument(help="The policy or config file to validate.")],
) -> None:
    """Validate FILE: exit 0 with a summary, or 1 with every problem and where it is."""
    from signoff.policy import Policy

    console = Console(highlight=False, soft_wrap=True)
    try:
        policy = Policy.from_file(file)
    except PolicyError as exc:
        err = Console(stderr=True, highlight=False, soft_wrap=True)
        for problem in exc.problems:
            err.print(f"[red]{escape(str(problem))}[/]")
        err.print(f"[bold red]{len(exc.problems)} problem(s)[/] in {escape(str(file))}")
        raise typer.Exit(1) from None
    for warning in policy.warnings:
        console.print(f"[yellow]warning:[/] {escape(str(warning))}")
    counts = {
        kind: sum(r.effect == kind for r in policy.rules) for kind in ("allow", "ask", "deny")
    }
    console.print(
        f"[green]ok[/] {escape(str(file))}: {len(policy.rules)} rules "
        f"({counts['allow']} allow, {counts['ask']} ask, {counts['deny']} deny), "
        f"default {policy.default}, version {policy.version}"
    )


@app.command()
def explain(
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            help="The policy or config file. Default: signoff.yaml here if there is one, else "
            "the policy of the server or database given, or of the demo running here.",
            envvar="SIGNOFF_CONFIG",
            show_default=False,
        ),
    ] = None,
    tool: Annotated[str | None, typer.Option("--tool", "-t", help="The tool name.")] = None,
    kind: Annotated[
        CallKindOption,
        typer.Option(help="tool, or resource (--tool is its URI) or prompt (its name)."),
    ] = CallKindOption.tool,
    server: Annotated[str | None, typer.Option(help="The MCP server of the tool.")] = None,
    agent: Annotated[str | None, typer.Option(help="The agent path, like a/b.")] = None,
    args: Annotated[str, typer.Option(help="The arguments, as a JSON object.")] = "{}",
    calls: Annotated[
        Path | None, typer.Option(help="A YAML or JSON list of calls to explain as one table.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    database: Annotated[
        str | None,
        typer.Option(
            help="Weigh the grants kept in this database (its URL) too; without a config file, "
            "by the policy its servers put in force last."
        ),
    ] = None,
    url: Annotated[str | None, _asking("its policy, its grants")] = None,
    token: Token = None,
    requested_by: Annotated[
        str | None, typer.Option(help="Who asks for the call (with --database).")
    ] = None,
    thread: Annotated[str | None, typer.Option(help="The call's thread (with --database).")] = None,
    run: Annotated[str | None, typer.Option(help="The call's run (with --database).")] = None,
) -> None:
    """Print the verdict for a call (or a file of calls) and the rule that made it; with grants
    (a database's or a server's), the grant that would let it through, or why each grant of its
    tool would not.

    The policy is the config file's; without one, the server's (--url), the database's
    (--database) or the demo's running here."""
    if (tool is None) == (calls is None):
        raise typer.BadParameter("give either --tool or --calls")
    if config is not None and url:
        raise typer.BadParameter("a server explains by its own policy: give --config or --url")
    if calls is not None:
        batch = load_calls(calls)
    else:
        assert tool is not None  # one of --tool and --calls is given, checked above
        batch = [
            ToolCall(id="cli", name=tool, server=server, agent=agent, args=parse_args(args),
                     kind=kind.value)
        ]  # fmt: skip
    context = Context(run_id=run, thread_id=thread, requested_by=requested_by)
    objects = _explained_where(batch, context, config=config, url=url, token=token,
                               database=database)  # fmt: skip
    if as_json:
        typer.echo(json.dumps(objects[0] if tool is not None else objects, ensure_ascii=False))
        return
    _show_explained(batch, objects)


def _explained_where(
    batch: Sequence[ToolCall],
    context: Context,
    *,
    config: Path | None,
    url: str | None,
    token: str | None,
    database: str | None,
) -> list[dict[str, Any]]:
    """Each call explained by the policy `explain` was pointed at: the config file (given, or
    signoff.yaml here), else the server's or the database's, else the demo's running here."""
    if config is None and not url and Path(_HERE).is_file():
        config = Path(_HERE)
    if config is not None:
        return _explained(batch, context, config, database)
    url, database = where("policy explain", url, database, flag="--url", more=", --config FILE")
    if url:
        return [_explained_by(url, token, call, context) for call in batch]
    assert database is not None  # where() gave one or the other
    return _explained(batch, context, config, database)


def _show_explained(batch: Sequence[ToolCall], objects: list[dict[str, Any]]) -> None:
    """The table of verdicts, then each grant of a call's tool that does not apply, and why."""
    console = table_console()
    verdicts = [Verdict(kind=o["verdict"], rule=o["rule"], reason=o["reason"]) for o in objects]
    console.print(explain_table(batch, verdicts))
    for call, explained in zip(batch, objects, strict=True):
        for grant in explained["grants_passed_over"]:
            console.print(
                f"{escape(call.name)}: grant {escape(grant['id'])} by "
                f"{escape(grant['granted_by'])} ({grant['scope']}) does not apply: "
                f"{escape(grant['why'])}"
            )


_HERE = "signoff.yaml"
"""The config ``explain`` reads by default, in the folder it runs in."""


@app.command()
def suggest(
    days: Days = DEFAULT_DAYS,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            help="Suggest changes to this policy file (with --database). Default: the policy "
            "of the server or database given, or of the demo running here.",
            show_default=False,
        ),
    ] = None,
    database: Annotated[
        str | None,
        typer.Option(help="Read the decisions from this database (its URL).", show_default=False),
    ] = None,
    url: Annotated[str | None, _asking("its decisions, its policy")] = None,
    token: Token = None,
) -> None:
    """Print the policy changes the decisions of the window suggest, each with its evidence
    and as a diff of the policy. Nothing is applied: put a change in force in the web inbox's
    Insights page (the admin role) or by editing the file."""
    from signoff.cli.insights import report, show_suggestions

    found = report("policy suggest", days=days, server=url, token=token, database=database,
                   config=config, flag="--url")  # fmt: skip
    show_suggestions(found, Console(highlight=False, soft_wrap=True))


def _explained(
    batch: Sequence[ToolCall], context: Context, config: Path | None, database: str | None
) -> list[dict[str, Any]]:
    """Each call explained by the policy of `config`, else the one `database` keeps, weighing
    the grants kept in `database`, as JSON."""
    from signoff.limits import ArgumentLimits
    from signoff.policy import Policy, PolicyEngine

    engine = None if config is None else PolicyEngine(Policy.from_file(config))
    if database is not None:
        import asyncio

        kept, grants = asyncio.run(_kept(database))
        if engine is None and kept is None:
            raise SignoffError(
                f"{database} keeps no policy (no server has put one in force there): "
                "give --config FILE"
            )
        engine = engine or kept
        context = replace(context, grants=tuple(grants))
    assert engine is not None  # a config, or a database (where() gave one)
    limits = ArgumentLimits()  # as the gate judges: arguments past them are blocked
    return [_as_json(engine.explain(call, context, limits=limits)) for call in batch]


def _explained_by(url: str, token: str | None, call: ToolCall, context: Context) -> dict[str, Any]:
    """The call explained by the server at `url`, as `_explained` does."""
    where = {"run_id": context.run_id, "thread_id": context.thread_id,
             "requested_by": context.requested_by}  # fmt: skip
    body = {"tool": call.name, "kind": call.kind, "args": call.args, "server": call.server,
            "agent": call.agent, "context": where}  # fmt: skip
    answer = on_server(url, token, "POST", "/v1/policy/explain", json=body)
    return {"verdict": answer.pop("kind"), **answer}


async def _kept(url: str) -> tuple[PolicyEngine | None, list[Grant]]:
    """The policy the database's servers put in force last (if any), and its grants."""
    from signoff.cli.grants import policy_kept
    from signoff.store import open_store

    async with open_store(url, migrate=False) as store:
        return await policy_kept(store), await store.list_grants()


def _as_json(explanation: Explanation) -> dict[str, Any]:
    verdict = explanation.verdict
    return {
        "verdict": verdict.kind,
        "rule": verdict.rule,
        "reason": verdict.reason,
        "shadowed": [rule.id for rule in explanation.shadowed],
    } | explanation.grants_json()
