"""The public surface: one curated `__all__`, and a core that imports no outer layer."""

from __future__ import annotations

import json
import subprocess
import sys

import signoff


def test_all_is_sorted_and_complete():
    assert signoff.__all__ == sorted(signoff.__all__)
    for name in signoff.__all__:
        assert hasattr(signoff, name), name
    public = {name for name in vars(signoff) if not name.startswith("_")} - {
        "errors", "policy", "types", "version", "PackageNotFoundError", "cli", "importlib",
        "TYPE_CHECKING", "Any", "gate", "store",
    }  # fmt: skip
    assert public <= set(signoff.__all__)


# Outer layers and optional packages the core must never pull in (ARCHITECTURE §2).
FORBIDDEN = [
    "signoff.cli", "signoff.server", "signoff.protocols", "signoff.integrations",
    "typer", "rich", "click", "fastapi", "starlette", "uvicorn", "a2a", "ag_ui", "mcp",
    "langgraph", "langchain", "agents", "pydantic_ai", "agno", "openai",
]  # fmt: skip


def test_importing_the_core_loads_no_outer_layer_or_optional_package():
    probe = (
        "import json, sys\n"
        "import signoff, signoff.policy, signoff.types, signoff.errors\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(result.stdout))
    leaks = sorted(m for m in loaded for f in FORBIDDEN if m == f or m.startswith(f + "."))
    assert leaks == []
