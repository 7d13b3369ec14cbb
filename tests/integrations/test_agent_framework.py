"""Microsoft Agent Framework agents behind signoff: the real `Agent`, a chat client of the
framework's own layers playing a script (offline), signoff's store on SQLite and PostgreSQL,
tools that count every real execution in a side-effect file, and worker processes that resume,
race and die — this framework's own tests, and those every framework shares, on its app
(tests/integrations/maf_app.py). What may run and who may decide is the shared scenarios'
(tests/integrations/test_scenarios.py)."""

from __future__ import annotations

from tests.integrations import maf_app
from tests.integrations.shared import *  # noqa: F403 - the shared tests run here, on this rig
from tests.integrations.shared_kept import (
    test_a_resume_before_any_decision_leaves_the_pause_to_the_later_decision,
    test_a_resume_renews_its_mark_while_a_tool_runs_and_ends_it,
    test_an_undecided_call_waits_on_and_the_decided_one_runs,
    test_the_resumer_leaves_a_pause_waiting_while_another_process_resumes_the_thread,
)

__all__ = [
    "test_a_resume_before_any_decision_leaves_the_pause_to_the_later_decision",
    "test_a_resume_renews_its_mark_while_a_tool_runs_and_ends_it",
    "test_an_undecided_call_waits_on_and_the_decided_one_runs",
    "test_the_resumer_leaves_a_pause_waiting_while_another_process_resumes_the_thread",
]

RIG = maf_app
