"""The fixture of a framework's tests: `harness`, the framework's app (the test module's
``RIG``) over signoff's store on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.integrations.harness import Harness, opened

# The shared tests are written in modules of their own, which the test files take in.
pytest.register_assert_rewrite("tests.integrations.shared", "tests.integrations.shared_kept")


@pytest.fixture(params=["sqlite", "postgres"])
async def harness(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Harness]:
    rig = request.module.RIG
    kind = getattr(request.module, "Harness", Harness)  # a test file's own, with more to it
    async with opened(request.param, tmp_path, rig.open_runs) as found:
        yield kind(*found, rig=rig)
