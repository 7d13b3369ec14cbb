"""``signoff policy check`` and ``signoff policy explain``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from signoff.errors import PolicyError, Problem
from signoff.types import Context, ToolCall

if TYPE_CHECKING:
    from rich.table import Table

    from signoff.policy import Explanation
    from signoff.types import Grant


class CallKindOption(StrEnum):
    """What `signoff policy explain` explains: a tool call, a resource read, a prompt got."""

    tool = "tool"
    resource = "resource"
    prompt = "prompt"


__all__ = ["app", "explain_table", "load_calls", "table_console"]

app = typer.Typer(help="Validate a policy and explain its verdicts.", no_args_is_help=True)

_STYLE = {"allow": "bold green", "ask": "bold yellow", "deny": "bold red"}


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
        Path,
        typer.Option("--config", "-c", help="The policy or config file.", envvar="SIGNOFF_CONFIG"),
    ] = Path("signoff.yaml"),
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
        typer.Option(help="Weigh the grants kept in this database (its URL) too."),
    ] = None,
    requested_by: Annotated[
        str | None, typer.Option(help="Who asks for the call (with --database).")
    ] = None,
    thread: Annotated[str | None, typer.Option(help="The call's thread (with --database).")] = None,
    run: Annotated[str | None, typer.Option(help="The call's run (with --database).")] = None,
) -> None:
    """Print the verdict for a call (or a file of calls) and the rule that made it; with
    --database, the grant that would let it through, or why each grant of its tool would not."""
    if (tool is None) == (calls is None):
        raise typer.BadParameter("give either --tool or --calls")
    from signoff.limits import ArgumentLimits
    from signoff.policy import Policy, PolicyEngine

    engine = PolicyEngine(Policy.from_file(config))
    if calls is not None:
        batch = load_calls(calls)
    else:
        assert tool is not None  # one of --tool and --calls is given, checked above
        batch = [
            ToolCall(id="cli", name=tool, server=server, agent=agent, args=_parse_args(args),
                     kind=kind.value)
        ]  # fmt: skip
    grants: tuple[Grant, ...] = ()
    if database is not None:
        import asyncio

        grants = tuple(asyncio.run(_grants(database)))
    context = Context(run_id=run, thread_id=thread, requested_by=requested_by, grants=grants)
    limits = ArgumentLimits()  # as the gate judges: arguments past them are blocked
    explanations = [engine.explain(call, context, limits=limits) for call in batch]
    if as_json:
        objects = [_as_json(e) for e in explanations]
        typer.echo(json.dumps(objects[0] if tool is not None else objects, ensure_ascii=False))
        return
    console = table_console()
    console.print(explain_table(batch, explanations))
    for call, explanation in zip(batch, explanations, strict=True):
        for grant, why in explanation.passed_over:
            console.print(
                f"{escape(call.name)}: grant {escape(grant.id)} by {escape(grant.created_by)} "
                f"({grant.scope}) does not apply: {escape(why)}"
            )


def table_console() -> Console:
    """A console for tables: written to a pipe or a file, 140 columns rather than rich's 80."""
    console = Console(highlight=False)
    return console if console.is_terminal else Console(highlight=False, width=140)


def explain_table(calls: Sequence[ToolCall], explanations: Sequence[Explanation]) -> Table:
    """One row per call: the call, the verdict, the deciding rule and why."""
    from rich.table import Table

    table = Table(show_lines=False, header_style="bold")
    for column in ("tool", "server", "agent", "arguments", "verdict", "rule", "reason"):
        table.add_column(column, overflow="fold")
    for call, explanation in zip(calls, explanations, strict=True):
        verdict = explanation.verdict
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


def load_calls(path: Path) -> list[ToolCall]:
    """A list of ``{tool, server?, agent?, args?}`` mappings; problems carry line and column."""
    from signoff.policy.source import Locator, format_path, parse_text

    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(
            [Problem(message=f"cannot read the calls: {exc}", source=source)]
        ) from None
    data = parse_text(text, source=source, json_only=path.suffix == ".json")
    if not isinstance(data, list):
        raise PolicyError([Problem(message="expected a list of calls", source=source)])
    calls: list[ToolCall] = []
    problems: list[Problem] = []
    locate = Locator(text)
    for i, item in enumerate(data):
        message = _call_problem(item)
        if message is None:
            calls.append(
                ToolCall(
                    id=f"call-{i}",
                    name=item["tool"],
                    server=item.get("server"),
                    agent=item.get("agent"),
                    args=item.get("args", {}),
                )
            )
            continue
        line, column = locate((i,)) or (None, None)
        problems.append(
            Problem(
                message=message, path=format_path((i,)), source=source, line=line, column=column
            )
        )
    if problems:
        raise PolicyError(problems)
    return calls


def _call_problem(item: Any) -> str | None:
    if not isinstance(item, dict):
        return "a call must be a mapping like {tool: NAME, args: {...}}"
    unknown = set(item) - {"tool", "server", "agent", "args"}
    if unknown:
        return f"unknown keys {sorted(unknown)!r}; a call has tool, server, agent and args"
    if not isinstance(item.get("tool"), str) or not item["tool"]:
        return "a call needs 'tool', the tool's name"
    for key in ("server", "agent"):
        if key in item and not isinstance(item[key], str):
            return f"{key!r} must be a string"
    return None


def _parse_args(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(
            f"not valid JSON at column {exc.colno}: {exc.msg}", param_hint="'--args'"
        ) from None
    except RecursionError:
        raise typer.BadParameter("nested too deep to read", param_hint="'--args'") from None


async def _grants(url: str) -> list[Grant]:
    from signoff.store import open_store

    async with open_store(url, migrate=False) as store:
        return await store.list_grants()


def _as_json(explanation: Explanation) -> dict[str, Any]:
    verdict = explanation.verdict
    return {
        "verdict": verdict.kind,
        "rule": verdict.rule,
        "reason": verdict.reason,
        "shadowed": [rule.id for rule in explanation.shadowed],
    } | explanation.grants_json()
