"""``signoff inbox``: the pending approvals in a terminal, decided one command at a time,
through a server (``--server URL --token T``) or straight on a database (``--database URL``).

Commands: ``list``; ``show N``; ``approve N [always run|thread|agent|global]``; ``reject N
REASON``; ``edit N [JSON]`` (without JSON, ``$EDITOR`` opens the arguments); ``respond N TEXT``;
``quit``. ``N`` is the number in the list, or the start of an approval's id.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from typing import Any, Protocol

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from signoff.cli.decide import Actor, Database, Roles, Server, Token, through_server
from signoff.errors import SignoffError
from signoff.types import Approve, Decision, Edit, Reject, Respond, Scope, approval_to_dict

__all__ = ["inbox"]

HELP = (
    "list | show N | approve N [always run|thread|agent|global] | reject N REASON | "
    "edit N [JSON] | respond N TEXT | quit"
)


class Backend(Protocol):
    def pending(self) -> list[dict[str, Any]]: ...

    def decide(self, approval_id: str, decision: Decision) -> dict[str, Any]: ...


def inbox(
    server: Server = None,
    token: Token = None,
    database: Database = None,
    actor: Actor = None,
    role: Roles = None,
) -> None:
    """Decide pending approvals in the terminal, one command at a time."""
    server = server or os.environ.get("SIGNOFF_SERVER")
    database = database or os.environ.get("SIGNOFF_DATABASE_URL")
    backend: Backend
    if server:
        backend = _ServerBackend(server, token or os.environ.get("SIGNOFF_TOKEN"))
    elif database:
        backend = _DatabaseBackend(database, actor or getpass.getuser(), role or [])
    else:
        raise typer.BadParameter(
            "give --server URL (with --token) or --database URL", param_hint="--server"
        )
    Inbox(backend, Console(highlight=False), input).loop()


class Inbox:
    def __init__(self, backend: Backend, console: Console, read: Callable[[str], str]) -> None:
        self.backend, self.console, self.read = backend, console, read
        self.items: list[dict[str, Any]] = []

    def loop(self) -> None:
        self.list()
        self.console.print(f"[dim]{escape(HELP)}[/]")
        while True:
            try:
                line = self.read("inbox> ").strip()
            except (EOFError, KeyboardInterrupt):
                return
            if not line:
                continue
            command, _, rest = line.partition(" ")
            try:
                if command in ("q", "quit", "exit"):
                    return
                self.run(command, rest.strip())
            except SignoffError as exc:
                self.console.print(f"[bold red]error:[/] {escape(str(exc))}")

    def run(self, command: str, rest: str) -> None:
        match command:
            case "l" | "list":
                self.list()
            case "s" | "show":
                item = self.pick(rest)
                self.console.print_json(json.dumps(item))
            case "a" | "approve":
                words = rest.split()
                scope = None
                if len(words) == 3 and words[1] == "always":
                    if words[2] not in ("run", "thread", "agent", "global"):
                        raise SignoffError("always run, thread, agent or global")
                    scope = Scope(kind=words[2])  # type: ignore[arg-type]
                elif len(words) != 1:
                    raise SignoffError("approve N [always run|thread|agent|global]")
                self.decide(self.pick(words[0]), Approve(always=scope))
            case "r" | "reject":
                which, _, reason = rest.partition(" ")
                if not reason.strip():
                    raise SignoffError("reject N REASON: the model reads the reason")
                self.decide(self.pick(which), Reject(reason=reason.strip()))
            case "e" | "edit":
                which, _, text = rest.partition(" ")
                item = self.pick(which)
                args = _arguments(text.strip() or _edited(item["args"]))
                self.decide(item, Edit(args=args))
            case "p" | "respond":
                which, _, text = rest.partition(" ")
                if not text.strip():
                    raise SignoffError("respond N TEXT: the text the agent gets instead")
                self.decide(self.pick(which), Respond(content=text.strip()))
            case _:
                raise SignoffError(f"unknown command {command!r}: {HELP}")

    def list(self) -> None:
        self.items = self.backend.pending()
        if not self.items:
            self.console.print("nothing waits for a decision")
            return
        table = Table(title=f"{len(self.items)} waiting", title_justify="left")
        for header in ("#", "id", "tool", "arguments", "agent", "rule", "expires"):
            table.add_column(header)
        for number, item in enumerate(self.items, start=1):
            arguments = json.dumps(item["args"], ensure_ascii=False)
            table.add_row(
                str(number),
                item["id"][-8:],
                escape(item["tool"]),
                escape(arguments if len(arguments) <= 60 else arguments[:57] + "..."),
                escape(_who(item)),
                escape(item.get("rule") or "default"),
                item.get("expires_at") or "",
            )
        self.console.print(table)

    def pick(self, which: str) -> dict[str, Any]:
        """By its number in the list as last shown, or by the start or end of its id."""
        if which.isdigit() and len(which) <= 4:
            if 1 <= int(which) <= len(self.items):
                return self.items[int(which) - 1]
            raise SignoffError(f"no #{which} in the list; see `list`")
        found = [
            i
            for i in self.items
            if which and (i["id"].startswith(which) or i["id"].endswith(which))
        ]
        if len(found) != 1:
            raise SignoffError(f"no single waiting approval is {which!r}; see `list`")
        return found[0]

    def decide(self, item: dict[str, Any], decision: Decision) -> None:
        decided = self.backend.decide(item["id"], decision)
        self.console.print(
            f"{decided['id'][-8:]} {escape(item['tool'])}: [bold]{decided['status']}[/] "
            f"by {escape(str(decided['decided_by']))}"
        )
        self.list()  # numbers change as items go: show the ones that now hold


def _arguments(text: str) -> dict[str, Any]:
    try:
        args = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SignoffError(f"the arguments are not JSON: {exc}") from None
    if not isinstance(args, dict):
        raise SignoffError("the arguments must be a JSON object")
    return args


def _edited(args: dict[str, Any]) -> str:
    """The arguments after the user's $EDITOR had them."""
    editor = shlex.split(os.environ.get("EDITOR") or os.environ.get("VISUAL") or "vi")
    with tempfile.NamedTemporaryFile("w+", suffix=".json", delete=False) as draft:
        json.dump(args, draft, indent=2, ensure_ascii=False)
    try:
        subprocess.run([*editor, draft.name], check=True)
        with open(draft.name, encoding="utf-8") as edited:
            return edited.read()
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SignoffError(f"the editor failed: {exc}") from None
    finally:
        os.unlink(draft.name)


class _ServerBackend:
    def __init__(self, server: str, token: str | None) -> None:
        self.server, self.token = server.rstrip("/"), token

    def pending(self) -> list[dict[str, Any]]:
        import httpx

        headers = {} if self.token is None else {"Authorization": f"Bearer {self.token}"}
        try:
            response = httpx.get(
                f"{self.server}/v1/approvals", params={"status": "pending", "limit": 500},
                headers=headers, timeout=30,
            )  # fmt: skip
        except httpx.HTTPError as exc:
            raise SignoffError(f"cannot reach {self.server}: {exc}") from None
        if response.status_code != 200:
            raise SignoffError(f"{self.server} said {response.status_code}: {response.text}")
        items: list[dict[str, Any]] = response.json()["items"]
        return items

    def decide(self, approval_id: str, decision: Decision) -> dict[str, Any]:
        return through_server(self.server, self.token, approval_id, decision)


class _DatabaseBackend:
    def __init__(self, url: str, actor: str, roles: list[str]) -> None:
        self.url, self.actor, self.roles = url, actor, roles

    def pending(self) -> list[dict[str, Any]]:
        from signoff.store import open_store

        async def read() -> list[dict[str, Any]]:
            async with open_store(self.url, migrate=False) as store:
                return [approval_to_dict(a) for a in await store.list_approvals(status="pending")]

        return asyncio.run(read())

    def decide(self, approval_id: str, decision: Decision) -> dict[str, Any]:
        from signoff.cli.decide import on_database

        return asyncio.run(on_database(self.url, approval_id, decision, self.actor, self.roles))


def _who(item: dict[str, Any]) -> str:
    """The agent that asked; for a call held by the MCP gateway, who made it."""
    if item.get("agent"):
        return str(item["agent"])
    if item.get("origin") == "mcp-gateway":
        return f"{item.get('requested_by') or '?'} (MCP)"
    return ""
