"""One LangChain agent behind signoff, built the same way by the tests and by the worker
processes they start (tests/integrations/lc_worker.py)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.tools import StructuredTool

from signoff import Policy
from signoff.gate.external import ExternalRuns
from signoff.integrations.langchain import SignoffMiddleware, connect
from tests.integrations.fakes import ScriptedChatModel, counting_tools

POLICY: dict[str, Any] = {
    "default": "ask",
    "rules": [
        {"allow": "read_file"},
        {"deny": "charge", "when": {"amount": {"gt": 1000}}},
        {"ask": "charge", "approvers": ["finance"]},
    ],
}

HANG_IN_TOOL = "SIGNOFF_TEST_HANG_IN_TOOL"
"""When set, the `charge` tool records its execution, says ``inside the tool`` on standard
output and hangs (for a test to kill the process there)."""
IDEMPOTENT = "SIGNOFF_TEST_IDEMPOTENT_CHARGE"
"""When set, the `charge` tool is declared idempotent (its metadata)."""


def policy() -> Policy:
    return Policy.from_dict(POLICY)


def open_runs(database: str) -> ExternalRuns:
    return connect(policy(), origin="langgraph", database=database, principal="studio",
                   roles=["finance"])  # fmt: skip


@contextlib.contextmanager
def checkpointer(spec: str) -> Iterator[Any]:
    """A SqliteSaver for a file path, a PostgresSaver for a postgresql:// URL."""
    if spec.startswith("postgresql"):
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(spec) as saver:
            saver.setup()
            yield saver
        return
    from langgraph.checkpoint.sqlite import SqliteSaver

    connection = sqlite3.connect(spec, check_same_thread=False)
    on_file = SqliteSaver(connection)
    try:
        yield on_file
    finally:
        # LangGraph may still be writing a checkpoint on one of its threads: closing the
        # connection under that write crashes the process (seen once), so wait for it.
        with on_file.lock:
            connection.close()


def tools(side_effects: Path) -> list[StructuredTool]:
    found: list[Any] = counting_tools(side_effects)
    metadata = {"idempotent": True} if os.environ.get(IDEMPOTENT) else None
    if os.environ.get(HANG_IN_TOOL) is None:
        if metadata is not None:
            found = [t.model_copy(update={"metadata": metadata}) if t.name == "charge" else t
                     for t in found]  # fmt: skip
        return found

    def charge(amount: int, customer: str = "acme") -> str:
        """Charge a customer."""
        with side_effects.open("a") as f:
            f.write(f"charge {amount} {customer}\n")
        print("inside the tool", flush=True)
        while True:
            time.sleep(1)  # the test kills this process here

    hanging = StructuredTool.from_function(charge, metadata=metadata)
    return [t for t in found if t.name != "charge"] + [hanging]


SCRIPT: list[Any] = [
    [
        ("read_file", {"path": "report.txt"}),
        ("send_email", {"to": "bob@example.com", "body": "hi"}),
        ("charge", {"amount": 5000}),
        ("charge", {"amount": 50}),
    ],
    "done",
]


def build(runs: ExternalRuns, saver: Any, side_effects: Path, model_calls: Path,
          script: list[Any] | None = None) -> Any:  # fmt: skip
    model = ScriptedChatModel(script=script or SCRIPT, calls_file=str(model_calls))
    return create_agent(model, tools(side_effects), middleware=[SignoffMiddleware(runs)],
                        checkpointer=saver)  # fmt: skip
