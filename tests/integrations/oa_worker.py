"""A worker process: starts or resumes an OpenAI Agents SDK agent's thread behind signoff.

python -m tests.integrations.oa_worker DATABASE SIDE_EFFECTS MODEL_CALLS THREAD start|resume
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from agents import set_tracing_disabled

from tests.integrations.oa_app import DEFAULT, open_runs, signoff_agent


async def work(database: str, side_effects: str, calls: str, thread: str, action: str) -> None:
    runs = await asyncio.to_thread(open_runs, database)
    try:
        idempotent = ["charge"] if os.environ.get("IDEMPOTENT") else []
        agent = signoff_agent(runs, DEFAULT, Path(side_effects), Path(calls),
                              idempotent=idempotent)  # fmt: skip
        if action == "start":
            await agent.run("go", thread=thread)
        else:
            await agent.resume(thread)
    finally:
        await asyncio.to_thread(runs.close)


def main() -> None:
    set_tracing_disabled(True)
    asyncio.run(work(*sys.argv[1:6]))
    print("done", flush=True)


if __name__ == "__main__":
    main()
