"""The loop every resuming worker runs: wake on decisions, find what is ready, resume each once.

`Runner.work()` (signoff's own runs) and `Resumer.work()` (other frameworks' paused runs) differ
only in what they find ready and how they resume one; this is the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from signoff.errors import SignoffError
from signoff.gate.core import Gate
from signoff.gate.ids import new_id
from signoff.gate.notifier import ANY

__all__ = ["work_ready"]

logger = logging.getLogger("signoff.worker")


async def work_ready(
    gate: Gate,
    ready: Callable[[], Awaitable[list[str]]],
    resume: Callable[[str], Coroutine[Any, Any, bool]],
    *,
    poll_interval: float,
    concurrency: int,
) -> None:
    """Until cancelled: sweep what is due (where this worker holds the sweeper's lease),
    `resume` each id `ready` lists (each at most once at
    a time, at most `concurrency` at once), then wait for a decision — through this gate at
    once, from other processes on PostgreSQL — or `poll_interval` seconds. Cancelled, the
    resumes under way are cancelled too (a lease hands them to another worker)."""
    await gate.listen()
    owner = f"{socket.gethostname()}:{os.getpid()}:{new_id()}"
    busy: dict[str, asyncio.Task[bool]] = {}
    try:
        with gate.notifier.subscription(ANY) as decided:
            while True:
                decided.clear()
                try:
                    await gate.sweep(owner, lease=5 * poll_interval)
                    found = await ready()
                except SignoffError:
                    logger.exception("finding what is ready failed; trying again")
                    found = []
                for key in found:
                    if len(busy) >= concurrency:
                        break  # the rest wait for the next round
                    if key not in busy:  # side by side, each once
                        task = asyncio.create_task(resume(key))
                        busy[key] = task
                        task.add_done_callback(functools.partial(_forget, busy, key))
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(poll_interval):
                        await decided.wait()
    finally:
        tasks = list(busy.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _forget(busy: dict[str, asyncio.Task[bool]], key: str, _task: object) -> None:
    busy.pop(key, None)
