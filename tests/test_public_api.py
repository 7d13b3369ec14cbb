"""The public surface: one curated `__all__`, and a core that imports no outer layer."""

from __future__ import annotations

import json
import subprocess
import sys
from types import ModuleType

import signoff


def test_all_is_sorted_and_complete():
    assert signoff.__all__ == sorted(signoff.__all__)
    for name in signoff.__all__:
        assert hasattr(signoff, name), name
    # Submodules appear as attributes once anything imported them: they are not the API.
    modules = {name for name, value in vars(signoff).items() if isinstance(value, ModuleType)}
    public = {name for name in vars(signoff) if not name.startswith("_")} - modules - {
        "version", "PackageNotFoundError", "TYPE_CHECKING", "Any",
    }  # fmt: skip
    assert public <= set(signoff.__all__)


# Outer layers and optional packages the core must never pull in (ARCHITECTURE §2).
FORBIDDEN = [
    "signoff.cli", "signoff.server", "signoff.protocols", "signoff.integrations",
    "typer", "rich", "click", "fastapi", "starlette", "uvicorn", "a2a", "ag_ui", "mcp",
    "langgraph", "langchain", "agents", "pydantic_ai", "agno", "openai", "claude_agent_sdk",
    "opentelemetry", "prometheus_client",  # spans on first use; metrics are the server's
]  # fmt: skip


def loaded_by(statement: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running `statement`."""
    probe = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))\n"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    return set(json.loads(result.stdout))


def leaks(loaded: set[str], forbidden: list[str]) -> list[str]:
    return sorted(m for m in loaded for f in forbidden if m == f or m.startswith(f + "."))


def test_importing_the_core_loads_no_outer_layer_or_optional_package():
    core = "import signoff.gate, signoff.store, signoff.policy, signoff.agent, signoff.testing"
    assert leaks(loaded_by(core), FORBIDDEN) == []


def test_importing_signoff_for_its_policy_engine_loads_neither_the_store_nor_pydantic():
    loaded = loaded_by("import signoff, signoff.policy, signoff.types, signoff.errors")
    lazy = [*FORBIDDEN, "sqlalchemy", "pydantic", "signoff.store", "signoff.gate", "signoff.agent"]
    assert leaks(loaded, lazy) == []


def test_the_gate_the_store_and_tools_load_on_first_use():
    loaded = loaded_by("from signoff import Gate, open_store, tool")
    assert {"signoff.gate", "signoff.store", "signoff.agent", "sqlalchemy", "pydantic"} <= loaded


def test_each_protocol_needs_only_its_own_sdk():
    """AG-UI reads runs the way A2A does (its `hitl` and `tasks`), yet serves without a2a-sdk;
    A2A serves without ag-ui-protocol."""
    agui = loaded_by("import signoff.protocols.agui")
    assert leaks(agui, ["a2a", "signoff.protocols.a2a.handler"]) == []
    assert {"ag_ui", "jsonpatch"} <= agui
    a2a = loaded_by("from signoff.protocols.a2a import mount_a2a")
    assert leaks(a2a, ["ag_ui", "jsonpatch", "signoff.protocols.agui"]) == []
    assert "a2a" in a2a
