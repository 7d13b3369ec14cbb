"""Judging, holding and deciding tool calls: the heart of signoff."""

from __future__ import annotations

from typing import TYPE_CHECKING

from signoff._lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from signoff.gate.bridge import Bridge
    from signoff.gate.core import CheckContext, Gate, Outcome, RolesOf
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
    "RolesOf",
    "connect",
]

# Loaded when first named: `signoff.gate.ids` (which the CLI uses) must not pay for the store.
_LAZY = {
    "Bridge": "signoff.gate.bridge",
    "CheckContext": "signoff.gate.core",
    "Gate": "signoff.gate.core",
    "Outcome": "signoff.gate.core",
    "RolesOf": "signoff.gate.core",
    "ExternalRuns": "signoff.gate.external",
    "Resumer": "signoff.gate.external",
    "connect": "signoff.gate.external",
    "Notifier": "signoff.gate.notifier",
    "Ledger": "signoff.gate.once",
}

__getattr__ = _lazy_exports(__name__, _LAZY)
