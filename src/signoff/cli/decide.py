"""``signoff approve ID``, ``signoff reject ID REASON`` and ``signoff assign ID TO``: decide
(or hand the decision on) from a shell, through
a server (``--server URL --token T``) or straight on a database (``--database URL``); with
neither, through the demo running on this machine. ``ID`` is the approval's id or the short id
``signoff inbox`` shows (see `signoff.cli.short_id`).

``--version N`` makes the decision on version N of the approval, the one its sender looked at (the
inbox's ``show N`` prints it): refused, naming what changed, when the approval changed since.
Without it the decision names no version, which is refused only for an approval of a call edited
while it waited (among several approvers): whoever approves it must say what they saw."""

from __future__ import annotations

import getpass
from datetime import UTC, datetime
from json import dumps
from typing import Annotated, Any

import typer

from signoff.cli.client import from_server, on_server, through_server
from signoff.cli.program import program
from signoff.cli.short_id import resolve
from signoff.cli.target import Actor, Database, Roles, Server, Token, deciding
from signoff.errors import ConflictError, StaleDecisionError
from signoff.gate.deciders import needed
from signoff.types import Approve, Decision, Quorum, Reject, Scope, Vote, approval_to_dict

__all__ = [
    "already",
    "approval_on_database",
    "approve",
    "assign",
    "assign_on_database",
    "decided_words",
    "find_on_database",
    "grant_words",
    "on_database",
    "reject",
    "resolved",
    "send_decision",
]

Version = Annotated[
    int | None,
    typer.Option(
        "--version",
        min=1,
        help="The version of the approval you looked at (`show` in `signoff inbox` prints "
        "it): refused if it changed since.",
        show_default=False,
    ),
]


ApprovalId = Annotated[
    str,
    typer.Argument(help="The approval's id, or the short id `signoff inbox` shows.", metavar="ID"),
]


def approve(
    approval_id: ApprovalId,
    always: Annotated[
        str | None,
        typer.Option(
            help="Also let the same agent's calls of this tool with exactly these arguments "
            "through from now on, in a scope: run or thread (only calls its requester makes "
            "there), agent or global (whoever makes them)."
        ),
    ] = None,
    any_args: Annotated[
        bool,
        typer.Option(
            "--any-args",
            help="With --always: let the tool's calls through whatever their arguments.",
        ),
    ] = False,
    version: Version = None,
    server: Server = None,
    token: Token = None,
    database: Database = None,
    actor: Actor = None,
    role: Roles = None,
) -> None:
    """Approve a held call: the run resumes and the call runs, once. With --always, also
    leave a grant, and say what it lets through."""
    if always not in (None, "run", "thread", "agent", "global"):
        raise typer.BadParameter("one of run, thread, agent, global", param_hint="--always")
    if any_args and always is None:
        raise typer.BadParameter("widens a grant: give --always too", param_hint="--any-args")
    scope = None if always is None else Scope(kind=always, with_args=not any_args)  # type: ignore[arg-type]
    server, database = deciding("approve", server, database, actor, role)
    send_decision(approval_id, Approve(always=scope), server, token, database, actor, role, version)


def reject(
    approval_id: ApprovalId,
    reason: Annotated[
        str | None,
        typer.Argument(
            help="Why: the agent's model reads it.", metavar="REASON", show_default=False
        ),
    ] = None,
    reason_option: Annotated[
        str | None,
        # The reason as an option too, as `reject N --reason R` in `signoff inbox`; one form shown.
        typer.Option("--reason", hidden=True),
    ] = None,
    version: Version = None,
    server: Server = None,
    token: Token = None,
    database: Database = None,
    actor: Actor = None,
    role: Roles = None,
) -> None:
    """Reject a held call with a reason: it never runs, and the model is told why."""
    if reason is not None and reason_option is not None and reason != reason_option:
        raise typer.BadParameter("give the reason once", param_hint="REASON")
    reason = reason if reason is not None else reason_option
    if not (reason or "").strip():
        raise typer.BadParameter("why? the agent's model reads it", param_hint="REASON")
    assert reason is not None
    server, database = deciding("reject", server, database, actor, role)
    rejection = Reject(reason=reason.strip())
    send_decision(approval_id, rejection, server, token, database, actor, role, version)


def send_decision(
    approval_id: str,
    decision: Decision,
    server: str | None,
    token: str | None,
    database: str | None,
    actor: str | None,
    roles: list[str] | None,
    version: int | None = None,
) -> None:
    """Take `decision`, made on `version` of the approval, unless the approval is no longer
    pending: then say how it was decided and exit 1. (The API answers the same decision taken
    again with the stored approval, as a retry needs; from the command line it would read as a
    decision taken now.)"""
    import asyncio

    approval_id = resolved(approval_id, server, token, database)
    if server:

        def current() -> dict[str, Any]:
            return from_server(server, token, f"/v1/approvals/{approval_id}")

        def take() -> dict[str, Any]:
            return through_server(server, token, approval_id, decision, version=version)
    else:
        assert database is not None  # where() gave one or the other
        url = database

        def current() -> dict[str, Any]:
            return asyncio.run(approval_on_database(url, approval_id))

        def take() -> dict[str, Any]:
            decider = actor or getpass.getuser()
            return asyncio.run(
                on_database(url, approval_id, decision, decider, roles or [], version=version)
            )

    found = current()
    if found["status"] != "pending":
        raise ConflictError(already(found))
    try:
        result = take()
    except StaleDecisionError as exc:
        raise _look_again(exc, approval_id) from None
    except ConflictError:  # decided differently meanwhile
        now = current()
        if now["status"] == "pending":
            raise
        raise ConflictError(already(now)) from None
    typer.echo(decided_words(result, actor=actor))
    granted = grant_words(result)
    if granted is not None:
        typer.echo(granted)


def _look_again(error: StaleDecisionError, approval_id: str) -> StaleDecisionError:
    """`error` with what to do next: look at the approval as it is, then decide naming the
    version looked at."""
    return StaleDecisionError(
        f"{error}. See it as it is now with `{program()} inbox` (show N), then decide with "
        f"--version {error.version}",
        approval_id=approval_id,
        seen=error.seen,
        version=error.version,
        changes=error.changes,
    )


def resolved(approval_id: str, server: str | None, token: str | None, database: str | None) -> str:
    """The whole id of the approval `approval_id` names (whole, or the short id `signoff
    inbox` shows), on the server or the database."""
    import asyncio

    if server:
        return resolve(
            approval_id,
            lambda short, limit: from_server(
                server, token, "/v1/approvals", {"short_id": short, "limit": limit}
            )["items"],
        )
    assert database is not None  # where() gave one or the other
    url = database
    return resolve(
        approval_id, lambda short, limit: asyncio.run(find_on_database(url, short, limit))
    )


def decided_words(approval: dict[str, Any], *, actor: str | None = None) -> str:
    """What a decision just taken on `approval` (as the API shows it) came to: decided, or —
    for a call that needs several people — one more approval counted, and what is still
    needed."""
    said = f"{approval['id']}: {{}} ({approval['tool']})"
    if approval["status"] != "pending":
        return said.format(f"{approval['status']} by {approval['decided_by']}")
    votes = [v["by"] for v in approval.get("votes") or []]
    quorum = approval.get("quorum") or {"count": 1, "roles": []}
    left = needed(
        Quorum(count=quorum["count"], roles=tuple(quorum["roles"])),
        [
            Vote(by=v["by"], roles=tuple(v["roles"]), at=datetime.now(UTC))
            for v in approval["votes"]
        ],
    )
    by = ", ".join(votes) or actor or "nobody"
    return said.format(f"approved by {by}") + f"; it still needs {left}"


def assign(
    approval_id: ApprovalId,
    to: Annotated[
        str,
        typer.Argument(help="A principal's name, or role:NAME.", metavar="TO", show_default=False),
    ],
    note: Annotated[str, typer.Option(help="A note for them: what to look at.")] = "",
    server: Server = None,
    token: Token = None,
    database: Database = None,
    actor: Actor = None,
    role: Roles = None,
) -> None:
    """Hand a held call to a person or a role, with a note: they are told, and find it under
    "assigned to me". It widens nothing: they are held to the rule's approvers like anyone."""
    import asyncio

    server, database = deciding("assign", server, database, actor, role)
    approval_id = resolved(approval_id, server, token, database)
    if server:
        path = f"/v1/approvals/{approval_id}/assign"
        result = on_server(server, token, "POST", path, json={"to": to, "note": note})
    else:
        assert database is not None  # where() gave one or the other
        decider = actor or getpass.getuser()
        result = asyncio.run(
            assign_on_database(database, approval_id, to, note, decider, role or [])
        )
    typer.echo(f"{result['id']}: assigned to {to} ({result['tool']})")


async def assign_on_database(
    url: str, approval_id: str, to: str, note: str, actor: str, roles: list[str]
) -> dict[str, Any]:
    from signoff.gate import Gate
    from signoff.policy import Policy
    from signoff.store import open_store

    async with open_store(url, migrate=False) as store:
        gate = Gate(Policy.from_dict({}), store)
        approval = await gate.assign(approval_id, to, actor=actor, roles=roles, note=note)
    return approval_to_dict(approval)


def already(approval: dict[str, Any]) -> str:
    """How `approval` (as the API shows it), no longer pending, was decided, and that a new
    decision changed nothing."""
    decided = approval.get("decided_at")
    at = (
        f" at {datetime.fromisoformat(decided).astimezone(UTC):%Y-%m-%d %H:%M} UTC"
        if decided
        else ""
    )
    by = "" if approval["status"] in ("expired", "cancelled") else f" by {approval['decided_by']}"
    said = f"{approval['id']} ({approval['tool']}): already {approval['status']}"
    return f"{said}{by}{at}; nothing changed"


def grant_words(approval: dict[str, Any]) -> str | None:
    """What the grant an approve-always decision on `approval` (as the API shows it) left
    lets through, in one sentence; None when the decision left none."""
    always = (approval.get("decision") or {}).get("always")
    if not always:
        return None
    tool = approval["tool"] if approval.get("agent") is None else (
        f"{approval['tool']} of agent {approval['agent']}"
    )  # fmt: skip
    args = (
        f"with exactly the arguments {dumps(approval['args'], ensure_ascii=False)}"
        if always["with_args"]
        else "with any arguments"
    )
    who = approval.get("requested_by")
    where = {
        "run": f"in run {approval.get('run_id')}, when {who} requests it",
        "thread": f"in thread {approval.get('thread_id')}, when {who} requests it",
        "agent": "in any run or thread, whoever requests it",
        "global": "anywhere, whoever requests it",
    }[always["scope"]]
    return (
        f"grant: from now on {tool} {args} runs without asking {where} — while the rule that "
        f"asked stays as it is and the approver keeps a role it needs ({program()} grants list)"
    )


async def find_on_database(url: str, short_id: str, limit: int) -> list[dict[str, Any]]:
    """The approvals whose id ends with `short_id` (at most `limit`)."""
    from signoff.store import open_store

    async with open_store(url, migrate=False) as store:
        return [approval_to_dict(a) for a in await store.find_approvals(short_id, limit=limit)]


async def approval_on_database(url: str, approval_id: str) -> dict[str, Any]:
    """The approval of that id, as the API shows it."""
    from signoff.store import open_store

    async with open_store(url, migrate=False) as store:
        return approval_to_dict(await store.get_approval(approval_id))


async def on_database(
    url: str,
    approval_id: str,
    decision: Decision,
    actor: str,
    roles: list[str],
    *,
    version: int | None = None,
) -> dict[str, Any]:
    from signoff import telemetry
    from signoff.gate import Gate
    from signoff.store import open_store

    async with open_store(url, migrate=False) as store:
        # Judged by the policy a server saved there last, as the server would judge it.
        gate = await Gate.following_saved(store)
        telemetry.set_channel("cli")
        approval = await gate.decide(
            approval_id, decision, actor=actor, roles=roles, version=version
        )
    return approval_to_dict(approval)
