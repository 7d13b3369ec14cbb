"""The commands the CLI tells a person to run are typed as this ``signoff`` is reached here:
``signoff`` when the PATH finds it, else its path (``make demo`` runs ``.venv/bin/signoff``)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from signoff.cli.program import typed
from tests.deadline import HANG


def installed(folder: Path) -> Path:
    """A ``signoff`` script in `folder`/.venv/bin, as an install puts it there."""
    script = folder / ".venv" / "bin" / "signoff"
    script.parent.mkdir(parents=True)
    script.write_text(
        f"#!{sys.executable}\nimport sys\nfrom signoff.cli import main\nsys.exit(main())\n"
    )
    script.chmod(0o755)
    return script


def test_the_program_the_path_finds_is_typed_by_its_name(tmp_path: Path):
    script = installed(tmp_path)
    search = os.pathsep.join(["/nowhere", str(script.parent)])
    assert typed(str(script), search=search, folder="/") == "signoff"
    assert typed(".venv/bin/signoff", search=search, folder=str(tmp_path)) == "signoff"


def test_a_program_off_the_path_is_typed_by_its_shorter_path(tmp_path: Path):
    script = installed(tmp_path)
    other = installed(tmp_path / "elsewhere")  # the PATH finds another signoff
    inside = str(tmp_path)
    assert typed(str(script), search="/nowhere", folder=inside) == ".venv/bin/signoff"
    assert typed(str(script), search=str(other.parent), folder=inside) == ".venv/bin/signoff"
    assert typed(str(script), search=None, folder=str(script.parent)) == "./signoff"
    far = tmp_path.joinpath(*["d"] * len(str(script)))  # ../ that many times: the longer
    assert typed(str(script), search="/nowhere", folder=str(far)) == str(script)


def test_a_module_run_with_python_m_is_typed_so(tmp_path: Path):
    main = "/somewhere/site-packages/signoff/__main__.py"
    python = installed(tmp_path).with_name("python")
    python.symlink_to(sys.executable)
    assert typed(main, search="/nowhere", folder=str(tmp_path), python=str(python)) == (
        ".venv/bin/python -m signoff"
    )
    assert typed(main, search=str(python.parent), folder="/", python=str(python)) == (
        "python -m signoff"
    )


async def banner(script: Path, search: str) -> str:
    """What ``signoff demo`` prints before it serves, started as `script` with PATH `search`."""
    process = await asyncio.create_subprocess_exec(
        str(script), "demo", "--port", "0",
        cwd=script.parents[2], env={**os.environ, "PATH": search, "COLUMNS": "300"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert process.stdout is not None
    said: list[str] = []
    try:
        async with asyncio.timeout(HANG):
            while not said or "Ctrl+C" not in said[-1]:
                line = (await process.stdout.readline()).decode()
                assert line, "the demo ended before serving:\n" + "".join(said)
                said.append(line)
    finally:
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(HANG):
            await process.wait()
    return "".join(said)


async def test_the_demo_banner_names_the_inbox_command_as_it_is_typed_here(tmp_path: Path):
    script = installed(tmp_path)
    off_path = await banner(script, os.pathsep.join(["/usr/bin", "/bin"]))
    assert "or decide in a terminal: .venv/bin/signoff inbox\n" in off_path
    on_path = await banner(script, os.pathsep.join([str(script.parent), "/usr/bin", "/bin"]))
    assert "or decide in a terminal: signoff inbox\n" in on_path
