import asyncio
import sys

import pytest

from signoff.cli.listen import run_server


def loop_module() -> str:
    seen: list[str] = []

    async def main() -> None:
        seen.append(type(asyncio.get_running_loop()).__module__.partition(".")[0])

    run_server(main())
    return seen[0]


def test_a_server_runs_on_uvloop_where_it_is_installed():
    pytest.importorskip("uvloop")
    assert loop_module() == "uvloop"


def test_a_server_runs_on_asyncio_without_uvloop(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "uvloop", None)  # `import uvloop` raises ImportError
    assert loop_module() == "asyncio"
