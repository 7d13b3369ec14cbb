"""Judging, holding and deciding tool calls: the heart of signoff."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from signoff.gate.bridge import Bridge
    from signoff.gate.core import CheckContext, Gate, Outcome
    from signoff.gate.external import ExternalRuns, Resumer, connect
    from signoff.gate.notifier import Notifier
    from signoff.gate.once import Ledger

__all__ = [
    "Bridge",
    "CheckContext",
    "ExternalRuns",
    "Gate",
    "Ledger",
    "Notifier",
    "Outcome",
    "Resumer",
    "connect",
]

# Loaded when first named: `signoff.gate.ids` (which the CLI uses) must not pay for the store.
_LAZY = {
    "Bridge": "signoff.gate.bridge",
    "CheckContext": "signoff.gate.core",
    "Gate": "signoff.gate.core",
    "Outcome": "signoff.gate.core",
    "ExternalRuns": "signoff.gate.external",
    "Resumer": "signoff.gate.external",
    "connect": "signoff.gate.external",
    "Notifier": "signoff.gate.notifier",
    "Ledger": "signoff.gate.once",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
