"""``signoff answer ID VALUE``: answer a question an agent asked — as text (a choice by its
text), or ``--json VALUE`` for several choices or a form's fields — through a server or on a
database, as ``signoff approve`` decides. The gate checks the answer against the question and
refuses one that does not fit, naming the field."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from signoff.cli.decide import ApprovalId, Version, send_decision
from signoff.cli.target import Actor, Database, Roles, Server, Token, deciding
from signoff.types import Answer

__all__ = ["answer"]


def answer(
    approval_id: ApprovalId,
    value: Annotated[
        str | None,
        typer.Argument(
            help="The answer as text (a choice by its text).", metavar="VALUE", show_default=False
        ),
    ] = None,
    as_json: Annotated[
        str | None,
        typer.Option(
            "--json",
            help='The answer as JSON: several choices (\'["a", "b"]\') or a form\'s fields.',
            show_default=False,
        ),
    ] = None,
    version: Version = None,
    server: Server = None,
    token: Token = None,
    database: Database = None,
    actor: Actor = None,
    role: Roles = None,
) -> None:
    """Answer a question an agent asked: the run resumes with the answer as its tool's result."""
    if (value is None) == (as_json is None):
        raise typer.BadParameter(
            "give the answer once: as text, or with --json", param_hint="VALUE"
        )
    given: Any = value
    if as_json is not None:
        try:
            given = json.loads(as_json)
        except ValueError as exc:
            raise typer.BadParameter(f"not JSON: {exc}", param_hint="--json") from None
    server, database = deciding("answer", server, database, actor, role)
    send_decision(approval_id, Answer(value=given), server, token, database, actor, role, version)
