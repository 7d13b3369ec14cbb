"""Webhooks: the notice as JSON, POSTed and signed with the sink's secret.

Each request carries ``Signoff-Signature: t=<unix seconds>,v1=<hex>``, the HMAC-SHA256 of
``<t>.<body>`` under the secret, ``Signoff-Event`` and ``Signoff-Delivery`` (the same id on every
attempt: a receiver drops a repeat by it). A receiver checks the signature and refuses a
timestamp outside its replay window — `verify_signature` does both.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time

import httpx

from signoff.notify.notice import Notice
from signoff.notify.settings import WebhookSettings
from signoff.notify.transport import SendFailed, check_status

__all__ = ["BadSignature", "Webhook", "sign", "verify_signature"]

TOLERANCE = 300.0
"""Seconds a signed request stays acceptable: its replay window."""


class BadSignature(ValueError):
    """A webhook request that its sender did not sign, or signed too long ago."""


def sign(secret: str, body: bytes, *, timestamp: int) -> str:
    """The ``Signoff-Signature`` header of `body` sent at `timestamp`."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def verify_signature(
    secret: str,
    body: bytes,
    header: str | None,
    *,
    now: float | None = None,
    tolerance: float = TOLERANCE,
) -> None:
    """Raise `BadSignature` unless `header` signs `body` under `secret` within `tolerance`
    seconds of `now` — for the receivers of signoff's webhooks."""
    if not header:
        raise BadSignature("no Signoff-Signature header")
    fields: dict[str, list[str]] = {}
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        fields.setdefault(key, []).append(value)
    try:
        timestamp = int(fields["t"][0])
    except (KeyError, ValueError):
        raise BadSignature("the signature has no timestamp") from None
    if abs((time.time() if now is None else now) - timestamp) > tolerance:
        raise BadSignature(f"the signature's timestamp {timestamp} is outside the replay window")
    expected = sign(secret, body, timestamp=timestamp).partition("v1=")[2]
    if not any(hmac.compare_digest(expected, given) for given in fields.get("v1", [])):
        raise BadSignature("the signature does not match the body")


class Webhook:
    """A sink that POSTs each notice to one URL."""

    def __init__(self, settings: WebhookSettings, http: httpx.AsyncClient) -> None:
        self.settings = settings
        self.filters = settings.filters
        self._http = http

    async def send(self, notice: Notice) -> None:
        body = json.dumps(notice.payload(), ensure_ascii=False).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "signoff-webhook",
            "Signoff-Event": notice.event,
            "Signoff-Delivery": notice.id,
        }
        if self.settings.secret is not None:
            headers["Signoff-Signature"] = sign(
                self.settings.secret, body, timestamp=int(time.time())
            )
        try:
            response = await self._http.post(
                self.settings.url, content=body, headers=headers, timeout=self.settings.timeout
            )
        except httpx.HTTPError as exc:
            raise SendFailed(f"{type(exc).__name__}: {exc}", retry=True) from None
        check_status(response)
