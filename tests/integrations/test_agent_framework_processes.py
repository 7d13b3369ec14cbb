"""Agent Framework threads paused in one process and resumed by others (worker processes of the
same app, tests/integrations/worker.py): the tests every framework shares, and an idempotent
tool killed inside, on its app (tests/integrations/maf_app.py), on SQLite and PostgreSQL."""

from __future__ import annotations

import importlib.util

import pytest

if importlib.util.find_spec("agent_framework") is None:  # pragma: no cover
    pytest.skip(
        "Microsoft Agent Framework is not installed: pip install 'signoff[agent-framework]'",
        allow_module_level=True,
    )

from tests.integrations import maf_app
from tests.integrations.shared import (
    test_a_thread_started_in_one_process_is_resumed_by_two_others_at_once,
    test_a_worker_killed_inside_the_tool_leaves_the_call_unknown_and_not_run_again,
    test_an_idempotent_tool_whose_worker_was_killed_inside_it_runs_again_once,
)

__all__ = [  # the shared tests, run here on this rig
    "test_a_thread_started_in_one_process_is_resumed_by_two_others_at_once",
    "test_a_worker_killed_inside_the_tool_leaves_the_call_unknown_and_not_run_again",
    "test_an_idempotent_tool_whose_worker_was_killed_inside_it_runs_again_once",
]

RIG = maf_app
