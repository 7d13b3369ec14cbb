"""A worker process: resumes a paused Google ADK session behind signoff, as its resumer would.

python -m tests.integrations.adk_worker DATABASE SIDE_EFFECTS MODEL_CALLS SESSION SESSIONS_FILE
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from signoff.integrations.google_adk import confirmations
from tests.integrations.adk_app import DEFAULT, build, open_runs, say


async def work(database: str, side_effects: str, calls: str, session: str, sessions: str) -> None:
    runs = await asyncio.to_thread(open_runs, database)
    try:
        runner, _ = build(runs, DEFAULT, Path(side_effects), Path(calls), Path(sessions))
        found = await runs.bridge.arun(runs.store.list_approvals(status="approved"))
        pause = await runs.open_pause([a.id for a in found])
        assert pause is not None, "no pause waits on the approved calls"
        await say(runner, session, confirmations(pause.data["confirmations"]))
        await runner.close()
    finally:
        await asyncio.to_thread(runs.close)


def main() -> None:
    asyncio.run(work(*sys.argv[1:6]))
    print("done", flush=True)


if __name__ == "__main__":
    main()
