"""What every sink shares: the sink's shape and what a failed send says."""

from __future__ import annotations

from typing import Protocol

import httpx

from signoff.notify.notice import Notice
from signoff.notify.settings import Filters

__all__ = ["SendFailed", "Sink", "check_status"]


class SendFailed(Exception):
    """A send that did not arrive; `retry` says whether trying again may help."""

    def __init__(self, message: str, *, retry: bool) -> None:
        super().__init__(message)
        self.retry = retry


class Sink(Protocol):
    filters: Filters

    async def send(self, notice: Notice) -> None:
        """Deliver `notice` or raise `SendFailed`."""
        ...


def check_status(response: httpx.Response) -> None:
    """Raise `SendFailed` for an answer that is not a success: retried when the receiver is
    down or overloaded (5xx, 408, 429), given up when it refuses the request itself (4xx)."""
    if response.is_success:
        return
    status = response.status_code
    retry = status >= 500 or status in (408, 425, 429)
    raise SendFailed(f"HTTP {status}: {response.text[:300]}", retry=retry)
