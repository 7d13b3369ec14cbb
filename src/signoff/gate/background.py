"""Work that runs beside a block of code, and is stopped when the block ends."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Any

__all__ = ["background", "cancel"]


@contextlib.asynccontextmanager
async def background(work: Coroutine[Any, Any, object]) -> AsyncIterator[None]:
    """Run `work` as a task for as long as the block lasts; then stop it."""
    task = asyncio.create_task(work)
    try:
        yield
    finally:
        await cancel(task)


async def cancel(task: asyncio.Task[Any]) -> None:
    """Cancel `task` and wait until it has ended."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
