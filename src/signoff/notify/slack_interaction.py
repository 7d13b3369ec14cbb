"""The requests Slack sends back to signoff: a button pressed on one of its messages, and a modal
(a question's answer) submitted.

Each is signed with the app's signing secret the way Slack signs every request:
``X-Slack-Signature: v0=<hex>``, the HMAC-SHA256 of ``v0:<X-Slack-Request-Timestamp>:<body>``.
`interaction` checks it (and the timestamp's age) before anything in the body is believed; the
server turns the press or the submission into a decision by the principal the Slack user is
mapped to, through the gate like any other.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from signoff.gate.versions import version_of
from signoff.limits import MAX_DEPTH, text_depth
from signoff.notify.settings import SlackSettings
from signoff.notify.slack_modal import ANSWER, MODAL, REPLY

__all__ = ["APPROVE", "REJECT", "BadRequest", "Press", "Submission", "interaction", "sign"]

APPROVE = "signoff.approve"
REJECT = "signoff.reject"
TOLERANCE = 300.0
"""Seconds an interaction's timestamp may be away from now (Slack's own advice: 5 minutes)."""
MAX_PAYLOAD = 64 * 1024
"""The biggest interaction read: a button press is a few kilobytes, a submitted form a few more."""


class BadRequest(ValueError):
    """An interaction request that is not signed, too old, or not one signoff understands;
    `status` is the HTTP answer (401 for the signature, 400 for the rest)."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, kw_only=True)
class Press:
    """A button pressed on a signoff message."""

    sink: SlackSettings
    """The sink whose signing secret signed it (its users map the presser)."""
    user: str
    """The Slack user id."""
    user_name: str
    action: str
    approval_id: str
    version: int | None
    """The version of the approval the pressed message showed; None on a message posted before
    buttons carried one."""
    response_url: str | None
    """Where the original message can be replaced; None when it is not Slack's (or the
    sink's own API) address."""
    choice: int | None = None
    """The index of the choice a question's choice button stands for (`action` is ``ANSWER``)."""
    trigger_id: str | None = None
    """What lets the server open a modal in answer to the press (Slack's, for a few seconds)."""


@dataclass(frozen=True, kw_only=True)
class Submission:
    """A question's modal, submitted with its answer."""

    sink: SlackSettings
    user: str
    user_name: str
    approval_id: str
    version: int | None
    """The version of the question the modal was opened on."""
    values: dict[str, Any] = field(repr=False)
    """What was typed and picked: the view's ``state.values``."""


def sign(secret: str, body: bytes, *, timestamp: int) -> str:
    mac = hmac.new(secret.encode(), f"v0:{timestamp}:".encode() + body, hashlib.sha256)
    return "v0=" + mac.hexdigest()


def interaction(
    sinks: list[SlackSettings],
    body: bytes,
    *,
    timestamp: str | None,
    signature: str | None,
    now: float | None = None,
) -> Press | Submission | None:
    """The button press or the submitted modal that `body` reports, once its signature is
    checked against each sink with a signing secret; None for an interaction that is not a
    signoff button (the link button reports its clicks too). Raises `BadRequest`."""
    signed = _signed(sinks, body, timestamp=timestamp, signature=signature, now=now)
    payload = _payload(body)
    try:
        user = payload["user"]
        user_id = user["id"]
        name = str(user.get("username") or user.get("name") or user_id)
        if payload.get("type") == "view_submission":
            return _submission(payload["view"], signed, user=user_id, user_name=name)
        actions = payload["actions"]
        action = actions[0] if isinstance(actions, list) and actions else {}
        action_id = action.get("action_id")
    except (KeyError, TypeError, AttributeError):
        raise BadRequest("the body is not a Slack block_actions interaction") from None
    choice = _choice(action_id)
    if action_id not in (APPROVE, REJECT, REPLY) and choice is None:
        return None
    if not isinstance(user_id, str):
        raise BadRequest("the button carries no approval id")
    sink, approval_id, version = _target(action.get("value"), signed, "button")
    response_url = payload.get("response_url")
    trigger = payload.get("trigger_id")
    return Press(
        sink=sink,
        user=user_id,
        user_name=name,
        action=ANSWER if choice is not None else str(action_id),
        approval_id=approval_id,
        version=version,
        response_url=response_url if _trusted(response_url, sink) else None,
        choice=choice,
        trigger_id=trigger if isinstance(trigger, str) and len(trigger) <= 255 else None,
    )


def _signed(
    sinks: list[SlackSettings],
    body: bytes,
    *,
    timestamp: str | None,
    signature: str | None,
    now: float | None,
) -> list[SlackSettings]:
    """The sinks whose signing secret signed `body`; `BadRequest` when none did."""
    if (
        not timestamp
        or not signature
        or not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12)
    ):
        raise BadRequest("the request is not signed by Slack", status=401)
    if abs((time.time() if now is None else now) - int(timestamp)) > TOLERANCE:
        raise BadRequest("the request's timestamp is outside the replay window", status=401)
    if len(body) > MAX_PAYLOAD:
        raise BadRequest(f"the interaction is bigger than {MAX_PAYLOAD:,} bytes", status=413)
    given = signature.encode("utf-8", "replace")
    signed = [
        s
        for s in sinks
        if s.signing_secret is not None
        and hmac.compare_digest(
            sign(s.signing_secret, body, timestamp=int(timestamp)).encode(), given
        )
    ]
    if not signed:
        raise BadRequest("the request's signature does not match", status=401)
    return signed


def _payload(body: bytes) -> dict[str, Any]:
    """The JSON payload of a signed interaction's form body."""
    try:
        form = parse_qs(body.decode(), strict_parsing=True, max_num_fields=10)
        raw = form["payload"][0]
        # The JSON inside the form: its brackets are percent-encoded in the body, which the
        # server's own depth check reads, so it is measured here, before the parser recurses
        # (thousands of levels down it gives up with a RecursionError, a 500). Its size needs
        # no check of its own: decoded, it is no longer than the body.
        if text_depth(raw.encode(), stop_after=MAX_DEPTH) > MAX_DEPTH:
            raise BadRequest(
                f"the interaction's payload is nested more than {MAX_DEPTH} levels deep; "
                f"signoff reads at most {MAX_DEPTH}"
            )
        payload = json.loads(raw)
    except BadRequest:
        raise  # says what is wrong already (it is a ValueError too)
    except (ValueError, KeyError, UnicodeDecodeError):
        raise BadRequest("the body is not a Slack block_actions interaction") from None
    if not isinstance(payload, dict):
        raise BadRequest("the body is not a Slack block_actions interaction")
    return payload


def _submission(
    view: Any, signed: list[SlackSettings], *, user: Any, user_name: str
) -> Submission | None:
    """The answer typed into a question's modal; None for another app's modal."""
    if not isinstance(view, dict) or view.get("callback_id") != MODAL:
        return None
    values = (view.get("state") or {}).get("values")
    if not isinstance(user, str) or not isinstance(values, dict):
        raise BadRequest("the modal's submission has no user or no values")
    sink, approval_id, version = _target(view.get("private_metadata"), signed, "modal")
    return Submission(sink=sink, user=user, user_name=user_name, approval_id=approval_id,
                      version=version, values=values)  # fmt: skip


def _target(
    value: Any, signed: list[SlackSettings], what: str
) -> tuple[SlackSettings, str, int | None]:
    """The sink, approval and version a button's value (or a modal's metadata) names:
    ``<sink>|<approval id>@<version>``."""
    if not isinstance(value, str) or "|" not in value:
        raise BadRequest(f"the {what} carries no approval id")
    # It names the sink that posted it: its users map the presser, and its app's secret must
    # be the one that signed (sinks of one Slack app share a secret).
    name, _, approval_id = value.rpartition("|")
    approval_id, _, seen = approval_id.partition("@")
    sink = next((s for s in signed if s.filters.name == name), None)
    if sink is None or not approval_id:
        raise BadRequest(f"the {what} is not one of sink {name!r}'s", status=401)
    if seen and (not (seen.isascii() and seen.isdigit() and len(seen) <= 10)
                 or version_of(int(seen)) is None):  # fmt: skip
        raise BadRequest(f"the {what}'s version {seen!r} is not a number")
    return sink, approval_id, int(seen) if seen else None


def _choice(action_id: Any) -> int | None:
    """The index of the choice a question's choice button stands for; None for another button."""
    if not isinstance(action_id, str) or not action_id.startswith(f"{ANSWER}."):
        return None
    index = action_id.removeprefix(f"{ANSWER}.")
    return int(index) if index.isascii() and index.isdigit() and len(index) <= 3 else None


def _trusted(url: object, sink: SlackSettings) -> bool:
    """Whether a response URL is Slack's (or the sink's configured API's host): the reply goes
    nowhere else, whatever a signed payload says."""
    if not isinstance(url, str):
        return False
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname == "hooks.slack.com":
        return True
    own = urlsplit(sink.api_url)
    return (parts.scheme, parts.netloc) == (own.scheme, own.netloc)
