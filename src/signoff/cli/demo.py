"""``signoff demo``: the server with the demo's two agents, on SQLite in a data folder; or, with
``--explain``, the demo's policy explained over sample calls of its agents' tools."""

from __future__ import annotations

import contextlib
import importlib.util
from importlib.resources import as_file, files
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from signoff.cli.calls import load_calls
from signoff.cli.listen import check_port, check_port_free, run_server
from signoff.cli.program import program
from signoff.cli.serve import LogFormatOption
from signoff.cli.tables import explain_table, table_console
from signoff.errors import MissingExtraError

__all__ = ["demo", "explain_demo"]


def demo(
    host: Annotated[str, typer.Option(help="Address to listen on (loopback only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on; 0 picks a free one.")] = 8000,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            help="Folder of the demo's database and sandbox (default: signoff/demo in the user "
            "data folder, $XDG_DATA_HOME or ~/.local/share).",
            show_default=False,
        ),
    ] = None,
    reset: Annotated[
        bool,
        typer.Option("--reset", help="Remove the demo's database and sandbox first: start afresh."),
    ] = False,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="Only print the verdicts of the demo's policy on sample calls of its tools.",
        ),
    ] = False,
    allowed_hosts: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="A Host name served besides localhost's (a tunnel's; repeat for more).",
        ),
    ] = None,
    log_format: LogFormatOption = "text",
) -> None:
    """Run the server with two demo agents (files, ops) on SQLite; no config needed."""
    if explain:
        explain_demo()
        return
    check_port("demo", port)
    try:
        from signoff.demo import default_data_dir, serve_demo
        from signoff.demo.folder import reset as reset_folder
        from signoff.server.hosts import allowed_host, is_loopback
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
    check_port_free("demo", host, port)

    folder = data_dir or default_data_dir()
    console = table_console()
    if reset:
        removed = reset_folder(folder)
        said = f"removed {', '.join(removed)} from" if removed else "nothing to remove in"
        console.print(
            f"[bold]signoff demo --reset[/]: {said} {escape(str(folder))}", soft_wrap=True
        )
    inbox = f"{program()} inbox" + ("" if data_dir is None else " --server URL")

    with contextlib.suppress(KeyboardInterrupt):
        run_server(
            serve_demo(
                host=host,
                port=port,
                data_dir=folder,
                ready=lambda url: _say_ready(console, url, folder=folder, inbox=inbox),
                hosts=hosts,
                log_format=log_format,
            )
        )


def _say_ready(console: Console, url: str, *, folder: Path, inbox: str) -> None:
    """Where the demo listens, and how to start a run, see what waits and decide it."""
    console.print(f"[bold]signoff demo[/] on {url}  (data in {escape(str(folder))})")
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
    console.print(f"  or decide in a terminal: {inbox.replace('URL', url)}")
    if importlib.util.find_spec("a2a") is not None:  # the a2a extra is installed
        console.print(f"  A2A agents:   {url}/a2a/ops/.well-known/agent-card.json (and files)")
    if importlib.util.find_spec("ag_ui") is not None:  # the ag-ui extra is installed
        console.print(f"  AG-UI:        POST {url}/agui/ops (and files)")
    console.print(f"  OpenAPI:      {url}/openapi.json   (Ctrl+C stops)")


def explain_demo() -> None:
    """Explain the demo's own policy over sample calls of its agents' tools, as a table."""
    from signoff.policy import Policy, PolicyEngine

    examples = files("signoff") / "examples"
    with (
        as_file(examples / "demo-policy.yaml") as policy_file,
        as_file(examples / "demo-calls.yaml") as calls,
    ):
        policy = Policy.from_file(policy_file)
        batch = load_calls(calls)
    engine = PolicyEngine(policy)
    console = table_console()
    console.print(
        f"[bold]signoff demo[/]: {len(batch)} sample calls of the demo agents' tools against "
        f"the demo's policy ({len(policy.rules)} rules, default {policy.default}, "
        f"version {policy.version})"
    )
    console.print(explain_table(batch, [engine.explain(call).verdict for call in batch]))
    console.print(
        "allow runs the call, ask holds it for a person, deny blocks it. The running demo "
        "explains any call too: POST /v1/policy/explain, or the policy page of the web inbox."
    )
