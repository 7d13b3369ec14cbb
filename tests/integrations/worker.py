"""A worker process: starts or resumes a thread of one framework's app behind signoff, as
another replica of the app would (each app module is its framework's `Rig`).

python -m tests.integrations.worker APP DATABASE FOLDER THREAD start|resume

After a resume it says ``resumed``, or ``nothing to resume`` where nothing went on; then
``done``.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from pathlib import Path
from typing import cast

from tests.integrations.harness import Rig


async def work(rig: Rig, database: str, folder: str, thread: str, action: str) -> None:
    runs = await asyncio.to_thread(rig.open_runs, database)
    try:
        agent = rig.agent(runs, Path(folder))
        if action == "start":
            await rig.start(agent, thread)
        else:
            out = await rig.resume(agent, thread)
            print("resumed" if out is not None else "nothing to resume", flush=True)
    finally:
        await asyncio.to_thread(runs.close)


def main() -> None:
    app, *rest = sys.argv[1:6]
    asyncio.run(work(cast(Rig, importlib.import_module(app)), *rest))
    print("done", flush=True)


if __name__ == "__main__":
    main()
