"""The partition test's processes, each on a host of its own (`network.Host`): a PostgreSQL
cluster of the test's own, and `signoff serve` replicas that can be SIGKILLed and started again
at the same address."""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.chaos.network import Host
from tests.deadline import HANG

__all__ = ["Postgres", "Replica", "postgres_programs"]

ROOT = Path(__file__).resolve().parents[2]
PORT = 8700
"""Where each replica listens, on its own host's address."""


def postgres_programs() -> Path | None:
    """The folder of the PostgreSQL server's programs (Debian's layout), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=_version)
    return Path(found[-1]).parent if found and shutil.which("runuser") else None


def _version(path: str) -> int:
    return int(Path(path).parents[1].name.split(".")[0])


@dataclass
class Postgres:
    """A cluster listening on `addresses` of `host`, what it logs in `log`; run as the
    ``postgres`` user (the server refuses root), in a folder of its own that user can reach,
    removed when it stops. Durable writes off: no power is cut here."""

    host: Host
    addresses: list[str]
    programs: Path
    log: Path
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="signoff-pg-")))
    process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        data, log = self.folder / "data", self.log
        shutil.chown(self.folder, "postgres")
        await _checked("runuser", "-u", "postgres", "--", str(self.programs / "initdb"),
                       "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync",
                       "-E", "UTF8")  # fmt: skip
        with (data / "pg_hba.conf").open("a") as hba:  # the replicas' hosts, on their links
            hba.write("host all all 0.0.0.0/0 trust\n")
        with log.open("ab") as out:
            self.process = await asyncio.create_subprocess_exec(
                *self.host.command([
                    "runuser", "-u", "postgres", "--", str(self.programs / "postgres"),
                    "-D", str(data), "-k", str(self.folder), "-p", "5432",
                    "-c", f"listen_addresses={','.join(self.addresses)}",
                    "-c", "fsync=off", "-c", "max_connections=200",
                ]),
                stdout=out, stderr=out, start_new_session=True,
            )  # fmt: skip
        async with asyncio.timeout(HANG):
            while True:  # until it accepts connections (its log says when it is ready)
                ready = await asyncio.create_subprocess_exec(
                    *self.host.command([str(self.programs / "pg_isready"), "-q",
                                        "-h", self.addresses[0], "-p", "5432"]),
                )  # fmt: skip
                if await ready.wait() == 0:
                    return
                assert self.process.returncode is None, log.read_text()
                await asyncio.sleep(0.1)

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            os.killpg(self.process.pid, signal.SIGQUIT)  # immediate shutdown
            try:
                async with asyncio.timeout(HANG):
                    await self.process.wait()
            except TimeoutError:
                os.killpg(self.process.pid, signal.SIGKILL)
                await self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


@dataclass
class Replica:
    """``signoff serve`` on `host`, at its address and `PORT`, until killed or stopped; what
    it prints goes to `log`."""

    name: str
    host: Host
    config: Path
    env: dict[str, str]
    log: Path
    process: asyncio.subprocess.Process | None = None
    starts: int = 0
    _reader: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://{self.host.address}:{PORT}"

    async def start(self) -> None:
        """Start it, and return once it serves."""
        self.starts += 1
        self.process = await asyncio.create_subprocess_exec(
            *self.host.command([
                sys.executable, "-m", "signoff", "serve", "--config", str(self.config),
                "--agents", "tests.chaos.agents:agents", "--host", self.host.address,
                "--port", str(PORT),
            ]),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env=self.env,
            cwd=ROOT,
        )  # fmt: skip
        serving = asyncio.get_running_loop().create_future()
        self._reader = asyncio.create_task(self._read(self.process, serving))
        async with asyncio.timeout(HANG):
            await serving

    async def _read(
        self, process: asyncio.subprocess.Process, serving: asyncio.Future[None]
    ) -> None:
        assert process.stdout is not None
        with self.log.open("ab") as log:
            log.write(f"--- start {self.starts} (pid {process.pid})\n".encode())
            async for line in process.stdout:
                log.write(line)
                log.flush()
                if not serving.done() and line.startswith(b"signoff on "):
                    serving.set_result(None)
        if not serving.done():
            said = self.log.read_text()[-4000:]
            serving.set_exception(AssertionError(f"{self.name} ended before serving:\n{said}"))

    async def kill(self) -> None:
        """SIGKILL: no goodbye to the database, the leases it holds left to run out."""
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
        await self._ended()

    def signal(self, number: signal.Signals) -> None:
        """Send it a signal (SIGSTOP freezes it: its leases run out; SIGCONT lets it go on)."""
        assert self.process is not None and self.process.returncode is None
        self.process.send_signal(number)

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.send_signal(signal.SIGINT)
        await self._ended()

    async def _ended(self) -> None:
        """Wait for it to end: killed, if it will not within `HANG`."""
        if self.process is None:
            return
        try:
            async with asyncio.timeout(HANG):
                await self.process.wait()
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        if self._reader is not None:
            with contextlib.suppress(AssertionError):
                await self._reader


async def _checked(*argv: str) -> None:
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await process.communicate()
    assert process.returncode == 0, f"{argv[0]} failed: {out.decode()}"
