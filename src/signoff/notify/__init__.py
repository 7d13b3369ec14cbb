"""Notifications (``notify:`` in the config): webhooks, Slack and email, told of every request
for approval, decision, expiry and unknown outcome, from a durable outbox sent once across
replicas. Needs the ``server`` extra (httpx)."""

from signoff.notify.dispatcher import Notifications
from signoff.notify.notice import Notice
from signoff.notify.settings import NotifySettings, read_notify
from signoff.notify.webhook import BadSignature, verify_signature

__all__ = ["BadSignature", "Notice", "Notifications", "NotifySettings", "read_notify",
           "verify_signature"]  # fmt: skip
