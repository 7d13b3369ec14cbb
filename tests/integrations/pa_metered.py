"""A Pydantic AI app beside a server, serving its metrics as docs/operations.md has it (the page's
``metrics.py``, on the port given): it says ``serving``; told ``go`` (a line on its standard
input), it plays the default script on a thread, prints the id of each call it holds, then
``held``; once its resumer has resumed the thread (the calls decided elsewhere) it says
``resumed``, and it ends when its input does — Prometheus reads its last counts meanwhile.

python -m tests.integrations.pa_metered DATABASE FOLDER PORT
"""

from __future__ import annotations

import sys
from pathlib import Path

from signoff.integrations.pydantic_ai import SignoffAgent
from tests.deadline import HANG
from tests.integrations.harness import DEFAULT
from tests.integrations.pa_app import THREAD, build, open_runs
from tests.test_docs import ROOT, files


def main(database: str, folder: str, port: str) -> None:
    served = files(ROOT / "docs" / "operations.md")["metrics.py"].replace("9464", port)
    exec(compile(served, "docs/operations.md:metrics.py", "exec"), {})
    runs = open_runs(database)
    built = build(DEFAULT, Path(folder) / "side-effects.txt", Path(folder) / "calls.txt")
    agent = SignoffAgent(built, runs, requested_by="alice")
    resumes = agent.resumer()
    stop = resumes.start()
    print("serving", flush=True)
    sys.stdin.readline()
    agent.run_sync("go", thread=THREAD)
    for approval in runs.run(runs.waiting(THREAD)):
        print(approval.id, flush=True)
    print("held", flush=True)
    resumes.wait(THREAD, timeout=HANG)
    print("resumed", flush=True)
    sys.stdin.read()
    stop()
    runs.close()


if __name__ == "__main__":
    main(*sys.argv[1:4])
