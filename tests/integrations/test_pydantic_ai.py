"""Pydantic AI agents behind signoff: the real `Agent`, its own `FunctionModel` (offline), signoff's
store on SQLite and PostgreSQL, tools that count every real execution in a side-effect file, and
worker processes that resume, race and die — the tests every framework shares, on this one's
app (tests/integrations/pa_app.py). An edit the tool's schema or the policy refuses is refused
as in every integration (tests/integrations/test_scenarios.py)."""

from __future__ import annotations

from tests.integrations import pa_app
from tests.integrations.shared import *  # noqa: F403 - the shared tests run here, on this rig
from tests.integrations.shared_kept import *  # noqa: F403

RIG = pa_app
