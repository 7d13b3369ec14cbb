"""Judging, holding and deciding tool calls: the heart of signoff."""

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
