"""Judging, holding and deciding tool calls: the heart of signoff."""

from signoff.gate.core import CheckContext, Gate, Outcome
from signoff.gate.notifier import Notifier

__all__ = ["CheckContext", "Gate", "Notifier", "Outcome"]
