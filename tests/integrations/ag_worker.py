"""A worker process: starts or resumes an Agno agent's session behind signoff.

python -m tests.integrations.ag_worker DATABASE SIDE_EFFECTS MODEL_CALLS SESSION start|resume
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from signoff.integrations.agno import SignoffAgent
from tests.integrations.ag_app import DEFAULT, build, open_runs


async def work(database: str, side_effects: str, calls: str, session: str, action: str) -> None:
    runs = await asyncio.to_thread(open_runs, database)
    try:
        agent = SignoffAgent(build(DEFAULT, Path(side_effects), Path(calls)), runs,
                             requested_by="alice")  # fmt: skip
        if action == "start":
            await agent.run("go", session_id=session)
        else:
            out = await agent.resume(session)
            print("resumed" if out is not None else "nothing to resume", flush=True)
    finally:
        await asyncio.to_thread(runs.close)


def main() -> None:
    asyncio.run(work(*sys.argv[1:6]))
    print("done", flush=True)


if __name__ == "__main__":
    main()
