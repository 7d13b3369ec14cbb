"""``signoff inbox``: the pending approvals in a terminal, decided one command at a time,
through a server (``--server URL --token T``) or straight on a database (``--database URL``);
with neither, through the demo running on this machine.

Commands: ``list``; ``more``; ``show N``;
``approve N [always run|thread|agent|global [any-args]]`` (always: calls with the same
arguments, unless ``any-args``);
``reject N REASON``; ``edit N [JSON]`` (without JSON, ``$EDITOR`` opens the arguments);
``respond N TEXT``; ``answer N TEXT`` or ``answer N --json JSON`` (a question an agent asked);
``quit``. ``N`` is a number from the list, or an approval's short id as shown.

The list comes a page at a time: ``list`` shows the newest `PAGE` calls waiting, ``more`` the
`PAGE` before those, and so on; after a decision the page on screen is shown again.

A number names one call for the whole session: a call keeps its number when others are decided
or arrive, a new one gets the next number, and a number whose call was decided (here or
elsewhere) is refused, never passed on. Numbers are given only to calls the list has shown.

A decision is made on the version of the call last shown here (in the list, by ``show``, or
after a refusal): when the call changed since — someone edited it, approved it, handed it on —
it is refused, what changed is said, and the call is shown again as it is now; the same command
typed again decides on that.
"""

from __future__ import annotations

import getpass
import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from typing import Any, Protocol

from rich.console import Console
from rich.markup import escape

from signoff.cli.client import from_server, through_server
from signoff.cli.decide import approval_on_database, grant_words
from signoff.cli.short_id import SHORTEST, resolve, shorten
from signoff.cli.target import Actor, Database, Roles, Server, Token, deciding
from signoff.errors import NotFoundError, SignoffError, StaleDecisionError
from signoff.gate.forms import form_fields
from signoff.types import (
    Answer,
    Approve,
    Decision,
    Edit,
    Reject,
    Respond,
    Scope,
    approval_to_dict,
)

__all__ = ["PAGE", "inbox"]

PAGE = 50
"""Calls waiting shown at a time: ``more`` shows the next page."""

HELP = (
    "list | more | show N | approve N [always run|thread|agent|global [any-args]] | "
    "reject N REASON | edit N [JSON] | respond N TEXT | answer N TEXT|--json JSON | quit"
)


class Backend(Protocol):
    def pending(self, before: str | None, limit: int) -> list[dict[str, Any]]:
        """At most `limit` pending approvals, newest first; with `before`, only those older
        than the approval of that id (which need not be pending any more)."""
        ...

    def get(self, approval_id: str) -> dict[str, Any]: ...

    def decide(
        self, approval_id: str, decision: Decision, version: int | None
    ) -> dict[str, Any]: ...


def inbox(
    server: Server = None,
    token: Token = None,
    database: Database = None,
    actor: Actor = None,
    role: Roles = None,
) -> None:
    """Decide pending approvals in the terminal, one command at a time.

    It lists the newest 50 calls waiting; `more` lists the 50 before them, `list` the newest
    again. Type `approve N`, `reject N REASON`, `edit N`, `respond N TEXT` or `show N` with a
    number (or short id) from the list, and `quit` to leave.
    """
    server, database = deciding("inbox", server, database, actor, role)
    backend: Backend
    if server:
        backend = _ServerBackend(server, token)
    else:
        assert database is not None  # where() gave one or the other
        backend = _DatabaseBackend(database, actor or getpass.getuser(), role or [])
    Inbox(backend, Console(highlight=False), input).loop()


class Inbox:
    def __init__(self, backend: Backend, console: Console, read: Callable[[str], str]) -> None:
        self.backend, self.console, self.read = backend, console, read
        self.numbers: dict[str, int] = {}
        """Each listed approval's number, for the whole session."""
        self.listed: dict[int, dict[str, Any]] = {}
        """Each number's approval, as last listed."""
        self.short: dict[str, str] = {}
        self.seen: dict[str, int] = {}
        """The version of each approval last shown: what a decision on it is made on."""
        self.pages: list[str | None] = [None]
        """The cursor of each page shown since the last `list`: the one on screen is last."""
        self.next: str | None = None
        """The cursor of the page after the one on screen; None when none waits past it."""

    def loop(self) -> None:
        self.list()
        self.console.print(f"[dim]{escape(HELP)}\nN: a number or a short id from the list[/]")
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
            case "m" | "more":
                self.more()
            case "s" | "show":
                number = self.pick(rest)
                shown = self.backend.get(self.listed[number]["id"])
                self.seen[shown["id"]] = shown["version"]
                self.console.print_json(json.dumps(shown))
                if shown.get("preview"):  # what the call would change, as text
                    from signoff.gate.preview import preview_text  # the gate loads on use

                    self.console.print("preview:", escape(preview_text(shown["preview"])))
            case "a" | "approve":
                words = rest.split()
                scope = None
                if len(words) in (3, 4) and words[1] == "always":
                    if words[2] not in ("run", "thread", "agent", "global"):
                        raise SignoffError("always run, thread, agent or global")
                    if words[3:] not in ([], ["any-args"]):
                        raise SignoffError(f"{words[3]!r}: only any-args may follow the scope")
                    # The same arguments only, unless widened in so many words.
                    scope = Scope(kind=words[2], with_args=words[3:] == [])  # type: ignore[arg-type]
                elif len(words) != 1:
                    raise SignoffError("approve N [always run|thread|agent|global [any-args]]")
                self.decide(self.waiting(words[0]), Approve(always=scope))
            case "r" | "reject":
                which, _, reason = rest.partition(" ")
                reason = _unquoted(_without(reason.strip(), "--reason"))
                if not reason:
                    raise SignoffError("reject N REASON: the model reads the reason")
                self.decide(self.waiting(which), Reject(reason=reason))
            case "e" | "edit":
                which, _, text = rest.partition(" ")
                number = self.waiting(which)
                args = _arguments(text.strip() or _edited(self.listed[number]["args"]))
                self.decide(number, Edit(args=args))
            case "p" | "respond":
                which, _, text = rest.partition(" ")
                if not text.strip():
                    raise SignoffError("respond N TEXT: the text the agent gets instead")
                self.decide(self.waiting(which), Respond(content=text.strip()))
            case "answer":
                which, _, text = rest.partition(" ")
                text = text.strip()
                if not text:
                    raise SignoffError("answer N TEXT, or answer N --json JSON")
                value: Any = _unquoted(text)
                if text.startswith("--json"):
                    value = _json(text.removeprefix("--json").strip())
                self.decide(self.waiting(which), Answer(value=value))
            case _:
                raise SignoffError(f"unknown command {command!r}: {HELP}")

    def list(self) -> None:
        """Show the newest page of what waits now."""
        self.pages = [None]
        self.show_page()

    def more(self) -> None:
        """Show the page of calls that waited longer than those on screen."""
        if self.next is None:
            raise SignoffError("no more calls wait past this page; `list` shows the newest")
        self.pages.append(self.next)
        self.show_page()

    def show_page(self) -> None:
        """Show the page on screen as it is now; a call not listed before gets the next
        number. A later page that has emptied (its calls decided) gives way to the first."""
        page = self.backend.pending(self.pages[-1], PAGE + 1)  # newest first
        if not page and len(self.pages) > 1:
            self.console.print("[dim]nothing waits there any more; the newest:[/]")
            self.pages = [None]
            page = self.backend.pending(None, PAGE + 1)
        page, past = page[:PAGE], page[PAGE:]
        self.next = page[-1]["id"] if past else None
        for item in reversed(page):  # numbered in the order they came
            number = self.numbers.setdefault(item["id"], len(self.numbers) + 1)
            self.listed[number] = item
            self.seen[item["id"]] = item["version"]
        self.short = shorten(self.numbers)
        if not page:
            self.console.print("nothing waits for a decision")
            return
        from rich.table import Table

        title = f"{len(page)} waiting"
        if len(self.pages) > 1 or past:
            title = f"page {len(self.pages)}: {title}"
        table = Table(title=title, title_justify="left")
        for header in ("#", "id", "tool", "arguments", "from", "rule", "expires", "v"):
            table.add_column(header)
        for item in sorted(page, key=lambda i: self.numbers[i["id"]]):
            arguments = _asked(item) or json.dumps(item["args"], ensure_ascii=False)
            editor = _editor(item)
            if editor is not None:  # `show N` has the arguments asked for too
                arguments = f"(edited by {editor}) {arguments}"
            table.add_row(
                str(self.numbers[item["id"]]),
                self.short[item["id"]],
                escape(_what(item)),
                escape(arguments if len(arguments) <= 60 else arguments[:57] + "..."),
                escape(_who(item)),
                escape(item.get("rule") or "default"),
                item.get("expires_at") or "",
                str(item["version"]),
            )
        self.console.print(table)
        if past:
            self.console.print(f"[dim]more calls waited longer: `more` lists the next {PAGE}[/]")

    def pick(self, which: str) -> int:
        """The number of the listed approval `which` names: a number, or a short id shown."""
        which = which.removeprefix("#")
        if not which:
            raise SignoffError("which one? give its number; see `list`")
        if which.isdigit() and len(which) < SHORTEST:
            if int(which) not in self.listed:
                raise SignoffError(f"no #{which} has been listed; see `list`")
            return int(which)

        def ending(short: str, limit: int) -> list[dict[str, Any]]:
            return [item for item in self.listed.values() if item["id"].endswith(short)][:limit]

        try:
            approval_id = resolve(which, ending)
        except NotFoundError:
            raise SignoffError(f"no listed approval's id ends with {which!r}; see `list`") from None
        if approval_id not in self.numbers:  # a whole id, of a call never listed here
            raise SignoffError(f"{which!r} has not been listed; see `list`")
        return self.numbers[approval_id]

    def waiting(self, which: str) -> int:
        """`pick`, refused unless the call still waits: a call decided meanwhile, here or
        elsewhere, keeps its number and the number never moves on to another call."""
        number = self.pick(which)
        item = self.backend.get(self.listed[number]["id"])
        self.listed[number] = item
        if item["status"] != "pending":
            raise SignoffError(_gone(number, item))
        return number

    def decide(self, number: int, decision: Decision) -> None:
        item = self.listed[number]
        try:
            decided = self.backend.decide(item["id"], decision, self.seen.get(item["id"]))
        except StaleDecisionError as exc:
            self.console.print(f"[bold red]not decided:[/] {escape(str(exc))}")
            self.again(number)
            return
        self.listed[number] = decided
        self.console.print(
            f"#{number} {self.short[item['id']]} {escape(item['tool'])}: "
            f"[bold]{decided['status']}[/] by {escape(str(decided['decided_by']))}"
        )
        granted = grant_words(decided)
        if granted is not None:
            self.console.print(escape(granted))
        self.show_page()

    def again(self, number: int) -> None:
        """Show the call of `number` as it is now, after a decision made on an older version
        was refused: a decision typed next is made on this one."""
        item = self.backend.get(self.listed[number]["id"])
        self.listed[number] = item
        if item["status"] != "pending":
            raise SignoffError(_gone(number, item))
        self.seen[item["id"]] = item["version"]
        editor = _editor(item)
        said = f"edited by {editor}" if editor else "not edited"
        self.console.print(
            f"#{number} {self.short[item['id']]} {escape(_what(item))}, as it is now "
            f"(version {item['version']}, {escape(said)}):"
        )
        args = json.dumps(item["args"], ensure_ascii=False)
        self.console.print(f"  {'runs with' if editor else 'arguments'}: {escape(args)}")
        if editor:
            asked = json.dumps(item["requested_args"], ensure_ascii=False)
            self.console.print(f"  requested: {escape(asked)}")
        if item.get("quorum"):
            from signoff.channels.sources import approvals_so_far

            self.console.print(f"  approvals: {escape(approvals_so_far(item))}")
        self.console.print(f"[dim]a decision on #{number} now is made on this version[/]")


def _editor(item: dict[str, Any]) -> str | None:
    from signoff.channels.sources import edited_by  # asyncio: loaded when first needed

    return edited_by(item)


def _without(text: str, option: str) -> str:
    """`text` past `option` (``--reason R`` or ``--reason=R``), as ``signoff reject`` takes it."""
    for prefix in (f"{option} ", f"{option}="):
        if text.startswith(prefix):
            return text[len(prefix) :].strip()
    return "" if text == option else text


def _unquoted(text: str) -> str:
    """`text` without the quotes around it, as a shell would take them off."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1].strip()
    return text


def _gone(number: int, item: dict[str, Any]) -> str:
    what = f"#{number} ({item['tool']})"
    if item["status"] in ("expired", "cancelled"):
        return f"{what} is no longer pending: {item['status']}"
    return f"{what} was already {item['status']} by {item['decided_by']}"


def _asked(item: dict[str, Any]) -> str | None:
    """A question as a person reads it — its text, then its choices or its form's fields —
    or None for a call."""
    args = item["args"]
    if item.get("kind") != "question" or not isinstance(args, dict):
        return None
    text = str(args.get("question", ""))
    if isinstance(args.get("choices"), list):
        pick = "several of" if args.get("multiple") else "one of"
        return f"{text} ({pick}: {' | '.join(map(str, args['choices']))})"
    form = args.get("schema")
    if isinstance(form, dict) and isinstance(form.get("properties"), dict):
        return f"{text} (a form: {', '.join(name for name, _ in form_fields(form))})"
    return text


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise SignoffError(f"the answer is not JSON: {exc}") from None


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

    def pending(self, before: str | None, limit: int) -> list[dict[str, Any]]:
        params = {"status": "pending", "limit": limit, "cursor": before}
        items: list[dict[str, Any]] = from_server(self.server, self.token, "/v1/approvals", params)[
            "items"
        ]
        return items

    def get(self, approval_id: str) -> dict[str, Any]:
        return from_server(self.server, self.token, f"/v1/approvals/{approval_id}")

    def decide(self, approval_id: str, decision: Decision, version: int | None) -> dict[str, Any]:
        return through_server(self.server, self.token, approval_id, decision, version=version)


class _DatabaseBackend:
    def __init__(self, url: str, actor: str, roles: list[str]) -> None:
        self.url, self.actor, self.roles = url, actor, roles

    def pending(self, before: str | None, limit: int) -> list[dict[str, Any]]:
        import asyncio

        from signoff.store import open_store

        async def read() -> list[dict[str, Any]]:
            async with open_store(self.url, migrate=False) as store:
                page = await store.list_approvals(status="pending", before=before, limit=limit)
                return [approval_to_dict(a) for a in page]

        return asyncio.run(read())

    def get(self, approval_id: str) -> dict[str, Any]:
        import asyncio

        return asyncio.run(approval_on_database(self.url, approval_id))

    def decide(self, approval_id: str, decision: Decision, version: int | None) -> dict[str, Any]:
        import asyncio

        from signoff.cli.decide import on_database

        return asyncio.run(
            on_database(self.url, approval_id, decision, self.actor, self.roles, version=version)
        )


FRAMEWORKS = {
    "langgraph": "LangGraph",
    "langchain": "LangChain",
    "pydantic-ai": "Pydantic AI",
    "openai-agents": "OpenAI Agents SDK",
    "google-adk": "Google ADK",
    "agno": "Agno",
    "adalflow": "AdalFlow",
    "agent-framework": "Microsoft Agent Framework",
    "strands": "Strands Agents",
    "llama-index": "LlamaIndex",
    "crewai": "CrewAI",
}
"""The frameworks whose runs hold their calls in signoff, by origin, as people name them."""
_OWN = frozenset({"runtime", "gate", "mcp-gateway"})


def _who(item: dict[str, Any]) -> str:
    """The agent that asked; for a call held by the MCP gateway, who made it; for another
    framework's call, its thread and agent and the framework (an unknown origin as given)."""
    origin = item.get("origin")
    if origin is not None and origin not in _OWN:
        parts = [f"thread {item['thread_id']}"] if item.get("thread_id") else []
        parts += [f"agent {item['agent']}"] if item.get("agent") else []
        return " · ".join([*parts, f"via {FRAMEWORKS.get(origin, origin)}"])
    if item.get("agent"):
        return str(item["agent"])
    if origin == "mcp-gateway":
        return f"{item.get('requested_by') or '?'} (MCP)"
    return ""


def _what(item: dict[str, Any]) -> str:
    """The tool; or, through the MCP gateway, the resource read or the prompt got."""
    kind = item.get("kind", "tool")
    return item["tool"] if kind == "tool" else f"{kind} {item['tool']}"
