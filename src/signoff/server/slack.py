"""``POST /v1/slack/interactions``: the Approve / Reject buttons of signoff's Slack messages.

Slack sends no bearer token: the request's signature (the Slack app's signing secret) is its
authentication, checked before its body is believed. The presser's Slack user id is mapped to a
principal by the sink's ``users:``; the decision goes through the gate as that principal, with
its roles — the rule's approvers, the self-approval rule and the audit apply as anywhere else.
An unmapped user, a stranger to the rule, or a second press decides nothing and is told why. A
press decides on the version of the approval its message showed (the button carries it): a press
on a message older than the approval's last change — an edit, a vote, a handover — decides nothing
and is told what changed, while the message itself is brought up to date by the notifier.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from signoff.errors import ConflictError, ForbiddenError, NotFoundError
from signoff.gate.deciders import needed
from signoff.notify import Notifications
from signoff.notify.slack import APPROVE, BadRequest, interaction
from signoff.server.service import Service
from signoff.types import Approve, Decision, Reject

__all__ = ["INTERACTIONS", "mount_slack"]

INTERACTIONS = "/v1/slack/interactions"


def mount_slack(
    app: FastAPI,
    service: Service,
    notifications: Notifications,
    roles_of: Callable[[str], frozenset[str] | None],
) -> None:
    """Take button presses for the Slack sinks that have a signing secret. `roles_of` gives a
    principal's roles now (`Auth.roles_of`: its tokens', or its sign-in's as last seen), for
    Slack users mapped without roles of their own."""
    sinks = [s for s in notifications.settings.slack if s.signing_secret is not None]

    @app.post(INTERACTIONS, include_in_schema=False)
    async def slack_interaction(request: Request) -> JSONResponse:
        body = await request.body()
        try:
            press = interaction(
                sinks,
                body,
                timestamp=request.headers.get("x-slack-request-timestamp"),
                signature=request.headers.get("x-slack-signature"),
            )
        except BadRequest as exc:
            error = "Unauthorized" if exc.status == 401 else "InvalidRequest"
            return JSONResponse({"error": error, "detail": str(exc)}, status_code=exc.status)
        if press is None:
            return JSONResponse({})  # the link button, or another app's action
        slack = notifications.slack(press.sink.filters.name)
        assert slack is not None  # every sink with a signing secret is a Slack sink
        user = press.sink.users.get(press.user)
        if user is None:
            text = (
                f"Your Slack user ({press.user}) is not mapped to a signoff principal; "
                "nothing was decided. Ask an admin to add it under notify.slack[].users."
            )
            await slack.reply(press, text, replace=False)
            return JSONResponse({"decided": False, "detail": text})
        granted = user.roles if user.roles is not None else roles_of(user.principal) or frozenset()
        decision: Decision = (
            Approve()
            if press.action == APPROVE
            else Reject(reason=f"rejected in Slack by {user.principal}")
        )
        try:
            approval = await service.decide(
                press.approval_id,
                decision,
                actor=user.principal,
                roles=granted,
                version=press.version,
            )
        except (ForbiddenError, ConflictError, NotFoundError) as exc:
            await slack.reply(press, f"Nothing was decided: {exc}", replace=False)
            return JSONResponse({"decided": False, "detail": str(exc)})
        if approval.pending and approval.quorum is not None:
            # One approval of several: the message keeps its buttons for the others.
            left = needed(approval.quorum, approval.votes)
            text = (
                f"{approval.call.name}: approved by {user.principal} (in Slack); it still "
                f"needs {left}"
            )
            await slack.reply(press, text, replace=False)
            return JSONResponse({"decided": False, "status": approval.status, "detail": text})
        text = f"{approval.call.name}: {approval.status} by {user.principal} (in Slack)"
        await slack.reply(press, text, replace=True)
        return JSONResponse({"decided": True, "status": approval.status})
