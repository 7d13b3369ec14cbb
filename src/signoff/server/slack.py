"""``POST /v1/slack/interactions``: the Approve / Reject buttons of signoff's Slack messages, and
a question's choice buttons, Decline, and the modal its Answer button opens.

Slack sends no bearer token: the request's signature (the Slack app's signing secret) is its
authentication, checked before its body is believed. The presser's Slack user id is mapped to a
principal by the sink's ``users:``; the decision goes through the gate as that principal, with
its roles — the rule's approvers, the self-approval rule and the audit apply as anywhere else.
An unmapped user, a stranger to the rule, or a second press decides nothing and is told why. A
press decides on the version of the approval its message showed (the button carries it): a press
on a message older than the approval's last change — an edit, a vote, a handover — decides nothing
and is told what changed, while the message itself is brought up to date by the notifier.

A question is answered through the gate as any channel answers it: an answer that does not fit
is refused under the modal's field the gate names, and a second answer names who gave the first.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from signoff.errors import ConflictError, ForbiddenError, InvalidDecisionError, NotFoundError
from signoff.gate.deciders import needed
from signoff.notify import Notifications
from signoff.notify.settings import SlackUser
from signoff.notify.slack import APPROVE, BadRequest, Press, Slack, Submission, interaction
from signoff.notify.slack_modal import ANSWER, REPLY, answer_of, field_errors, modal
from signoff.notify.transport import SendFailed
from signoff.server.service import Service
from signoff.types import Answer, Approval, Approve, Decision, Reject

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
        if isinstance(press, Submission):
            return await _submitted(service, press, user, roles_of)
        if user is None:
            text = _unmapped(press.user)
            await slack.reply(press, text, replace=False)
            return JSONResponse({"decided": False, "detail": text})
        granted = user.roles if user.roles is not None else roles_of(user.principal) or frozenset()
        if press.action == REPLY:
            return await _open(service, slack, press)
        try:
            decision = await _decision(service, press, user)
            approval = await service.decide(
                press.approval_id,
                decision,
                actor=user.principal,
                roles=granted,
                version=press.version,
            )
        except (ForbiddenError, ConflictError, NotFoundError, InvalidDecisionError) as exc:
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
        text = f"{approval.call.name}: {approval.status} by {approval.decided_by} (in Slack)"
        await slack.reply(press, text, replace=True)
        return JSONResponse({"decided": True, "status": approval.status})


async def _decision(service: Service, press: Press, user: SlackUser) -> Decision:
    """What a press decides: approve, reject (a question: decline), or the choice it stands for."""
    if press.action == APPROVE:
        return Approve()
    if press.action != ANSWER:
        return Reject(reason=f"rejected in Slack by {user.principal}")
    choices = (await _question(service, press.approval_id)).call.args.get("choices") or []
    if press.choice is None or press.choice >= len(choices):
        raise InvalidDecisionError(f"answer: the question has no choice {press.choice}")
    return Answer(value=choices[press.choice])


async def _open(service: Service, slack: Slack, press: Press) -> JSONResponse:
    """Open the question's modal for the presser (who it holds to nothing: the answer does), on
    the version of the question the pressed message showed."""
    try:
        question = await _question(service, press.approval_id)
        if not question.pending:
            raise ConflictError(f"the question is already {question.status} by "
                                f"{question.decided_by!r}")  # fmt: skip
        # The version the message showed, not the question's now: an answer given on what
        # someone saw before the question changed is the gate's to refuse (`StaleDecisionError`).
        shown = question.version if press.version is None else press.version
        target = f"{press.sink.filters.name}|{question.id}@{shown}"
        await slack.open_modal(press, modal(question.call.args, target))
    except (ConflictError, NotFoundError, SendFailed) as exc:
        await slack.reply(press, f"Nothing was opened: {exc}", replace=False)
        return JSONResponse({"opened": False, "detail": str(exc)})
    return JSONResponse({"opened": True})


async def _submitted(
    service: Service,
    submission: Submission,
    user: SlackUser | None,
    roles_of: Callable[[str], frozenset[str] | None],
) -> JSONResponse:
    """A question's modal submitted: its answer through the gate as the mapped principal; a
    refusal, under the field it names (the modal stays open to put it right)."""
    try:
        question = await _question(service, submission.approval_id)
    except NotFoundError as exc:
        return JSONResponse({"response_action": "errors", "errors": {"answer": str(exc)}})
    args = question.call.args
    try:
        if user is None:
            raise ForbiddenError(_unmapped(submission.user))
        granted = user.roles if user.roles is not None else roles_of(user.principal) or frozenset()
        await service.decide(
            question.id,
            Answer(value=answer_of(args, submission.values)),
            actor=user.principal,
            roles=granted,
            version=submission.version,
        )
    except (ForbiddenError, ConflictError, InvalidDecisionError) as exc:
        return JSONResponse({"response_action": "errors", "errors": field_errors(str(exc), args)})
    return JSONResponse({"response_action": "clear"})


async def _question(service: Service, approval_id: str) -> Approval:
    approval = await service.store.get_approval(approval_id)
    if approval.call.kind != "question":
        raise NotFoundError(f"approval {approval_id!r} is not a question")
    return approval


def _unmapped(user: str) -> str:
    return (
        f"Your Slack user ({user}) is not mapped to a signoff principal; nothing was decided. "
        "Ask an admin to add it under notify.slack[].users."
    )
