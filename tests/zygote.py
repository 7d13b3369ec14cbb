"""``signoff`` processes for the tests, forked from a warm one instead of started cold.

A ``python -m signoff`` spends a second or two of CPU importing FastAPI, SQLAlchemy, the MCP and
A2A SDKs before it does anything, and the suite starts well over a hundred of them. Here one
process (the zygote) imports all of that once; every ``signoff`` a test starts is forked from it.

    python tests/zygote.py serve SOCKET          the zygote: forks a signoff for each request
    python -S tests/zygote.py SOCKET ARGS...     a launcher: behaves as ``python -m signoff ARGS``

The launcher is what the test starts, and stands for the signoff process to it: it hands its
standard streams, arguments, environment and folder over to a fork of the zygote, passes on the
signals it gets, and exits as that process does (with its status, or by its signal). A launcher
killed outright takes the signoff process, and whatever that started, with it. Without a zygote
to talk to, the launcher becomes a real ``python -m signoff``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import sys
import threading
from typing import Any, NoReturn

WARM = [
    "signoff.cli",
    # What the commands load when they run, not with signoff.cli (to start fast):
    "signoff.policy",
    "signoff.demo",
    "signoff.demo.agents",
    "signoff.demo.model",
    "signoff.gate",
    "signoff.store",
    "signoff.store.postgres",
    "signoff.server",
    "signoff.server.auth",
    "signoff.server.config",
    "signoff.redaction",
    "signoff.server.run",
    "signoff.server.service",
    "signoff.protocols.mcp.gateway",
    "signoff.protocols.mcp.upstream",
    "signoff.protocols.a2a",
    "signoff.protocols.agui",
    "mcp.server.stdio",
    "aiosqlite",
    "asyncpg",
    "httpx",
    "uvicorn",
    "urllib.request",
    "typer.rich_utils",
    "rich.table",
]
"""What a signoff command imports, imported once by the zygote (those installed)."""

BASE_PATH: list[str] = []
"""The zygote's sys.path past its script's folder and its PYTHONPATH: the installation's."""

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
             signal.SIGUSR2)  # fmt: skip


# -- the launcher: stdlib only, started with -S --------------------------------------------------


def launch(path: str, arguments: list[str]) -> NoReturn:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path)
    except OSError:
        os.execv(sys.executable, [sys.executable, "-m", "signoff", *arguments])
    caught: list[int] = []
    child: list[int] = []

    def forward(number: int, _frame: Any) -> None:
        if child:
            os.kill(child[0], number)
        else:
            caught.append(number)

    for number in FORWARDED:
        signal.signal(number, forward)
    request = {"arguments": arguments, "environment": dict(os.environ), "folder": os.getcwd()}
    body = json.dumps(request).encode()
    socket.send_fds(connection, [struct.pack("!I", len(body)) + body], [0, 1, 2])
    # The signoff process holds the streams now: ends of pipes must close when it exits.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    reader = connection.makefile("r")
    child.append(int(reader.readline()))
    for early in caught:
        os.kill(child[0], early)
    said = reader.readline()
    status = int(said) if said else int(signal.SIGKILL)  # a wait status: killed, if unsaid
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status))


# -- the zygote ----------------------------------------------------------------------------------


def serve(path: str) -> None:
    import importlib

    for name in WARM:
        # An extra this install lacks: its command fails as a cold one would.
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    if threading.active_count() != 1:  # forking with threads around is not safe
        sys.exit(f"importing started threads: {threading.enumerate()}")
    global BASE_PATH
    BASE_PATH = [p for p in sys.path[1:] if p not in os.environ.get("PYTHONPATH", "")]
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listening.bind(path)
    listening.listen(64)
    parent = os.getppid()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the monitors are reaped as they end
    print("ready", flush=True)
    while os.getppid() == parent:  # until the test session that started it is gone
        ready, _, _ = select.select([listening], [], [], 1.0)
        if not ready:
            continue
        connection, _ = listening.accept()
        if os.fork() == 0:
            listening.close()
            monitor(connection)
        connection.close()


def monitor(connection: socket.socket) -> NoReturn:
    """In a fork of the zygote: start the signoff process for one launcher and report its end;
    if the launcher goes first, kill it (and its process group)."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        data, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
        (length,) = struct.unpack("!I", data[:4])
        body = data[4:]
        while len(body) < length:
            more = connection.recv(length - len(body))
            if not more:
                os._exit(1)
            body += more
        request = json.loads(body)
        pid = os.fork()
        if pid == 0:
            connection.close()
            become(request, fds)
        with contextlib.suppress(ProcessLookupError):  # (it does so too, unless done already)
            os.setpgid(pid, pid)  # a group of its own, before the launcher can go
        for fd in fds:
            os.close(fd)
        connection.sendall(f"{pid}\n".encode())

        def watch() -> None:
            if not connection.recv(1):  # the launcher is gone
                with contextlib.suppress(ProcessLookupError):  # unless they all ended
                    os.killpg(pid, signal.SIGKILL)

        threading.Thread(target=watch, daemon=True).start()
        _, status = os.waitpid(pid, 0)
        connection.sendall(f"{status}\n".encode())
    finally:
        os._exit(0)


def become(request: dict[str, Any], fds: list[int]) -> NoReturn:
    """In a fork of the monitor: be ``python -m signoff ARGUMENTS``."""
    import io
    import random
    import runpy

    os.setpgid(0, 0)  # the processes it starts are its group: killed with it
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["folder"])
    environment: dict[str, str] = request["environment"]
    os.environ.clear()
    os.environ.update(environment)
    # sys.path as `python -m` makes it: the folder, then PYTHONPATH, then the installation's.
    extra = [p for p in environment.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [os.getcwd(), *extra, *BASE_PATH]
    random.seed()
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                   signal.SIGUSR2, signal.SIGCHLD):  # fmt: skip
        signal.signal(number, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    unbuffered = bool(environment.get("PYTHONUNBUFFERED"))
    encoding = environment.get("PYTHONIOENCODING") or "utf-8"

    def stream(fd: int, mode: str, errors: str, line: bool) -> io.TextIOWrapper:
        raw = io.FileIO(fd, mode, closefd=False)
        binary: Any = raw if unbuffered and mode == "w" else (
            io.BufferedWriter(raw) if mode == "w" else io.BufferedReader(raw)
        )  # fmt: skip
        return io.TextIOWrapper(binary, encoding=encoding, errors=errors,
                                line_buffering=line, write_through=unbuffered)  # fmt: skip

    sys.stdin = stream(0, "r", "strict", False)
    sys.stdout = stream(1, "w", "strict", os.isatty(1))
    sys.stderr = stream(2, "w", "backslashreplace", True)
    sys.argv = ["signoff", *request["arguments"]]
    code: object = 0
    try:
        runpy.run_module("signoff", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:
        finish()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    finish()
    if code is None:
        os._exit(0)
    if isinstance(code, int):
        os._exit(code & 0xFF)
    print(code, file=sys.stderr)
    sys.stderr.flush()
    os._exit(1)


def finish() -> None:
    """What an interpreter does on its way out: join its threads, run atexit, flush."""
    import atexit

    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for name in ("stdout", "stderr"):
        with contextlib.suppress(OSError, ValueError):
            getattr(sys, name).flush()


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        launch(sys.argv[1], sys.argv[2:])
