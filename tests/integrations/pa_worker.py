"""A worker process: starts or resumes a Pydantic AI agent's thread behind signoff.

python -m tests.integrations.pa_worker DATABASE SIDE_EFFECTS MODEL_CALLS THREAD start|resume
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from signoff.integrations.pydantic_ai import SignoffAgent
from tests.integrations.pa_app import DEFAULT, build, open_runs


async def work(database: str, side_effects: str, calls: str, thread: str, action: str) -> None:
    runs = await asyncio.to_thread(open_runs, database)
    try:
        agent = SignoffAgent(build(DEFAULT, Path(side_effects), Path(calls)), runs,
                             requested_by="alice")  # fmt: skip
        if action == "start":
            await agent.run("go", thread=thread)
        else:
            await agent.resume(thread)
    finally:
        await asyncio.to_thread(runs.close)


def main() -> None:
    asyncio.run(work(*sys.argv[1:6]))
    print("done", flush=True)


if __name__ == "__main__":
    main()
