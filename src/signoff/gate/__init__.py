"""Judging, holding and deciding tool calls: the heart of signoff."""

from __future__ import annotations

from typing import TYPE_CHECKING

from signoff._lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from signoff.gate.base import RolesOf
    from signoff.gate.bridge import Bridge
    from signoff.gate.core import Gate
    from signoff.gate.external import ExternalRuns, Resumer, connect
    from signoff.gate.notifier import Notifier
    from signoff.gate.once import Ledger
    from signoff.gate.outcome import CheckContext, Outcome

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
    "CheckContext": "signoff.gate.outcome",
    "Gate": "signoff.gate.core",
    "Outcome": "signoff.gate.outcome",
    "RolesOf": "signoff.gate.base",
    "ExternalRuns": "signoff.gate.external",
    "Resumer": "signoff.gate.external",
    "connect": "signoff.gate.external",
    "Notifier": "signoff.gate.notifier",
    "Ledger": "signoff.gate.once",
}

__getattr__ = _lazy_exports(__name__, _LAZY)
