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

from signoff.cli.decide import Token, on_server, where
from signoff.cli.insights import Days
from signoff.errors import PolicyError, Problem, SignoffError
from signoff.insights.report import DEFAULT_DAYS
from signoff.types import Context, ToolCall, Verdict

if TYPE_CHECKING:
    from rich.table import Table

    from signoff.policy import Explanation, PolicyEngine
    from signoff.types import Grant


class CallKindOption(StrEnum):
    """What `signoff policy explain` explains: a tool call, a resource read, a prompt got."""

    tool = "tool"
    resource = "resource"
    prompt = "prompt"


__all__ = ["app", "explain_table", "load_calls", "table_console"]

app = typer.Typer(
    help="Validate a policy, explain its verdicts, and see what the decisions suggest.",
    no_args_is_help=True,
)

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
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="Ask the signoff server at this URL: its policy, its grants.",
            envvar="SIGNOFF_SERVER",
            show_default=False,
        ),
    ] = None,
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
            ToolCall(id="cli", name=tool, server=server, agent=agent, args=_parse_args(args),
                     kind=kind.value)
        ]  # fmt: skip
    context = Context(run_id=run, thread_id=thread, requested_by=requested_by)
    if config is None and not url and Path(_HERE).is_file():
        config = Path(_HERE)
    if config is not None:
        objects = _explained(batch, context, config, database)
    else:
        url, database = where("policy explain", url, database, flag="--url", more=", --config FILE")
        if url:
            objects = [_explained_by(url, token, call, context) for call in batch]
        else:
            assert database is not None  # where() gave one or the other
            objects = _explained(batch, context, config, database)
    if as_json:
        typer.echo(json.dumps(objects[0] if tool is not None else objects, ensure_ascii=False))
        return
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
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="Ask the signoff server at this URL: its decisions, its policy.",
            envvar="SIGNOFF_SERVER",
            show_default=False,
        ),
    ] = None,
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
