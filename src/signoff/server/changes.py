"""Every change to an approval, live, for whoever shows approvals as they stand — held, edited,
voted on, handed on, escalated, judged again by a new policy, decided — wherever the change was
made (this replica or another, any channel, any run or none): what ``GET /v1/approvals/changes``
streams and the WebSocket pushes.

The audit log is the feed: each of those changes writes its entry, whose subject is the
approval, in the transaction that makes it, so the log's order is the order they happened in and
its entry numbers are the stream's ids.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Final

from signoff.errors import NotFoundError, StoreUnavailableError
from signoff.gate.notifier import ANY
from signoff.server.service import Service
from signoff.types import Approval

__all__ = ["PAGE", "approval_changes"]

PAGE: Final = 500
"""Audit entries read at a time."""
logger = logging.getLogger(__name__)


async def approval_changes(service: Service, *, after: int) -> AsyncIterator[tuple[int, Approval]]:
    """Each approval changed after audit entry `after`, as it stands when read, with the number
    of the newest entry that changed it; live, until cancelled. Changes made here wake it at
    once; those of other replicas are found every `poll_interval`. A database that stops
    answering is asked again then: nothing is skipped meanwhile."""
    with service.gate.notifier.subscription(ANY) as woken:
        while True:
            woken.clear()
            try:
                while True:  # every page written since, however many
                    last, found = await service.store.audit_changes(after=after, limit=PAGE)
                    changed: dict[str, int] = {}
                    for seq, approval_id in found:  # each once, at its newest change
                        changed.pop(approval_id, None)
                        changed[approval_id] = seq
                    for approval in await _read(service, changed):
                        yield changed[approval.id], approval
                    if last - after < PAGE:
                        after = last
                        break
                    after = last
            except StoreUnavailableError as exc:
                logger.warning("following approval changes: %s", exc)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(service.poll_interval):
                    await woken.wait()


async def _read(service: Service, changed: dict[str, int]) -> list[Approval]:
    """The approvals by id; an id that names none (the subject of a damaged entry) is passed
    over, never the end of the stream."""
    if not changed:
        return []
    try:
        return await service.store.get_approvals(list(changed))
    except NotFoundError:
        found = []
        for approval_id in changed:
            with contextlib.suppress(NotFoundError):
                found.append(await service.store.get_approval(approval_id))
        return found
