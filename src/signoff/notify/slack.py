"""Slack: the notice as a message (an incoming webhook, or a bot posting to a channel), with
Approve / Reject buttons when the sink has a signing secret — for a question, its choices as
buttons, or an Answer button that opens a modal (a bot's: `signoff.notify.slack_modal`), and
Decline.

The buttons carry the version of the approval the message shows: a press decides on that version,
and one made on a message older than the approval's last change is refused, naming the change.
A bot keeps its messages about a waiting call up to date (``chat.update``) as the call is edited,
voted on, handed on, escalated, judged again and decided: where each message is (its channel and
``ts``) is a note in the database, so any replica updates it; what it shows is the approval as it
stands when updated, read again afterwards, so that of two replicas updating at once the last word
is the newest. An event the sink tells of about a call it already has a message for is posted in
that message's thread.

A button press comes back as a signed interaction request: `signoff.notify.slack_interaction`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import httpx

from signoff.notify.notice import Notice
from signoff.notify.settings import SlackSettings
from signoff.notify.slack_interaction import (
    APPROVE,
    REJECT,
    BadRequest,
    Press,
    Submission,
    interaction,
    sign,
)
from signoff.notify.slack_modal import REPLY, choice_buttons, needs_modal
from signoff.notify.transport import SendFailed, check_status

if TYPE_CHECKING:
    from signoff.store.base import Store
    from signoff.store.notes import Note

logger = logging.getLogger(__name__)

__all__ = [
    "APPROVE",
    "NOTES",
    "REJECT",
    "BadRequest",
    "Press",
    "Slack",
    "Submission",
    "asking",
    "blocks",
    "interaction",
    "sign",
]

OPEN = "signoff.open"
_TEXT = 2900  # a section's text holds 3,000 characters
NOTES = "slack"
"""The notes' channel where each bot message about an approval is kept (its sink, channel, ts)."""
_UPDATES = 3
"""Times a message is updated in one send while the approval keeps changing under it (each
later change brings its own send)."""
_GONE = frozenset({"message_not_found", "channel_not_found", "cant_update_message",
                   "edit_window_closed", "is_archived", "not_in_channel"})  # fmt: skip
"""Slack's answers to ``chat.update`` for a message that can no longer be changed: left as is."""
_CODE = frozenset({"Arguments", "Requested arguments", "Preview"})
"""The facts shown in a code block."""

Current = Callable[[str], Awaitable[dict[str, Any] | None]]
"""An approval as a notice shows it, read now; None when it is gone."""


def blocks(
    notice: Notice, *, buttons: bool, sink: str = "slack[0]", modal: bool = False
) -> list[dict[str, Any]]:
    """The message's Block Kit blocks; `modal`: a question not answered by a button of its own
    has one that opens a modal (a bot's sink can open one). Everything from the call is
    escaped: an argument can neither ping a channel nor pass off a link as signoff's."""
    out: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": notice.title[:150]}}
    ]
    # Text from the call goes out as plain text (an `*_delete*` stays as written), or in a
    # code block where nothing but a closing fence could end it, and none is left whole.
    facts = notice.facts()
    short = [(k, v) for k, v in facts if "\n" not in v and len(v) <= 200][:10]
    if short:
        fields = [{"type": "plain_text", "text": f"{k}:\n{v}", "emoji": False} for k, v in short]
        out.append({"type": "section", "fields": fields})
    for label, value in facts:
        if (label, value) in short:
            continue
        text: dict[str, Any]
        if label in _CODE:
            code = escape(value)
            while "```" in code:  # no fence may close the block early
                code = code.replace("```", "`\u200b``")
            text = {"type": "mrkdwn", "text": f"*{label}*\n```{code}```"[:_TEXT]}
        else:
            text = {"type": "plain_text", "text": f"{label}:\n{value}"[:_TEXT], "emoji": False}
        out.append({"type": "section", "text": text})
    elements: list[dict[str, Any]] = []
    if buttons and asking(notice) and notice.approval is not None:
        # The version the message shows rides with the press: a press on a message older
        # than the approval's last change is refused, naming it.
        version = notice.approval.get("version")
        at = f"@{version}" if isinstance(version, int) else ""
        value = f"{sink}|{notice.approval['id']}{at}"
        if notice.question is None:
            elements += [
                _button("Approve", APPROVE, value, style="primary"),
                _button("Reject", REJECT, value, style="danger"),
            ]
        else:
            elements += _answering(notice.question, value, out, modal=modal)
    if notice.link:
        elements.append(
            {
                "type": "button",
                "action_id": OPEN,
                "text": {"type": "plain_text", "text": "Open in signoff"},
                "url": notice.link,
            }
        )
    if elements:
        out.append({"type": "actions", "block_id": "signoff", "elements": elements})
    return out


def asking(notice: Notice) -> bool:
    """Whether `notice` tells of a call that waits for a decision (its message has buttons)."""
    if notice.kind in ("decided", "expired", "unknown"):
        return False
    return bool((notice.approval or {}).get("status", "pending") == "pending")


def escape(text: str) -> str:
    """Slack's three control characters, escaped: ``<!channel>`` or ``<url|text>`` from a
    call's arguments stay text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class Slack:
    """A sink that posts each notice to Slack. A bot (a `token`) given the `store` to keep its
    messages' places in and `current` (the approval as a notice shows it, read now) also keeps
    its messages about a waiting call up to date."""

    def __init__(
        self,
        settings: SlackSettings,
        http: httpx.AsyncClient,
        *,
        store: Store | None = None,
        current: Current | None = None,
    ) -> None:
        self.settings = settings
        self.filters = settings.filters
        self._http = http
        self._store = store
        self._current = current

    @property
    def updates(self) -> bool:
        """Whether this sink updates its messages in place: only a bot can (an incoming
        webhook posts, and never hears of its messages again)."""
        return self.settings.token is not None and self._store is not None

    async def send(self, notice: Notice) -> None:
        approval_id = (notice.approval or {}).get("id")
        updates = self.updates and isinstance(approval_id, str)
        messages = await self._messages(str(approval_id)) if updates else []
        places = [m.data for m in messages]
        shown = False
        if notice.kind in self.filters.events and all(m.key != notice.id for m in messages):
            # (An attempt before this one posted it when its note is there.)
            parent = places[0] if places else None
            kept = await self._post(notice, thread=parent, keep=updates and parent is None)
            if kept is not None:  # the approval's first message: it shows the notice's read
                places, shown = [kept], True
        if places and notice.approval is not None:
            await self._refresh(notice, places, shown=shown)

    async def _post(
        self, notice: Notice, *, thread: dict[str, Any] | None, keep: bool
    ) -> dict[str, Any] | None:
        """Post `notice`: in the `thread` of the approval's message when it has one (without
        buttons: that message has them, kept up to date), else as a message of its own, whose
        place is noted and returned when it is to be kept up to date (`keep`: a bot's, while
        the call waits)."""
        settings = self.settings
        message: dict[str, Any] = {
            "text": escape(notice.title),
            "blocks": blocks(
                notice,
                buttons=settings.signing_secret is not None and thread is None,
                sink=self.filters.name,
                modal=settings.token is not None,
            ),
            "unfurl_links": False,
        }
        if settings.url is not None:
            await self._call(settings.url, message, bot=False)
            return None
        message["channel"] = settings.channel
        if thread is not None:
            message |= {"channel": thread["channel"], "thread_ts": thread["ts"]}
        answer = await self._call(f"{settings.api_url}/chat.postMessage", message)
        channel, ts = answer.get("channel") or settings.channel, answer.get("ts")
        if not (keep and asking(notice) and isinstance(channel, str) and isinstance(ts, str)):
            return None
        assert self._store is not None and notice.approval is not None  # keep says so
        place = {"sink": self.filters.name, "channel": channel, "ts": ts}
        # Noted at the database's time: the first of an approval's messages is its thread's.
        await self._store.add_note(NOTES, notice.approval["id"], notice.id, place,
                                   at=self._store.now())  # fmt: skip
        return place

    async def _messages(self, approval_id: str) -> list[Note]:
        """This sink's messages about the approval, oldest first: each a note whose key is the
        delivery that posted it, and whose data is where it is (its channel and ts)."""
        assert self._store is not None  # only a sink that updates asks
        notes = await self._store.notes(NOTES, approval_id)
        return [n for n in notes if n.data.get("sink") == self.filters.name]

    async def _refresh(
        self, notice: Notice, places: list[dict[str, Any]], *, shown: bool = False
    ) -> None:
        """Update the messages at `places` to show the notice's approval (`shown`: they show it
        already), until reading it again afterwards finds no newer version. Of two replicas
        updating at once, the one whose update lands last reads after it, and updates again
        if what it wrote was older."""
        approval = notice.approval or {}
        for _ in range(_UPDATES):
            if not shown:
                standing = dataclasses.replace(notice, approval=approval).standing()
                for place in places:
                    await self._update(place, standing)
            shown = False
            now = None if self._current is None else await self._current(str(approval["id"]))
            if now is None or now.get("version") == approval.get("version"):
                return
            approval = now

    async def _update(self, place: dict[str, Any], notice: Notice) -> None:
        body = {
            "channel": place.get("channel"),
            "ts": place.get("ts"),
            "text": escape(notice.title),
            "blocks": blocks(
                notice,
                buttons=self.settings.signing_secret is not None,
                sink=self.filters.name,
                modal=self.settings.token is not None,
            ),
        }
        await self._call(f"{self.settings.api_url}/chat.update", body, gone_ok=True)

    async def _call(
        self, url: str, body: dict[str, Any], *, bot: bool = True, gone_ok: bool = False
    ) -> dict[str, Any]:
        """Send `body` to `url` (the Web API's, with the bot's token, when `bot`); the API's
        answer. `gone_ok`: a message Slack can no longer change is left as it is."""
        settings = self.settings
        headers = {"Content-Type": "application/json; charset=utf-8"}
        if bot:
            headers["Authorization"] = f"Bearer {settings.token}"
        try:
            response = await self._http.post(
                url, json=body, headers=headers, timeout=settings.timeout
            )
        except httpx.HTTPError as exc:
            raise SendFailed(f"{type(exc).__name__}: {exc}", retry=True) from None
        check_status(response)
        if not bot:
            return {}
        # The Web API answers 200 with {"ok": false, "error": ...} for its own refusals.
        try:
            answer = response.json()
        except ValueError:
            answer = {}
        if isinstance(answer, dict) and answer.get("ok") is True:
            return answer
        error = answer.get("error") if isinstance(answer, dict) else None
        if gone_ok and error in _GONE:
            logger.info("Slack message %s in %s not updated: %s", body.get("ts"),
                        body.get("channel"), error)  # fmt: skip
            return {}
        raise SendFailed(f"Slack refused the message: {error}", retry=error == "ratelimited")

    async def open_modal(self, press: Press, view: dict[str, Any]) -> None:
        """Open `view` for the presser (``views.open``, with the press's trigger); `SendFailed`
        when Slack refuses, or this sink is no bot."""
        if self.settings.token is None or press.trigger_id is None:
            raise SendFailed("only a bot's sink opens a modal, on a press Slack sent", retry=False)
        body = {"trigger_id": press.trigger_id, "view": view}
        await self._call(f"{self.settings.api_url}/views.open", body)

    async def reply(self, press: Press, text: str, *, replace: bool) -> None:
        """Tell Slack what became of a press: the message replaced by the outcome, or (when
        nothing was decided) a note to the presser alone. Best effort: the decision stands."""
        if press.response_url is None:
            return
        body = {"replace_original": replace, "response_type": "ephemeral", "text": escape(text)}
        with contextlib.suppress(httpx.HTTPError):
            await self._http.post(press.response_url, json=body, timeout=self.settings.timeout)


def _answering(
    question: dict[str, Any], value: str, out: list[dict[str, Any]], *, modal: bool
) -> list[dict[str, Any]]:
    """A question's choice buttons (a block of their own, appended to `out`) and the buttons
    that go with the link: Answer (opening the modal), and Decline."""
    choices = choice_buttons(question, value)
    if choices:
        out.append({"type": "actions", "block_id": "signoff.choices", "elements": choices})
    decline = _button("Decline", REJECT, value, style="danger")
    if modal and needs_modal(question):
        return [_button("Answer…", REPLY, value, style="primary"), decline]
    return [decline]


def _button(text: str, action_id: str, value: str, *, style: str) -> dict[str, Any]:
    return {
        "type": "button",
        "action_id": action_id,
        "text": {"type": "plain_text", "text": text},
        "style": style,
        "value": value,
    }
