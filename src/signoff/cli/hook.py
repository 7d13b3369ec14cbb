"""``signoff hook claude-code`` and ``signoff hook gemini-cli``: a coding agent's command hook.
It reads the hook's JSON on stdin and writes its answer's JSON on stdout, nothing else: through
a signoff server (``--server``, its token from ``SIGNOFF_TOKEN``), or straight on a database with
a policy file — the same answers as ``POST /v1/hooks/…`` (`signoff.protocols.hooks`).

Whatever goes wrong (a server that cannot be reached, a database that cannot be opened, input
that is not a hook's), the hook blocks the call: exit status 2, the reason on stderr — which
both agents read as "do not run it" — never a silent pass.
"""

from __future__ import annotations

import getpass
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from signoff.cli.hook_settings import install, uninstall
from signoff.cli.target import Database, Server, Token

__all__ = ["app"]

app = typer.Typer(
    help="Coding agents' hooks: Claude Code and Gemini CLI ask signoff before each tool call.",
    no_args_is_help=True,
)
app.command("install")(install)
app.command("uninstall")(uninstall)

MAX_INPUT = 1024 * 1024
"""The most a hook's input may be (bytes)."""

Config = Annotated[
    Path | None,
    typer.Option(
        help="The policy file to judge by, on a database (its `database:` names the store).",
        envvar="SIGNOFF_CONFIG",
        show_default=False,
    ),
]
Wait = Annotated[
    float | None,
    typer.Option(
        help="Seconds a held call waits for a decision: on a database (the config's "
        "hooks.wait, else 300); through a server, at most (its hooks.wait if less). Keep it "
        "below the hook's own timeout.",
        show_default=False,
    ),
]
Actor = Annotated[
    str | None,
    typer.Option("--as", help="Who runs the agent, on a database (default: your user name)."),
]


def _hook(agent: str, events: str) -> Callable[..., None]:
    """The command that answers `agent`'s hook."""

    def answer(
        server: Server = None,
        token: Token = None,
        database: Database = None,
        config: Config = None,
        wait: Wait = None,
        actor: Actor = None,
    ) -> None:
        _answer(agent, server, token, database, config, wait, actor)

    answer.__doc__ = f"Answer {events} hook (JSON on stdin and stdout)."
    return answer


app.command("claude-code")(_hook("claude-code", "Claude Code's PreToolUse or PostToolUse"))
gemini = _hook("gemini-cli", "Gemini CLI's BeforeTool or AfterTool")
app.command("gemini")(gemini)
app.command("gemini-cli", hidden=True)(gemini)  # the agent's name in the API's path


def _answer(
    agent: str,
    server: str | None,
    token: str | None,
    database: str | None,
    config: Path | None,
    wait: float | None,
    actor: str | None,
) -> None:
    """Answer the hook on stdin, or block the call (status 2, why on stderr)."""
    try:
        body = _seen_here(agent, _read_input())
        server = server or (None if database or config else _demo())
        if server:
            said = _through_server(agent, server, token, body, wait)
        elif database or config:
            import asyncio  # only here: `signoff --help` and the server's way load none of it

            said = asyncio.run(_on_database(agent, database, config, wait, actor, body))
        else:
            raise _Blocked(
                "no signoff to ask: pass --server URL (with SIGNOFF_TOKEN) or --config FILE "
                "(and --database URL), set SIGNOFF_SERVER, or start `signoff demo` here"
            )
    except _Blocked as exc:
        _block(str(exc))
    except Exception as exc:
        _block(f"{type(exc).__name__}: {exc}")
    sys.stdout.write(json.dumps(said) + "\n")


def _seen_here(agent: str, body: Any) -> Any:
    """The hook's input with what this process, the agent's user's, sees of it: the project
    the agent runs in (its ``*_PROJECT_DIR``: the repository a policy names, whatever folder a
    command ``cd``s to), a file tool's path with its links resolved, and the session's last
    turns for the people who decide a held call (`signoff.protocols.hooks.transcript`)."""
    import os

    from signoff.protocols.hooks.calls import PROJECT, RESOLVED
    from signoff.protocols.hooks.files import resolved
    from signoff.protocols.hooks.transcript import FIELD, conversation

    if not isinstance(body, dict):
        return body
    project = os.environ.get(
        "CLAUDE_PROJECT_DIR" if agent == "claude-code" else "GEMINI_PROJECT_DIR"
    )
    if project:
        body = {**body, PROJECT: project}
    tool, args, folder = body.get("tool_name"), body.get("tool_input"), body.get("cwd")
    if isinstance(tool, str) and isinstance(args, dict):
        here = folder if isinstance(folder, str) else None
        body = {**body, RESOLVED: resolved(tool, args, here, local=True)}
    if agent != "claude-code":
        return body
    path = body.get("transcript_path")
    if body.get("hook_event_name") != "PreToolUse" or not isinstance(path, str):
        return body
    return {**body, FIELD: conversation(path, folder=folder if isinstance(folder, str) else None)}


def _demo() -> str | None:
    """The demo serving here, if one is."""
    from signoff.demo.folder import default_data_dir, serving

    return serving(default_data_dir())


class _Blocked(Exception):
    """Why the hook blocks the call."""


def _block(reason: str) -> None:
    typer.echo(f"signoff blocked this call: {reason}", err=True)
    raise typer.Exit(2)


def _read_input() -> Any:
    raw = sys.stdin.buffer.read(MAX_INPUT + 1)
    if len(raw) > MAX_INPUT:
        raise _Blocked(f"the hook's input is bigger than {MAX_INPUT:,} bytes")
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise _Blocked(f"the hook's input is not JSON: {exc}") from None


def _through_server(
    agent: str, server: str, token: str | None, body: Any, wait: float | None
) -> Any:
    """The server's answer (`POST /v1/hooks/AGENT`), waiting as long as it holds the call — at
    most `wait` seconds, when given (and a little more for the answer to come)."""
    import httpx

    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    url = f"{server.rstrip('/')}/v1/hooks/{agent}"
    params = {} if wait is None else {"wait": f"{wait:g}"}
    # the server bounds the wait: its hooks.wait, or `wait`
    timeout = httpx.Timeout(10.0, read=None if wait is None else wait + 10.0)
    try:
        response = httpx.post(url, json=body, params=params, headers=headers, timeout=timeout)
    except httpx.ReadTimeout:  # only with `wait`: else no read is timed
        raise _Blocked(f"signoff at {server} did not answer within {wait} s") from None
    except httpx.HTTPError as exc:
        raise _Blocked(f"signoff at {server} cannot be reached: {exc}") from None
    if response.status_code != 200:
        detail = response.text[:500]
        raise _Blocked(f"signoff at {server} answered {response.status_code}: {detail}")
    return response.json()


async def _on_database(
    agent: str,
    database: str | None,
    config: Path | None,
    wait: float | None,
    actor: str | None,
    body: Any,
) -> Any:
    """The answer judged here, on the database, by the policy file `config`."""
    from signoff.gate import Gate
    from signoff.protocols.hooks import Hooks, output, read_call
    from signoff.server.config import load_config
    from signoff.store import open_store

    if config is None:
        raise _Blocked("name the policy to judge by: --config FILE (or SIGNOFF_CONFIG)")
    settings = load_config(config, secrets=False)
    call = read_call(agent, body, local=True)  # type: ignore[arg-type]  # one of AGENTS
    async with open_store(database or settings.database) as store:
        gate = Gate(settings.policy, store)
        hooks = Hooks(
            gate,
            wait=settings.hooks.wait if wait is None else wait,
            on_timeout=settings.hooks.on_timeout,
            from_disk=True,  # this process is the agent's user's: it may read their files
        )
        answer = await hooks.answer(call, requested_by=actor or getpass.getuser())
    return output(call.agent, answer)
