"""Email over SMTP: the notice as a plain-text message with an HTML twin, sent with STARTTLS
(or SMTPS) and the account from the environment. Certificates are checked against the system's
trust store (``SSL_CERT_FILE`` names another).

smtplib blocks, so each sink sends on a thread of its own — not the loop's default executor,
where tools run: an SMTP server that answers slowly (each step may take the sink's `timeout`)
keeps its own mail waiting, never a tool. One thread is enough: a sink's notices go out one
after another anyway."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import html
import smtplib
import ssl
from concurrent.futures import ThreadPoolExecutor
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from signoff.notify.notice import Notice
from signoff.notify.settings import EmailSettings
from signoff.notify.transport import SendFailed

__all__ = ["Email", "message", "recipients"]


def message(notice: Notice, settings: EmailSettings) -> EmailMessage:
    mail = EmailMessage()
    # A tool's name is anyone's text: no line break may reach a header.
    mail["Subject"] = " ".join(f"[signoff] {notice.title}".split())
    mail["From"] = settings.sender
    mail["To"] = ", ".join(recipients(notice, settings))
    mail["Date"] = formatdate(localtime=False)
    mail["Message-ID"] = make_msgid(idstring=notice.id, domain="signoff")
    mail["X-Signoff-Event"] = notice.event
    mail.set_content(notice.text())
    rows = "".join(
        f"<tr><th align='left' valign='top'>{html.escape(label)}</th>"
        f"<td><pre style='margin:0;white-space:pre-wrap'>{html.escape(value)}</pre></td></tr>"
        for label, value in notice.facts()
    )
    verb = "Answer it" if notice.answerable else "Open it"
    link = (
        ""
        if notice.link is None
        else f"<p><a href='{html.escape(notice.link, quote=True)}'>{verb} in signoff</a></p>"
    )
    mail.add_alternative(
        f"<h2>{html.escape(notice.title)}</h2><table>{rows}</table>{link}", subtype="html"
    )
    return mail


def recipients(notice: Notice, settings: EmailSettings) -> tuple[str, ...]:
    """Whom the notice goes to: an approval assigned to a person this sink knows the address
    of goes to them alone; anything else to the sink's `to`."""
    assignee = notice.data.get("to") if notice.kind == "assigned" else None
    if isinstance(assignee, str) and assignee in settings.people:
        return (settings.people[assignee],)
    return settings.to


class Email:
    """A sink that mails each notice to its recipients."""

    def __init__(self, settings: EmailSettings) -> None:
        self.settings = settings
        self.filters = settings.filters
        self._sender = ThreadPoolExecutor(max_workers=1, thread_name_prefix="signoff-email")

    async def send(self, notice: Notice) -> None:
        mail = message(notice, self.settings)
        send = functools.partial(contextvars.copy_context().run, self._send, mail)
        await asyncio.get_running_loop().run_in_executor(self._sender, send)

    def _send(self, mail: EmailMessage) -> None:
        settings = self.settings
        try:
            if settings.ssl:
                client: smtplib.SMTP = smtplib.SMTP_SSL(
                    settings.host, settings.port, timeout=settings.timeout,
                    context=ssl.create_default_context(),
                )  # fmt: skip
            else:
                client = smtplib.SMTP(settings.host, settings.port, timeout=settings.timeout)
            with client:
                if settings.starttls:
                    client.starttls(context=ssl.create_default_context())
                if settings.username is not None and settings.password is not None:
                    client.login(settings.username, settings.password)
                client.send_message(mail)
        except (smtplib.SMTPAuthenticationError, smtplib.SMTPNotSupportedError) as exc:
            raise SendFailed(f"{type(exc).__name__}: {exc}", retry=False) from None
        except (smtplib.SMTPException, OSError) as exc:
            raise SendFailed(f"{type(exc).__name__}: {exc}", retry=True) from None
