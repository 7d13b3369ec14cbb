"""A worker process: resumes (or starts) a LangChain agent's thread behind signoff.

python -m tests.integrations.lc_worker DATABASE CHECKPOINTS SIDE_EFFECTS MODEL_CALLS THREAD
    start | resume PAUSE | decide-and-resume APPROVAL
"""

from __future__ import annotations

import sys
from pathlib import Path

from langgraph.types import Command

from tests.integrations.lc_app import build, checkpointer, open_runs


def main() -> None:
    database, checkpoints, side_effects, model_calls, thread, action, *rest = sys.argv[1:]
    runs = open_runs(database)
    try:
        with checkpointer(checkpoints) as saver:
            agent = build(runs, saver, Path(side_effects), Path(model_calls))
            config = {"configurable": {"thread_id": thread}}
            if action == "start":
                agent.invoke({"messages": [{"role": "user", "content": "go"}]}, config)
            else:
                agent.invoke(Command(resume={"signoff": {"pause": rest[0]}}), config)
    finally:
        runs.close()
    print("done", flush=True)


if __name__ == "__main__":
    main()
