"""One LangChain agent behind signoff, built the same way by the tests and by the worker
processes they start (tests/integrations/lc_worker.py): the real `create_agent`, a scripted chat
model, and the tools every framework's app wraps (tests/integrations/harness.py)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.tools import StructuredTool

from signoff import Policy
from signoff.gate.external import ExternalRuns
from signoff.integrations.langchain import SignoffMiddleware, connect
from tests.integrations.fakes import ScriptedChatModel
from tests.integrations.harness import DEFAULT, IDEMPOTENT, POLICY
from tests.integrations.harness import tools as counting


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
    """send_email, charge and read_file; `charge` is idempotent where `IDEMPOTENT` is set."""
    read_file, send_email, charge, _ = counting(side_effects)
    metadata = {"idempotent": True} if os.environ.get(IDEMPOTENT) else None
    return [StructuredTool.from_function(send_email),
            StructuredTool.from_function(charge, metadata=metadata),
            StructuredTool.from_function(read_file)]  # fmt: skip


def build(runs: ExternalRuns, saver: Any, side_effects: Path, model_calls: Path,
          script: list[Any] | None = None) -> Any:  # fmt: skip
    model = ScriptedChatModel(script=script or DEFAULT, calls_file=str(model_calls))
    return create_agent(model, tools(side_effects), middleware=[SignoffMiddleware(runs)],
                        checkpointer=saver)  # fmt: skip
