"""The demo's two agents, with real tools kept to the demo's data folder.

- ``files`` reads, writes and deletes files in a sandbox folder; writing and deleting ask.
- ``ops`` runs a small simulated cluster kept in the demo's SQLite database: listing pods and
  reading logs are allowed, deleting a pod, scaling and deploying ask, ``admin_*`` is denied.
  ``deploy`` takes nested arguments (an enum, a list of objects, a boolean, an object), so its
  edit form in the web inbox shows every kind of field. Its sub-agent ``db`` runs the cluster's
  database: listing tables is allowed, dropping one asks — under the path ``ops/db``, and the
  approval surfaces on the ops run that handed the work over.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from signoff.agent import Agent, Model, Tool, tool

__all__ = ["SAMPLE_FILES", "cluster_pods", "demo_agents"]

SAMPLE_FILES = {
    "notes.txt": "Buy milk.\nCall the plumber about the kitchen sink.\n",
    "todo.md": "- [ ] renew the TLS certificate\n- [x] rotate the API keys\n",
}
_DEPLOYMENTS = {"nginx": 2, "web": 3, "redis": 1}
_TABLES = ("users", "orders", "sessions", "audit_trail")

Replicas = Annotated[int, Field(ge=0, le=50, description="How many pods, 0 to 50.")]


class EnvVar(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, Field(min_length=1, pattern="^[A-Z_][A-Z0-9_]*$")]
    value: str


class Resources(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cpu: Annotated[str, Field(description='CPU per pod, like "250m" or "1".')]
    memory_mb: Annotated[int, Field(ge=64, le=65536)]


def demo_agents(data_dir: Path, database: Path, model: Model) -> list[Agent]:
    """The files agent on `data_dir/sandbox` and the ops agent on a cluster in `database`."""
    sandbox = data_dir / "sandbox"
    if not sandbox.exists():
        sandbox.mkdir(parents=True)
        for name, text in SAMPLE_FILES.items():
            (sandbox / name).write_text(text)
    _seed_cluster(database)
    return [
        Agent(
            name="files",
            model=model,
            tools=_file_tools(sandbox),
            description="Reads and writes files in the demo's sandbox folder.",
            instructions="You manage files in a sandbox folder. Use relative paths.",
        ),
        Agent(
            name="ops",
            model=model,
            tools=_ops_tools(database),
            subagents=[
                Agent(
                    name="db",
                    model=model,
                    tools=_db_tools(database),
                    description="Runs the cluster's database: lists and drops its tables.",
                )
            ],
            description="Operates a small (simulated) Kubernetes cluster.",
            instructions="You operate a Kubernetes cluster. Check before you change anything.",
        ),
    ]


def _file_tools(sandbox: Path) -> list[Tool]:
    def inside(path: str) -> Path:
        target = (sandbox / path).resolve()
        if not target.is_relative_to(sandbox.resolve()):
            raise PermissionError(f"The path {path!r} is outside the sandbox.")
        return target

    def existing(path: str) -> Path:
        target = inside(path)
        if not target.is_file():
            raise FileNotFoundError(f"There is no file {path!r} in the sandbox.")
        return target

    @tool
    def list_files() -> list[str]:
        """List the files in the sandbox."""
        return sorted(str(p.relative_to(sandbox)) for p in sandbox.rglob("*") if p.is_file())

    @tool
    def read_file(path: str) -> str:
        """Read a file of the sandbox."""
        return existing(path).read_text()

    @tool
    def write_file(path: str, content: str) -> str:
        """Write (or overwrite) a file of the sandbox."""
        target = inside(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        return f"wrote {len(content)} characters to {path}"

    @tool
    def delete_file(path: str) -> str:
        """Delete a file of the sandbox."""
        existing(path).unlink()
        return f"deleted {path}"

    return [list_files, read_file, write_file, delete_file]


def _ops_tools(database: Path) -> list[Tool]:
    @tool
    def list_pods(namespace: str = "default") -> list[dict[str, str]]:
        """List the pods of a namespace, with their status."""
        return [{"name": name, "status": "Running"} for name in cluster_pods(database)]

    @tool
    def get_logs(name: str, lines: int = 5) -> str:
        """The last lines of a pod's log."""
        if name not in cluster_pods(database):
            raise LookupError(f"There is no pod named {name!r}.")
        return "\n".join(f"{name}: request {i} served in {3 + i % 7} ms" for i in range(lines))

    @tool
    def delete_pod(name: str) -> str:
        """Delete a pod (its deployment starts a new one later, not in this demo)."""
        with _cluster(database) as cluster:
            pods = cluster["pods"]
            if name not in pods:
                raise LookupError(f"There is no pod named {name!r}.")
            pods.remove(name)
        return f"pod {name} deleted"

    @tool
    def scale_deployment(name: str, replicas: Replicas) -> str:
        """Set the number of replicas of a deployment."""
        with _cluster(database) as cluster:
            pods = [p for p in cluster["pods"] if not p.startswith(f"{name}-")]
            if len(pods) == len(cluster["pods"]) and name not in _DEPLOYMENTS:
                raise LookupError(f"There is no deployment named {name!r}.")
            cluster["pods"] = pods + [f"{name}-{100 + i}" for i in range(replicas)]
        return f"deployment {name} scaled to {replicas}"

    @tool
    def deploy(
        name: Annotated[str, Field(min_length=1, pattern="^[a-z0-9-]+$")],
        image: Annotated[str, Field(min_length=1)],
        replicas: Replicas = 1,
        strategy: Literal["rolling", "recreate"] = "rolling",
        env: list[EnvVar] | None = None,
        dry_run: bool = False,
        resources: Resources | None = None,
    ) -> str:
        """Deploy an image as a deployment of `replicas` pods."""
        if dry_run:
            return f"dry run: {name} ({image}) would get {replicas} pods, {strategy} update"
        with _cluster(database) as cluster:
            pods = [p for p in cluster["pods"] if not p.startswith(f"{name}-")]
            cluster["pods"] = pods + [f"{name}-{200 + i}" for i in range(replicas)]
        settings = f", {len(env or [])} environment variables" if env else ""
        return f"deployed {image} as {name}: {replicas} pods, {strategy} update{settings}"

    @tool
    def admin_reset_cluster() -> str:
        """Reset the whole cluster (the policy denies it)."""
        with _cluster(database) as cluster:
            cluster["pods"] = []
        return "cluster reset"

    return [list_pods, get_logs, delete_pod, scale_deployment, deploy, admin_reset_cluster]


def _db_tools(database: Path) -> list[Tool]:
    @tool
    def list_tables() -> list[str]:
        """The database's tables."""
        with _cluster(database) as cluster:
            return list(cluster.setdefault("tables", list(_TABLES)))

    @tool
    def drop_table(name: str) -> str:
        """Drop a table, with everything in it."""
        with _cluster(database) as cluster:
            tables = cluster.setdefault("tables", list(_TABLES))
            if name not in tables:
                raise LookupError(f"There is no table named {name!r}.")
            tables.remove(name)
        return f"table {name} dropped"

    return [list_tables, drop_table]


def cluster_pods(database: Path) -> list[str]:
    """The simulated cluster's pods, as the demo's database keeps them."""
    with _cluster(database) as cluster:
        return list(cluster["pods"])


class _cluster:
    """The cluster's state, read and written back in one transaction of the demo database."""

    def __init__(self, database: Path) -> None:
        self.connection = sqlite3.connect(database, timeout=30, isolation_level=None)

    def __enter__(self) -> dict[str, list[str]]:
        self.connection.execute("BEGIN IMMEDIATE")
        row = self.connection.execute("SELECT state FROM demo_cluster WHERE id = 1").fetchone()
        state: dict[str, list[str]] = json.loads(row[0])
        self.state = state
        return state

    def __exit__(self, kind: object, *_: object) -> None:
        try:
            if kind is None:
                self.connection.execute(
                    "UPDATE demo_cluster SET state = ? WHERE id = 1", (json.dumps(self.state),)
                )
                self.connection.execute("COMMIT")
            else:
                self.connection.execute("ROLLBACK")
        finally:
            self.connection.close()


def _seed_cluster(database: Path) -> None:
    pods = [f"{name}-{123 + i}" for name, count in _DEPLOYMENTS.items() for i in range(count)]
    with sqlite3.connect(database, timeout=30) as connection:
        connection.execute(
            "CREATE TABLE IF NOT EXISTS demo_cluster (id INTEGER PRIMARY KEY, state TEXT NOT NULL)"
        )
        connection.execute(
            "INSERT OR IGNORE INTO demo_cluster (id, state) VALUES (1, ?)",
            (json.dumps({"pods": pods}),),
        )
    connection.close()
