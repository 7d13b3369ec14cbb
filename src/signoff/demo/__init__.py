"""`signoff demo`: the server with two demo agents, on SQLite in a data folder, no config."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib.resources import as_file, files
from pathlib import Path
from typing import Literal

from signoff.demo.folder import DATABASE, announce, default_data_dir, withdraw
from signoff.errors import MissingExtraError

__all__ = ["DEMO_REDACT", "default_data_dir", "serve_demo"]

DEMO_REDACT = ("**.password", "**.*token*", "**.*secret*", "**.api_key", "env.*.value")
"""Argument paths the demo's API shows masked: secrets, and the values of environment variables
(``deploy``'s ``env``), which often hold them."""


async def serve_demo(
    *,
    host: str,
    port: int,
    data_dir: Path,
    ready: Callable[[str], None] = print,
    hosts: Sequence[str] = (),
    log_format: Literal["text", "json"] = "text",
) -> None:
    """Serve the demo until interrupted; `ready` gets the URL once it listens, and while it
    serves, `data_dir` says where (`signoff.demo.folder.serving`). Without authentication:
    `host` must be a loopback address, and requests must name a loopback host or one of
    `hosts` (their ``Host``). Logs as `log_format` says (`signoff.server.logs`)."""
    try:
        from signoff.server import Auth, Service, create_app
        from signoff.server.run import run_app
    except ImportError:
        raise MissingExtraError("signoff demo", "server") from None
    # Loaded here, not with the package: `signoff inbox` reads the demo's folder
    # (`signoff.demo.folder`) to find its server, and needs none of the agents.
    import yaml

    from signoff.demo.agents import demo_agents
    from signoff.demo.model import demo_model
    from signoff.gate import Gate
    from signoff.policy import Policy
    from signoff.redaction import Redaction
    from signoff.server.hosts import is_loopback
    from signoff.store import open_store

    if not is_loopback(host):  # the command says so first; this is for callers from Python
        raise ValueError(f"the demo has no authentication and serves loopback only, not {host!r}")
    data_dir.mkdir(parents=True, exist_ok=True)
    database = data_dir / DATABASE
    with as_file(files("signoff") / "examples" / "demo-policy.yaml") as path:
        policy = Policy.from_file(path)
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    async with open_store(f"sqlite:///{database}") as store:
        agents = demo_agents(data_dir, database, demo_model())
        service = Service(
            store=store,
            gate=Gate(policy, store),
            agents=agents,
            policy_document=document,
            redaction=Redaction(DEMO_REDACT),
        )
        app = create_app(service, Auth.none(roles=["admin"], hosts=hosts))

        def announced(url: str) -> None:
            announce(data_dir, url)
            ready(url)

        try:
            await run_app(app, host=host, port=port, ready=announced, log_format=log_format)
        finally:
            withdraw(data_dir)
