"""``signoff grants list`` and ``signoff grants revoke ID``: the standing approvals "approve
always" left, through a server (``--server URL --token T``) or straight on a database; with
neither, through the demo running on this machine."""

from __future__ import annotations

import getpass
import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from signoff.cli.client import on_server
from signoff.cli.target import Actor, Database, Server, Token, deciding, where
from signoff.types import Grant, grant_to_dict

if TYPE_CHECKING:
    from signoff.policy import PolicyEngine
    from signoff.store import Store

__all__ = ["app", "policy_kept"]

app = typer.Typer(help="List and revoke the grants 'approve always' left.", no_args_is_help=True)


@app.command("list")
def list_grants(
    tool: Annotated[str | None, typer.Option(help="Only this tool's grants.")] = None,
    revoked: Annotated[bool, typer.Option("--all", help="Revoked grants too.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
    server: Server = None,
    token: Token = None,
    database: Database = None,
) -> None:
    """Show each grant: its scope, tool and argument binding, who granted it and when, how
    often it let a call through, and whether it is still in force (and if not, why).

    Through a server, a grant whose granter is no longer one of its principals, or no longer
    has a role the grant's rule needs, shows as inactive. Straight on a database there is no
    list of principals: each grant is judged by the roles its granter had when granting."""
    server, database = where("grants list", server, database)
    if server:
        query = {k: v for k, v in {"tool": tool, "revoked": revoked or None}.items() if v}
        items = on_server(server, token, "GET", "/v1/grants", params=query)["items"]
    else:
        import asyncio

        assert database is not None  # where() gave one or the other
        items = asyncio.run(_listed(database, tool=tool, revoked=revoked))
    if as_json:
        for item in items:
            typer.echo(json.dumps(item, ensure_ascii=False))
        return
    console = Console(highlight=False, soft_wrap=True)
    if not items:
        console.print("No grants.")
        return
    from rich.table import Table

    table = Table("id", "tool", "scope", "arguments", "granted by", "when", "uses", "status")
    for g in items:
        scope = g["scope"] if g["subject"] is None else f"{g['scope']} {g['subject']}"
        if g["scope"] in ("run", "thread"):
            scope += f", calls {g.get('requested_by')} requests"
        tool = g["tool"] if g["server"] is None else f"{g['tool']} on {g['server']}"
        if g.get("agent") is not None:
            tool += f" of agent {g['agent']}"
        table.add_row(
            escape(g["id"]),
            escape(tool),
            escape(scope),
            "exactly as approved" if g["with_args"] else "any",
            escape(g["granted_by"]),
            g["granted_at"][:19].replace("T", " "),
            str(g["uses"]),
            escape(g["status"] if not g.get("why") else f"{g['status']}: {g['why']}"),
        )
    console.print(table)


@app.command()
def revoke(
    grant_id: Annotated[str, typer.Argument(help="The grant's id.", metavar="ID")],
    server: Server = None,
    token: Token = None,
    database: Database = None,
    actor: Actor = None,
) -> None:
    """Revoke a grant: no call passes under it from now on. Audited."""
    server, database = deciding("grants revoke", server, database, actor, None)
    if server:
        shown = on_server(server, token, "DELETE", f"/v1/grants/{grant_id}")
    else:
        import asyncio

        assert database is not None  # where() gave one or the other
        shown = asyncio.run(_revoked(database, grant_id, actor or getpass.getuser()))
    typer.echo(f"{shown['id']}: revoked by {shown['revoked_by']} ({shown['tool']})")


async def _listed(url: str, *, tool: str | None, revoked: bool) -> list[dict[str, Any]]:
    from signoff.store import open_store

    async with open_store(url, migrate=False) as store:
        grants = await store.list_grants(tool=tool, revoked=revoked)
        engine = await policy_kept(store)
    return [_grant(g, engine) for g in grants]


async def _revoked(url: str, grant_id: str, actor: str) -> dict[str, Any]:
    from signoff.gate import Gate
    from signoff.policy import Policy
    from signoff.store import open_store

    async with open_store(url, migrate=False) as store:
        found = await store.get_grant(grant_id)
        if found.revoked_at is None:
            await Gate(Policy.from_dict({}), store).revoke_grant(grant_id, actor=actor)
        return _grant(await store.get_grant(grant_id), await policy_kept(store))


async def policy_kept(store: Store) -> PolicyEngine | None:
    """The policy the database's servers put in force last, if one was saved there."""
    from signoff.policy import Policy, PolicyEngine

    latest = await store.latest_policy()
    if latest is None:
        return None
    version, document = latest
    return PolicyEngine(Policy.from_dict(document, source=f"policy version {version}"))


def _grant(grant: Grant, engine: PolicyEngine | None) -> dict[str, Any]:
    return grant_to_dict(grant, in_force=engine is None or engine.knows(grant.rule_digest))
