"""The package as a user gets it: `make dist`'s build (`uv build`) makes a wheel that carries every
file of `signoff` (the web inbox's, the example policies) and the LICENSE, and that, installed with
`[server]` into a fresh virtualenv, serves the demo's inbox."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import httpx

from tests.deadline import HANG

ROOT = Path(__file__).resolve().parents[1]
UV = ROOT / ".tools" / "bin" / "uv"  # `make install` puts it there


def uv(*arguments: str | Path, cwd: Path) -> str:
    # uv's own cache (shared with `make install`) makes this quick; what it lacks comes from PyPI.
    env = os.environ | {"UV_PYTHON_DOWNLOADS": "never"}
    env.pop("VIRTUAL_ENV", None)  # the test's venv is not the one being made
    result = subprocess.run(
        [str(UV), *map(str, arguments)], cwd=cwd, env=env, capture_output=True, text=True,
        check=False, timeout=HANG * 5,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def package_files() -> set[str]:
    """The files of src/signoff that git keeps, as the wheel names them."""
    listed = subprocess.run(
        ["git", "ls-files", "src/signoff"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return {path.removeprefix("src/") for path in listed}


async def test_the_wheel_installed_with_server_in_a_fresh_venv_serves_the_inbox(tmp_path: Path):
    uv("build", "--out-dir", tmp_path / "dist", cwd=ROOT)
    [wheel] = (tmp_path / "dist").glob("signoff-*-py3-none-any.whl")
    [sdist] = (tmp_path / "dist").glob("signoff-*.tar.gz")
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = set(archive.namelist())
        packed_script = archive.read("signoff/server/web/app.js").decode()
    assert package_files() - in_wheel == set()
    assert {"signoff/server/web/index.html", "signoff/examples/policy.yaml"} <= in_wheel
    info = wheel.name.removesuffix("-py3-none-any.whl") + ".dist-info"
    assert f"{info}/licenses/LICENSE" in in_wheel
    with tarfile.open(sdist) as archive:
        assert f"{sdist.name.removesuffix('.tar.gz')}/LICENSE" in archive.getnames()

    venv = tmp_path / "venv"
    uv("venv", "--python", sys.executable, venv, cwd=tmp_path)
    # The lock's versions: those `make install` cached, and the ones the suite tests.
    uv("pip", "install", "--python", venv / "bin" / "python", f"{wheel}[server]",
       "--constraints", ROOT / "requirements.lock", cwd=tmp_path)  # fmt: skip
    where = subprocess.run(
        [venv / "bin" / "python", "-c", "import signoff; print(signoff.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert Path(where.strip()).is_relative_to(venv), where  # the wheel's, not this checkout's

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    demo = await asyncio.create_subprocess_exec(
        venv / "bin" / "signoff", "demo", "--port", "0", "--data-dir", tmp_path / "data",
        cwd=tmp_path, env=env | {"COLUMNS": "200"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert demo.stdout is not None
    try:
        said: list[str] = []
        async with asyncio.timeout(HANG):
            while not (found := re.search(r"http://127(?:\.\d+){3}:\d+", "".join(said[-1:]))):
                line = (await demo.stdout.readline()).decode()
                assert line, "the demo ended before serving:\n" + "".join(said)
                said.append(line)
        async with httpx.AsyncClient(base_url=found.group(0), timeout=HANG) as client:
            page = await client.get("/")
            script = await client.get("/ui/app.js")
    finally:
        demo.send_signal(signal.SIGINT)
        async with asyncio.timeout(HANG):
            await demo.wait()
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "<title>signoff" in page.text and '<script type="module" src="/ui/app.js">' in page.text
    assert script.status_code == 200
    assert "javascript" in script.headers["content-type"]
    assert script.text == packed_script
