"""Before a command serves: is ``--port`` a port, and is it free on ``--host``? Each problem is
one line naming the option, never the server's traceback (``--port 99999``) or its exit status
with no hint (a port another program holds). Then `run_server`: the event loop it serves on."""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, NoReturn

import typer

if TYPE_CHECKING:
    import asyncio

__all__ = ["check_port", "check_port_free", "run_server", "stop"]

HIGHEST = 65535


def stop(command: str, message: str, *, code: int) -> NoReturn:
    """End `command` with one line on stderr and exit status `code` (2: a usage error)."""
    typer.echo(f"signoff {command}: {message}", err=True)
    raise typer.Exit(code)


def check_port(command: str, port: int) -> None:
    """Stop (status 2) unless `port` is one a server can listen on."""
    if not 0 <= port <= HIGHEST:
        stop(command, f"--port {port} is not a port (0-{HIGHEST}; 0 picks a free one)", code=2)


def check_port_free(
    command: str, host: str, port: int, *, instead: str = "pass --port N (0 picks a free one)"
) -> None:
    """Stop (status 1) when `port` on `host` is taken (saying what to do `instead`), or `host`
    is not an address of this machine. Binding as the server will (``SO_REUSEADDR``), so a port
    a closed connection lingers on counts as free, as it is to the server. Port 0 is always
    free."""
    if port == 0:
        return
    problem = _bind_problem(host, port)
    if problem is None:
        return
    if problem.errno == errno.EADDRINUSE:
        stop(command, f"port {port} on {host} is taken; {instead}", code=1)
    if problem.errno == errno.EACCES:
        stop(command, f"port {port} needs privileges; pass --port 1024 or above", code=1)
    words = problem.strerror or str(problem)
    stop(command, f"cannot listen on {host} port {port} ({words}); check --host", code=1)


def _bind_problem(host: str, port: int) -> OSError | None:
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:  # socket.gaierror: a name that does not resolve
        return exc
    for family, kind, protocol, _, address in addresses:
        with socket.socket(family, kind, protocol) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                return exc
    return None


def run_server(main: Coroutine[Any, Any, None]) -> None:
    """Run a server's `main` as ``asyncio.run`` does, on uvloop's event loop when uvloop is
    installed (the ``server`` extra brings it, where it builds), else on asyncio's own.

    uvicorn picks its loop only when it starts one; signoff's servers run inside the command's
    loop, so the command picks. (uvicorn's ``http="auto"`` takes httptools, the extra's other
    half, by itself.) Measured with both against neither, interleaved on one machine: the
    server's CPU per decision over HTTP 0.84x (one client) to 0.89x (50 clients), per bare
    request (``GET /v1/health``) 0.58x.
    """
    import asyncio  # here: importing the CLI loads no asyncio

    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None
    try:
        import uvloop
    except ImportError:
        pass
    else:
        loop_factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(main)
