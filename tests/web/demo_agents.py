"""The demo's agents for `signoff serve --agents tests.web.demo_agents:agents` in the browser
tests: the files and ops agents of `signoff demo`, on the data folder SIGNOFF_TEST_DEMO_DIR
names, so a test can give them a server config of its own (a longer undo window)."""

from __future__ import annotations

import os
from pathlib import Path

from signoff.agent import Agent
from signoff.demo.agents import demo_agents
from signoff.demo.model import demo_model


def agents() -> list[Agent]:
    folder = Path(os.environ["SIGNOFF_TEST_DEMO_DIR"])
    return demo_agents(folder, folder / "signoff.db", demo_model())
