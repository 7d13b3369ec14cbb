"""Email: a real SMTP server on loopback (aiosmtpd) receives the notice — over STARTTLS with a
login, its certificate checked — and a server that refuses the login is not asked again; mail
is sent on a thread of its own, never waiting for the tools' threads."""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from signoff import Policy, ToolCall
from signoff.gate import Gate
from signoff.notify import Notifications
from signoff.store import SQLStore
from signoff.testing import call
from signoff.types import Approve
from tests.deadline import HANG
from tests.notify.receivers import Mailbox, free_port
from tests.notify.test_outbox import notify

POLICY = Policy.from_dict({"rules": [{"ask": "delete_pod"}]})


def certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@contextmanager
def smtp_server(mailbox: Mailbox, tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """An SMTP server that requires STARTTLS, then a login as smtp-user / smtp-pass."""
    cert_file, key_file = certificate(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)

    def authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> Any:
        ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
            b"smtp-user",
            b"smtp-pass",
        )
        if ok:
            mailbox.logins.append((data.login.decode(), mechanism))
        return AuthResult(success=ok, handled=False)

    port = free_port()
    controller = Controller(
        mailbox, hostname="127.0.0.1", port=port, tls_context=context, require_starttls=True,
        authenticator=authenticate, auth_require_tls=True,
    )  # fmt: skip
    controller.start()
    try:
        yield port, cert_file
    finally:
        controller.stop()


def mail_settings(port: int, password: str) -> Any:
    return notify(
        {
            "base_url": "https://signoff.example",
            "email": [
                {
                    "host": "127.0.0.1",
                    "port": port,
                    "username": "smtp-user",
                    "password": password,
                    "sender": "signoff@example.com",
                    "to": ["oncall@example.com", "lead@example.com"],
                    "events": ["requested"],
                }
            ],
        }
    )


async def test_an_email_arrives_over_starttls_with_the_call_and_its_link(
    store: SQLStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    mailbox = Mailbox()
    with smtp_server(mailbox, tmp_path) as (port, cert_file):
        monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))  # trust the test's certificate
        notifications = Notifications(store, mail_settings(port, "smtp-pass"))
        gate = Gate(POLICY, store)
        await store.outbox_events(limit=0)
        [held] = await gate.check([call("delete_pod", name="nginx-123")], None)
        await gate.decide(held.approval.id, Approve(), actor="olga")  # type: ignore[union-attr]
        assert await notifications.pump() == 1  # only requests, as configured
    [mail] = mailbox.messages
    assert [login for login, _ in mailbox.logins] == ["smtp-user"]
    assert mailbox.envelopes == [("signoff@example.com", ["oncall@example.com",
                                                          "lead@example.com"])]  # fmt: skip
    assert mail["Subject"] == "[signoff] Approval needed: delete_pod"
    assert mail["X-Signoff-Event"] == "approval.requested"
    text, page = (part.get_payload(decode=True) for part in mail.walk()
                  if part.get_content_maintype() == "text")  # fmt: skip
    assert isinstance(text, bytes) and isinstance(page, bytes)
    link = f"https://signoff.example/approvals/{held.approval.id}"  # type: ignore[union-attr]
    assert f"Open it: {link}".encode() in text
    assert b'"name": "nginx-123"' in text
    assert f"href='{link}'".encode() in page


async def test_a_refused_login_is_not_tried_again(
    store: SQLStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    mailbox = Mailbox()
    with smtp_server(mailbox, tmp_path) as (port, cert_file):
        monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
        notifications = Notifications(store, mail_settings(port, "wrong"))
        await store.outbox_events(limit=0)
        await Gate(POLICY, store).check([call("delete_pod", name="a")])
        assert await notifications.pump() == 0
    [delivery] = await store.outbox()
    assert (delivery.status, delivery.attempts) == ("failed", 1)
    assert "SMTPAuthenticationError" in (delivery.error or "")
    assert mailbox.messages == []


async def test_an_untrusted_certificate_is_refused_and_retried(store: SQLStore, tmp_path: Path):
    mailbox = Mailbox()
    with smtp_server(mailbox, tmp_path) as (port, _):
        notifications = Notifications(store, mail_settings(port, "smtp-pass"))
        await store.outbox_events(limit=0)
        await Gate(POLICY, store).check([call("delete_pod", name="a")])
        assert await notifications.pump() == 0
    [delivery] = await store.outbox()
    assert (delivery.status, delivery.attempts) == ("pending", 1)
    assert "CERTIFICATE_VERIFY_FAILED" in (delivery.error or "")
    assert mailbox.messages == []


def test_a_line_break_in_a_tool_name_never_reaches_a_header():
    from datetime import UTC, datetime

    from signoff.notify.email import message
    from signoff.notify.notice import Notice

    settings = mail_settings(25, "x").email[0]
    notice = Notice(
        id="d1", kind="requested", at=datetime.now(UTC), actor="agent",
        tool="delete_pod\r\nBcc: everyone@example.com", approval=None, data={}, link=None,
    )  # fmt: skip
    mail = message(notice, settings)
    assert mail["Subject"] == "[signoff] Approval needed: delete_pod Bcc: everyone@example.com"
    assert mail["Bcc"] is None


async def test_an_email_goes_out_while_every_thread_the_tools_run_on_is_busy(
    store: SQLStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    loop = asyncio.get_running_loop()
    tools = ThreadPoolExecutor(max_workers=1)
    loop.set_default_executor(tools)  # where `asyncio.to_thread` runs a synchronous tool
    release = threading.Event()
    busy = loop.run_in_executor(None, release.wait, HANG)  # a tool that takes its time
    mailbox = Mailbox()
    try:
        with smtp_server(mailbox, tmp_path) as (port, cert_file):
            monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
            notifications = Notifications(store, mail_settings(port, "smtp-pass"))
            await store.outbox_events(limit=0)
            await Gate(POLICY, store).check([call("delete_pod", name="nginx-123")], None)
            async with asyncio.timeout(HANG):
                assert await notifications.pump() == 1
        assert not busy.done()  # the tool was still running when the mail went out
        [mail] = mailbox.messages
        assert mail["Subject"] == "[signoff] Approval needed: delete_pod"
    finally:
        release.set()
        await busy


async def test_an_email_of_an_edit_shows_both_argument_sets_and_links_only_to_the_page(
    store: SQLStore,
):
    """An email offers no decision link: its link opens the approval's page, which shows the
    call as it is when opened, and decides on that version."""
    from datetime import UTC, datetime

    from signoff.notify import Notice
    from signoff.notify.email import message
    from signoff.types import Edit

    settings = mail_settings(25, "smtp-pass")
    gate = Gate(Policy.from_dict({"rules": [{"ask": "pay", "approvals": {"count": 2}}]}), store)
    [held] = await gate.check([call("pay", amount=100)])
    assert held.approval is not None
    await gate.decide(held.approval.id, Edit(args={"amount": 999999}), actor="olga", version=1)
    approval = await Notifications(store, settings).current(held.approval.id)
    link = f"https://signoff.example/approvals/{held.approval.id}"
    notice = Notice(
        id="d1", kind="edited", at=datetime.now(UTC), actor="olga", tool="pay",
        approval=approval, data={"needed": 1}, link=link,
    )  # fmt: skip
    mail = message(notice, settings.email[0])
    text = str(mail.get_body(("plain",)).get_content())  # type: ignore[union-attr]
    assert mail["Subject"] == "[signoff] Edited by olga, 1 more approval needed: pay"
    assert 'Edited by: olga\nArguments:\n    {\n      "amount": 999999\n    }\n' in text
    assert 'Requested arguments:\n    {\n      "amount": 100\n    }\n' in text
    assert "Approvals: olga (1 of 2)\nVersion: 2\n" in text
    page = str(mail.get_body(("html",)).get_content())  # type: ignore[union-attr]
    assert page.count("href=") == 1 and f"href='{link}'" in page


async def test_an_email_of_a_question_asks_it_and_links_to_where_it_is_answered(
    store: SQLStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    mailbox = Mailbox()
    asked = ToolCall(
        id="q1",
        name="ask_person",
        kind="question",
        args={"question": "Which region?", "choices": ["eu-west", "us-east"], "multiple": True},
    )
    with smtp_server(mailbox, tmp_path) as (port, cert_file):
        monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
        notifications = Notifications(store, mail_settings(port, "smtp-pass"))
        gate = Gate(Policy.from_dict({"rules": [{"ask": {"question": "*"}}]}), store)
        await store.outbox_events(limit=0)
        [held] = await gate.check([asked], None)
        assert await notifications.pump() == 1
    [mail] = mailbox.messages
    assert mail["Subject"] == "[signoff] Question for you: Which region?"
    text, page = (part.get_payload(decode=True) for part in mail.walk()
                  if part.get_content_maintype() == "text")  # fmt: skip
    assert isinstance(text, bytes) and isinstance(page, bytes)
    link = f"https://signoff.example/approvals/{held.approval.id}"  # type: ignore[union-attr]
    text = text.replace(b"\r\n", b"\n")
    assert b"Question: Which region?\n" in text
    assert b"Choose one or more:\n    - eu-west\n    - us-east\n" in text
    assert f"Answer it: {link}".encode() in text
    assert b"Arguments" not in text  # the question, not its JSON
    assert f"href='{link}'>Answer it in signoff".encode() in page
