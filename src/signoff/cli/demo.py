"""``signoff demo``: the bundled example policy, explained over a set of sample calls."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
from importlib.resources import as_file, files
from pathlib import Path
from typing import Annotated

import typer

from signoff.cli.policy import explain_table, load_calls, table_console
from signoff.errors import MissingExtraError
from signoff.policy import Policy, PolicyEngine

__all__ = ["demo"]


def demo(
    host: Annotated[str, typer.Option(help="Address to listen on (loopback only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on; 0 picks a free one.")] = 8000,
    data_dir: Annotated[
        Path | None,
        typer.Option(help="Folder of the demo's database and sandbox [default: user data dir]."),
    ] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Only print the example policy's verdict table.")
    ] = False,
    allowed_hosts: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="A Host name served besides localhost's (a tunnel's; repeat for more).",
        ),
    ] = None,
) -> None:
    """Run the server with two demo agents (files, ops) on SQLite; no config needed."""
    if explain:
        explain_example()
        return
    try:
        from signoff.demo import default_data_dir, serve_demo
        from signoff.server.auth import allowed_host, is_loopback
    except ImportError:
        raise MissingExtraError("signoff demo", "server") from None

    if not is_loopback(host):
        raise typer.BadParameter(
            f"the demo has no authentication and serves loopback only, not {host!r}",
            param_hint="--host",
        )
    try:
        hosts = [allowed_host(name) for name in allowed_hosts or ()]
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--allowed-host") from None

    folder = data_dir or default_data_dir()
    console = table_console()

    def ready(url: str) -> None:
        console.print(f"[bold]signoff demo[/] on {url}  (data in {folder})")
        console.print(f"  web inbox:    {url}/   (open it in a browser)")
        console.print(
            f"  start a run:  curl -s -X POST {url}/v1/threads/t1/runs?wait=5 "
            """-H 'content-type: application/json' """
            """-d '{"agent": "ops", "input": "list pods then delete nginx-123"}'"""
        )
        console.print(f"  pending:      curl -s {url}/v1/approvals?status=pending")
        console.print(
            f"  approve:      curl -s -X POST {url}/v1/approvals/ID/decision "
            """-H 'content-type: application/json' -d '{"kind": "approve"}'"""
        )
        if importlib.util.find_spec("a2a") is not None:  # the a2a extra is installed
            console.print(f"  A2A agents:   {url}/a2a/ops/.well-known/agent-card.json (and files)")
        if importlib.util.find_spec("ag_ui") is not None:  # the ag-ui extra is installed
            console.print(f"  AG-UI:        POST {url}/agui/ops (and files)")
        console.print(f"  API docs:     {url}/docs   (Ctrl+C stops)")

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_demo(host=host, port=port, data_dir=folder, ready=ready, hosts=hosts))


def explain_example() -> None:
    """Explain the bundled example policy over sample tool calls, as a verdict table."""
    examples = files("signoff") / "examples"
    with (
        as_file(examples / "policy.yaml") as policy_file,
        as_file(examples / "calls.yaml") as calls,
    ):
        policy = Policy.from_file(policy_file)
        batch = load_calls(calls)
    engine = PolicyEngine(policy)
    console = table_console()
    console.print(
        f"[bold]signoff demo[/]: {len(batch)} sample tool calls against the example policy "
        f"({len(policy.rules)} rules, default {policy.default}, version {policy.version})"
    )
    console.print(explain_table(batch, [engine.explain(call) for call in batch]))
    console.print(
        "allow runs the call, ask holds it for a person, deny blocks it. "
        "Try your own: signoff policy explain --config FILE --tool NAME --args JSON"
    )
